"""agents.yaml's `notify:` and `people:` (CONTRACT 16): where a tool's approvals are announced (the tool's
wins over the agent's), who each Slack user is, and an address that maps to nobody refused when read."""

from __future__ import annotations

from pathlib import Path

import pytest
from riverbeam.agent.channels_config import notify_for, person_of_slack
from riverbeam.agent.config import ConfigError, load_agents

FILE = """
people:
  ana: {slack: UANA, email: Ana@Example.com, groups: [ops]}
  bo: {slack: UBO}
agents:
  author:
    tools: [git_push, read_file]
    notify: {slack: {channel: "#approvals"}}
    tool_settings:
      git_push:
        notify: {slack: {channel: C0PUSHES}, email: {to: [ana@example.com]}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_tools_notify_wins_over_the_agents_and_people_map_slack_users(tmp_path: Path) -> None:
    config = load_agents(write(tmp_path, FILE))
    spec = config.agents["author"]
    pushes = notify_for(spec, "git_push")
    assert pushes is not None and pushes.slack is not None and pushes.slack.channel == "C0PUSHES"
    assert pushes.email is not None and pushes.email.to == ["ana@example.com"]
    reads = notify_for(spec, "read_file")
    assert reads is not None and reads.slack is not None and reads.slack.channel == "#approvals"
    found = person_of_slack(config.people, "UANA")
    assert found is not None and found[0] == "ana" and found[1].groups == ["ops"]
    assert person_of_slack(config.people, "UNOBODY") is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            FILE.replace("to: [ana@example.com]", "to: [eve@example.com]"),
            "agents.author.tool_settings.git_push.notify.email.to: eve@example.com maps to nobody in people",
        ),
        (FILE.replace('"#approvals"', '"not a channel"'), "agents.author.notify.slack.channel"),
        (FILE.replace("slack: UBO", "slack: bo"), "people.bo.slack"),
        (FILE.replace("{slack: {channel: C0PUSHES}", "{teams: {}, slack: {channel: C0PUSHES}"), "teams"),
    ],
)
def test_a_wrong_channel_setting_is_refused_naming_the_field(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_agents(write(tmp_path, text))
    assert says in str(refused.value)
