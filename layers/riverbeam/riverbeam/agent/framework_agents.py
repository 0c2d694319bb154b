"""agents.yaml's agents of other frameworks (CONTRACT 15):

    agents:
      helper:
        framework: pydantic_ai              # or langgraph, openai_agents, strands
        agent: my_agents:helper             # module:attribute in the code folder: the agent, or a function
        policy: policies/helper.cedar       # returning it; policy, expires_after and tool_settings apply
        tool_settings:
          deploy: {approvers: {groups: [ops]}, required: 2}

Such an agent brings its own model and tools: model_id, system, inference, window, tools and approval
are the built-in runner's and are refused here, naming the field (a framework marks its own tools)."""

from __future__ import annotations

import importlib
import inspect
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..models import AgentResult
    from .config import AgentSpec
    from .registry import AgentInput, AgentRunner, Emit

Framework = Literal["pydantic_ai", "langgraph", "openai_agents", "strands"]
# each framework's runner in riverbeam.frameworks; those not built yet are refused by name
RUNNERS: dict[str, str] = {
    "pydantic_ai": "PydanticAIRunner",
    "langgraph": "LangGraphRunner",
    "openai_agents": "OpenAIAgentsRunner",
    "strands": "StrandsRunner",
}
# the built-in runner's settings, which an agent of another framework brings itself
_BUILT_IN_ONLY = ("model_id", "system", "tools", "approval", "inference", "window")


def framework_problems(spec: AgentSpec) -> None:
    """Refuse (ValueError, naming the field) what an agent of another framework cannot be given."""
    if spec.framework is None or spec.agent is None:
        raise ValueError(
            "framework and agent go together: name the framework and its agent (module:attribute)"
        )
    if spec.framework not in RUNNERS:
        built = ", ".join(sorted(RUNNERS))
        raise ValueError(f"framework {spec.framework!r} is not built yet (built: {built})")
    given = [name for name in _BUILT_IN_ONLY if name in spec.model_fields_set]
    if given:
        raise ValueError(
            f"{given[0]} is not used by a {spec.framework} agent: it brings its own model and tools "
            "(mark a tool for approval in the framework, or decide it with a policy)"
        )


class ConfiguredAgent:
    """A framework's runner with what agents.yaml says of its tools (`tool_settings`, `expires_after`): who
    may answer each tool's actions, whether its args may be edited or it granted, how long a person has."""

    def __init__(self, runner: AgentRunner, spec: AgentSpec) -> None:
        self.runner, self.spec = runner, spec
        # who may answer each tool's actions, as pipeline/voting.tool_approvals reads a runner's tools
        self.tools = {
            tool: SimpleNamespace(approvals=settings.approvals())
            for tool, settings in spec.tool_settings.items()
        }

    def __getattr__(self, name: str) -> Any:  # keeps_state, fingerprint, validate_args...: the runner's
        return getattr(self.runner, name)

    def run(self, input: AgentInput, emit: Emit) -> AgentResult:
        result = self.runner.run(input, emit)
        for (
            request
        ) in result.action_required:  # the runner's own time, else the tool's here, else the agent's
            settings = self.spec.tool_settings.get(request.tool)
            tool_time = settings.expires_after if settings is not None else None
            request.expires_after = request.expires_after or tool_time or self.spec.expires_after
        return result

    def editable(self, tool: str) -> bool:
        return self._allowed(tool, "editable")

    def grantable(self, tool: str) -> bool:
        return self._allowed(tool, "grantable")

    def _allowed(self, tool: str, what: str) -> bool:
        """The file may forbid what the runner allows, never allow what it forbids."""
        settings = self.spec.tool_settings.get(tool)
        if settings is not None and getattr(settings, what) is False:
            return False
        own = getattr(self.runner, what, None)
        return bool(own(tool)) if callable(own) else True


def framework_runner(name: str, spec: AgentSpec) -> AgentRunner:
    """The runner of the spec's framework around the agent it names (an attribute of its module: the
    agent, or a function that makes it), with the file's tool settings; ConfigError names the agent and
    what is wrong."""
    from .config import ConfigError

    assert spec.framework is not None and spec.agent is not None
    framework, agent = spec.framework, spec.agent
    module_name, _, attribute = agent.partition(":")
    try:
        found: Any = getattr(importlib.import_module(module_name), attribute)
        made = found() if inspect.isfunction(found) else found
        from .. import frameworks

        runner_class = getattr(frameworks, RUNNERS[framework])
        runner: AgentRunner = runner_class(made)
    except ConfigError:
        raise
    except Exception as error:  # the user's module, the framework missing, an agent of another kind
        raise ConfigError(f"agents.{name}.agent: {agent!r}: {type(error).__name__}: {error}") from None
    return ConfiguredAgent(runner, spec)
