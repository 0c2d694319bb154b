"""Each function's cold start imports what its requests use and nothing else (the budget in
docs/benchmarks.md): its init, as Lambda runs it with the template's defaults, alone in a fresh interpreter
on the layer as built (its agents.json), must import its MUST modules and none of the others' (ONLY) nor
NEVER's."""

from __future__ import annotations

import pytest

from tests.conftest import LAYER
from tests.support.function_init import FUNCTIONS, SETTINGS, cold_imports

# slack and mail answer approvals through the same resume: the agents' checks
AGENT_FUNCTIONS = frozenset({"invoke", "resume", "worker", "slack", "mail"})
# the functions fed by the table's stream: the outbox's records, read with Powertools' batch utility
STREAM_FUNCTIONS = frozenset({"events", "slack_notifier", "mail_notifier"})
# a module (and its submodules) that only these functions may import
ONLY = {
    # $connect checks a token with PyJWT (the tokens layer: the connections function's alone)
    "jwt": {"connections", "mail", "mail_notifier"},  # the mail links' tokens (HS256, no cryptography)
    "cryptography": {"connections", "mail", "mail_notifier"},  # PyJWT imports it where it is installed
    "riverbeam.aws.tokens": {"connections"},
    # the agent side: the functions that check tool calls against an agent or run it
    # (the notifiers read agents.yaml's notify: and people: with the agents' config)
    "riverbeam.agent": AGENT_FUNCTIONS | {"slack_notifier", "mail_notifier"},
    "riverbeam.tools": AGENT_FUNCTIONS | {"slack_notifier", "mail_notifier"},
    "riverbeam.policy.cedar": AGENT_FUNCTIONS,  # Cedar's policies (a decision's record is every one's)
    "riverbeam.pipeline.accept": AGENT_FUNCTIONS,
    # OpenTelemetry's API, for the spans of a run
    "opentelemetry": AGENT_FUNCTIONS,
    # a run, its model and its Bedrock client: the worker's (a non-streamed invoke's on first use)
    "riverbeam.pipeline.execute": {"worker"},
    "riverbeam.pipeline.jobs": {"worker"},
    "riverbeam.bedrock": {"worker"},
    "riverbeam.pipeline.sweep": {"sweep"},
    "riverbeam.aws.read_routes": {"records"},
    "riverbeam.aws.publisher": STREAM_FUNCTIONS,
    # the Slack Web API client and Block Kit models: the Slack functions'
    "slack_sdk": {"slack", "slack_notifier"},
    # Powertools' batch utility (with its parser and every event's data class, about 100 ms): the stream's
    # publisher only; the worker and the WebSocket routes read the few fields they need themselves
    "aws_lambda_powertools.utilities.batch": STREAM_FUNCTIONS,
    "aws_lambda_powertools.utilities.parser": STREAM_FUNCTIONS,
    "aws_lambda_powertools.utilities.data_classes": STREAM_FUNCTIONS,
}
NEVER = (
    "riverbeam_local",  # the local tooling is never deployed
    "opentelemetry.sdk",  # spans are exported by the runtime's collector, not by the SDK in process
    "cedarpy",  # the policy layer's: only where an agent has a policy (none here), on its first decision
    "aws_xray_sdk",  # not a dependency: traces are OpenTelemetry's (Powertools' Tracer is gone)
    "aws_lambda_powertools.event_handler",  # the router serves the routes: no resolver (~110 ms)
    "riverbeam.aws.openapi",  # built by GET /openapi.json alone
    "yaml",  # the layer's agents.json is read with json
    "dulwich",  # the git tools': imported by a container's first git tool call (~0.3-0.8 s), never at init
    "mcp",  # the MCP layer's: only where an agent names an MCP server (none here), by its first use
)
# what init imports so that no request pays for it (what RiverBeam would import on first use)
MUST = {
    "connections": {"jwt", "riverbeam.aws.tokens", "riverbeam.aws.websocket"},
    "events": {"riverbeam.aws.publisher", "riverbeam.aws.bus"},
    "invoke": {"riverbeam.pipeline.accept", "riverbeam.agent.runner", "riverbeam.aws.http"},
    "mail": {"riverbeam.pipeline.accept", "riverbeam.agent.runner", "riverbeam.channels.mail", "jwt"},
    "mail_notifier": {
        "riverbeam.channels.mail",
        "riverbeam.aws.publisher",
        "aws_lambda_powertools.utilities.batch",
    },
    "records": {"riverbeam.aws.read_routes"},
    "resume": {"riverbeam.pipeline.accept", "riverbeam.agent.runner", "riverbeam.aws.http"},
    "slack": {"riverbeam.pipeline.accept", "riverbeam.agent.runner", "riverbeam.channels.slack_interact"},
    "slack_notifier": {
        "riverbeam.channels.slack_notify",
        "slack_sdk",
        "aws_lambda_powertools.utilities.batch",
    },
    "sweep": {"riverbeam.pipeline.sweep", "riverbeam.aws.push"},
    "worker": {"riverbeam.pipeline.jobs", "riverbeam.pipeline.execute", "riverbeam.bedrock"},
}
# as deployed with the template's defaults (AuthMode jwt, ModelMode bedrock, AdotLayerArn empty)
DEPLOYED = {
    **SETTINGS,
    "RIVERBEAM_AGENTS_FILE": str(LAYER / "agents.json"),
    "RIVERBEAM_MODEL": "bedrock",
    "AUTH_MODE": "jwt",
    "JWT_ISSUER": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_probe",
}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_every_function_has_a_budget() -> None:
    assert set(MUST) == set(FUNCTIONS)
    assert {f for allowed in ONLY.values() for f in allowed} <= set(FUNCTIONS)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_the_cold_start_imports_what_its_requests_use_and_nothing_else(name: str) -> None:
    imported = cold_imports(name, DEPLOYED)
    assert MUST[name] <= imported, sorted(MUST[name] - imported)
    refused = {package for package, allowed in ONLY.items() if name not in allowed} | set(NEVER)
    found = sorted(m for m in imported for package in refused if _within(m, package))
    assert found == [], f"{name}'s cold start imports {found}"
