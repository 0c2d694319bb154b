"""The template's layers: every function has the Riverbeam layer, only the connections function ($connect's
token verification) the tokens layer, only the functions that run agents or check their args (invoke, resume,
worker) the MCP and git layers (so the Riverbeam layer stays under its 5 MB goal); each is built by its
Makefile from its requirements, and pyproject.toml installs them all for local use."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.support.lambda_stack import ROOT, resources_of, template

# what the tokens layer carries: riverbeam.aws.tokens verifies a token with PyJWT, on cryptography
TOKEN_DISTRIBUTIONS = {"pyjwt", "cryptography"}


def names(requirements: Path) -> set[str]:
    lines = (line.split("#", 1)[0].strip() for line in requirements.read_text().splitlines())
    return {re.split(r"[\[<>=!~; ]", line, maxsplit=1)[0].lower() for line in lines if line}


def test_only_the_connections_function_has_the_tokens_layer_and_the_agents_functions_the_mcp_layer() -> None:
    # and, where traces are exported, the ADOT layer the deployment names
    adot = {"Fn::If": ["ExportTraces", {"Ref": "AdotLayerArn"}, {"Ref": "AWS::NoValue"}]}
    assert template()["Globals"]["Function"]["Layers"] == [{"Ref": "RiverbeamLayer"}, adot]
    with_own_layers = {
        name: function["Properties"]["Layers"]
        for name, function in resources_of("AWS::Serverless::Function").items()
        if "Layers" in function["Properties"]
    }
    # SAM appends a function's Layers to the Globals' ones; the functions that run agents decide their
    # tool calls by an agent's approval policy (Cedar)
    mcp, policy = {"Ref": "McpLayer"}, {"Ref": "PolicyLayer"}
    # the git layer, or in its place the framework's layer where the deployment names one (AgentFramework):
    # it carries dulwich too, so a function has five layers at most, ADOT's included
    git = {
        "Fn::If": [
            "UsePydanticAI",
            {"Ref": "PydanticAILayer"},
            {
                "Fn::If": [
                    "UseLangGraph",
                    {"Ref": "LangGraphLayer"},
                    {
                        "Fn::If": [
                            "UseOpenAIAgents",
                            {"Ref": "OpenAIAgentsLayer"},
                            {"Fn::If": ["UseStrands", {"Ref": "StrandsLayer"}, {"Ref": "GitLayer"}]},
                        ]
                    },
                ]
            },
        ]
    }
    assert with_own_layers == {
        "ConnectionsFunction": [{"Ref": "TokensLayer"}],
        "InvokeFunction": [policy, mcp, git],
        "ResumeFunction": [mcp, git],
        # Slack's answers go through the same resume, with the same checks; slack-sdk in a layer of its own
        "SlackFunction": [{"Ref": "SlackLayer"}, mcp, git],
        "SlackNotifierFunction": [{"Ref": "SlackLayer"}],
        # the links' tokens: PyJWT, the tokens layer's
        "MailFunction": [{"Ref": "TokensLayer"}, mcp, git],
        "MailNotifierFunction": [{"Ref": "TokensLayer"}],
        "WorkerFunction": [policy, mcp, git],
    }


def test_a_framework_layer_is_made_only_where_the_deployment_names_its_framework() -> None:
    layers = resources_of("AWS::Serverless::LayerVersion")
    assert layers["PydanticAILayer"]["Condition"] == "UsePydanticAI"
    assert layers["LangGraphLayer"]["Condition"] == "UseLangGraph"
    assert layers["OpenAIAgentsLayer"]["Condition"] == "UseOpenAIAgents"
    assert layers["StrandsLayer"]["Condition"] == "UseStrands"
    conditions = template()["Conditions"]
    assert conditions["UsePydanticAI"] == {"Fn::Equals": [{"Ref": "AgentFramework"}, "pydantic_ai"]}
    assert conditions["UseLangGraph"] == {"Fn::Equals": [{"Ref": "AgentFramework"}, "langgraph"]}
    allowed = ["", "pydantic_ai", "langgraph", "openai_agents", "strands"]
    assert template()["Parameters"]["AgentFramework"]["AllowedValues"] == allowed


def test_each_layer_is_built_by_its_makefile_from_its_requirements() -> None:
    layers = resources_of("AWS::Serverless::LayerVersion")
    assert set(layers) == {
        "RiverbeamLayer",
        "TokensLayer",
        "McpLayer",
        "PolicyLayer",
        "GitLayer",
        "PydanticAILayer",
        "LangGraphLayer",
        "OpenAIAgentsLayer",
        "StrandsLayer",
        "SlackLayer",
    }
    for name, layer in layers.items():
        assert layer["Metadata"]["BuildMethod"] == "makefile"
        folder = ROOT / layer["Properties"]["ContentUri"]
        makefile = (folder / "Makefile").read_text()
        assert f"build-{name}:" in makefile and "scripts/build_layer.py" in makefile
        assert (folder / "requirements.txt").is_file()
    assert not names(ROOT / "layers" / "riverbeam" / "requirements.txt") & TOKEN_DISTRIBUTIONS
    assert names(ROOT / "layers" / "tokens" / "requirements.txt") == TOKEN_DISTRIBUTIONS
    assert names(ROOT / "layers" / "policy" / "requirements.txt") == {"cedarpy"}
    assert "cedarpy" not in names(ROOT / "layers" / "riverbeam" / "requirements.txt")
    assert "mcp" not in names(ROOT / "layers" / "riverbeam" / "requirements.txt")
    assert names(ROOT / "layers" / "mcp" / "requirements.txt") == {"mcp", "google-re2"}
    assert names(ROOT / "layers" / "git" / "requirements.txt") == {"dulwich"}
    assert names(ROOT / "layers" / "slack" / "requirements.txt") == {"slack-sdk"}
    assert "slack-sdk" not in names(ROOT / "layers" / "riverbeam" / "requirements.txt")
    assert "dulwich" not in names(ROOT / "layers" / "riverbeam" / "requirements.txt")
    # in the git layer's place, with what it carries
    assert names(ROOT / "layers" / "pydantic_ai" / "requirements.txt") == {"pydantic-ai-slim", "dulwich"}
    assert names(ROOT / "layers" / "langgraph" / "requirements.txt") == {"langchain", "langgraph", "dulwich"}
    assert names(ROOT / "layers" / "openai_agents" / "requirements.txt") == {"openai-agents", "dulwich"}
    assert names(ROOT / "layers" / "strands" / "requirements.txt") == {"strands-agents", "dulwich"}


def test_the_project_installs_what_both_layers_carry() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    installed = {re.split(r"[\[<>=!~; ]", d, maxsplit=1)[0].lower() for d in project}
    for folder in ("riverbeam", "tokens", "git"):
        assert names(ROOT / "layers" / folder / "requirements.txt") <= installed, folder
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert names(ROOT / "layers" / "mcp" / "requirements.txt") <= {
        re.split(r"[\[<>=!~; ]", d, maxsplit=1)[0].lower() for d in extras["mcp"]
    }
    for framework, extra in (
        ("pydantic_ai", "pydantic-ai"),
        ("langgraph", "langgraph"),
        ("openai_agents", "openai-agents"),
        ("strands", "strands"),
    ):
        assert names(ROOT / "layers" / framework / "requirements.txt") - {"dulwich"} == {
            re.split(r"[\[<>=!~; ]", d, maxsplit=1)[0].lower() for d in extras[extra]
        }
    # Cedar is for the functions that decide and for local use (riverbeam dev, policy check): a dev extra
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    extras = {re.split(r"[\[<>=!~; ]", d, maxsplit=1)[0].lower() for d in dev}
    assert names(ROOT / "layers" / "policy" / "requirements.txt") <= extras
    # PyJWT verifies RS* and ES* tokens only with its [crypto] extra
    assert any(d.replace(" ", "").startswith("pyjwt[crypto]") for d in project)
