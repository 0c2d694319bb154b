"""agents.yaml's approval settings (issue 13): a time to answer per agent and per tool, and tools whose args a
person may not edit, applied to the actions the agent asks for, on every store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from beam_store import BeamStore
from riverbeam import BeamError, RiverBeam
from riverbeam.agent.config import ConfigError, configured_runners

from tests.support.agents import resume_body
from tests.support.clock import T0, Clock, asked, iso


def beam_from(tmp_path: Path, store: BeamStore, text: str) -> RiverBeam:
    path = tmp_path / "agents.yaml"
    path.write_text(text)
    beam = RiverBeam(store, clock=Clock())
    for name, runner in configured_runners(path, work_tree=tmp_path / "work", offline=True).items():
        beam.register_agent(name, runner)
    return beam


@pytest.mark.parametrize(
    "settings, answer_within",
    [
        ("", timedelta(hours=24)),
        ("    expires_after: 3600\n", timedelta(hours=1)),
        (
            "    expires_after: 3600\n    tool_settings:\n      git_push: {expires_after: 90}\n",
            timedelta(seconds=90),
        ),
    ],
    ids=["default", "agent", "tool-over-agent"],
)
def test_the_file_sets_the_time_to_answer(
    tmp_path: Path, store: BeamStore, settings: str, answer_within: timedelta
) -> None:
    beam = beam_from(tmp_path, store, "agents:\n  author:\n    tools: [git_push]\n" + settings)
    action = asked(beam).action_required[0]
    stored = beam.store.get_action(action.action_id)
    assert stored is not None and stored.expires_at == action.expires_at == iso(T0 + answer_within)


def test_a_tool_the_file_makes_uneditable_refuses_edited_args(tmp_path: Path, store: BeamStore) -> None:
    text = (
        "agents:\n  author:\n    tools: [git_push]\n    tool_settings:\n      git_push: {editable: false}\n"
    )
    beam = beam_from(tmp_path, store, text)
    result = asked(beam)
    with pytest.raises(BeamError) as refused:
        beam.resume(resume_body(result, edited_args={"ref": "main"}))
    assert refused.value.code == "BEM-071"
    action = beam.store.get_action(result.action_required[0].action_id)
    assert action is not None and action.status == "pending"  # nothing resolved


def test_an_editable_tool_takes_edited_args(tmp_path: Path, store: BeamStore) -> None:
    beam = beam_from(tmp_path, store, "agents:\n  author:\n    tools: [git_push]\n")
    result = asked(beam)
    beam.resume(resume_body(result, edited_args={"ref": "main"}))
    action = beam.store.get_action(result.action_required[0].action_id)
    assert action is not None and action.run_args == {"ref": "main"} and action.args == {"ref": "docs/update"}


@pytest.mark.parametrize(
    "settings, says",
    [
        ("    tool_settings:\n      deploy: {editable: false}\n", "tool_settings names tools"),
        (
            "    tool_settings:\n      git_push: {colour: red}\n",
            "agents.author.tool_settings.git_push.colour",
        ),
        ("    expires_after: 0\n", "agents.author.expires_after"),
        ("    tool_settings:\n      git_push: {expires_after: -5}\n", "git_push.expires_after"),
    ],
)
def test_wrong_settings_are_refused_naming_them(
    tmp_path: Path, store: BeamStore, settings: str, says: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        beam_from(tmp_path, store, "agents:\n  author:\n    tools: [git_push]\n" + settings)
    assert says in str(raised.value)
