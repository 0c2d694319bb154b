"""agents.yaml's approval channels (CONTRACT 16): where a tool's approvals are announced (`notify:`, per
tool or per agent, the tool's wins) and who people are outside Riverbeam (`people:`, Riverbeam user ids
mapped to a Slack user id and a mail address).

    people:
      ana: {slack: U024BE7LH, email: ana@example.com, groups: [ops]}
    agents:
      author:
        notify: {slack: {channel: "#approvals"}}          # every tool of the agent
        tool_settings:
          git_push:
            notify: {slack: {channel: C0123}, email: {to: [ana@example.com]}}

A Slack user or an address mapped to nobody may not answer; an address in `email.to` that maps to nobody
is refused when the file is read.
"""

# no `from __future__ import annotations`: pydantic evaluates the annotations as objects
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True, frozen=True)


class SlackNotify(_Strict):
    # a channel id (C0123...) or a #name the bot is a member of
    channel: str = Field(min_length=1, max_length=80, pattern=r"^(#[\w.-]+|[CGD][A-Z0-9]+)$")


class EmailNotify(_Strict):
    to: list[str] = Field(min_length=1, max_length=50)


class Notify(_Strict):
    slack: SlackNotify | None = None
    email: EmailNotify | None = None


class Person(_Strict):
    slack: str | None = Field(default=None, pattern=r"^[UW][A-Z0-9]+$")
    email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+$")
    groups: list[str] = Field(default_factory=list)


def unmapped_addresses(people: Mapping[str, Person], notifies: Iterable[tuple[str, Notify]]) -> list[str]:
    """`<where>: <address>` for each address of an `email.to` that no person has (compared as mail
    compares domains: without case)."""
    known = {p.email.lower() for p in people.values() if p.email}
    return [
        f"{where}.notify.email.to: {address} maps to nobody in people"
        for where, notify in notifies
        if notify.email is not None
        for address in notify.email.to
        if address.lower() not in known
    ]


def notify_for(agent: Any, tool: str) -> Notify | None:
    """The tool's `notify:` where it has one, else the agent's (`agent`: an AgentSpec)."""
    settings = agent.tool_settings.get(tool)
    if settings is not None and settings.notify is not None:
        found: Notify = settings.notify
        return found
    agents_notify: Notify | None = agent.notify
    return agents_notify


def notify_of(config: Any, action: Any) -> Notify | None:
    """The action's `notify:` in agents.yaml (`config`: its AgentsFile), None where it has none."""
    spec = config.agents.get(action.agent_name)
    return None if spec is None else notify_for(spec, action.tool)


def person_of_slack(people: Mapping[str, Person], slack_user: str) -> tuple[str, Person] | None:
    """The Riverbeam user id (and person) a Slack user is mapped to, None where nobody is."""
    for user_id, person in people.items():
        if person.slack is not None and person.slack == slack_user:
            return user_id, person
    return None
