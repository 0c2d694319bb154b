"""The deployment's agents from agents.yaml (RIVERBEAM_AGENTS_FILE), through the handlers on moto: on
Bedrock by default, on the offline model with RIVERBEAM_MODEL=offline."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from riverbeam.bedrock import BedrockConverseModel

from tests.support.bedrock import MODEL, Bedrock, text_events
from tests.support.lambda_stack import http_event, lambda_stack

AGENTS = f"""
agents:
  author:
    model_id: {MODEL}
    system: You push branches, briefly.
    inference: {{maxTokens: 300}}
    tools: [git_push, list_files]
  reader:
    tools: [list_files, read_file]
"""


def agents_file(tmp_path: Path) -> str:
    path = tmp_path / "agents.yaml"
    path.write_text(AGENTS)
    return str(path)


def invoke(agent: str, text: str) -> dict[str, Any]:
    return {
        "agent_name": agent,
        "session_id": str(uuid.uuid4()),
        "content": [{"type": "text", "text": text}],
        "auth_context": {"user_id": "u1"},
    }


def test_configured_agents_run_on_bedrock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bedrock = Bedrock()
    bedrock.answer(text_events("Hello from ", "Bedrock."))
    # the model's own client, made on first use in the deployment, is the stubbed one here
    monkeypatch.setattr(BedrockConverseModel, "client", property(lambda _: bedrock.client))
    with lambda_stack(tmp_path, RIVERBEAM_AGENTS_FILE=agents_file(tmp_path)) as stack:
        answer = stack.call("invoke", http_event("invoke/http", body=invoke("author", "Hello")))
    assert answer["statusCode"] == 200, answer["body"]
    assert json.loads(answer["body"])["content"] == [{"type": "text", "text": "Hello from Bedrock."}]
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    emitted = {k: v for m in metrics for k, v in m.items() if k.endswith("Tokens")}
    assert emitted["InputTokens"] == [12.0] and emitted["OutputTokens"] == [5.0], metrics
    (request,) = bedrock.requests
    assert request["modelId"] == MODEL and request["system"] == [{"text": "You push branches, briefly."}]
    assert {t["toolSpec"]["name"] for t in request["toolConfig"]["tools"]} == {"git_push", "list_files"}


def test_offline_keeps_the_offline_models(tmp_path: Path) -> None:
    env = {"RIVERBEAM_AGENTS_FILE": agents_file(tmp_path), "RIVERBEAM_MODEL": "offline"}
    with lambda_stack(tmp_path, **env) as stack:
        pushed = stack.call("invoke", http_event("invoke/http", body=invoke("author", "Push docs/update")))
        other = stack.call("invoke", http_event("invoke/http", body=invoke("reader", "Hello")))
    result = json.loads(pushed["body"])
    assert result["interrupted"] and result["action_required"][0]["args"] == {"ref": "docs/update"}
    assert other["statusCode"] == 200 and json.loads(other["body"])["content"][0]["text"]


def test_a_broken_agents_file_fails_requests_without_telling_why(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text("agents:\n  author:\n    tools: [rm_rf]\n")
    with lambda_stack(tmp_path, RIVERBEAM_AGENTS_FILE=str(path), RIVERBEAM_MODEL="offline") as stack:
        answer = stack.call("invoke", http_event("invoke/http", body=invoke("author", "Hello")))
    assert answer["statusCode"] == 500
    assert json.loads(answer["body"])["error"]["code"] == "BEM-500" and "rm_rf" not in answer["body"]
