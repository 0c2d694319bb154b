"""Content too large for one DynamoDB item, made for the tests: a 600 KB text that is not one repeated
character (a store that kept a prefix or a pattern would show it), a tool whose output is such a text, and
an agent `big` that calls it (after approval) and then replies with another such text.

`register` adds the agent to a RiverBeam: RIVERBEAM_AGENTS=tests.support.large_content:register gives it
to the handlers."""

from __future__ import annotations

from typing import Any

from riverbeam import ModelTurn, RiverBeam, ScriptedModel, ToolAgentRunner, ToolCall, tool

LARGE = 600 * 1024
AGENT = "big"


def large_text(seed: str, size: int = LARGE) -> str:
    line = f"{seed} " + "".join(chr(0x61 + (i * 7) % 26) for i in range(93)) + "é\n"
    return (line * (size // len(line) + 1))[:size]


TOOL_OUTPUT = large_text("output")
REPLY = large_text("reply")


@tool(confirm_required=True)
def dump(name: str) -> dict[str, Any]:
    """Dump a large file (600 KB of text)."""
    return {"name": name, "text": TOOL_OUTPUT}


def big_runner() -> ToolAgentRunner:
    model = ScriptedModel(
        [
            ModelTurn(text="I will dump it.", tool_calls=[ToolCall(name="dump", args={"name": "log"})]),
            ModelTurn(text=REPLY),
        ]
    )
    return ToolAgentRunner(model=model, tools=[dump])


def register(beam: RiverBeam) -> None:
    beam.register_agent(AGENT, big_runner())
