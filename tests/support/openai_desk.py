"""An OpenAI Agents SDK agent inside Riverbeam for the tests: a payments desk with two counted tools,
`pay(to, amount)` the SDK gates itself (`needs_approval=True`), `look_up(name)` it does not, and
`refund(amount)` a function of the user's gates where the amount is over 100; its model
is the SDK's offline `agents.testing.ScriptedModel` (streamed), answering from what it is given: a
person's message makes the calls it is scripted with, tool results get a reply saying what each told it
("pay({args}): paid 5 to bob | look_up(...): ..."), and "recap" gets a reply naming every earlier prompt,
call and tool result it was given (the conversation it sees)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from agents import Agent, Usage, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from beam_store import BeamStore
from riverbeam.frameworks import OpenAIAgentsRunner

from tests.support.framework_desk import DeskDriving

Call = tuple[str, dict[str, Any] | str]  # a tool and its args (a str: no JSON object)
# a tool output over DynamoDB's 400 KB item limit, not one repeated character
BIG = "".join(f"{i:07d} payee\n" for i in range(36_000))


def _args(item: dict[str, Any]) -> str:
    try:
        return str(json.dumps(json.loads(item["arguments"]), sort_keys=True))
    except ValueError:  # args that are no JSON: as the model sent them
        return str(item["arguments"])


def seen(items: list[Any]) -> list[str]:
    """What the model was given: each prompt, call, tool result and reply, in order."""
    found = []
    for item in items:
        if item.get("role") == "user":
            found.append(f"asked {item['content']}")
        elif item.get("role") == "assistant":
            found.append(f"said {item['content']}")
        elif item.get("type") == "function_call":
            found.append(f"called {item['name']}({_args(item)})")
        elif item.get("type") == "function_call_output":
            found.append(f"{_name(items, item['call_id'])}: {item['output']}")
    return found


def _name(items: list[Any], call_id: str) -> str:
    return next(i["name"] for i in items if i.get("type") == "function_call" and i["call_id"] == call_id)


def told(items: list[Any]) -> list[str]:
    """Each result of the model's last calls, with the args the model sees its call made with."""
    made = {i["call_id"]: i for i in items if i.get("type") == "function_call"}
    last = max(n for n, i in enumerate(items) if i.get("type") != "function_call_output")
    return [
        f"{made[i['call_id']]['name']}({_args(made[i['call_id']])}): {i['output']}"
        for i in items[last:]
        if i.get("type") == "function_call_output"
    ]


class Desk(DeskDriving):
    """The agent registered as "author" with `policy` (Cedar text) on a RiverBeam of `store`; `calls`
        are what its model calls on a person's message (`then`: what it calls next, once, on its first tool
    results). `reopened()`: the same agent (same counters) in a NEW
        RiverBeam on the same store, as another process would resume it."""

    def __init__(
        self,
        store: BeamStore,
        *calls: Call,
        policy: str | None = None,
        schema: str = "int",
        clock: Callable[[], datetime] | None = None,
        then: Sequence[Call] = (),
    ) -> None:
        self.store, self.calls, self.policy, self.schema, self.clock = (
            store,
            list(calls),
            policy,
            schema,
            clock,
        )
        self.paid: list[tuple[str, Any]] = []
        self.looked: list[str] = []
        self.frames: list[dict[str, Any]] = []
        self.given: list[Any] = []  # what the model was given on its last call
        self.made = 0
        self.then = list(then)  # the calls it makes once, on its first tool results, before it replies
        self.beam = self._beam()

    def agent(self) -> Agent[Any]:
        def paid(to: str, amount: Any) -> str:
            self.paid.append((to, amount))
            return f"paid {amount} to {to}"

        if self.schema == "int":

            @function_tool(needs_approval=True)
            def pay(to: str, amount: int) -> str:
                """Pay `amount` to `to`."""
                return paid(to, amount)

        else:  # the same tool, another input schema (a deploy changed it)

            @function_tool(needs_approval=True)
            def pay(to: str, amount: float, memo: str = "") -> str:
                """Pay `amount` to `to`."""
                return paid(to, amount)

        @function_tool
        def look_up(name: str) -> str:
            """Look a payee up."""
            self.looked.append(name)
            return BIG if name == "big" else f"{name} is a payee"

        async def large(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
            return bool(params.get("amount", 0) > 100)  # the user's own mark: large refunds only

        @function_tool(needs_approval=large)
        def refund(amount: int) -> str:
            """Refund `amount`."""
            self.paid.append(("refund", amount))
            return f"refunded {amount}"

        model = ScriptedModel([ModelStep.respond(self._model)] * 50)
        return Agent(name="desk", model=model, tools=[pay, look_up, refund])

    def runner(self) -> OpenAIAgentsRunner:
        return OpenAIAgentsRunner(self.agent())

    def _model(self, call: ModelCall) -> ModelStep:
        """Each reply uses 10 input tokens and 2 output tokens (the run's usage counts them)."""
        return ModelStep(output=self._reply(call), usage=Usage(requests=1, input_tokens=10, output_tokens=2))

    def _reply(self, call: ModelCall) -> list[Any]:
        raw = [call.input] if isinstance(call.input, str) else list(call.input)
        items: list[dict[str, Any]] = [
            {"role": "user", "content": i} if isinstance(i, str) else dict(i) for i in raw
        ]
        self.given = items
        last = items[-1]
        if last.get("role") == "user" and last["content"] == "recap":
            return [assistant_message("recap: " + " | ".join(s for s in seen(items) if s != "asked recap"))]
        if last.get("role") == "user":
            self.made += 1
            return [
                function_call(name, args, call_id=f"call-{self.made}-{n}")
                for n, (name, args) in enumerate(self.calls)
            ]
        if self.then:
            made, self.then = self.then, []
            return [function_call(name, args, call_id=f"then-{n}") for n, (name, args) in enumerate(made)]
        return [assistant_message("told " + " | ".join(told(items)))]
