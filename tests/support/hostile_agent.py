"""The agent the display tests run in `riverbeam dev`: `author` on a scripted Bedrock model
(tests.support.fake_bedrock) whose text carries terminal sequences, which asks to push a ref with bidi
characters in it, reads a file of the work tree, pushes a branch, and repeats each tool's result word for
word (a remote's error, a file's content) as its own text."""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.bedrock import MODEL, text_events, tool_events
from tests.support.fake_bedrock import ENDPOINT_VARIABLE, fake_bedrock, tool_results, user_text

# Trojan Source: drawn as "docs/update", it is another ref
TROJAN_REF = "docs/\u202eetadpu\u202c"
TROJAN_SHOWN = "docs/\\u202eetadpu\\u202c"
# what a terminal would act on: the window's title, the cursor two lines up, the line erased, a C1 CSI
# (a sequence split across text deltas, so each delta alone looks harmless)
HOSTILE_CHUNKS = ["Sure.\x1b]0;pwned-by-agent\x07 Then", " \x1b", "[7A\x1b[2K\rFAKE", " prompt\x9b2J done."]
HOSTILE_TEXT = "".join(HOSTILE_CHUNKS)
HOSTILE_SHOWN = "Sure.\\x1b]0;pwned-by-agent\\x07 Then \\x1b[7A\\x1b[2K\\rFAKE prompt\\u009b2J done."
# raw, none of these may reach a terminal
RAW_SEQUENCES = ["\x1b]0;pwned", "\x1b[7A", "\x1b[2K\rFAKE", "\x9b", "\x07 Then"]
AGENTS_YAML = f"agents:\n  author:\n    model_id: {MODEL}\n    tools: [git_push, read_file]\n"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _call(name: str, args: dict[str, Any], text: str = "") -> list[dict[str, Any]]:
    return tool_events((f"tooluse_{uuid.uuid4().hex}", name, [json.dumps(args)]), text=text)


def script(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's answer to the conversation in a ConverseStream request."""
    results = tool_results(request)
    if results:  # the tool's words, raw, as the model's own
        return text_events("The tool said: " + " | ".join(_strings(results[0]["content"])))
    text = user_text(request).lower()
    if "hostile" in text:
        return text_events(*HOSTILE_CHUNKS)
    if "tricky" in text:
        return _call("git_push", {"ref": TROJAN_REF}, "I will push it once you approve.")
    if "read" in text:
        return _call("read_file", {"path": "notes.txt"})
    pushed = re.search(r"push (\S+)", text)
    if pushed:
        return _call("git_push", {"ref": pushed.group(1)}, f"I will push {pushed.group(1)} once you approve.")
    return text_events("Ask me to push a branch.")


@contextlib.contextmanager
def hostile_stack(data_dir: Path) -> Iterator[DevProcess]:
    """`riverbeam dev` (its own data dir) whose `author` is the hostile agent."""
    agents = data_dir.parent / f"{data_dir.name}-agents.yaml"
    agents.write_text(AGENTS_YAML)
    with fake_bedrock(script) as url:
        args = ("--agents", str(agents), "--model", "bedrock")
        with running(data_dir, args=args, env={ENDPOINT_VARIABLE: url}) as dev:
            yield dev


def reject_pushes_loudly(data_dir: Path) -> str:
    """A pre-receive hook on the stack's bare remote that refuses every push with terminal sequences in
    its words; returns the raw line it prints."""
    words = "\x1b]0;pwned-by-remote\x07\x1b[3Arefused\x1b[2K \u202ereversed"
    hook = data_dir / "remote.git" / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nprintf '%s\\n' '{words}' >&2\nexit 1\n")
    hook.chmod(0o755)
    return words
