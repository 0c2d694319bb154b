"""A Pydantic AI agent inside Riverbeam for the tests: a payments desk with two counted tools, `pay(to,
amount)` the framework gates itself (`requires_approval=True`), `refund(amount)` that asks as it runs
(over 100) and `look_up(name)` that does not ask; its model
is the framework's offline FunctionModel (streamed): a person's message makes the calls it is scripted
with, tool results get a reply saying what each told it ("pay: paid 5 to bob | look_up: ..."), and "recap"
gets a reply naming every earlier prompt and tool result it was given (the conversation it sees)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import Any

from beam_store import BeamStore
from pydantic_ai import Agent, RunContext
from pydantic_ai import messages as pai
from pydantic_ai.exceptions import ApprovalRequired
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from riverbeam.frameworks import PydanticAIRunner

from tests.support.framework_desk import DeskDriving

Call = tuple[str, dict[str, Any]]
# a tool output over DynamoDB's 400 KB item limit, not one repeated character
BIG = "".join(f"{i:07d} payee\n" for i in range(36_000))


def _seen(messages: list[pai.ModelMessage]) -> list[str]:
    """What the model was given: each prompt and each tool result, in order."""
    seen = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, pai.UserPromptPart):
                seen.append(f"asked {part.content}")
            elif isinstance(part, pai.ToolReturnPart):
                seen.append(f"{part.tool_name}: {part.content}")
            elif isinstance(part, pai.ToolCallPart):
                seen.append(f"called {part.tool_name}({json.dumps(part.args_as_dict(), sort_keys=True)})")
    return seen


def _told(messages: list[pai.ModelMessage]) -> list[str]:
    """Each result of the model's last calls, with the args the model sees its call made with."""
    made = {
        p.tool_call_id: json.dumps(p.args_as_dict(), sort_keys=True)
        for m in messages
        if isinstance(m, pai.ModelResponse)
        for p in m.parts
        if isinstance(p, pai.ToolCallPart)
    }
    results = [p for m in messages[-2:] if isinstance(m, pai.ModelRequest) for p in m.parts]
    return [
        f"{p.tool_name}({made.get(p.tool_call_id)}): "
        + (str(p.content) if isinstance(p, pai.ToolReturnPart) else "retry")
        for p in results
        if isinstance(p, pai.ToolReturnPart | pai.RetryPromptPart)
    ]


class Desk(DeskDriving):
    """The agent registered as "author" with `policy` (Cedar text) on a RiverBeam of `store`; `calls`
    are what its model calls on a person's message. `reopened()`: the same agent (same counters) in a NEW
    RiverBeam on the same store, as another process would resume it."""

    def __init__(
        self,
        store: BeamStore,
        *calls: Call,
        policy: str | None = None,
        schema: str = "int",
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.clock = clock
        self.store, self.calls, self.policy = store, list(calls), policy
        self.paid: list[tuple[str, Any]] = []
        self.looked: list[str] = []
        self.frames: list[dict[str, Any]] = []
        self.schema = schema
        self.seen: list[pai.ModelMessage] = []
        self.beam = self._beam()

    def agent(self) -> Agent[None, str]:
        agent: Agent[None, str] = Agent(FunctionModel(stream_function=self._model), name="desk")

        if self.schema == "int":

            @agent.tool_plain(requires_approval=True)
            def pay(to: str, amount: int) -> str:
                """Pay `amount` to `to`."""
                self.paid.append((to, amount))
                return f"paid {amount} to {to}"

        else:  # the same tool, another input schema (a deploy changed it)

            @agent.tool_plain(requires_approval=True)
            def pay(to: str, amount: float, memo: str = "") -> str:
                """Pay `amount` to `to`."""
                self.paid.append((to, amount))
                return f"paid {amount} to {to}"

        @agent.tool
        def refund(ctx: RunContext[None], amount: int) -> str:
            """Refund `amount`: over 100 asks, as the framework's own conditional approval does."""
            if amount > 100 and not ctx.tool_call_approved:
                raise ApprovalRequired()
            self.paid.append(("refund", amount))
            return f"refunded {amount}"

        @agent.tool_plain
        def look_up(name: str) -> str:
            """Look a payee up."""
            self.looked.append(name)
            return BIG if name == "big" else f"{name} is a payee"

        return agent

    def runner(self) -> PydanticAIRunner:
        return PydanticAIRunner(self.agent())

    async def _model(
        self, messages: list[pai.ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        self.seen = list(messages)
        last = messages[-1].parts
        prompt = [p.content for p in last if isinstance(p, pai.UserPromptPart)]
        if prompt == ["recap"]:
            yield "recap: "
            yield " | ".join(s for s in _seen(messages) if s != "asked recap")
        elif prompt:
            for index, (name, args) in enumerate(self.calls):
                yield {index: DeltaToolCall(name=name, json_args=json.dumps(args))}
        else:
            yield "told "
            yield " | ".join(_told(messages))
