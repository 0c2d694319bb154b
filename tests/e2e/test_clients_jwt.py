"""Every client against `riverbeam dev --auth jwt` (CONTRACT 18): the stack's user pool in its embedded
server, `riverbeam dev add-user`, `riverbeam login` in a pseudo-terminal (the password never echoed, the
tokens file 0600, one entry per stack), then chat, invoke, resume, approvals, get, grants with the token
from the file, from --token and from RIVERBEAM_TOKEN, the WebSocket's `$connect` included; an expired, a
tampered or a lapsed token is one line saying what to do, exit 1, and an expired ID token in the file is
renewed with its refresh token."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pexpect
import pytest
from moto.utilities.utils import load_resource
from riverbeam_local.clients.dev_process import DevProcess, running

from tests.support.devstack import (
    TIMEOUT_SECONDS,
    assert_none_left,
    remote_refs,
    riverbeam,
    screen,
    secret_of,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
PASSWORD = "a long pass phrase"
PROMPT = screen("you      >")


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    data_dir = tmp_path_factory.mktemp("jwt")
    with running(data_dir, args=("--auth", "jwt")) as process:
        for name in ("ana", "bo"):
            added = riverbeam(
                "dev", "add-user", name, "--password", PASSWORD, "--group", "ops", "--data-dir", str(data_dir)
            )
            assert added.returncode == 0, added.stderr
        yield process
    assert_none_left(data_dir)


def login(dev: DevProcess, config: Path, user: str = "ana", password: str = PASSWORD) -> tuple[int, str]:
    """`riverbeam login` typed into a pseudo-terminal: its exit status and all it showed."""
    term = pexpect.spawn(
        sys.executable,
        ["-m", "riverbeam_local", "login", "--url", dev.http_url],
        env={**os.environ, "XDG_CONFIG_HOME": str(config)},
        encoding="utf-8",
        timeout=TIMEOUT_SECONDS,
    )
    term.expect("Username: ")
    term.sendline(user)
    term.expect("Password: ")
    term.sendline(password)
    term.expect(pexpect.EOF)
    term.close()
    return int(term.exitstatus or 0), str(term.before)


def run(dev: DevProcess, config: Path, *args: str, **env: str) -> tuple[int, str, str]:
    done = riverbeam(*args, "--url", dev.http_url, env={"XDG_CONFIG_HOME": str(config), **env})
    return done.returncode, done.stdout, done.stderr


def entry(config: Path, dev: DevProcess) -> dict[str, Any]:
    return json.loads((config / "riverbeam" / "tokens.json").read_text())[dev.http_url.rstrip("/")]  # type: ignore[no-any-return]


def claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))  # type: ignore[no-any-return]


def signed_like_moto(claims_: dict[str, Any]) -> str:
    """A token signed with the key moto's Cognito signs with (its JWKS the stack trusts)."""
    key = jwt.PyJWK(load_resource("cognitoidp/resources/jwks-private.json"))
    return jwt.encode(claims_, key.key, algorithm="RS256", headers={"kid": "dummy"})


@pytest.fixture
def signed_in(dev: DevProcess, tmp_path: Path) -> Path:
    config = tmp_path / "config"
    code, shown = login(dev, config)
    assert code == 0, shown
    return config


def test_login_asks_without_echo_and_keeps_the_tokens_for_the_user_alone(
    dev: DevProcess, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    code, shown = login(dev, config)
    assert code == 0, shown
    assert PASSWORD not in shown  # never echoed
    assert f"signed in to {dev.http_url.rstrip('/')} as ana" in shown
    path = config / "riverbeam" / "tokens.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    kept = entry(config, dev)
    assert claims(kept["id_token"])["cognito:username"] == "ana"
    assert claims(kept["id_token"])["token_use"] == "id"  # the ID token is what is sent
    assert kept["refresh_token"]
    # a wrong password: one line, exit 1, nothing kept changed
    code, shown = login(dev, config, password="not the password")
    assert code == 1 and "Traceback" not in shown and "NotAuthorized" in shown, shown
    assert entry(config, dev) == kept


def test_invoke_approvals_resume_and_get_with_the_tokens_file(dev: DevProcess, signed_in: Path) -> None:
    session_id = str(uuid.uuid4())
    code, out, err = run(
        dev, signed_in, "invoke", "-t", "Push docs/update", "--session", session_id, "--stream"
    )
    assert code == 0, err
    (action,) = json.loads(out.splitlines()[-1])["result"]["action_required"]  # over the WebSocket: $connect
    code, out, err = run(dev, signed_in, "approvals")
    assert code == 0, err
    assert action["action_id"] in {a["action_id"] for a in json.loads(out)["actions"]}
    code, out, err = run(dev, signed_in, "resume", "--approve", action["action_id"], "--grant", "tool")
    assert code == 0, err
    resumed = [json.loads(line) for line in out.splitlines()]
    assert [f["status"] for f in resumed if f["type"] == "tool_result"] == ["ok"]
    assert "refs/heads/docs/update" in remote_refs(dev.data_dir)
    code, out, err = run(dev, signed_in, "frames", resumed[0]["run_id"])
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == resumed, err
    code, out, err = run(dev, signed_in, "get", "session", session_id)
    assert code == 0, err
    assert json.loads(out)["user_id"] == "ana"  # cognito:username, whatever --user says
    code, out, err = run(dev, signed_in, "grants", session_id)
    (grant,) = json.loads(out)["grants"]
    code, out, err = run(dev, signed_in, "revoke", session_id, grant["grant_id"])
    assert (code, out) == (0, ""), err
    code, out, err = run(dev, signed_in, "grants", session_id)
    assert code == 0 and json.loads(out)["grants"] == [], err
    # another user's token reads none of it
    other = signed_in.parent / "bo"
    assert login(dev, other, "bo")[0] == 0
    code, out, err = run(dev, other, "get", "session", session_id)
    assert code == 1 and "BEM-020" in err, err  # not found: as if it were not there


def test_the_token_flag_and_variable_stand_in_for_the_file(
    dev: DevProcess, signed_in: Path, tmp_path: Path
) -> None:
    token = entry(signed_in, dev)["id_token"]
    empty = tmp_path / "nothing"
    code, out, err = run(dev, empty, "invoke", "-t", "Hello", "--token", token)
    assert code == 0, err
    session_id = json.loads(out)["session_id"]
    code, out, err = run(dev, empty, "get", "session", session_id, RIVERBEAM_TOKEN=token)
    assert code == 0 and json.loads(out)["user_id"] == "ana", err
    code, out, err = run(dev, empty, "invoke", "-t", "Hello", "--stream", RIVERBEAM_TOKEN=token)
    assert code == 0 and json.loads(out.splitlines()[-1])["type"] == "done", err
    # without any token the stack refuses, in one line
    said = one_line(*run(dev, empty, "approvals")[::2])
    assert "asks for a token" in said and f"riverbeam login --url {dev.http_url.rstrip('/')}" in said


def one_line(code: int, err: str) -> str:
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_an_expired_or_tampered_token_is_one_line_saying_what_to_do(dev: DevProcess, signed_in: Path) -> None:
    token = entry(signed_in, dev)["id_token"]
    expired = signed_like_moto({**claims(token), "exp": int(time.time()) - 60})
    login_hint = f"riverbeam login --url {dev.http_url.rstrip('/')}"
    for command in (["invoke", "-t", "Hello"], ["approvals"], ["resume", "--approve", str(uuid.uuid4())]):
        said = one_line(*run(dev, signed_in, *command, "--token", expired)[::2])
        assert "the token of --token has expired" in said and login_hint in said
    said = one_line(*run(dev, signed_in, "approvals", RIVERBEAM_TOKEN=expired)[::2])
    assert "RIVERBEAM_TOKEN has expired" in said and "set RIVERBEAM_TOKEN to a valid one" in said
    # a token whose payload was changed: its signature no longer verifies, on HTTP and on the WebSocket
    header, _, signature = token.split(".")
    payload = base64.urlsafe_b64encode(json.dumps({**claims(token), "cognito:username": "bo"}).encode())
    tampered = f"{header}.{payload.decode().rstrip('=')}.{signature}"
    for command in (["invoke", "-t", "Hello"], ["invoke", "-t", "Hello", "--stream"]):
        said = one_line(*run(dev, signed_in, *command, "--token", tampered)[::2])
        assert "the stack refused the token of --token" in said and "signature" in said, said
    said = one_line(*run(dev, signed_in, "approvals", "--token", "not-a-token")[::2])
    assert "is not a JWT" in said


def test_an_expired_id_token_in_the_file_is_renewed_or_says_to_sign_in(
    dev: DevProcess, signed_in: Path
) -> None:
    path = signed_in / "riverbeam" / "tokens.json"
    kept = entry(signed_in, dev)
    expired = signed_like_moto({**claims(kept["id_token"]), "exp": int(time.time()) - 60})
    key = dev.http_url.rstrip("/")
    path.write_text(json.dumps({key: {**kept, "id_token": expired}}))
    code, _out, err = run(dev, signed_in, "approvals")
    assert code == 0, err
    renewed = entry(signed_in, dev)["id_token"]
    assert renewed != expired and claims(renewed)["exp"] > time.time()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text(json.dumps({key: {**kept, "id_token": expired, "refresh_token": "revoked"}}))
    said = one_line(*run(dev, signed_in, "approvals")[::2])
    assert f"the sign-in to {key} has expired" in said and f"riverbeam login --url {key}" in said


def test_chat_with_the_tokens_file(dev: DevProcess, signed_in: Path) -> None:
    term = pexpect.spawn(
        sys.executable,
        ["-m", "riverbeam_local", "chat", "--url", dev.http_url],
        env={
            **os.environ,
            "XDG_CONFIG_HOME": str(signed_in),
            "TERM": "xterm-256color",
            "PROMPT_TOOLKIT_NO_CPR": "1",
        },
        encoding="utf-8",
        timeout=TIMEOUT_SECONDS,
        dimensions=(50, 200),
    )
    try:
        term.expect(screen("as ana on"))
        term.expect(PROMPT)
        term.send("Push docs/update\r")
        term.expect(screen("Approve git_push"))
        term.send("y\r")
        term.expect(screen("result   git_push ok ref=docs/update"))
        term.expect(PROMPT)
        term.send("/quit\r")
        term.expect(pexpect.EOF)
    finally:
        term.close(force=True)


def test_a_local_stack_without_jwt_gets_its_secret_whatever_token_was_kept(
    signed_in: Path, tmp_path: Path, dev: DevProcess
) -> None:
    """A stack on this machine started without --auth jwt since the sign-in (its URL's entry kept): the
    clients send its secret, and `riverbeam login` says the stack takes no tokens."""
    data_dir = tmp_path / "plain"
    with running(data_dir) as plain:
        kept = entry(signed_in, dev)
        path = signed_in / "riverbeam" / "tokens.json"
        path.write_text(json.dumps({plain.http_url.rstrip("/"): kept}))
        secret = secret_of(plain)
        code, out, err = run(plain, signed_in, "approvals", "--secret", secret)
        assert code == 0 and json.loads(out)["actions"] == [], err
        # the pool is looked up before anything is asked
        code, out, err = run(plain, signed_in, "login")
        assert (code, out) == (1, "") and one_line(code, err).startswith("riverbeam login: the stack at")
        assert "takes its secret, not tokens: start it with `riverbeam dev --auth jwt`" in err
    assert_none_left(data_dir)
