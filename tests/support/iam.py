"""The transformed template (tests/support/transformed.py) read as IAM and Lambda read a deployment of it:
its intrinsic functions resolved for one deployment's parameters and resources, each function's role as
statements, an IAM evaluation of Allow statements for a call (tests/support/aws_calls.py), and the Lambda
permissions' SourceArn patterns, matched as Lambda does (StringLike: `*` any characters, `?` one)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.aws_calls import ACCOUNT, REGION, Call

PSEUDO = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "riverbeam",
}
_NO_VALUE = object()


@dataclass
class Deployment:
    """What a deployment's template resolves to: its parameters' values (defaults filled in) and, by
    logical id, each resource's Ref and attributes."""

    template: dict[str, Any]
    parameters: dict[str, str]
    refs: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, spec in self.template["Parameters"].items():
            self.parameters.setdefault(name, str(spec.get("Default", "")))

    def parameter(self, name: str) -> str | list[str]:
        value = self.parameters[name]
        if self.template["Parameters"][name]["Type"] == "CommaDelimitedList":
            return value.split(",")
        return value

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.template["Conditions"][name]))

    def ref(self, name: str) -> Any:
        if name in PSEUDO:
            return PSEUDO[name]
        if name == "AWS::NoValue":
            return _NO_VALUE
        if name in self.template["Parameters"]:
            return self.parameter(name)
        if name in self.refs:
            return self.refs[name]
        raise KeyError(f"no value for Ref {name} in this deployment")

    def get_att(self, name: str, attribute: str) -> str:
        try:
            return self.attributes[name][attribute]
        except KeyError:
            raise KeyError(f"no value for {name}.{attribute} in this deployment") from None

    def _sub(self, text: str, variables: Mapping[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                return self.get_att(*name.split(".", 1))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}!]+)\}", one, text)

    def resolve(self, value: Any) -> Any:
        """The value with every intrinsic function evaluated (AWS::NoValue dropped from lists and maps)."""
        if isinstance(value, list):
            return [v for v in (self.resolve(item) for item in value) if v is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Fn::GetAtt":
                name, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.get_att(name, attribute)
            if key == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else arg
                return self._sub(text, {k: self.resolve(v) for k, v in variables.items()})
            if key == "Fn::Join":
                return str(arg[0]).join(str(v) for v in self.resolve(arg[1]))
            if key == "Fn::Split":
                return str(self.resolve(arg[1])).split(arg[0])
            if key == "Fn::Select":
                return self.resolve(arg[1])[int(self.resolve(arg[0]))]
            if key == "Fn::If":
                return self.resolve(arg[1] if self.condition(arg[0]) else arg[2])
            if key == "Fn::Equals":
                left, right = (self.resolve(v) for v in arg)
                return left == right
            if key == "Fn::Not":
                return not self.resolve(arg[0])
            if key == "Fn::And":
                return all(self.resolve(v) for v in arg)
            if key == "Fn::Or":
                return any(self.resolve(v) for v in arg)
            if key == "Condition":
                return self.condition(arg)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}

    def exists(self, name: str) -> bool:
        condition = self.template["Resources"][name].get("Condition")
        return condition is None or self.condition(condition)

    def statements(self, role: str) -> list[dict[str, Any]]:
        """The role's inline policies' statements, resolved (its managed policies are SAM's: logs, X-Ray)."""
        props = self.template["Resources"][role]["Properties"]
        return [
            statement
            for policy in props.get("Policies", [])
            for statement in self.resolve(policy["PolicyDocument"])["Statement"]
        ]


def as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def like(value: str, pattern: str, *, ignore_case: bool = False) -> bool:
    """IAM's and Lambda's StringLike: `*` any run of characters, `?` any one."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, flags=re.IGNORECASE if ignore_case else 0) is not None


def arn_like(value: str, pattern: str) -> bool:
    """IAM's ArnLike: each of the six colon-separated parts matched on its own (the last keeps its colons)."""
    parts, patterns = value.split(":", 5), pattern.split(":", 5)
    return len(parts) == len(patterns) == 6 and all(map(like, parts, patterns))


_OPERATORS = {
    "StringLike": like,
    "StringEquals": lambda value, pattern: value == pattern,
    "ArnLike": arn_like,
    "ArnEquals": lambda value, pattern: value == pattern,
}
_STATEMENT_KEYS = {"Sid", "Effect", "Action", "Resource", "Condition"}


def _conditions_hold(statement: Mapping[str, Any], context: Mapping[str, str]) -> bool:
    for operator, keys in statement.get("Condition", {}).items():
        test = _OPERATORS[operator]  # an operator this evaluation does not know fails the test
        for key, patterns in keys.items():
            if key not in context or not any(test(context[key], p) for p in as_list(patterns)):
                return False
    return True


def grants(statement: Mapping[str, Any], call: Call) -> tuple[str, str] | None:
    """The (action pattern, resource pattern) of this Allow statement that allow the call, or None."""
    assert statement["Effect"] == "Allow" and set(statement) <= _STATEMENT_KEYS, statement
    if not _conditions_hold(statement, dict(call.context)):
        return None
    for action in as_list(statement["Action"]):
        if not like(call.action, action, ignore_case=True):
            continue
        for resource in as_list(statement["Resource"]):
            if like(call.resource, resource):
                return action, resource
    return None


def allowed(statements: list[dict[str, Any]], call: Call) -> bool:
    return any(grants(s, call) for s in statements)


def grant_triples(statements: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Every (Sid, action, resource) a role's statements grant."""
    return {
        (s.get("Sid", ""), action, resource)
        for s in statements
        for action in as_list(s["Action"])
        for resource in as_list(s["Resource"])
    }


def used_triples(statements: list[dict[str, Any]], calls: set[Call]) -> set[tuple[str, str, str]]:
    """The (Sid, action, resource) grants that allow at least one of the calls."""
    found = set()
    for call in calls:
        for s in statements:
            if (hit := grants(s, call)) is not None:
                found.add((s.get("Sid", ""), *hit))
    return found


def route_source_arns(deployment: Deployment, api: str, route_key: str, stage: str) -> list[str]:
    """The SourceArns API Gateway presents to Lambda for a route: <api>/<stage>/<route key> on a
    WebSocket API or for $default; <api>/<stage>/<METHOD>/<path> otherwise, with the path as the route
    key writes it and with a value in each {parameter} (either must match)."""
    api_id = deployment.refs[api]
    base = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{api_id}/{stage}"
    if " " not in route_key:
        return [f"{base}/{route_key}"]
    method, path = route_key.split(" ", 1)
    valued = re.sub(r"\{[^}]+\}", "x1", path)
    return [f"{base}/{method}{path}", f"{base}/{method}{valued}"]


def _defaults(kind: str, name: str) -> tuple[str, dict[str, str]]:
    """A resource's Ref and attributes, for a physical name, as CloudFormation gives them."""
    at = f"{REGION}:{ACCOUNT}"
    if kind == "AWS::Lambda::Function":
        return name, {"Arn": f"arn:aws:lambda:{at}:function:{name}"}
    if kind == "AWS::DynamoDB::Table":
        arn = f"arn:aws:dynamodb:{at}:table/{name}"
        return name, {"Arn": arn, "StreamArn": f"{arn}/stream/2026-12-07T00:00:00.000"}
    if kind == "AWS::SQS::Queue":
        url = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
        return url, {"Arn": f"arn:aws:sqs:{at}:{name}", "QueueName": name}
    if kind == "AWS::S3::Bucket":
        return name, {"Arn": f"arn:aws:s3:::{name}"}
    if kind == "AWS::Events::EventBus":
        return name, {"Arn": f"arn:aws:events:{at}:event-bus/{name}", "Name": name}
    if kind == "AWS::Logs::LogGroup":
        return name, {"Arn": f"arn:aws:logs:{at}:log-group:{name}:*"}
    return name, {}


def deployment(template: dict[str, Any], parameters: Mapping[str, str], **names: str) -> Deployment:
    """A deployment of the transformed template: each resource named by `names` (logical id: physical
    name), else by its logical id."""
    made = Deployment(template, dict(parameters))
    for logical, resource in template["Resources"].items():
        ref, attributes = _defaults(resource["Type"], names.get(logical, logical))
        made.refs[logical], made.attributes[logical] = ref, attributes
    return made


def role_of(function: str) -> str:
    """The role SAM's transform makes for functions/<function>: InvokeFunctionRole for invoke,
    SlackNotifierFunctionRole for slack_notifier."""
    return "".join(part.capitalize() for part in function.split("_")) + "FunctionRole"


def function_of(deployment: Deployment, reference: Any) -> str:
    """functions/<name> of a FunctionName or an integration's URI (a Ref, GetAtt or Sub of the function)."""
    text = str(reference)
    (found,) = {
        logical
        for logical, r in deployment.template["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function" and re.search(rf"\b{logical}\b", text)
    }
    return re.sub(r"(?<!^)(?=[A-Z])", "_", found.removesuffix("Function")).lower()


def event_source_calls(deployment: Deployment) -> set[Call]:
    """What Lambda's event source mappings call as the function's role (not the function's code): an SQS
    queue received from and its messages deleted, a DynamoDB stream read, a failed batch sent to its
    on-failure queue (the execution role permissions of Lambda's docs for each)."""
    calls: set[Call] = set()
    for name, resource in deployment.template["Resources"].items():
        if resource["Type"] != "AWS::Lambda::EventSourceMapping" or not deployment.exists(name):
            continue
        props = deployment.resolve(resource["Properties"])
        function = function_of(deployment, resource["Properties"]["FunctionName"])
        source = props["EventSourceArn"]
        if source.startswith("arn:aws:sqs:"):
            actions = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]
            calls |= {Call(function, a, source) for a in actions}
        else:
            actions = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]
            calls |= {Call(function, a, source) for a in actions} | {
                Call(function, "dynamodb:ListStreams", "*")
            }
        failed = props.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        if failed:
            calls.add(Call(function, "sqs:SendMessage", failed))
    return calls
