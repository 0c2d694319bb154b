"""The local stack's door end to end: `riverbeam dev` as a child process, HTTP and WebSocket clients on
127.0.0.1 that send the stack's secret or not, from its origin or another, and the records read back with the
secret to see that a refused request wrote nothing."""

from __future__ import annotations

import asyncio
import json
import stat
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from riverbeam_local.clients.dev_process import DevProcess, running, start
from riverbeam_local.stack_secret import page_url
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.support.devstack import TIMEOUT_SECONDS, aws_env, http, secret_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

USER = "door-user"
# an empty RIVERBEAM_DEV_SECRET is none: the stack makes its own whatever this machine's environment says
OWN_SECRET = {"RIVERBEAM_DEV_SECRET": ""}


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    with running(tmp_path_factory.mktemp("door"), env=OWN_SECRET) as process:
        yield process


def invoke_body(session_id: str, text: str = "Hello") -> dict[str, Any]:
    return {
        "agent_name": "author",
        "session_id": session_id,
        "content": [{"type": "text", "text": text}],
        "auth_context": {"user_id": USER},
    }


def refusal(answer: tuple[int, Any]) -> tuple[int, str]:
    """A refusal's status and code, once its body is checked to be the error JSON."""
    status, body = answer
    error = body["error"]
    assert set(error) == {"code", "message", "request_id"} and error["request_id"], body
    return status, str(error["code"])


def session_exists(dev: DevProcess, session_id: str) -> bool:
    status, body = http(dev, "GET", f"/sessions/{session_id}?user_id={USER}")
    assert status in (200, 404), body
    return status == 200


def socket_status(url: str, origin: str | None = None) -> int:
    """101 when the handshake succeeds, else the status it was refused with."""

    async def knock() -> int:
        try:
            socket = await asyncio.wait_for(connect(url, origin=origin, open_timeout=None), TIMEOUT_SECONDS)  # type: ignore[arg-type]
        except InvalidStatus as refused:
            body = json.loads(refused.response.body or b"{}")
            assert body["error"]["code"].startswith("BEM-"), body
            return int(refused.response.status_code)
        await socket.close()
        return 101

    return asyncio.run(knock())


# ---------------------------------------------------------------------------- the secret


def test_the_page_url_carries_the_data_dirs_secret_kept_for_its_owner_alone(dev: DevProcess) -> None:
    secret_file = dev.data_dir / "secret"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    secret = secret_file.read_text().strip()
    port = dev.http_url.rsplit(":", 1)[1]
    assert dev.urls["Inbox page"] == page_url(f"http://127.0.0.1:{port}/", secret)
    assert secret not in dev.stderr_text()  # the log never has it


@pytest.mark.parametrize("authorization", [None, "Bearer not-the-secret-0123456789", "Basic dTpw"])
def test_an_invoke_without_the_secret_is_401_and_writes_nothing(
    dev: DevProcess, authorization: str | None
) -> None:
    session_id = str(uuid.uuid4())
    answer = http(dev, "POST", "/invoke", invoke_body(session_id), headers={"authorization": authorization})
    assert refusal(answer) == (401, "BEM-033")
    assert not session_exists(dev, session_id)


def test_a_read_without_the_secret_is_401(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    assert http(dev, "POST", "/invoke", invoke_body(session_id))[0] == 200
    answer = http(dev, "GET", f"/sessions/{session_id}?user_id={USER}", headers={"authorization": None})
    assert refusal(answer) == (401, "BEM-033")
    assert "user_id" not in json.dumps(answer[1])  # nothing of the record


def test_the_secret_lets_an_invoke_in(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    status, result = http(dev, "POST", "/invoke", invoke_body(session_id))
    assert status == 200 and result["content"][0]["text"], result
    assert session_exists(dev, session_id)


def test_the_open_routes_need_no_secret(dev: DevProcess) -> None:
    assert http(dev, "GET", "/openapi.json", headers={"authorization": None})[0] == 200
    client = boto3.client(
        "apigatewaymanagementapi",
        endpoint_url=dev.http_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    with pytest.raises(client.exceptions.GoneException):  # answered by the management API, not the door
        client.post_to_connection(ConnectionId="bm90LWEtY29ubmVjdGlvbg==", Data=b"{}")


# ---------------------------------------------------------------------------- origin, host, body


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:1"])
def test_another_origin_is_refused_even_with_the_secret(dev: DevProcess, origin: str) -> None:
    session_id = str(uuid.uuid4())
    answer = http(dev, "POST", "/invoke", invoke_body(session_id), headers={"origin": origin})
    assert refusal(answer) == (403, "BEM-034")
    assert not session_exists(dev, session_id)


def test_the_stacks_own_origin_is_let_in(dev: DevProcess) -> None:
    session_id = str(uuid.uuid4())
    status, _ = http(dev, "POST", "/invoke", invoke_body(session_id), headers={"origin": dev.http_url})
    assert status == 200 and session_exists(dev, session_id)


@pytest.mark.parametrize("host", ["evil.example", "rebound.example:{port}", "127.0.0.1:1"])
def test_another_host_is_403_and_writes_nothing(dev: DevProcess, host: str) -> None:
    session_id = str(uuid.uuid4())
    named = host.format(port=dev.http_url.rsplit(":", 1)[1])
    answer = http(dev, "POST", "/invoke", invoke_body(session_id), headers={"host": named})
    assert refusal(answer) == (403, "BEM-034")
    assert not session_exists(dev, session_id)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_not_sent_as_json_is_415_and_writes_nothing(dev: DevProcess, content_type: str | None) -> None:
    session_id = str(uuid.uuid4())
    answer = http(dev, "POST", "/invoke", invoke_body(session_id), headers={"content-type": content_type})
    assert refusal(answer) == (415, "BEM-003")
    assert not session_exists(dev, session_id)


# ---------------------------------------------------------------------------- the WebSocket


def test_a_subscription_needs_the_secret_and_the_stacks_origin(dev: DevProcess) -> None:
    url = f"{dev.websocket_url}?session_id={uuid.uuid4()}&user_id={USER}"
    assert socket_status(url) == 401
    assert socket_status(url + "&secret=not-the-secret-0123456789") == 401
    with_secret = f"{url}&secret={secret_of(dev)}"
    assert socket_status(with_secret, origin="http://evil.example") == 403
    assert socket_status(with_secret, origin=dev.http_url) == 101
    assert socket_status(with_secret) == 101


# ---------------------------------------------------------------------------- the embedded AWS endpoints


def embedded(dev: DevProcess, method: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    url = dev.urls["DynamoDB"].removesuffix(" (embedded)")
    request = urllib.request.Request(url + "/", data=b"{}", method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


SCAN = {
    "content-type": "application/x-amz-json-1.0",
    "x-amz-target": "DynamoDB_20120810.Scan",
    "authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=host, Signature=0",
}


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("OPTIONS", {"origin": "http://evil.example", "access-control-request-method": "POST"}),
        ("POST", {**SCAN, "origin": "http://evil.example"}),
    ],
)
def test_the_embedded_endpoint_answers_no_page(dev: DevProcess, method: str, headers: dict[str, str]) -> None:
    status, answered, body = embedded(dev, method, headers)
    assert status == 403 and b"Items" not in body
    assert not [name for name in answered if name.lower().startswith("access-control-")], answered


def test_the_embedded_endpoint_still_answers_an_sdk(dev: DevProcess) -> None:
    # a request as the SDK sends it, signed with the stack's key (the env file the banner names): answered,
    # and with no CORS
    url = dev.urls["DynamoDB"].removesuffix(" (embedded)") + "/"
    exported = aws_env(dev)
    request = AWSRequest(
        "POST", url, data=b"{}", headers={**SCAN, "x-amz-target": "DynamoDB_20120810.ListTables"}
    )
    del request.headers["authorization"]
    credentials = Credentials(exported["AWS_ACCESS_KEY_ID"], exported["AWS_SECRET_ACCESS_KEY"])
    SigV4Auth(credentials, "dynamodb", exported["AWS_REGION"]).add_auth(request)
    status, answered, body = embedded(dev, "POST", dict(request.headers.items()))
    assert status == 200 and "riverbeam-local" in json.loads(body)["TableNames"]
    assert not [name for name in answered if name.lower().startswith("access-control-")], answered


# ---------------------------------------------------------------------------- restarts and the variable


def test_the_secret_survives_a_restart_and_the_variable_wins(tmp_path: Path) -> None:
    chosen = "chosen-by-the-developer-0123456789"
    with running(tmp_path, env=OWN_SECRET) as first:
        made = secret_of(first)
        session_id = str(uuid.uuid4())
        assert http(first, "POST", "/invoke", invoke_body(session_id))[0] == 200
    with running(tmp_path, env={"RIVERBEAM_DEV_SECRET": chosen}) as chosen_by_variable:
        assert secret_of(chosen_by_variable) == chosen
        old = {"authorization": f"Bearer {made}"}
        assert refusal(
            http(chosen_by_variable, "GET", f"/sessions/{session_id}?user_id={USER}", headers=old)
        ) == (
            401,
            "BEM-033",
        )
        assert session_exists(chosen_by_variable, session_id)
    assert (tmp_path / "secret").read_text().strip() == made  # the variable's is never written
    again = start(tmp_path, env=OWN_SECRET)
    try:
        assert secret_of(again) == made
        assert stat.S_IMODE((tmp_path / "secret").stat().st_mode) == 0o600
        assert session_exists(again, session_id)
    finally:
        assert again.stop() == 0


def test_an_unusable_variable_is_one_line_and_exit_2(tmp_path: Path) -> None:
    dev = None
    with pytest.raises(RuntimeError) as failed:
        dev = start(tmp_path, env={"RIVERBEAM_DEV_SECRET": "short"})
    assert dev is None
    message = str(failed.value)
    assert "(exit 2)" in message and "RIVERBEAM_DEV_SECRET is not a usable secret" in message, message
    assert "Traceback" not in message


def test_the_approvals_and_grants_routes_are_behind_the_door(dev: DevProcess) -> None:
    """The approver's inbox and a session's grants need the secret, and another page's origin cannot revoke
    a grant even with it: the grant is still there after each refused request."""
    session_id = str(uuid.uuid4())
    status, result = http(dev, "POST", "/invoke", invoke_body(session_id, "Push docs/update"))
    assert status == 200 and result["interrupted"] is True, result
    (action,) = result["action_required"]
    answer = {
        "action_id": action["action_id"],
        "kind": "confirmation",
        "request_id": str(uuid.uuid4()),
        "status": "submitted",
        "payload": {"tool": action["tool"], "args": action["args"]},
        "grant": "tool",
    }
    body = {**{k: result[k] for k in ("agent_name", "session_id", "interaction_id")}, "actions": [answer]}
    status, ack = http(dev, "POST", "/resume", {**body, "auth_context": {"user_id": USER}})
    assert status == 202, ack
    grants = f"/sessions/{session_id}/grants"
    status, listed = http(dev, "GET", f"{grants}?user_id={USER}")
    assert status == 200 and len(listed["grants"]) == 1, listed
    revoke = f"{grants}/{listed['grants'][0]['grant_id']}?user_id={USER}"

    no_secret = {"authorization": None}
    assert refusal(http(dev, "GET", f"/approvals?user_id={USER}", headers=no_secret)) == (401, "BEM-033")
    assert refusal(http(dev, "GET", f"{grants}?user_id={USER}", headers=no_secret)) == (401, "BEM-033")
    assert refusal(http(dev, "DELETE", revoke, headers=no_secret)) == (401, "BEM-033")
    evil = {"origin": "http://evil.example"}
    assert refusal(http(dev, "DELETE", revoke, headers=evil)) == (403, "BEM-034")
    assert http(dev, "GET", f"{grants}?user_id={USER}") == (200, listed)
