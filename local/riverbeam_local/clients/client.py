"""A small client of Riverbeam's HTTP API (CONTRACT sections 2, 5, 7) for the command line tools: blocking
urllib requests, the contract's error JSON raised as `ApiError`, an unreachable server as `Unreachable`."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tokens_file import Token

DEFAULT_URL = "http://127.0.0.1:3000"
HTTP_TIMEOUT_SECONDS = 60.0
Json = dict[str, Any]
RECORD_PATHS = {
    "session": "/sessions/{}",
    "interaction": "/interactions/{}",
    "run": "/runs/{}",
    "action": "/actions/{}",
    "messages": "/sessions/{}/messages",
}


class ClientError(Exception):
    """A request that did not succeed, said in one line (`line()`)."""

    def line(self) -> str:
        return str(self)


class ApiError(ClientError):
    """The API refused: `body` is what it answered (the contract's `{"error": {...}}` as a rule)."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            self.code = str(error.get("code", f"HTTP {status}"))
            self.message = str(error.get("message", ""))
        else:
            self.code = f"HTTP {status}"
            self.message = str(body.get("message", body) if isinstance(body, dict) else body)
        super().__init__(f"{self.code} {self.message}")

    def json(self) -> str:
        return json.dumps(self.body)


class Unreachable(ClientError):
    """No answer at all: the server is down, the port closed, the name unknown, a timeout."""

    def __init__(self, url: str, reason: object) -> None:
        self.url = url
        super().__init__(f"cannot reach {url}: {reason}{_hint(url, reason)}")


class TokenRefused(ClientError):
    """The stack refused the token sent (401): one line with the reason where the stack gave one, and what
    to do."""

    def __init__(self, token: Token, body: Any) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        reason = str(error.get("message", "")) if isinstance(error, dict) else ""
        said = f" ({reason})" if reason else ""
        super().__init__(f"the stack refused the token of {token.source}{said}: {token.remedy()}")


class NoToken(ClientError):
    """A stack with AuthMode jwt asked for a token and none was sent."""

    def __init__(self, body: Any, url: str) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        said = f"{error.get('code')} {error.get('message', '')}" if isinstance(error, dict) else "401"
        hint = f"run `riverbeam login --url {url.rstrip('/')}`, or give --token"
        super().__init__(f"the stack asks for a token (AuthMode jwt; it says {said}): {hint}")


def refusal(status: int, body: Any, token: Token | None, url: str) -> ClientError:
    """What an answer of `status` raises: a refused token (or none, where the stack wants one) in words of
    its own, else the API's error."""
    if status == 401 and token is not None:
        return TokenRefused(token, body)
    error = body.get("error") if isinstance(body, dict) else None
    if status == 401 and isinstance(error, dict) and error.get("code") == "BEM-030":
        return NoToken(body, url)
    return ApiError(status, body)


LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _hint(url: str, reason: object) -> str:
    """What to check where nothing listens: the local stack, or the URL given."""
    if "refused" not in str(reason).lower():
        return ""
    if urllib.parse.urlsplit(url).hostname in LOOPBACK:
        return " (is `riverbeam dev` running? Start it, or give the stack's --url)"
    return " (is --url the stack's API?)"


def websocket_url(
    http_url: str, session_id: str, user_id: str, secret: str | None = None, token: str | None = None
) -> str:
    """`http://host:port/` -> `ws://host:port/ws?session_id=...&user_id=...&secret=...` (https -> wss;
    the token, else the stack's secret where there is one: a WebSocket has no header for them)."""
    parts = urllib.parse.urlsplit(http_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    credential = {"token": token} if token else {"secret": secret} if secret else {}
    fields = {"session_id": session_id, "user_id": user_id, **credential}
    query = urllib.parse.urlencode(fields)
    return urllib.parse.urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + "/ws", query, ""))


def _decoded(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return {"message": raw.decode("utf-8", "replace")[:500]}


@dataclass
class ApiClient:
    """`secret`: the local stack's, sent as `Authorization: Bearer` (None: no such header); `token`: a
    JWT sent there instead (AuthMode `jwt`), whose caller is `user` too."""

    url: str
    user: str
    timeout: float = HTTP_TIMEOUT_SECONDS
    secret: str | None = field(default=None, repr=False)
    # the caller's groups (AuthMode `none`): an approver named by group answers and reads as one of them
    groups: tuple[str, ...] = ()
    token: Token | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.token is not None:
            self.user = self.token.user() or self.user

    def is_me(self, user_id: object) -> bool:
        """Whether a record's `user_id` is the caller's (a token names them by sub and by name)."""
        return user_id == self.user or (self.token is not None and user_id in self.token.identities())

    def _renewed(self) -> bool:
        """Whether a kept token that expired while the command ran (a long chat) is renewed now; TokenProblem
        where its refresh token no longer serves (sign in again)."""
        from .tokens_file import KEPT, expired, find_token

        if self.token is None or self.token.source != KEPT or not expired(self.token.text):
            return False
        fresh = find_token(None, self.url)
        if fresh is None or fresh.text == self.token.text:
            return False
        self.token = fresh
        return True

    def _caller(self) -> Json:
        return {"user_id": self.user, **({"groups": list(self.groups)} if self.groups else {})}

    def request(self, method: str, path: str, body: Json | None = None, **query: object) -> Any:
        who = {"user_id": self.user, **({"groups": ",".join(self.groups)} if self.groups else {})}
        query = {**who, **{k: v for k, v in query.items() if v is not None}}
        target = self.url.rstrip("/") + path + "?" + urllib.parse.urlencode(query)
        headers = {"content-type": "application/json", "accept": "application/json"}
        bearer = self.token.text if self.token is not None else self.secret
        if bearer:
            headers["authorization"] = f"Bearer {bearer}"
        request = urllib.request.Request(
            target,
            data=None if body is None else json.dumps(body).encode(),
            headers=headers,
            method=method,
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                return _decoded(answer.read())
        except urllib.error.HTTPError as error:
            said = _decoded(error.read())
            if error.code == 401 and self._renewed():
                return self.request(method, path, body, **query)
            raise refusal(error.code, said, self.token, self.url) from None
        except urllib.error.URLError as error:
            raise Unreachable(self.url, getattr(error.reason, "strerror", None) or error.reason) from None
        except (TimeoutError, ConnectionError) as error:
            raise Unreachable(self.url, error.strerror or error or "timed out") from None

    # ------------------------------------------------------------------ requests

    def invoke(
        self,
        text: str,
        *,
        session_id: str,
        agent: str = "author",
        interaction_id: str | None = None,
        stream: bool = True,
    ) -> Json:
        body: Json = {
            "agent_name": agent,
            "session_id": session_id,
            "content": [{"type": "text", "text": text}],
            "stream": stream,
            "auth_context": {"user_id": self.user},
        }
        if interaction_id:
            body["interaction_id"] = interaction_id
        answer: Json = self.request("POST", "/invoke", body)
        return answer

    def resume(self, result: Json, responses: list[Json]) -> Json:
        """Resume the interaction of `result` (a Result, or an Action record) with these responses."""
        body = {
            "agent_name": result["agent_name"],
            "session_id": result["session_id"],
            "interaction_id": result["interaction_id"],
            "actions": responses,
            "auth_context": self._caller(),
        }
        answer: Json = self.request("POST", "/resume", body)
        return answer

    def get(self, kind: str, record_id: str) -> Json:
        path = RECORD_PATHS[kind].format(urllib.parse.quote(record_id, safe=""))
        if kind != "messages":
            found: Json = self.request("GET", path)
            return found
        page: Json = self.request("GET", path)
        messages = list(page.get("messages", []))
        while page.get("next_after") is not None:
            page = self.request("GET", path, after=page["next_after"])
            messages += page.get("messages", [])
        return {**page, "messages": messages, "next_after": None}

    def approvals(self, limit: int | None = None, cursor: str | None = None) -> Json:
        """A page of the caller's approvals inbox: the pending actions they may answer, newest first."""
        page: Json = self.request("GET", "/approvals", status="pending", limit=limit, cursor=cursor)
        return page

    def grants(self, session_id: str) -> Json:
        """The session's standing grants (its owner's only)."""
        found: Json = self.request("GET", f"/sessions/{urllib.parse.quote(session_id, safe='')}/grants")
        return found

    def revoke_grant(self, session_id: str, grant_id: str) -> None:
        """Revoke one standing grant of the session: its later calls ask again."""
        quoted = [urllib.parse.quote(i, safe="") for i in (session_id, grant_id)]
        self.request("DELETE", f"/sessions/{quoted[0]}/grants/{quoted[1]}")

    def frames(self, run_id: str, after: int = -1) -> list[Json]:
        """The run's stored frames after `after`, every page of them."""
        path = f"/runs/{urllib.parse.quote(run_id, safe='')}/frames"
        found: list[Json] = []
        while True:
            page = self.request("GET", path, after=after)
            found += page.get("frames", [])
            if page.get("next_after") is None:
                return found
            after = int(page["next_after"])


def response(action: Json, approve: bool, reason: str | None = None, grant: str | None = None) -> Json:
    """The ActionResponseEnvelope answering `action` (an `action_required` entry or an Action record) with
    its stored tool and args, and the hash of the args where the action gave it; `grant` (`tool`, `args`)
    approves it for the rest of the session too."""
    envelope: Json = {
        "action_id": action["action_id"],
        "kind": action.get("kind") or "confirmation",
        "request_id": str(uuid.uuid4()),
        "status": "submitted" if approve else "cancelled",
        "payload": {"tool": action["tool"], "args": action["args"]},
    }
    if action.get("args_sha256"):
        envelope["args_sha256"] = action["args_sha256"]
    if not approve and reason:
        envelope["reason"] = reason
    if approve and grant:
        envelope["grant"] = grant
    return envelope
