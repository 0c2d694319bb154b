"""The chat's own commands (`/help`, `/grants`, `/revoke N`), answered by the chat and never sent to the
agent, each with a one-line outcome."""

from __future__ import annotations

from .client import ApiClient, ApiError, Json
from .times import said_when
from .view import View

# the commands and what they do, as /help lists them
COMMANDS = {
    "/help": "this list",
    "/grants": "the standing grants of this session (what runs without asking), numbered",
    "/revoke N": "revoke grant N of /grants (or a grant id): its tool asks again",
    "/quit": "leave (also /exit, Ctrl-D, or Ctrl-C on an empty line)",
}
# how an approval question is answered, as /help explains it
KEYS = (
    "y: approve this call once",
    "n or Enter: refuse it (then a reason, optional, told to the agent)",
    "a: approve, and allow this tool for the rest of the session with any args (a standing grant)",
    "A: approve, and allow this tool with exactly these args for the rest of the session",
    "(a and A are offered to the session's owner, for a tool that may be granted; /revoke undoes them)",
)


def show_help(view: View) -> None:
    for name, text in COMMANDS.items():
        view.line("help", f"{name:<10} {text}")
    view.line("help", "Any other line is sent to the agent (start it with // to send one /).")
    view.line("help", "Answering an approval question:")
    for key in KEYS:
        view.line("help", f"  {key}")


def grant_line(number: int, grant: Json) -> str:
    """A grant in a line: its number, tool, scope, since when and by whom, its id."""
    scope = "any args" if grant.get("scope") == "tool" else "only the args it was granted with"
    when = said_when(grant.get("created_at"))
    since = f", since {when}" if when else ""
    by = f" by {grant['created_by']}" if grant.get("created_by") else ""
    return f"{number}. {grant.get('tool')}, {scope}{since}{by} ({grant.get('grant_id')})"


def list_grants(api: ApiClient, session_id: str) -> list[Json]:
    """The session's grants; none for a session that has not started yet."""
    try:
        grants: list[Json] = api.grants(session_id).get("grants", [])
    except ApiError as error:
        if error.status == 404:
            return []
        raise
    return grants


def show_grants(api: ApiClient, session_id: str, view: View) -> None:
    grants = list_grants(api, session_id)
    if not grants:
        view.line("grants", "no standing grants in this session: every call that needs approval is asked")
        return
    for number, grant in enumerate(grants, start=1):
        view.line("grants", grant_line(number, grant))


def revoke(api: ApiClient, session_id: str, which: str, view: View) -> None:
    """Revoke the grant numbered `which` in /grants' list, or of that id."""
    if not which:
        view.line("note", "/revoke takes a grant's number or id (/grants lists them); nothing was revoked")
        return
    grants = list_grants(api, session_id)
    found = next((g for g in grants if g.get("grant_id") == which), None)
    if found is None and which.isdigit() and 1 <= int(which) <= len(grants):
        found = grants[int(which) - 1]
    if found is None:
        view.line("note", f"no grant {which} in this session (/grants lists them); nothing was revoked")
        return
    api.revoke_grant(session_id, str(found["grant_id"]))
    view.line("revoked", f"{found.get('tool')} ({found['grant_id']}): its calls are asked again")
