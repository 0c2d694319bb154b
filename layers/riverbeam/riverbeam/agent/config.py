"""Agents configured without code: `agents.yaml` names each agent's model, system prompt, inference
settings, tools and which tools need a person's approval.

    agents:
      author:
        model_id: anthropic.claude-3-5-haiku-20241022-v1:0   # leave out for the offline model
        system: You push branches of the work tree when asked.
        inference: {maxTokens: 1024, temperature: 0.2}
        tools: [git_push, my_package.tools:deploy]         # built-in names, or module:function
        approval: [deploy]                                   # more tools that wait for a person
        expires_after: 3600                                  # seconds a person has to answer (24 h)
        tool_settings:
          git_push: {editable: false, expires_after: 600}    # per tool: no edited args, 10 minutes
          deploy:                                            # who may answer (default: the owner)
            approvers: {users: [ana], groups: [ops]}
            required: 2                                      # two distinct approvals
            self_approval: false                             # never the person who asked (four eyes)

A tool that asks for approval itself (`@tool(confirm_required=True)`, like git_push) always does: the
file can add approvals, never take one away; likewise it can forbid editing a tool's args, never allow
what the tool forbids. A time to answer is the tool's setting here, else the tool's own
(`@tool(expires_after=)`), else the agent's here, else 24 hours.
With `offline=True` (RIVERBEAM_MODEL=offline) every agent runs on the offline model, whatever model_id says.
"""

# no `from __future__ import annotations`: pydantic would compile and evaluate every field's annotation
# string as each model class is made
import dataclasses
import functools
import importlib
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from beam_store.records import Approvals
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import BeamError
from ..tools import Tool, make_tool
from ..tools.files import git_log_tool, list_files_tool, read_file_tool
from ..tools.git import git_push_tool
from ..tools.worktree import WorkTree
from .channels_config import Notify, Person, unmapped_addresses
from .framework_agents import Framework, framework_problems, framework_runner
from .mcp_servers import (
    DisabledAgent,
    McpServerSpec,
    covered,
    is_mcp_tool,
    mcp_tools_named,
    server_problems,
)
from .policies import PolicyFileError, load_policies
from .runner import ToolAgentRunner

if TYPE_CHECKING:
    from ..policy import Policy
    from .llm import ChatModel
    from .registry import AgentRunner

logger = logging.getLogger(__name__)
# built-in tools by name, each made for the agent's work tree
BUILTIN_TOOLS: dict[str, Callable[[Path | WorkTree], Tool]] = {
    "git_push": git_push_tool,
    "list_files": list_files_tool,
    "read_file": read_file_tool,
    "git_log": git_log_tool,
}


class ConfigError(ValueError):
    """The agents file cannot be used; the message names the file and the field."""


class _Strict(BaseModel):
    # built by the first file read (AgentsFile's validator builds the models it holds), not at import
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Inference(_Strict):
    """Converse's inferenceConfig, under its own names."""

    maxTokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=1)
    topP: float | None = Field(default=None, ge=0, le=1)
    stopSequences: list[str] | None = None


class Window(_Strict):
    max_messages: int = Field(default=100, ge=2)
    max_chars: int = Field(default=400_000, ge=1000)


class Approvers(_Strict):
    users: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)


class ToolSettings(_Strict):
    editable: bool | None = None
    # false: an approval may not grant the tool for the rest of the session ("always allow")
    grantable: bool | None = None
    expires_after: float | None = Field(default=None, gt=0)
    # who may answer the tool's actions (CONTRACT 11): by default the session's owner alone
    approvers: Approvers | None = None
    required: int = Field(default=1, ge=1)
    self_approval: bool = True
    # where its approvals are announced (CONTRACT 16; agent/channels_config.py)
    notify: Notify | None = None

    @model_validator(mode="after")
    def _reachable(self) -> Self:
        self.approvals()  # refused here, naming the tool, where nobody could approve
        return self

    def approvals(self) -> Approvals | None:
        """The tool's Approvals, where the file says more than the default (the session's owner alone)."""
        named = self.approvers or Approvers()
        if named == Approvers() and self.required == 1 and self.self_approval:
            return None
        return Approvals(
            users=tuple(named.users),
            groups=tuple(named.groups),
            required=self.required,
            self_approval=self.self_approval,
        )


class AgentSpec(_Strict):
    model_id: str | None = Field(default=None, min_length=1)
    system: str | None = None
    inference: Inference = Field(default_factory=Inference)
    tools: list[str] = Field(default_factory=list)
    approval: list[str] = Field(default_factory=list)
    window: Window = Field(default_factory=Window)
    expires_after: float | None = Field(default=None, gt=0)
    tool_settings: dict[str, ToolSettings] = Field(default_factory=dict)
    # the agent's approval policy: a Cedar file, relative to the agents file (riverbeam.agent.policies)
    policy: str | None = Field(default=None, min_length=1)
    # the IANA time zone of its policy's `now` (CONTRACT 17); UTC where it names none
    timezone: str | None = Field(default=None, min_length=1)
    # an agent of another framework (CONTRACT 15): its module:attribute in the code folder, which brings
    # its own model and tools (agent/framework_agents.py)
    framework: Framework | None = None
    agent: str | None = Field(default=None, pattern=r"^[\w.]+:\w+$")
    # where its tools' approvals are announced, where a tool's settings say nothing
    notify: Notify | None = None

    @model_validator(mode="after")
    def _settings_name_tools(self) -> Self:
        if self.timezone is not None:
            from ..policy.moments import zone

            zone(self.timezone)  # ValueError naming it
        if self.framework is not None or self.agent is not None:
            framework_problems(self)
            return self  # its tools are the framework agent's, known once it is imported
        names = [_tool_name(t) for t in self.tools]
        for key, named in (("approval", self.approval), ("tool_settings", list(self.tool_settings))):
            unknown = [a for a in named if not covered(a, names)]
            if unknown:
                raise ValueError(f"{key} names tools the agent does not have: {unknown}")
        return self


class AgentsFile(_Strict):
    agents: dict[str, AgentSpec]
    mcp_servers: dict[str, McpServerSpec] = Field(default_factory=dict)
    # your own code, relative to the file: on the import path here; `sam build` ships it in the layer
    code: str = Field(default="agent_code", min_length=1)
    # Riverbeam user ids mapped to their Slack user and mail address (CONTRACT 16)
    people: dict[str, Person] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _servers_declared(self) -> Self:
        for name, spec in self.agents.items():
            problems = server_problems(spec.tools, self.mcp_servers)
            if problems:
                raise ValueError(f"agents.{name}.tools: {'; '.join(problems)}")
        notifies = [(f"agents.{n}", s.notify) for n, s in self.agents.items() if s.notify] + [
            (f"agents.{n}.tool_settings.{t}", ts.notify)
            for n, s in self.agents.items()
            for t, ts in s.tool_settings.items()
            if ts.notify
        ]
        unmapped = unmapped_addresses(self.people, notifies)
        if unmapped:
            raise ValueError("; ".join(unmapped))
        return self


def _tool_name(spec: str) -> str:
    return spec.rpartition(":")[2] if ":" in spec else spec


def load_agents(path: str | Path) -> AgentsFile:
    """The agents file at `path`: YAML, or JSON where its name ends in .json (the layer ships agents.yaml
    as agents.json, which json reads without PyYAML's 40 ms of imports); ConfigError names what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        return AgentsFile.model_validate(_parsed(str(path), text))
    except OSError as error:
        raise ConfigError(f"{path}: {error.strerror or error}") from None
    except ValidationError as error:
        problems = "; ".join(".".join(str(p) for p in e["loc"]) + f": {e['msg']}" for e in error.errors()[:5])
        raise ConfigError(f"{path}: {problems}") from None


def _parsed(path: str, text: str) -> Any:
    if path.endswith(".json"):
        try:
            return json.loads(text)
        except ValueError as error:
            raise ConfigError(f"{path}: not JSON: {error}") from None
    import yaml  # only an agents file in YAML pays for it

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not YAML: {error}") from None


def _user_tool(spec: str) -> Tool:
    module_name, _, attribute = spec.partition(":")
    try:
        found: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"tool {spec!r}: {error}") from None
    if isinstance(found, Tool):
        return found
    if callable(found):
        return make_tool(found)
    raise ConfigError(f"tool {spec!r} is neither a @tool nor a function")


def build_tools(
    spec: AgentSpec, work_tree: Path | WorkTree, servers: dict[str, McpServerSpec] | None = None
) -> list[Tool]:
    tools: list[Tool] = []
    sources: dict[str, str] = {}  # each tool's name, and the entry of `tools` it came from
    for name in spec.tools:
        if is_mcp_tool(name):
            made_tools = [_configured(t, spec, t.name) for t in mcp_tools_named(name, servers or {})]
        elif ":" in name:
            made_tools = [_configured(_user_tool(name), spec, _tool_name(name))]
        elif name in BUILTIN_TOOLS:
            made_tools = [_configured(BUILTIN_TOOLS[name](work_tree), spec, name)]
        else:
            raise ConfigError(
                f"unknown tool {name!r} (built-in: {sorted(BUILTIN_TOOLS)}, or module:function)"
            )
        for made in made_tools:
            _unique(made.name, name, sources)
        tools.extend(made_tools)
    return tools


def _unique(tool: str, source: str, sources: dict[str, str]) -> None:
    """Refuse a second tool of one name: the agent would call whichever came last, which may ask
    nobody (a `git_push` of your own in place of the built-in)."""
    if tool in sources:
        raise ConfigError(f"two tools are named {tool!r}: from {sources[tool]!r} and from {source!r}")
    sources[tool] = source


def _configured(made: Tool, spec: AgentSpec, listed_as: str) -> Tool:
    """The tool with what the file says of it: an approval, no edits, a time to answer."""
    settings = spec.tool_settings.get(listed_as) or spec.tool_settings.get(made.name) or ToolSettings()
    expires_after = settings.expires_after or made.expires_after or spec.expires_after
    return dataclasses.replace(
        made,
        confirm_required=made.confirm_required or made.name in spec.approval or listed_as in spec.approval,
        editable=made.editable and settings.editable is not False,
        grantable=made.grantable and settings.grantable is not False,
        expires_after=expires_after,
        approvals=settings.approvals() or made.approvals,
    )


def build_model(spec: AgentSpec, *, offline: bool, client: Any = None) -> "ChatModel":
    if offline or spec.model_id is None:
        from .llm import AuthorOfflineModel

        return AuthorOfflineModel()
    from ..bedrock import BedrockConverseModel, ConversationWindow

    return BedrockConverseModel(
        spec.model_id,
        client=client,
        system=spec.system,
        inference=spec.inference.model_dump(exclude_none=True),
        window=ConversationWindow(spec.window.max_messages, spec.window.max_chars),
    )


def build_runners(
    config: AgentsFile, *, work_tree: Path | WorkTree, offline: bool, client: Any = None
) -> dict[str, "AgentRunner"]:
    """A runner per configured agent (`client`: the bedrock-runtime client they share, made on first use
    when None). An agent whose `<server>/*` cannot be listed now is a DisabledAgent, with a warning: the
    others work."""
    runners: dict[str, AgentRunner] = {}
    for name, spec in config.agents.items():
        try:
            tools = build_tools(spec, work_tree, config.mcp_servers)
        except ConfigError as error:
            raise ConfigError(f"agents.{name}.tools: {error}") from None
        except BeamError as error:  # the MCP server of a `<server>/*`: down, silent, failing
            disabled = runners[name] = DisabledAgent(name, error)
            logger.warning("%s", disabled.disabled_error().message)
            continue
        if spec.framework is not None:
            runners[name] = framework_runner(name, spec)
            continue
        # the model is made by its first use: an API handler that checks and queues never makes it
        make_model = functools.partial(build_model, spec, offline=offline, client=client)
        runners[name] = ToolAgentRunner(make_model=make_model, tools=tools)
    return runners


def _import_from(folder: Path) -> None:
    """Your code's folder on the import path, where it exists (in Lambda the layer's python/ holds it)."""
    if folder.is_dir() and str(folder.resolve()) not in sys.path:
        sys.path.append(str(folder.resolve()))


def configured_runners(
    path: str | Path,
    *,
    work_tree: Path | WorkTree,
    offline: bool,
    client: Any = None,
    policies: dict[str, "Policy"] | None = None,
    timezones: dict[str, str] | None = None,
) -> dict[str, "AgentRunner"]:
    """The runners of the agents file at `path`; ConfigError names the file and what is wrong in it. The
    agents' policy files are read and checked too, and kept in `policies` where it is given; the agents'
    time zones in `timezones`."""
    config = load_agents(path)
    _import_from(Path(path).parent / config.code)
    try:
        runners = build_runners(config, work_tree=work_tree, offline=offline, client=client)
        found = load_policies({name: spec.policy for name, spec in config.agents.items()}, path)
    except (ConfigError, PolicyFileError) as error:
        raise ConfigError(f"{path}: {error}") from None
    if policies is not None:
        policies.update(found)
    if timezones is not None:
        timezones.update({name: spec.timezone for name, spec in config.agents.items() if spec.timezone})
    return runners


def model_ids(config: AgentsFile) -> list[str]:
    """The Bedrock models the file uses: what the deployment must be allowed to invoke."""
    return sorted({spec.model_id for spec in config.agents.values() if spec.model_id})
