"""What a Lambda container creates once and reuses: settings, AWS clients, the RiverBeam, logs and metrics.
Traces are OpenTelemetry's (riverbeam.telemetry), exported where the deployment adds ADOT's layer."""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import boto3
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from beam_store import DynamoBeamStore

from ..pipeline import RiverBeam
from . import approval_metrics
from .settings import Settings

if TYPE_CHECKING:
    from beam_store import TokenUsage
    from mypy_boto3_apigatewaymanagementapi.client import ApiGatewayManagementApiClient
    from mypy_boto3_events.client import EventBridgeClient
    from mypy_boto3_sqs.client import SQSClient

    from ..agent.registry import AgentRunner
    from ..agent.runner import ToolAgentRunner
    from ..policy import Policy
    from ..tools.worktree import WorkTree

# the logger "riverbeam": the pipeline logs through its children (logging.getLogger(__name__)), so keys
# appended here show in the pipeline's lines too
logger = Logger(service="riverbeam")
metrics = Metrics(namespace=approval_metrics.namespace(), service=approval_metrics.service())


# a request with a request_id that is not answered within this is taken to have died with its function:
# the API functions end within their timeout (29 s in template.yaml; the worker only accepts a queued
# invoke under its claim, in a second or so), so a retry after a function timed out waits a minute, not
# the pipeline's default quarter of an hour
REQUEST_LEASE_SECONDS = 60


@functools.cache
def settings() -> Settings:
    return Settings.from_environment()


@functools.cache
def sqs() -> SQSClient:
    return boto3.client("sqs")


@functools.cache
def management_api() -> ApiGatewayManagementApiClient:
    return boto3.client("apigatewaymanagementapi", endpoint_url=settings().websocket_endpoint or None)


@functools.cache
def events_client() -> EventBridgeClient:
    """The events function's: the approval events are put on EVENT_BUS_NAME from the outbox (outbox.py)."""
    return boto3.client("events")


def _author(work_tree: WorkTree) -> ToolAgentRunner:
    """The built-in `author` on the offline model; its work tree is made by the first tool that needs it
    (RIVERBEAM_GIT_REMOTE: a clone of that remote), not at init."""
    from ..agent.llm import AuthorOfflineModel
    from ..agent.runner import ToolAgentRunner
    from ..tools.files import read_only_tools
    from ..tools.git import git_push_tool

    return ToolAgentRunner(
        model=AuthorOfflineModel(), tools=[git_push_tool(work_tree), *read_only_tools(work_tree)]
    )


@functools.cache
def beam() -> RiverBeam:
    config = settings()
    # the table is the template's: no create_table here, and least-privilege roles could not run it; the
    # content bucket's S3 client is made by the first large content written or read, not here
    store = DynamoBeamStore(
        boto3.client("dynamodb"), config.table_name, content_bucket=config.content_bucket or None
    )
    # no event sink: the approval events each write keeps in its outbox are published from the table's
    # stream by the events function, also when this function dies right after the write
    riverbeam = RiverBeam(
        store, frame_ttl_seconds=config.frame_ttl_seconds, request_lease_seconds=REQUEST_LEASE_SECONDS
    )
    # the agents, agents.yaml and its parser are loaded by the first request that names an agent
    riverbeam.register_agents_on_first_use(functools.partial(register_agents, riverbeam, config))
    return riverbeam


def prepare(
    *,
    store: bool = True,
    agents: bool = False,
    models: bool = False,
    queue: bool = False,
    events: bool = False,
    push: bool = False,
    tokens: bool = False,
) -> None:
    """In Lambda, make at init what each request of the function uses: the RiverBeam (its DynamoDB client;
    not without `store`) and, as asked, the agents, their models (a Bedrock model with its client), the SQS
    client, the EventBridge client, the management API client (AWS's advice: clients outside the handler), the
    token check (AuthMode jwt). Made inside coldstart's pause of the collector they cost less than made by
    the first request, and are frozen with the rest of init. Elsewhere (tests, the local stack) nothing is
    made here: the first use makes each, as it always does. A failure is logged and left to the first
    request, which tries again and answers with the error."""
    if "AWS_LAMBDA_FUNCTION_NAME" not in os.environ:
        return
    try:
        riverbeam = beam() if store or agents or models else None
        if agents and riverbeam is not None:
            riverbeam.load_agents()
        if models and riverbeam is not None:
            for runner in riverbeam.agents().values():
                # a runner's model and the model's client are made by their first use (a job) otherwise
                getattr(getattr(runner, "model", None), "client", None)
        if queue:
            sqs()
        if events and settings().event_bus_name:
            events_client()
        if push:
            management_api()
        if tokens and settings().auth_mode == "jwt":
            from . import tokens as _  # noqa: F401
    except Exception:
        logger.exception("init could not make what requests use: the first request makes it again")


def register_agents(riverbeam: RiverBeam, config: Settings) -> None:
    """The built-in `author`, then agents.yaml's agents, then those of RIVERBEAM_AGENTS (each may replace
    an agent of the same name registered before it). The built-in `author` is not built where agents.yaml
    replaces it (the template's does): it would cost the first request naming an agent for nothing."""
    from ..tools.worktree import WorkTree

    runners: Mapping[str, AgentRunner] = {}
    policies: dict[str, Policy] = {}  # each agent's approval policy, where agents.yaml names one
    timezones: dict[str, str] = {}  # and its time zone
    work_tree = WorkTree.from_environment(config.data_dir)
    if config.agents_file:
        from ..agent.config import configured_runners

        runners = configured_runners(
            config.agents_file,
            work_tree=work_tree,
            offline=config.model == "offline",
            policies=policies,
            timezones=timezones,
        )
    if "author" not in runners:
        riverbeam.register_agent("author", _author(work_tree))
    for name, runner in runners.items():
        riverbeam.register_agent(name, runner, policy=policies.get(name), timezone=timezones.get(name))
    if config.agents:
        module, _, name = config.agents.partition(":")
        register: Any = getattr(importlib.import_module(module), name or "register")
        register(riverbeam)


def record_usage(usage: TokenUsage | None) -> None:
    """The tokens a run's model calls used, as metrics (a model that counts none sends none)."""
    if usage is None:
        return
    for name, value in (
        ("InputTokens", usage.input_tokens),
        ("OutputTokens", usage.output_tokens),
        ("CacheReadTokens", usage.cache_read_tokens),
        ("CacheWriteTokens", usage.cache_write_tokens),
    ):
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def reset() -> None:
    """Forget what was created (tests change the environment between cases)."""
    for cached in (settings, sqs, management_api, events_client, beam):
        cached.cache_clear()
