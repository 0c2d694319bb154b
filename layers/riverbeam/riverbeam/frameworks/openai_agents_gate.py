"""The gate inside an OpenAI Agents SDK run: each FunctionTool of the agent copied for the run, its
`needs_approval` a function of Riverbeam's gate and its invoker wrapped (CONTRACT 15).

`needs_approval` proposes every call to the gate, whether or not the user marked the tool
(`needs_approval=True`, or a function of theirs that says so, is read as the framework's own mark): `ask`
answers True (the run ends on the SDK's own interruption), anything else False. The wrapped invoker is
where a call the gate did not allow is told to the model as its tool result (a deny, args that do not fit
the schema: the tool never runs), and where a call a person approved runs with the approved args: the
edited ones where the person edited them (the SDK has no edit of its own), its output then saying so.
A wrapped invoker also makes the SDK ask `needs_approval` for every call whose args are a JSON object
(its own invokers skip a policy function where validation would change the args)."""

from __future__ import annotations

import copy
import functools
import json
from typing import TYPE_CHECKING, Any

from beam_store import ErrorInfo, ToolResultPart
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from .calls import GatedCalls, Verdict

if TYPE_CHECKING:
    from agents import FunctionTool, RunContextWrapper
    from agents.tool_context import ToolContext

    from ..agent.registry import AgentInput, Emit, ResolvedAction

# a tool that raised: as the built-in tools say it
FAILED_CODE = "BEM-331"


def jsonable(value: Any) -> Any:
    """A tool's output as JSON (what cannot be serialised, as its str)."""
    return to_jsonable_python(value, serialize_unknown=True, bytes_mode="base64")


def call_args(arguments: str | None) -> dict[str, Any]:
    """A call's args as the model sent them (a JSON object), else {}."""
    parsed = json_object(arguments)
    return parsed if parsed is not None else {}


def json_object(arguments: str | None) -> dict[str, Any] | None:
    """A call's args as the model sent them, or None where they are no JSON object (none at all: {}, as
    the SDK runs such a call)."""
    if not (arguments or "").strip():
        return {}
    try:
        parsed = json.loads(arguments or "")
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def params_model(tool: FunctionTool) -> type[BaseModel] | None:
    """The pydantic model the SDK validates a decorated tool's args with (rebuilt from its function, and
    used only where it makes the very schema the tool shows the model), else None."""
    from agents.function_schema import function_schema

    try:
        made = function_schema(
            tool.__wrapped__, name_override=tool.name, strict_json_schema=tool.strict_json_schema
        )
    except Exception:  # not made by @function_tool, or a function it cannot read again
        return None
    return made.params_pydantic_model if made.params_json_schema == tool.params_json_schema else None


def problems(
    tool: FunctionTool, model: type[BaseModel] | None, args: dict[str, Any]
) -> list[tuple[str, str]]:
    """What in `args` does not fit the tool's schema, strictly (no coercion: "5" is no int): the tool's own
    pydantic model where it has one, else jsonschema on its params_json_schema."""
    schema = tool.params_json_schema
    if model is None:
        from jsonschema.validators import validator_for

        checker = validator_for(schema)(schema)
        return [(".".join(map(str, e.absolute_path)) or "args", e.message) for e in checker.iter_errors(args)]
    found: list[tuple[str, str]] = []
    try:
        model.model_validate_json(json.dumps(args), strict=True)
    except ValidationError as error:
        found = [(".".join(str(x) for x in e["loc"]) or "args", e["msg"]) for e in error.errors()]
    if schema.get("additionalProperties") is False:  # the schema the model sees takes no other keys
        known = schema.get("properties") or {}
        found += [(key, "not a parameter of the tool") for key in args if key not in known]
    return found


class Gate:
    """One run's calls (`calls`, Riverbeam's GatedCalls) and what the gate made of each, by the SDK's call
    id: `verdicts` (decided in this run), `approved` (a person's approval this run resumes with, and the
    args the call runs with), `parts` (what each call's tool message says: the session's messages)."""

    def __init__(
        self, input: AgentInput, emit: Emit, validate: Any, ids: dict[str, str] | None = None
    ) -> None:
        self.calls = GatedCalls(input, emit, validate=self._validate, marked=self._marked, ids=ids)
        self._check = validate
        self.verdicts: dict[str, Verdict] = {}
        self.approved: dict[str, tuple[ResolvedAction, dict[str, Any]]] = {}
        self.parts: dict[str, ToolResultPart] = {}
        self._marking = False
        self._unreadable = False

    def tool(self, original: FunctionTool) -> FunctionTool:
        """The tool for this run: the gate's `needs_approval`, the gate's invoker around its own."""
        gated = copy.copy(original)
        gated.needs_approval = functools.partial(self._needs_approval, original)
        gated.on_invoke_tool = functools.partial(self._invoke, original)
        return gated

    def propose(
        self, call_id: str, tool: str, args: dict[str, Any], marked: bool, unreadable: bool = False
    ) -> Verdict:
        """Decide a call (`unreadable`: its args are no JSON object, so unfit whatever the tool takes)."""
        # read by GatedCalls.propose, at once (nothing awaits in between)
        self._marking, self._unreadable = marked, unreadable
        verdict = self.calls.propose(call_id, tool, args)
        self.verdicts[call_id] = verdict
        if verdict.refusal is not None:
            self.parts[call_id] = verdict.refusal
        return verdict

    def _marked(self, tool: str) -> bool:
        return self._marking

    def _validate(self, tool: str, args: dict[str, Any]) -> list[tuple[str, str]]:
        return [("args", "not a JSON object")] if self._unreadable else list(self._check(tool, args))

    async def _needs_approval(
        self, original: FunctionTool, ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str
    ) -> bool:
        own = original.needs_approval  # the user's own mark: True, or a function of theirs
        marked = own if isinstance(own, bool) else bool(await own(ctx, params, call_id))
        return self.propose(call_id, original.name, dict(params), marked).effect == "ask"

    async def _invoke(self, original: FunctionTool, ctx: ToolContext[Any], arguments: str) -> Any:
        call_id = ctx.tool_call_id
        verdict, approved = self.verdicts.get(call_id), self.approved.get(call_id)
        if verdict is not None and verdict.refusal is not None:  # denied, or unfit: it never runs
            return verdict.message
        if approved is None and (verdict is None or verdict.effect != "allow"):
            raise RuntimeError(f"{original.name}: a call the gate did not allow was about to run")
        edit = approved[1] if approved is not None and approved[0].edited else None
        action_id = self.calls.action_id(call_id)
        try:
            output = await original.on_invoke_tool(ctx, json.dumps(edit) if edit is not None else arguments)
        except Exception as error:  # the run fails; the tool message says the tool raised
            failed = ErrorInfo(code=FAILED_CODE, message=f"{original.name} failed: {error}"[:1000])
            self.parts[call_id] = self.calls.ran(action_id, original.name, error=failed)
            raise
        part = self.calls.ran(action_id, original.name, output=jsonable(output))
        self.parts[call_id] = part
        if edit is None:
            return output
        part.edited_args = dict(edit)  # the session's record says it ran with the edited args
        said = output if isinstance(output, str) else json.dumps(jsonable(output))
        return f"(run with the args a person edited: {json.dumps(edit, sort_keys=True)}) {said}"
