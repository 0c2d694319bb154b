"""What the local stack reads from template.yaml: the routes of both APIs and the function each one reaches,
the table's definition (its stream too) and the queues' settings, the functions the queue and the stream
feed. Reading them (rather than copying them here) keeps the
local stack from drifting from the deployment."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
TABLE_KEYS = ("AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes", "BillingMode")
_SUB_NAME = re.compile(r"\$\{([A-Za-z0-9]+)(?:\.Arn)?\}")


class _CloudFormationLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !Sub, !GetAtt...) kept as {"Fn::Tag": value}."""


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {("Ref" if suffix == "Ref" else f"Fn::{suffix}"): value}


_CloudFormationLoader.add_multi_constructor("!", _tagged)


def _referenced(value: Any) -> str:
    """The logical id a Ref, GetAtt or Sub names: {"Ref": "HttpApi"}, {"Fn::GetAtt": "F.Arn"},
    {"Fn::Sub": "integrations/${HttpInvokeIntegration}"} or "...${InvokeFunction.Arn}/invocations"."""
    if isinstance(value, dict) and len(value) == 1:
        ((kind, inner),) = value.items()
        if kind == "Ref":
            return str(inner)
        if kind == "Fn::GetAtt":
            return str(inner[0] if isinstance(inner, list) else inner.split(".")[0])
        if kind == "Fn::Sub":
            names = _SUB_NAME.findall(inner if isinstance(inner, str) else inner[0])
            local = [n for n in names if not n.startswith("AWS")]
            if len(local) == 1:
                return str(local[0])
    raise ValueError(f"template.yaml: cannot tell which resource {value!r} names")


@dataclass(frozen=True)
class Function:
    """A Lambda function of the template: its handler module file and function name, its timeout."""

    name: str
    module_file: Path
    attribute: str
    timeout_seconds: int


@dataclass(frozen=True)
class HttpRoute:
    method: str
    path: str
    function: Function

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}" if self.path else self.method  # "$default" has no path


@dataclass(frozen=True)
class WebSocketRoute:
    route_key: str
    function: Function
    # a route with a route response sends the handler's body back on the connection
    responds: bool


@dataclass(frozen=True)
class QueueSpec:
    fifo: bool
    content_based_deduplication: bool
    visibility_timeout: int
    max_receive_count: int


@dataclass(frozen=True)
class StreamSource:
    """The event source mapping of the table's stream: the function it feeds and how."""

    function: Function
    batch_size: int
    max_retries: int
    # the FilterCriteria's one pattern (None: every record)
    pattern: dict[str, Any] | None


@dataclass(frozen=True)
class Template:
    root: Path
    stage: str
    http_routes: list[HttpRoute]
    websocket_routes: dict[str, WebSocketRoute]
    route_selection_expression: str
    table_definition: dict[str, Any]
    ttl_attribute: str | None
    queue: QueueSpec
    # the function the queue's event source mapping feeds, and its batch size
    queue_consumer: Function
    batch_size: int
    functions: dict[str, Function]
    # the functions an EventBridge schedule calls (an event of Type Schedule): the sweep
    scheduled: list[Function]
    # the functions the table's stream feeds (the approval events' publisher, the Slack notifier)
    stream_consumers: list[StreamSource]
    # the functions' environment variables that are plain strings (POWERTOOLS_SERVICE_NAME...)
    literal_environment: dict[str, str]

    @property
    def stream_consumer(self) -> StreamSource | None:
        """The approval events' publisher (EventsFunction), where the stream feeds it."""
        return next((s for s in self.stream_consumers if s.function.name == "EventsFunction"), None)


def _functions(root: Path, doc: dict[str, Any]) -> dict[str, Function]:
    defaults = doc.get("Globals", {}).get("Function", {})
    found = {}
    for name, resource in doc["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        props = {**defaults, **resource.get("Properties", {})}
        module, _, attribute = str(props["Handler"]).rpartition(".")
        module_file = root / str(props["CodeUri"]) / (module.replace(".", "/") + ".py")
        found[name] = Function(name, module_file, attribute, int(props.get("Timeout", 3)))
    return found


def _scheduled(doc: dict[str, Any], functions: dict[str, Function]) -> list[Function]:
    return [
        functions[name]
        for name, resource in doc["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
        and any(
            e.get("Type") == "Schedule" for e in (resource.get("Properties", {}).get("Events") or {}).values()
        )
    ]


def _table_definition(table: dict[str, Any]) -> dict[str, Any]:
    """The table's create_table arguments (its stream in the API's form, which CloudFormation's lacks)."""
    definition = {k: table[k] for k in TABLE_KEYS if k in table}
    stream = table.get("StreamSpecification")
    if stream:
        view = stream["StreamViewType"]
        definition["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": view}
    return definition


def _stream_sources(
    mappings: dict[str, dict[str, Any]], table_name: str, functions: dict[str, Function]
) -> list[StreamSource]:
    found = [
        m
        for m in mappings.values()
        if isinstance(m["EventSourceArn"], dict)
        and m["EventSourceArn"].get("Fn::GetAtt") in (f"{table_name}.StreamArn", [table_name, "StreamArn"])
    ]
    return [_stream_source(mapping, functions) for mapping in found]


def _stream_source(mapping: dict[str, Any], functions: dict[str, Function]) -> StreamSource:
    filters = (mapping.get("FilterCriteria") or {}).get("Filters") or []
    if len(filters) > 1:
        raise ValueError("template.yaml: the stream's event source mapping has more than one filter")
    return StreamSource(
        function=functions[_referenced(mapping["FunctionName"])],
        batch_size=int(mapping.get("BatchSize", 100)),
        max_retries=int(mapping.get("MaximumRetryAttempts", 10000)),
        pattern=json.loads(filters[0]["Pattern"]) if filters else None,
    )


def read(root: Path = ROOT) -> dict[str, Any]:
    """template.yaml as a document, its short tags in CloudFormation's long form ({"Ref": ...},
    {"Fn::GetAtt": ...})."""
    doc: dict[str, Any] = yaml.load((root / "template.yaml").read_text(), Loader=_CloudFormationLoader)
    return doc


def load(root: Path = ROOT) -> Template:
    doc = read(root)
    resources: dict[str, dict[str, Any]] = doc["Resources"]
    functions = _functions(root, doc)

    def of(kind: str) -> dict[str, dict[str, Any]]:
        return {n: r.get("Properties", {}) for n, r in resources.items() if r["Type"] == kind}

    apis = of("AWS::ApiGatewayV2::Api")
    integrations = of("AWS::ApiGatewayV2::Integration")
    answered = {_referenced(p["RouteId"]) for p in of("AWS::ApiGatewayV2::RouteResponse").values()}
    http_routes: list[HttpRoute] = []
    websocket_routes: dict[str, WebSocketRoute] = {}
    selection = "$request.body.action"
    for route_name, route in of("AWS::ApiGatewayV2::Route").items():
        api = apis[_referenced(route["ApiId"])]
        integration = integrations[_referenced(route["Target"])]
        function = functions[_referenced(integration["IntegrationUri"])]
        if api["ProtocolType"] == "HTTP":
            method, _, path = str(route["RouteKey"]).partition(" ")
            http_routes.append(HttpRoute(method, path, function))
        else:
            selection = str(api.get("RouteSelectionExpression", selection))
            responds = "RouteResponseSelectionExpression" in route or route_name in answered
            websocket_routes[route["RouteKey"]] = WebSocketRoute(route["RouteKey"], function, responds)
    ((table_name, table),) = of("AWS::DynamoDB::Table").items()
    ttl = table.get("TimeToLiveSpecification", {})
    queues = of("AWS::SQS::Queue")
    ((main_name, main),) = [(n, q) for n, q in queues.items() if "RedrivePolicy" in q]
    (mapping,) = [
        m
        for m in of("AWS::Lambda::EventSourceMapping").values()
        if _referenced(m["EventSourceArn"]) == main_name
    ]
    variables = doc.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    return Template(
        root=root,
        stage=str(doc.get("Parameters", {}).get("StageName", {}).get("Default", "v1")),
        http_routes=http_routes,
        websocket_routes=websocket_routes,
        route_selection_expression=selection,
        table_definition=_table_definition(table),
        ttl_attribute=ttl.get("AttributeName") if ttl.get("Enabled") else None,
        queue=QueueSpec(
            fifo=bool(main.get("FifoQueue", False)),
            content_based_deduplication=bool(main.get("ContentBasedDeduplication", False)),
            visibility_timeout=int(main.get("VisibilityTimeout", 30)),
            max_receive_count=int(main["RedrivePolicy"]["maxReceiveCount"]),
        ),
        queue_consumer=functions[_referenced(mapping["FunctionName"])],
        batch_size=int(mapping.get("BatchSize", 10)),
        functions=functions,
        scheduled=_scheduled(doc, functions),
        stream_consumers=_stream_sources(of("AWS::Lambda::EventSourceMapping"), table_name, functions),
        literal_environment={k: str(v) for k, v in variables.items() if isinstance(v, str | int)},
    )
