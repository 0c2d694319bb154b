"""`riverbeam chat`: talk to an agent of a running stack and answer its approvals, over the HTTP API and the
session's WebSocket. Input is read with prompt_toolkit only while a prompt is open; output is written with
rich only while none is. Keys typed before an approval question are discarded, never taken as its answer."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import signal
import sys
import termios
import uuid
from collections.abc import Coroutine, Iterator
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.input import Input, create_input
from prompt_toolkit.input.typeahead import clear_typeahead
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from ..display import hidden_warning, visible
from .approver_commands import add_group_option
from .chat_commands import revoke, show_grants, show_help
from .client import ApiClient, ApiError, ClientError, Json, response
from .options import add_connection_options, api_client, url_problem
from .subscription import Subscription
from .view import View, compact

PROMPT = "you      > "
QUIT = {"/quit", "/exit"}
# a line that is one word after a slash is a command (a path such as /etc/hosts is a message), and so is
# a line starting with a command that takes a word after it (`/revoke 2`)
COMMAND_WORD = re.compile(r"/[A-Za-z][\w-]*")
TAKES_A_WORD = {"/revoke"}
# the answers to an approval question that grant: `a` the tool with any args, `A` exactly these args
GRANTS = {"a": "tool", "always": "tool", "A": "args"}


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="riverbeam chat",
        description="Talk to an agent of a running stack (riverbeam dev) and answer its approvals.",
    )
    add_connection_options(found)
    which = found.add_mutually_exclusive_group()
    which.add_argument("--session", help="a session of yours to take up again (default: a new one)")
    which.add_argument("--new-session", metavar="ID", help="start a new session with this id")
    found.add_argument("--agent", default="author", help="the agent to talk to (default: %(default)s)")
    found.add_argument(
        "--approver",
        action="store_true",
        help="answer the approvals you may answer in any session (your inbox), one after another",
    )
    add_group_option(found)
    return found


def discard_typeahead(source: Input) -> None:
    """Drop every key typed so far: the ones prompt_toolkit read but left unused after the last prompt,
    and the ones still waiting in the terminal."""
    clear_typeahead(source)
    with contextlib.suppress(OSError, ValueError, termios.error):
        if sys.stdin.isatty():
            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)


def _bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        """Ctrl-C clears the line; on an empty line it leaves the prompt."""
        if event.app.current_buffer.text:
            event.app.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    return bindings


@contextlib.contextmanager
def _sigint_cancels(task: asyncio.Task[Any]) -> Iterator[None]:
    """While output streams (no prompt open), Ctrl-C stops following the run instead of the program."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    except (NotImplementedError, RuntimeError):
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


class Chat:
    def __init__(
        self, api: ApiClient, session_id: str, agent: str, view: View, *, resumed: bool = False
    ) -> None:
        self.api = api
        self.resumed = resumed  # a session given by --session: its last turns and pending approvals first
        self.session_id = session_id
        self.agent = agent
        self.view = view
        self.subscription = Subscription(api, session_id, notice=self.notice)
        self.input = create_input()
        bindings = _bindings()
        self.lines: PromptSession[str] = PromptSession(input=self.input, key_bindings=bindings)
        self.answers: PromptSession[str] = PromptSession(input=self.input, key_bindings=bindings)
        self.prompting = False
        self._notices: list[str] = []

    def notice(self, text: str) -> None:
        if self.prompting:
            self._notices.append(text)  # said once the prompt is closed
        else:
            self.view.line("note", text)

    async def ask(self, session: PromptSession[str], message: str) -> str:
        self.prompting = True
        try:
            return await session.prompt_async(message)
        finally:
            self.prompting = False
            for text in self._notices:
                self.view.line("note", text)
            self._notices.clear()

    async def run(self) -> int:
        await self.subscription.start()
        self.view.line("session", f"{self.session_id} as {self.api.user} on {self.api.url} (/quit leaves)")
        try:
            if self.resumed:
                from .chat_history import take_up

                await take_up(self)
            while True:
                try:
                    text = (await self.ask(self.lines, PROMPT)).strip()
                except (EOFError, KeyboardInterrupt):
                    return 0
                if text in QUIT:
                    return 0
                word, _, rest = text.partition(" ")
                if COMMAND_WORD.fullmatch(text) or word in TAKES_A_WORD:
                    await self.command(word, rest.strip())
                elif text:
                    await self.turn(text.removeprefix("/") if text.startswith("//") else text)
        finally:
            await self.subscription.close()

    async def command(self, word: str, rest: str = "") -> None:
        """One of the chat's own commands, answered here: nothing is sent to the agent."""
        try:
            if word == "/help":
                show_help(self.view)
            elif word == "/grants":
                await asyncio.to_thread(show_grants, self.api, self.session_id, self.view)
            elif word == "/revoke":
                await asyncio.to_thread(revoke, self.api, self.session_id, rest, self.view)
            else:
                self.view.line(
                    "note", f"{word} is not a command of the chat (/help lists them); nothing was sent"
                )
        except ClientError as error:
            self.view.line("error", error.line())

    async def turn(self, text: str) -> None:
        """One line typed: invoke, show the run, and answer its approvals until the agent is done. Ctrl-C
        while the agent works stops waiting for it (the run goes on on the server)."""
        try:
            result = await self.interruptible(self._invoke(text))
            while result and result.get("interrupted") and result.get("action_required"):
                responses = await self.answer(result["action_required"])
                if responses is None:
                    return
                result = await self.interruptible(self._resume(result, responses))
        except ClientError as error:
            self.view.line("error", error.line())

    async def interruptible(self, work: Coroutine[Any, Any, Json]) -> Json | None:
        """`work`'s Result, or None when Ctrl-C stopped it (no prompt is open meanwhile)."""
        task = asyncio.create_task(work)
        with _sigint_cancels(task):
            try:
                return await task
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise
                self.view.line("note", "stopped waiting (the run goes on on the server)")
                return None

    async def _invoke(self, text: str) -> Json:
        ack = await asyncio.to_thread(self.api.invoke, text, session_id=self.session_id, agent=self.agent)
        return await self._frames(ack["run_id"])

    async def _resume(self, result: Json, responses: list[Json]) -> Json:
        ack = await asyncio.to_thread(self.api.resume, result, responses)
        if "pending" in ack:  # votes short of the actions' quorum: nothing runs until others approve
            for waiting in ack["pending"]:
                votes, required = len(waiting["votes"]), waiting["required"]
                recorded = f"your vote is recorded ({votes} of {required} approvals)"
                self.view.line("note", f"{recorded}: it runs once the others approve")
            return {}
        return await self._frames(ack["run_id"])

    async def _frames(self, run_id: str) -> Json:
        """The run's frames as they come; its Result."""
        result: Json = {}
        try:
            async for frame in self.subscription.follow(run_id):
                self.view.frame(frame, self.agent)
                if frame["type"] == "done":
                    result = frame.get("result") or {}
        finally:
            self.view.settle()
        return result

    async def answer(self, actions: list[Json]) -> list[Json] | None:
        """Ask about each action; None when the person left the question unanswered (Ctrl-C)."""
        responses = []
        for action in actions:
            self.view.end_text()
            discard_typeahead(self.input)
            warning = hidden_warning(action["args"])
            if warning:  # said right above the question, whose args show them escaped
                self.view.line("warning", warning)
            # `a` and `A` approve and grant: the owner's, where the tool may be granted
            owner = self.api.is_me(action.get("user_id", self.api.user))
            grantable = owner and action.get("grantable") is True
            tool = visible(str(action["tool"]))
            choices = (
                f"[y/N/a] (a: allow {tool} for this session, any args; A: only these args)"
                if grantable
                else "[y/N]"
            )
            question = f"Approve {tool} {compact(action['args'])}? {choices} "
            try:
                said = (await self.ask(self.answers, question)).strip()
                grant = GRANTS.get(said if said == "A" else said.lower()) if grantable else None
                approve = grant is not None or said.lower() in ("y", "yes")
                reason = None if approve else (await self.ask(self.answers, "Reason (optional): ")).strip()
            except (KeyboardInterrupt, EOFError) as left:
                self.view.line("note", f"not answered: action {action['action_id']} stays pending")
                if isinstance(left, EOFError):
                    raise
                return None
            said_as = f"{action['tool']}" + (f": {reason}" if reason else "")
            granted = {"tool": " (always, here)", "args": " (always with these args, here)"}
            self.view.line("approved" if approve else "rejected", said_as + granted.get(grant or "", ""))
            responses.append(response(action, approve, reason or None, grant=grant))
        return responses


def agent_problem(api: ApiClient, agent: str) -> str | None:
    """Why `agent` cannot be talked to (no such agent on the stack), or None. The API lists no agents: a
    resume of no interaction is refused with BEM-021 for an unknown agent before anything else of it is
    read, and changes nothing either way (CONTRACT 5: the agent is checked before the session)."""
    probe = {
        "agent_name": agent,
        "session_id": str(uuid.uuid4()),
        "interaction_id": str(uuid.uuid4()),
        "actions": [],
        "auth_context": {"user_id": api.user},
    }
    try:
        api.request("POST", "/resume", probe)
    except ApiError as error:
        if error.code == "BEM-021":
            return f"no agent {visible(repr(agent[:100]))} on {api.url} (--agent names one of its agents)"
    return None


def start_problem(api: ApiClient, args: argparse.Namespace) -> str | None:
    """Why the chat cannot start as asked (no such agent, a session given that does not exist, or one
    given as new that does), in one line; None when it can."""
    problem = agent_problem(api, args.agent)
    if problem:
        return problem
    session_id = args.session or args.new_session
    if session_id is None:
        return None
    try:
        api.get("session", session_id)
    except ApiError as error:
        if error.status != 404:
            raise
        if args.session:
            shown = visible(session_id[:100])
            return f"no session {shown} of yours (leave out --session to start a new one)"
        return None
    if args.new_session:
        return f"session {visible(session_id[:100])} exists already (take it up with --session)"
    return None


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    problem = url_problem(args.url)
    if problem:
        print(f"riverbeam chat: {problem}", file=sys.stderr)
        return 2
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("riverbeam chat: needs a terminal (scripts use riverbeam invoke and resume)", file=sys.stderr)
        return 2
    session_id = args.session or args.new_session or str(uuid.uuid4())
    try:
        api = api_client(args, tuple(args.group))
        chat = Chat(api, session_id, args.agent, View(), resumed=args.session is not None)
        problem = None if args.approver else start_problem(api, args)
        if problem:
            print(f"riverbeam chat: {problem}", file=sys.stderr)
            return 1
        if args.approver:
            from .approver_chat import answer_inbox

            return asyncio.run(answer_inbox(chat))
        return asyncio.run(chat.run())
    except ClientError as error:
        print(f"riverbeam chat: {visible(error.line())}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, EOFError):
        return 0
