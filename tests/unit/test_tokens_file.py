"""The token a client sends (CONTRACT 18): --token, else RIVERBEAM_TOKEN, else the tokens file of
`riverbeam login` ($XDG_CONFIG_HOME/riverbeam/tokens.json, else ~/.config/riverbeam/; 0600; one entry per
stack), an expired ID token there renewed with its refresh token; each problem one line saying what to do."""

from __future__ import annotations

import base64
import json
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from riverbeam_local.clients import cognito
from riverbeam_local.clients.client import ApiClient, ApiError, NoToken, TokenRefused, refusal
from riverbeam_local.clients.tokens_file import (
    Token,
    TokenProblem,
    find_token,
    read_entries,
    save_entry,
    tokens_path,
)

URL = "https://abc.execute-api.eu-west-1.amazonaws.com/v1"


def token(**claims: Any) -> str:
    """A JWT's shape with these claims (unsigned: a client never verifies, the stack does)."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256', 'kid': 'k'})}.{part({'exp': time.time() + 3600, **claims})}.c2ln"


@pytest.fixture(autouse=True)
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("RIVERBEAM_TOKEN", raising=False)
    return tmp_path / "xdg" / "riverbeam" / "tokens.json"


def test_the_file_is_under_xdg_config_home_else_dot_config(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tokens_path() == config
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert tokens_path() == tmp_path / "home" / ".config" / "riverbeam" / "tokens.json"


def test_one_entry_per_stack_readable_by_its_owner_alone(config: Path) -> None:
    save_entry(URL + "/", {"id_token": "a"})
    save_entry("http://127.0.0.1:3000", {"id_token": "b"})
    save_entry(URL, {"id_token": "c"})  # the same stack, with or without its trailing slash
    assert read_entries() == {URL: {"id_token": "c"}, "http://127.0.0.1:3000": {"id_token": "b"}}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    assert [p.name for p in config.parent.iterdir()] == ["tokens.json"]  # no draft left behind


def test_the_flag_wins_over_the_variable_which_wins_over_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    kept, given, variable = token(sub="file"), token(sub="flag"), token(sub="variable")
    save_entry(URL, {"id_token": kept})
    monkeypatch.setenv("RIVERBEAM_TOKEN", variable)
    assert find_token(given, URL) == Token(given, "--token", URL)
    assert find_token(None, URL) == Token(variable, "RIVERBEAM_TOKEN", URL)
    monkeypatch.delenv("RIVERBEAM_TOKEN")
    assert find_token(None, URL) == Token(kept, "the tokens file", URL)
    assert find_token(None, "http://127.0.0.1:3000") is None  # no entry: the secret is sent instead


def test_a_given_token_that_is_no_jwt_or_has_expired_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        TokenProblem, match=r"^the token of --token is not a JWT: give a valid one with --token"
    ):
        find_token("secret-of-the-stack", URL)
    monkeypatch.setenv("RIVERBEAM_TOKEN", token(exp=time.time() - 1))
    with pytest.raises(TokenProblem) as problem:
        find_token(None, URL)
    assert problem.value.line() == (
        "the token of RIVERBEAM_TOKEN has expired: set RIVERBEAM_TOKEN to a valid one (or unset it and run "
        f"`riverbeam login --url {URL}`)"
    )


class Pool:
    """Cognito's InitiateAuth as the client calls it: a refresh token `good` renews, any other is refused."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def initiate_auth(self, **call: Any) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        self.calls.append(call)
        if call["AuthParameters"].get("REFRESH_TOKEN") != "good":
            error = {"Error": {"Code": "NotAuthorizedException", "Message": "Refresh Token has expired"}}
            raise ClientError(error, "InitiateAuth")
        return {"AuthenticationResult": {"IdToken": token(sub="renewed")}}


def test_an_expired_id_token_in_the_file_is_renewed_and_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = Pool()
    monkeypatch.setattr(cognito, "_idp", lambda entry: pool)
    entry = {"id_token": token(exp=time.time() - 5), "refresh_token": "good", "client_id": "c", "region": "r"}
    save_entry(URL, entry)
    found = find_token(None, URL)
    assert (
        found is not None
        and json.loads(base64.urlsafe_b64decode(found.text.split(".")[1] + "=="))["sub"] == "renewed"
    )
    assert pool.calls == [
        {"ClientId": "c", "AuthFlow": "REFRESH_TOKEN_AUTH", "AuthParameters": {"REFRESH_TOKEN": "good"}}
    ]
    assert read_entries()[URL] == {**entry, "id_token": found.text}


def test_a_lapsed_sign_in_says_to_sign_in_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cognito, "_idp", lambda entry: Pool())
    entry = {"id_token": token(exp=time.time() - 5), "refresh_token": "old", "client_id": "c", "region": "r"}
    save_entry(URL, entry)
    with pytest.raises(TokenProblem) as problem:
        find_token(None, URL)
    assert problem.value.line() == (
        f"the sign-in to {URL} has expired (NotAuthorizedException: Refresh Token has expired): "
        f"run `riverbeam login --url {URL}`"
    )
    assert read_entries()[URL] == entry  # nothing changed


def test_a_refusal_of_the_stack_is_one_line_saying_what_to_do() -> None:
    given = Token(token(sub="s"), "the tokens file", URL)
    body = {"error": {"code": "BEM-030", "message": "the token is from another issuer"}}
    refused = refusal(401, body, given, URL)
    assert isinstance(refused, TokenRefused)
    assert refused.line() == (
        "the stack refused the token of the tokens file (the token is from another issuer): "
        f"run `riverbeam login --url {URL}`"
    )
    # API Gateway's own refusal says no more than Unauthorized
    assert (
        refusal(401, {"message": "Unauthorized"}, given, URL)
        .line()
        .startswith("the stack refused the token of the tokens file: run")
    )
    assert isinstance(refusal(401, body, None, URL), NoToken)
    assert isinstance(refusal(403, {"error": {"code": "BEM-031"}}, given, URL), ApiError)


def test_the_caller_is_whom_the_token_names() -> None:
    api = ApiClient(
        URL, "local-user", token=Token(token(sub="6f1c", **{"cognito:username": "ana"}), "--token", URL)
    )
    assert api.user == "ana"
    assert api.is_me("ana") and api.is_me("6f1c") and not api.is_me("local-user") and not api.is_me(None)


class Answers:
    """urlopen as the client calls it: 401 (the token has expired) to the first request, then 200; it
    remembers the Authorization header of each."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def __call__(self, request: Any, timeout: float) -> Any:
        import io
        import urllib.error

        self.sent.append(request.get_header("Authorization"))
        if len(self.sent) == 1:
            body = io.BytesIO(b'{"error": {"code": "BEM-030", "message": "the token has expired"}}')
            raise urllib.error.HTTPError(request.full_url, 401, "Unauthorized", {}, body)  # type: ignore[arg-type]
        return io.BytesIO(b'{"actions": [], "next_cursor": null}')


def test_a_kept_token_that_expires_while_a_command_runs_is_renewed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from riverbeam_local.clients import client

    monkeypatch.setattr(cognito, "_idp", lambda entry: Pool())
    answers = Answers()
    monkeypatch.setattr(client.urllib.request, "urlopen", answers)
    lapsed = token(exp=time.time() - 1, sub="ana")
    save_entry(URL, {"id_token": lapsed, "refresh_token": "good", "client_id": "c", "region": "r"})
    api = ApiClient(URL, "ana", token=Token(lapsed, "the tokens file", URL))
    assert api.approvals() == {"actions": [], "next_cursor": None}
    assert (
        answers.sent[0] == f"Bearer {lapsed}"
        and answers.sent[1] == f"Bearer {read_entries()[URL]['id_token']}"
    )
    assert answers.sent[1] != answers.sent[0]


def test_a_given_token_is_never_renewed(monkeypatch: pytest.MonkeyPatch) -> None:
    from riverbeam_local.clients import client

    monkeypatch.setattr(client.urllib.request, "urlopen", Answers())
    lapsed = token(exp=time.time() - 1)
    with pytest.raises(TokenRefused, match="the token has expired"):
        ApiClient(URL, "ana", token=Token(lapsed, "--token", URL)).approvals()
