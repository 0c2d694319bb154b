"""`Policy`: an agent's Cedar policies plus the baseline (CONTRACT 10), parsed once, deciding each call.

A call is decided by two requests: `run` not permitted -> deny; else `run_unattended` permitted -> allow;
else ask. The file's policies come first, so Cedar's own ids (policy0, policy1, ...) are their places
in the file; the baseline is added after them, under `@id`s of its own.

It fails closed: a `forbid` whose condition errors on a call's args (`context.args.replicas > 5` given a
string, a missing attribute read without `has`) denies the call, named among its `policy_ids`, as if it
held; Cedar alone would skip it."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cedarpy
from beam_store import canonical_args

from .decision import Decision
from .moments import NO_CALLS, now_context
from .syntax import error_line
from .values import UnfitArgs, cedar_value, entities, requests

BASELINE = """\
@id("baseline-run") permit (principal, action == Action::"run", resource);
@id("baseline-run-unattended") permit (principal, action == Action::"run_unattended", resource)
  when { !context.confirm_required };
"""
# how Cedar names a policy whose condition failed to evaluate, in a result's diagnostics.errors
ERRED = re.compile(r"error while evaluating policy `([^`]+)`")


def _parsed(text: str, source: str | None) -> cedarpy.PolicySet:
    """The file's policies then the baseline; a ValueError naming the source and line where it fails."""
    try:
        policies = cedarpy.PolicySet.from_str(text)
    except ValueError as error:
        where = f"{source}, line" if source else "line"
        line = error_line(cedarpy.PolicySet.from_str, text)
        raise ValueError(f"{where} {line}: {error}") from None
    if policies.templates():
        raise ValueError(f"{source or 'the policy'}: templates (?principal, ?resource) are not supported")
    return policies.with_added_str(BASELINE)


class Policy:
    """`Policy(text)`: the Cedar text (a syntax error raises ValueError naming the line) plus the
    baseline; `Policy("")` is the baseline alone. `source` names where the text came from in errors."""

    def __init__(self, text: str = "", *, source: str | None = None) -> None:
        self.text = text
        self.source = source
        self._policies = _parsed(text, source)

    @classmethod
    def from_file(cls, path: str | Path) -> Policy:
        """The policy in a `.cedar` file; an unreadable file or a syntax error is a ValueError naming it."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"{path}: cannot read the policy: {error}") from None
        return cls(text, source=str(path))

    def __repr__(self) -> str:
        return f"Policy(source={self.source!r}, policies={len(self._policies)})"

    def decide(
        self,
        *,
        tool: str,
        args: dict[str, Any],
        user_id: str,
        groups: Iterable[str] = (),
        agent: str = "",
        confirm_required: bool = False,
        session_id: str = "",
        now: Mapping[str, Any] | None = None,
        calls: Mapping[str, int] | None = None,
    ) -> Decision:
        """allow, ask or deny for `user_id` (in `groups`) calling `tool` with `args`, with the policies
        that decided it. The args are judged as their canonical JSON reads back (what is hashed and
        run); UnfitArgs where they hold a value Cedar cannot read (values.py). `now` and `calls`: the
        moment in the agent's time zone and the tool's recent calls (moments.py; by default the wall
        clock in UTC, and none)."""
        context = {
            "agent": agent,
            "args": cedar_value(_as_json(args)),
            "confirm_required": confirm_required,
            "session_id": session_id,
            "now": dict(now) if now is not None else now_context(datetime.now(UTC)),
            "calls": dict(calls if calls is not None else NO_CALLS),
        }
        run, unattended = cedarpy.is_authorized_batch(
            requests(user_id, tool, context), self._policies, entities(user_id, groups, tool)
        )
        erred = tuple(sorted({*self._erred(run), *self._erred(unattended)}))
        if erred or not run.allowed:
            forbids = _ids(run) if not run.allowed else ()
            return Decision("deny", tuple(sorted({*forbids, *erred})), erred=erred)
        if unattended.allowed:
            return Decision("allow", _ids(unattended))
        # not permitted with reasons: a forbid matched (a call no permit covers has none)
        return Decision("ask", _ids(run), unattended_forbidden=bool(unattended.diagnostics.reasons))

    @functools.cached_property
    def counts_calls(self) -> bool:
        """Whether a policy of the file reads `context.calls` (only then are the session's calls counted)."""
        return "calls" in self.text

    @functools.cached_property
    def _forbids(self) -> dict[str, str]:
        """Each `forbid`'s Cedar id and the name it is told by (its `@id`, else that id); read by the
        first decision a condition fails in, not when the policy is parsed."""
        listed = self._policies.to_pst().static_policies
        return {pid: p.annotations.get("id") or pid for pid, p in listed.items() if p.effect == "forbid"}

    def _erred(self, result: cedarpy.AuthzResult) -> list[str]:
        """The forbids whose condition failed to evaluate in `result`: they count as holding."""
        failed = [m.group(1) for e in result.diagnostics.errors if (m := ERRED.search(e))]
        return [self._forbids[pid] for pid in failed if pid in self._forbids]


def _as_json(args: dict[str, Any]) -> Any:
    try:
        return canonical_args(dict(args))
    except (TypeError, ValueError) as error:  # not JSON (a Python caller's object): nothing to judge
        raise UnfitArgs("args", f"not JSON: {str(error)[:200]}") from None


def _ids(result: cedarpy.AuthzResult) -> tuple[str, ...]:
    """The `@id` of each policy that made the result, else Cedar's own id."""
    named: dict[str, str] = result.diagnostics.id_annotations_by_reason
    reasons: Sequence[str] = result.diagnostics.reasons
    return tuple(sorted(named.get(r) or r for r in reasons))
