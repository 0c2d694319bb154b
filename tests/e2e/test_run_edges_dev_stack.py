"""A run's edges through `riverbeam dev` with an agents file naming tools of the user's own (a child process
on 127.0.0.1, its HTTP API): a model's call whose args nest ~300 deep or are too large is refused as the
model's malformed call and its run completes; a resume whose args nest too deep is 400 naming the field and
resolves nothing; a tool that raises SystemExit or KeyboardInterrupt fails alone (BEM-331 on its tool
message and its Action) and the stack goes on."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from riverbeam_local.clients.dev_process import DevProcess

from tests.support.devstack import ended_run, http, running_with_agents

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TOOLS = '''
from typing import Any

from riverbeam import tool


@tool(confirm_required=True)
def store_doc(doc: dict[str, Any]) -> str:
    """Store a document, once a person approves."""
    return "stored"


@tool
def stop_now(how: str) -> str:
    """A tool that ends its process the way a careless script does."""
    if how == "exit":
        raise SystemExit(3)
    raise KeyboardInterrupt


@tool(confirm_required=True)
def halt(code: int) -> str:
    """Ask first, then exit."""
    raise SystemExit(code)
'''

AGENTS = """
agents:
  keeper:
    tools: ["edge_tools:store_doc", "edge_tools:stop_now", "edge_tools:halt"]
"""
USER = "u1"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    folder = tmp_path_factory.mktemp("edges")
    (folder / "agent_code").mkdir()
    (folder / "agent_code" / "edge_tools.py").write_text(TOOLS, encoding="utf-8")
    with running_with_agents(folder, AGENTS) as process:
        yield process
    assert "Traceback" not in process.stderr_text(), process.stderr_text()


def nested(depth: int) -> dict[str, Any]:
    """An object `depth` levels deep: {"a": {"a": ... {}}}."""
    doc: dict[str, Any] = {}
    for _ in range(depth - 1):
        doc = {"a": doc}
    return doc


def invoke(dev: DevProcess, session_id: str, text: str, *, stream: bool = False) -> tuple[int, Any]:
    body = {
        "agent_name": "keeper",
        "session_id": session_id,
        "content": [{"type": "text", "text": text}],
        "stream": stream,
        "auth_context": {"user_id": USER},
    }
    return http(dev, "POST", "/invoke", body)


def get(dev: DevProcess, path: str) -> Any:
    status, found = http(dev, "GET", f"{path}{'&' if '?' in path else '?'}user_id={USER}")
    assert status == 200, (path, found)
    return found


def tool_results(dev: DevProcess, session_id: str) -> list[dict[str, Any]]:
    messages = get(dev, f"/sessions/{session_id}/messages")["messages"]
    return [p for m in messages if m["role"] == "tool" for p in m["content"] if p["type"] == "tool_result"]


@pytest.mark.parametrize(
    ("args", "code"),
    # 140: past Cedar's JSON (128 levels); 300: past pydantic's serializer (about 255) and the store
    [
        ({"doc": nested(140)}, "BEM-045"),
        ({"doc": nested(300)}, "BEM-045"),
        ({"doc": {"text": "x" * (70 * 1024)}}, "BEM-046"),
    ],
    ids=["nested-140-deep", "nested-300-deep", "over-64-KiB"],
)
def test_a_call_whose_args_are_out_of_bounds_is_refused_and_its_run_completes(
    dev: DevProcess, args: dict[str, Any], code: str
) -> None:
    session_id = str(uuid.uuid4())
    status, ack = invoke(dev, session_id, f"call store_doc {json.dumps(args)}", stream=True)
    assert status == 202, ack
    run = ended_run(dev, ack["run_id"])
    assert (run["status"], run["error"]) == ("completed", None)

    [result] = tool_results(dev, session_id)
    assert result["status"] == "error" and result["error"]["code"] == code, result
    assert "args" in result["error"]["message"]
    assert get(dev, f"/sessions/{session_id}/actions?status=pending")["actions"] == []
    frames = get(dev, f"/runs/{ack['run_id']}/frames")["frames"]
    [told] = [f for f in frames if f["type"] == "tool_result"]
    assert told["status"] == "error" and told["error"]["code"] == code
    assert frames[-1]["type"] == "done" and not frames[-1]["result"]["interrupted"]


@pytest.mark.parametrize("where", ["edited_args", "payload"])
def test_a_resume_whose_args_nest_too_deep_is_400_naming_the_field_and_resolves_nothing(
    dev: DevProcess, where: str
) -> None:
    session_id = str(uuid.uuid4())
    status, asked = invoke(dev, session_id, 'call store_doc {"doc": {"title": "notes"}}')
    assert status == 200 and asked["interrupted"], asked
    [action] = asked["action_required"]
    response: dict[str, Any] = {"action_id": action["action_id"], "status": "submitted"}
    if where == "edited_args":
        response["edited_args"] = {"doc": nested(300)}
    else:
        response["payload"] = {"tool": "store_doc", "args": {"doc": nested(300)}}
    resume = {
        "agent_name": "keeper",
        "session_id": session_id,
        "interaction_id": asked["interaction_id"],
        "actions": [response],
        "auth_context": {"user_id": USER},
    }
    status, refused = http(dev, "POST", "/resume", resume)
    field = "actions.0.edited_args" if where == "edited_args" else "actions.0.payload.args"
    assert status == 400 and refused["error"]["code"] == "BEM-045", refused
    assert field in refused["error"]["message"]
    assert get(dev, f"/actions/{action['action_id']}")["status"] == "pending"


def test_a_tool_that_raises_systemexit_or_keyboardinterrupt_fails_alone(dev: DevProcess) -> None:
    for how in ("exit", "interrupt"):
        session_id = str(uuid.uuid4())
        status, result = invoke(dev, session_id, f'call stop_now {{"how": "{how}"}}')
        assert status == 200 and not result["interrupted"], result
        assert ended_run(dev, result["run_id"])["status"] == "completed"
        [told] = tool_results(dev, session_id)
        assert told["status"] == "error" and told["error"]["code"] == "BEM-331", told
        expected = "SystemExit" if how == "exit" else "KeyboardInterrupt"
        assert expected in told["error"]["message"]


def test_an_approved_tool_that_exits_keeps_its_failure_on_its_action(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    status, asked = invoke(dev, session_id, 'call halt {"code": 4}')
    assert status == 200 and asked["interrupted"], asked
    [action] = asked["action_required"]
    resume = {
        "agent_name": "keeper",
        "session_id": session_id,
        "interaction_id": asked["interaction_id"],
        "actions": [{"action_id": action["action_id"], "kind": "confirmation", "status": "submitted"}],
        "auth_context": {"user_id": USER},
    }
    status, ack = http(dev, "POST", "/resume", resume)
    assert status == 202, ack
    run = ended_run(dev, ack["run_id"])
    assert (run["status"], run["error"]) == ("completed", None), run
    stored = get(dev, f"/actions/{action['action_id']}")
    assert stored["status"] == "resolved" and stored["outcome"]["status"] == "error", stored
    assert stored["outcome"]["error"]["code"] == "BEM-331"
    assert "SystemExit" in stored["outcome"]["error"]["message"]
    # the stack still answers: its worker did not die with the tool
    status, after = invoke(dev, str(uuid.uuid4()), "hello")
    assert status == 200 and after["content"], after
