"""template.yaml as CloudFormation receives it (packaged, SAM's transform applied) deployed into moto's
CloudFormation: the stack is created, then updated with other parameter values, and what it made is compared
with the template: the table's keys, indexes, TTL and stream, the queues' FIFO, redrive and sizes, each
function's environment, layers, memory, timeout and tracing, the schedule, the queue and the table's stream
that feed functions (the stream's filter, retries, bisection and dead-letter queue), and each role's
inline policy, resource by resource. A Bedrock model id and an inference-profile id in
BedrockModelIds are checked as the grants they make.

moto has no AWS::ApiGatewayV2 resources (it skips them, and leaves a Ref or ${} to them unresolved: the
WebSocket endpoint, PushFrames' ARN, the permissions' source ARNs): the APIs' routes, integrations,
authorizer and stages are checked in the transformed template instead, for each AuthMode."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from tests.support.cloudformation import Stack, create_stack, moto_cloudformation, update_stack
from tests.support.stores import REGION
from tests.support.transformed import auth_modes, checker, parameters, transformed

ACCOUNT = checker.ACCOUNT
PROFILE_ID = "us.anthropic.claude-3-5-haiku-20241022-v1:0"  # a cross-region inference profile (US regions)
PROFILE_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"  # the foundation model it routes to
PLAIN_ID = "anthropic.claude-3-5-sonnet-20240620-v1:0"  # a foundation model called by its own id
INVOKE = "bedrock:InvokeModelWithResponseStream"  # what ConverseStream is authorized as

# moto warns of each resource type it skips, at every create and update
pytestmark = pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning:moto.cloudformation.parsing")


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """The template's resources of a kind, those of Slack and mail left out: these deployments give neither
    (tests/unit/test_slack_template.py checks the Slack block transformed with them)."""
    return {
        name: r
        for name, r in template["Resources"].items()
        if r["Type"] == kind and r.get("Condition") not in ("UseSlack", "UseMail")
    }


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    """One moto account for the module's stacks (each has a name of its own)."""
    with moto_cloudformation():
        yield


@pytest.fixture(scope="module")
def deployed(moto: None) -> tuple[dict[str, Any], Stack]:
    """The jwt deployment, its agents on an inference profile and on a plain model id."""
    params = parameters("jwt", BedrockModelIds=f"{PROFILE_ID},{PLAIN_ID}")
    template = transformed("jwt", BedrockModelIds=params["BedrockModelIds"])
    return template, create_stack(template, params)


# ---------------------------------------------------------------- data


def test_the_table_has_the_templates_keys_indexes_ttl_and_recovery(
    deployed: tuple[dict[str, Any], Stack],
) -> None:
    template, stack = deployed
    ((name, table),) = _resources(template, "AWS::DynamoDB::Table").items()
    props = table["Properties"]
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    made = dynamodb.describe_table(TableName=stack.physical[name])["Table"]
    assert made["KeySchema"] == props["KeySchema"]
    assert sorted(made["AttributeDefinitions"], key=str) == sorted(props["AttributeDefinitions"], key=str)
    indexes = {i["IndexName"]: (i["KeySchema"], i["Projection"]) for i in made["GlobalSecondaryIndexes"]}
    assert indexes == {
        i["IndexName"]: (i["KeySchema"], i["Projection"]) for i in props["GlobalSecondaryIndexes"]
    }
    assert made["BillingModeSummary"]["BillingMode"] == props["BillingMode"] == "PAY_PER_REQUEST"
    # the stream the events function reads the outbox items from
    view = props["StreamSpecification"]["StreamViewType"]
    assert view == "NEW_IMAGE"
    assert made["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": view}
    assert made["LatestStreamArn"].startswith(f"{made['TableArn']}/stream/")
    ttl = dynamodb.describe_time_to_live(TableName=stack.physical[name])["TimeToLiveDescription"]
    assert ttl == {
        "TimeToLiveStatus": "ENABLED",
        "AttributeName": props["TimeToLiveSpecification"]["AttributeName"],
    }
    backups = dynamodb.describe_continuous_backups(TableName=stack.physical[name])[
        "ContinuousBackupsDescription"
    ]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"
    assert stack.outputs["TableName"] == stack.physical[name]


def test_the_queues_are_fifo_with_the_templates_redrive_and_sizes(
    deployed: tuple[dict[str, Any], Stack],
) -> None:
    template, stack = deployed
    sqs = boto3.client("sqs", region_name=REGION)
    queues = _resources(template, "AWS::SQS::Queue")
    attributes = {
        name: sqs.get_queue_attributes(QueueUrl=stack.physical[name], AttributeNames=["All"])["Attributes"]
        for name in queues
    }
    # the stream's dead-letter queue is a standard queue: Lambda's on-failure destination must be one
    events_dead = attributes.pop("EventsDeadLetterQueue")
    assert "FifoQueue" not in events_dead and events_dead["SqsManagedSseEnabled"] == "true"
    written = queues.pop("EventsDeadLetterQueue")["Properties"]["MessageRetentionPeriod"]
    assert events_dead["MessageRetentionPeriod"] == str(written) == "1209600"
    assert stack.outputs["EventsDeadLetterQueueUrl"] == stack.physical["EventsDeadLetterQueue"]
    for name, queue in queues.items():
        props, made = queue["Properties"], attributes[name]
        assert made["FifoQueue"] == "true" and made["QueueArn"].endswith(".fifo"), name
        for key in ("MessageRetentionPeriod", "MaximumMessageSize"):
            assert made[key] == str(props[key]), (name, key)
        assert made["SqsManagedSseEnabled"] == "true", name
    job, dead = attributes["JobQueue"], attributes["DeadLetterQueue"]
    assert job["ContentBasedDeduplication"] == "true"
    assert job["VisibilityTimeout"] == str(queues["JobQueue"]["Properties"]["VisibilityTimeout"])
    redrive = json.loads(job["RedrivePolicy"])
    written = queues["JobQueue"]["Properties"]["RedrivePolicy"]["maxReceiveCount"]
    assert redrive == {"deadLetterTargetArn": dead["QueueArn"], "maxReceiveCount": written}
    assert int(dead["MessageRetentionPeriod"]) > int(job["MessageRetentionPeriod"])
    assert stack.outputs["QueueUrl"] == stack.physical["JobQueue"]


# ---------------------------------------------------------------- functions


def _expected_environment(template: dict[str, Any], stack: Stack, function: str) -> dict[str, str]:
    """A function's environment as CloudFormation resolves the template's: literals as written, a Ref to a
    parameter its value (or default), a Ref to a resource that resource's physical id; the rest named here."""
    variables = template["Resources"][function]["Properties"]["Environment"]["Variables"]
    defaults = {k: str(p.get("Default", "")) for k, p in template["Parameters"].items()}
    # the pseudo parameter the metrics' and spans' service name is (each stack its own)
    values = {**defaults, **stack.parameters, "AWS::StackName": stack.name}
    expected: dict[str, str] = {}
    # a pool of the stack's own only with AuthMode jwt and no JwtIssuer given (the stacks here give one)
    makes_pool = values["AuthMode"] == "jwt" and not values["JwtIssuer"]
    for key, value in variables.items():
        if isinstance(value, dict) and set(value) == {"Fn::If"} and value["Fn::If"][0] == "MakeUserPool":
            assert not makes_pool, "a stack of this module gives JwtIssuer"
            value = value["Fn::If"][2]
        if isinstance(value, str):
            expected[key] = value
        elif set(value) == {"Ref"}:
            ref = value["Ref"]
            expected[key] = values[ref] if ref in values else stack.physical[ref]
    # AdotLayerArn empty: no ADOT wrapper (the variable left out); ApprovalEventBus empty: the stack's own bus
    wrapper = {"AWS_LAMBDA_EXEC_WRAPPER"}
    if values["AdotLayerArn"]:
        expected["AWS_LAMBDA_EXEC_WRAPPER"] = "/opt/otel-instrument"
    expected["EVENT_BUS_NAME"] = values["ApprovalEventBus"] or stack.physical["ApprovalBus"]
    # the WebSocket API is not made by moto: its id stays unresolved (the form is checked in the template)
    assert variables["WEBSOCKET_ENDPOINT"] == {
        "Fn::Sub": "https://${WebSocketApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${StageName}"
    }
    expected["WEBSOCKET_ENDPOINT"] = (
        f"https://${{WebSocketApi}}.execute-api.{REGION}.amazonaws.com/{values['StageName']}"
    )
    assert set(expected) | wrapper == set(variables), set(variables) ^ set(expected)
    return expected


FRAMEWORK_CONDITIONS = {
    "UsePydanticAI": "pydantic_ai",
    "UseLangGraph": "langgraph",
    "UseOpenAIAgents": "openai_agents",
    "UseStrands": "strands",
}


def _expected_layers(template: dict[str, Any], stack: Stack, props: dict[str, Any]) -> list[str]:
    """A function's layers as CloudFormation resolves them: ADOT's only where AdotLayerArn is set; the git
    layer, or in its place the framework's that AgentFramework names."""
    adot = stack.parameters.get("AdotLayerArn") or template["Parameters"]["AdotLayerArn"]["Default"]
    framework = stack.parameters.get("AgentFramework", "")
    holds = {"ExportTraces": bool(adot)} | {c: framework == f for c, f in FRAMEWORK_CONDITIONS.items()}
    found = []
    for layer in props["Layers"]:
        while "Fn::If" in layer:
            condition, then, otherwise = layer["Fn::If"]
            layer = then if holds[condition] else otherwise
        if layer == {"Ref": "AWS::NoValue"}:
            continue
        found.append(adot if layer == {"Ref": "AdotLayerArn"} else stack.physical[layer["Ref"]])
    return found


def _configuration(stack: Stack, function: str) -> dict[str, Any]:
    made = boto3.client("lambda", region_name=REGION).get_function_configuration(
        FunctionName=stack.physical[function]
    )
    made["Environment"]["Variables"] = {k: str(v) for k, v in made["Environment"]["Variables"].items()}
    return made  # type: ignore[no-any-return]


def test_each_function_has_the_templates_environment_layers_memory_and_timeout(
    deployed: tuple[dict[str, Any], Stack],
) -> None:
    template, stack = deployed
    functions = _resources(template, "AWS::Lambda::Function")
    assert set(functions) == set(_resources(checker.read_template(), "AWS::Serverless::Function"))
    for name, function in functions.items():
        props, made = function["Properties"], _configuration(stack, name)
        assert made["Environment"]["Variables"] == _expected_environment(template, stack, name), name
        assert [layer["Arn"] for layer in made["Layers"]] == _expected_layers(template, stack, props), name
        assert (made["MemorySize"], made["Timeout"]) == (props["MemorySize"], props["Timeout"]), name
        assert (made["Runtime"], made["Handler"], made["Architectures"]) == (
            "python3.12",
            "app.lambda_handler",
            ["x86_64"],
        )
        assert made["TracingConfig"] == {"Mode": "Active"}, name
        role = props["Role"]["Fn::GetAtt"][0]
        assert made["Role"] == f"arn:aws:iam::{ACCOUNT}:role/{stack.physical[role]}", name
    # every function on the Riverbeam layer, the connections function on the tokens layer too
    layer_outputs = [stack.outputs["LayerArn"], stack.outputs["TokensLayerArn"]]
    assert [layer["Arn"] for layer in _configuration(stack, "ConnectionsFunction")["Layers"]] == layer_outputs
    assert _configuration(stack, "WorkerFunction")["Timeout"] == 900


def test_the_schedule_feeds_the_sweep_and_the_queue_feeds_the_worker(
    deployed: tuple[dict[str, Any], Stack],
) -> None:
    template, stack = deployed
    events = boto3.client("events", region_name=REGION)
    ((rule_name, rule),) = _resources(template, "AWS::Events::Rule").items()
    made = events.describe_rule(Name=stack.physical[rule_name])
    defaults = {k: p.get("Default") for k, p in template["Parameters"].items()}
    assert (made["ScheduleExpression"], made["State"]) == (defaults["SweepSchedule"], "ENABLED")
    (target,) = events.list_targets_by_rule(Rule=stack.physical[rule_name])["Targets"]
    assert target["Arn"].endswith(f":function:{stack.physical['SweepFunction']}")
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": ["SweepFunction", "Arn"]}

    lambdas = boto3.client("lambda", region_name=REGION)
    (mapping,) = lambdas.list_event_source_mappings(FunctionName=stack.physical["WorkerFunction"])[
        "EventSourceMappings"
    ]
    queue_arn = stack.outputs["QueueArn"]
    assert (mapping["EventSourceArn"], mapping["BatchSize"], mapping["State"]) == (queue_arn, 10, "Enabled")
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_tables_stream_feeds_the_events_function_with_outbox_items_and_a_dead_letter_queue(
    deployed: tuple[dict[str, Any], Stack],
) -> None:
    template, stack = deployed
    lambdas = boto3.client("lambda", region_name=REGION)
    (mapping,) = lambdas.list_event_source_mappings(FunctionName=stack.physical["EventsFunction"])[
        "EventSourceMappings"
    ]
    table = boto3.client("dynamodb", region_name=REGION).describe_table(TableName=stack.outputs["TableName"])
    dead_arn = boto3.client("sqs", region_name=REGION).get_queue_attributes(
        QueueUrl=stack.outputs["EventsDeadLetterQueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    written = template["Resources"]["EventsStreamSource"]["Properties"]
    assert mapping["EventSourceArn"] == table["Table"]["LatestStreamArn"]
    assert (mapping["StartingPosition"], mapping["State"]) == ("TRIM_HORIZON", "Enabled")
    assert mapping["BatchSize"] == written["BatchSize"] == 10
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert mapping["MaximumRetryAttempts"] == written["MaximumRetryAttempts"] == 10
    assert mapping["DestinationConfig"] == {"OnFailure": {"Destination": dead_arn}}
    (only,) = mapping["FilterCriteria"]["Filters"]
    assert json.loads(only["Pattern"]) == {
        "eventName": ["INSERT"],
        "dynamodb": {"NewImage": {"entity": {"S": ["outbox"]}}},
    }


def test_the_content_bucket_is_private_encrypted_tls_only_and_expires_frames_and_answers(
    deployed: tuple[dict[str, Any], Stack],
) -> None:
    """moto makes the bucket with its encryption; it drops the public access block, ownership and lifecycle
    and skips AWS::S3::BucketPolicy: those are checked in the template CloudFormation gets."""
    template, stack = deployed
    ((name, bucket),) = _resources(template, "AWS::S3::Bucket").items()
    s3, physical = boto3.client("s3", region_name=REGION), stack.physical[name]
    assert bucket["DeletionPolicy"] == bucket["UpdateReplacePolicy"] == "Retain"  # as long as the table
    (rule,) = s3.get_bucket_encryption(Bucket=physical)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "IgnorePublicAcls": True,
        "BlockPublicPolicy": True,
        "RestrictPublicBuckets": True,
    }
    assert props["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    ((_, policy),) = _resources(template, "AWS::S3::BucketPolicy").items()
    assert policy["Properties"]["Bucket"] == {"Ref": name}
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert (statement["Effect"], statement["Principal"], statement["Action"]) == ("Deny", "*", "s3:*")
    assert statement["Resource"] == [{"Fn::GetAtt": [name, "Arn"]}, {"Fn::Sub": f"${{{name}.Arn}}/*"}]
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    rules = props["LifecycleConfiguration"]["Rules"]
    assert all(r["Status"] == "Enabled" for r in rules)
    expiring = {r["Prefix"]: r["ExpirationInDays"] for r in rules if "ExpirationInDays" in r}
    # frames live FrameTtlSeconds (a day by default) or an approval's time plus a day; answers 24 hours;
    # messages and actions are records the table keeps: their objects never expire
    assert expiring == {"frames/": {"Ref": "FrameContentDays"}, "requests/": 2}
    parameters = template["Parameters"]
    frame_days, frame_ttl = parameters["FrameContentDays"], parameters["FrameTtlSeconds"]
    assert frame_days["Default"] * 86400 > frame_ttl["Default"] + 86400 and frame_days["MinValue"] >= 2


def test_exactly_the_functions_that_write_or_read_content_may_put_or_get_it(
    deployed: tuple[dict[str, Any], Stack],
) -> None:
    template, stack = deployed
    granted: dict[str, set[str]] = {}
    for role, statements in _deployed_policies(template, stack).items():
        for statement in statements:
            for action in _as_list(statement["Action"]):
                if action.startswith("s3:"):
                    granted.setdefault(action, set()).add(role.removesuffix("FunctionRole"))
    writers = {"Invoke", "Resume", "Worker"}  # the steps' writes (a resume resolves actions)
    readers = writers | {"Records", "Sweep"}
    # ListBucket beside GetObject: a missing object then answers 404, not 403
    assert granted == {"s3:PutObject": writers, "s3:GetObject": readers, "s3:ListBucket": readers}
    for name in _resources(template, "AWS::Lambda::Function"):
        variables = _configuration(stack, name)["Environment"]["Variables"]
        if name.removesuffix("Function") in granted["s3:GetObject"]:
            assert variables["CONTENT_BUCKET"] == stack.physical["ContentBucket"], name
        else:
            assert "CONTENT_BUCKET" not in variables, name


# ---------------------------------------------------------------- policies


def _deployed_policies(template: dict[str, Any], stack: Stack) -> dict[str, list[dict[str, Any]]]:
    """Each role's one inline policy as IAM holds it: its statements by role."""
    iam = boto3.client("iam", region_name=REGION)
    found = {}
    for name, role in _resources(template, "AWS::IAM::Role").items():
        (policy,) = role["Properties"]["Policies"]
        made = iam.get_role_policy(RoleName=stack.physical[name], PolicyName=policy["PolicyName"])
        found[name] = made["PolicyDocument"]["Statement"]
    return found


def _expected_resources(stack: Stack, described: dict[str, Any], bus_arn: str) -> dict[str, Any]:
    """Each statement's resources, by Sid, as this stack names them (`described`: the table, as
    DescribeTable has it)."""
    table_arn = described["TableArn"]
    table = [table_arn, f"{table_arn}/index/*"]
    events_dead = boto3.client("sqs", region_name=REGION).get_queue_attributes(
        QueueUrl=stack.outputs["EventsDeadLetterQueueUrl"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    content = f"arn:aws:s3:::{stack.physical['ContentBucket']}/*"
    connections = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:${{WebSocketApi}}/v1/POST/@connections/*"
    ids = stack.parameters["BedrockModelIds"].split(",")
    return {
        # item actions on the table (an index takes none), Query on the table and its indexes
        "TableReadWrite": table_arn,
        "TableRead": table_arn,
        "QueryTable": table,
        "QueryIndexes": f"{table_arn}/index/*",
        "ContentReadWrite": content,
        "ContentRead": content,
        "ContentList": f"arn:aws:s3:::{stack.physical['ContentBucket']}",
        "SessionsAndConnections": table_arn,
        "ExpireActions": table_arn,
        # SecretsKmsKeyArn: left empty, a key id no key has
        "DecryptSecrets": f"arn:aws:kms:{REGION}:{ACCOUNT}:key/none",
        "RevokeGrant": table_arn,  # the session item's grant# attribute: the table only, no index
        "ReadTableStream": described["LatestStreamArn"],
        "ListTableStreams": "*",
        "SendFailedBatches": events_dead,
        "EnqueueJobs": stack.outputs["QueueArn"],
        "ConsumeJobs": stack.outputs["QueueArn"],
        "PutApprovalEvents": bus_arn,
        # the WebSocket API's id is left unresolved by moto (no ApiGatewayV2); the rest is resolved
        "PushFrames": connections,
        "InvokeConfiguredModels": [f"arn:*:bedrock:*::foundation-model/{i}" for i in ids]
        + [f"arn:*:bedrock:*:*:inference-profile/{i}" for i in ids],
        "InvokeModelsBehindConfiguredProfiles": "arn:aws:bedrock:*::foundation-model/*",
        # GitCredentialsSecret's ARN, by its name (any 6-character suffix): left empty, no secret has it
        "ReadGitCredentials": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:"
        + stack.parameters.get("GitCredentialsSecret", "")
        + "-??????",
        # McpHeaderSecretArns: left empty, a secret no one can create
        "ReadMcpHeaders": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:-??????",
    }


def test_each_role_allows_what_the_template_says_on_this_stacks_resources(
    deployed: tuple[dict[str, Any], Stack],
) -> None:
    template, stack = deployed
    source = checker.read_template()["Resources"]
    described = boto3.client("dynamodb", region_name=REGION).describe_table(
        TableName=stack.outputs["TableName"]
    )["Table"]
    bus = stack.outputs["ApprovalEventBusName"]
    bus_arn = boto3.client("events", region_name=REGION).describe_event_bus(Name=bus)["Arn"]
    expected = _expected_resources(stack, described, bus_arn)
    for role, statements in _deployed_policies(template, stack).items():
        function = role.removesuffix("Role")
        written = source[function]["Properties"]["Policies"][0]["Statement"]
        assert [s["Sid"] for s in statements] == [s["Sid"] for s in written], role
        for statement, as_written in zip(statements, written, strict=True):
            assert statement["Effect"] == "Allow" and statement["Action"] == as_written["Action"], role
            assert statement["Resource"] == expected[statement["Sid"]], (role, statement["Sid"])
        # SAM's transform adds the managed policies for logs and X-Ray (moto does not attach them)
        assert template["Resources"][role]["Properties"]["ManagedPolicyArns"] == [
            "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
            "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
        ]
    assert {
        r for r, s in _deployed_policies(template, stack).items() if "InvokeConfiguredModels" in str(s)
    } == {
        "InvokeFunctionRole",
        "WorkerFunctionRole",
    }
    # the approval events are put by the events function alone (the others write them to the outbox)
    assert {r for r, s in _deployed_policies(template, stack).items() if "events:PutEvents" in str(s)} == {
        "EventsFunctionRole"
    }


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def _arn_like(value: str, pattern: str) -> bool:
    """IAM's ArnLike: each of the six colon-separated parts matched on its own (the last keeps its colons)."""
    parts, patterns = value.split(":", 5), pattern.split(":", 5)
    return len(parts) == len(patterns) == 6 and all(map(fnmatch.fnmatchcase, parts, patterns))


_OPERATORS = {"StringLike": fnmatch.fnmatchcase, "ArnLike": _arn_like}


def _allows(statements: list[dict[str, Any]], resource: str, context: dict[str, str] | None = None) -> bool:
    """Whether these Allow statements let INVOKE reach this resource with this request context: an IAM
    evaluation of what they use (glob Resources, StringLike and ArnLike); anything else fails the test."""
    context = context or {}
    for statement in statements:
        assert statement["Effect"] == "Allow" and set(statement) <= {
            "Sid",
            "Effect",
            "Action",
            "Resource",
            "Condition",
        }
        if INVOKE not in _as_list(statement["Action"]):
            continue
        if not any(fnmatch.fnmatchcase(resource, p) for p in _as_list(statement["Resource"])):
            continue
        conditions = statement.get("Condition", {})
        if all(
            key in context and any(_OPERATORS[operator](context[key], p) for p in _as_list(patterns))
            for operator, keys in conditions.items()
            for key, patterns in keys.items()
        ):
            return True
    return False


def _profile_arn(profile: str, account: str = ACCOUNT) -> str:
    return f"arn:aws:bedrock:{REGION}:{account}:inference-profile/{profile}"


def _model_arn(model: str, region: str) -> str:
    return f"arn:aws:bedrock:{region}::foundation-model/{model}"


def _through_profile(statements: list[dict[str, Any]], profile_arn: str, model: str, region: str) -> bool:
    """A call through a profile: authorized on the profile, and on the foundation model where it is routed."""
    context = {"bedrock:InferenceProfileArn": profile_arn}
    return _allows(statements, profile_arn) and _allows(statements, _model_arn(model, region), context)


def test_an_inference_profile_id_grants_the_profile_and_its_foundation_models_and_a_plain_id_its_model(
    deployed: tuple[dict[str, Any], Stack],
) -> None:
    template, stack = deployed
    policies = _deployed_policies(template, stack)
    for role in ("InvokeFunctionRole", "WorkerFunctionRole"):
        statements = [s for s in policies[role] if s["Sid"].startswith("Invoke")]
        # the profile, and its foundation model in each US region it routes to
        for region in ("us-east-1", "us-east-2", "us-west-2"):
            assert _through_profile(statements, _profile_arn(PROFILE_ID), PROFILE_MODEL, region), (
                role,
                region,
            )
        # the plain id: its foundation model, in the function's region
        assert _allows(statements, _model_arn(PLAIN_ID, REGION)), role
        # nothing else: the profile's model called directly, another profile, another account's profile
        assert not _allows(statements, _model_arn(PROFILE_MODEL, REGION)), role
        other = "us.anthropic.claude-3-opus-20240229-v1:0"
        assert not _through_profile(
            statements, _profile_arn(other), "anthropic.claude-3-opus-20240229-v1:0", REGION
        )
        assert not _through_profile(
            statements, _profile_arn(PROFILE_ID, "210987654321"), PROFILE_MODEL, REGION
        )
        assert not _allows(statements, _model_arn("anthropic.claude-3-opus-20240229-v1:0", REGION)), role
    # the functions that run no agent are granted no model
    assert not [
        r
        for r, s in policies.items()
        if r not in ("InvokeFunctionRole", "WorkerFunctionRole") and "bedrock" in str(s)
    ]


# ---------------------------------------------------------------- an update


def test_updating_parameters_changes_what_they_feed_and_replaces_nothing(moto: None) -> None:
    params = parameters("none")
    # moto's update diffs every resource that names a changed parameter, also one whose condition is false
    # (CloudFormation skips it): the Slack resources, not made here, are left out of the template
    template = transformed("none")
    template["Resources"] = {
        n: r for n, r in template["Resources"].items() if r.get("Condition") not in ("UseSlack", "UseMail")
    }
    created = create_stack(template, params, name="riverbeam-updated")
    functions = _resources(template, "AWS::Lambda::Function")
    before = {name: _configuration(created, name) for name in functions}
    changed = {**params, "LogLevel": "DEBUG", "ModelMode": "offline", "FrameTtlSeconds": "600"}
    updated = update_stack(created, template, changed)
    assert updated.physical == created.physical  # every resource kept, none replaced
    for name, was in before.items():
        now = _configuration(updated, name)
        variables, old = now["Environment"]["Variables"], was["Environment"]["Variables"]
        assert variables == _expected_environment(template, updated, name), name
        assert {k: (old[k], v) for k, v in variables.items() if old[k] != v} == {
            "POWERTOOLS_LOG_LEVEL": ("INFO", "DEBUG"),
            "RIVERBEAM_MODEL": ("bedrock", "offline"),
            "FRAME_TTL_SECONDS": ("86400", "600"),
        }, name
        assert variables["AUTH_MODE"] == "none", name
        assert now["Layers"] == was["Layers"] and now["MemorySize"] == was["MemorySize"], name


# ---------------------------------------------------------------- traces exported by ADOT


def test_with_adots_layer_every_function_exports_its_spans_through_it(moto: None) -> None:
    # ADOT's layer is AWS's, in another account; moto knows only its own account's layers: one stands in
    adot = boto3.client("lambda", region_name=REGION).publish_layer_version(
        LayerName="aws-otel-python-amd64", Content={"ZipFile": b"PK\x05\x06" + b"\x00" * 18}
    )["LayerVersionArn"]
    params = parameters("none", AdotLayerArn=adot)
    template = transformed("none", AdotLayerArn=adot)
    stack = create_stack(template, params, name="riverbeam-traced")
    functions = _resources(template, "AWS::Lambda::Function")

    def props(name: str) -> dict[str, Any]:
        return functions[name]["Properties"]

    for name in functions:
        made = _configuration(stack, name)
        assert [layer["Arn"] for layer in made["Layers"]] == _expected_layers(template, stack, props(name)), (
            name
        )
        assert adot in [layer["Arn"] for layer in made["Layers"]], name
        assert made["Environment"]["Variables"]["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/otel-instrument", name
        assert made["Environment"]["Variables"] == _expected_environment(template, stack, name), name


def test_with_an_agent_framework_its_layer_takes_the_git_layers_place(moto: None) -> None:
    params = parameters("none", AgentFramework="langgraph")
    template = transformed("none", AgentFramework="langgraph")
    stack = create_stack(template, params, name="riverbeam-langgraph")
    functions = _resources(template, "AWS::Lambda::Function")
    # SAM names a layer's version by its logical id and a hash of its content
    made_layers = {logical for logical in stack.physical if logical.endswith(tuple("0123456789abcdef"))}
    langgraph = next(stack.physical[m] for m in made_layers if m.startswith("LangGraphLayer"))
    for name in ("InvokeFunction", "ResumeFunction", "WorkerFunction"):
        made = [layer["Arn"] for layer in _configuration(stack, name)["Layers"]]
        assert made == _expected_layers(template, stack, functions[name]["Properties"]), name
        assert langgraph in made and len(made) <= 4, name
        assert not any("GitLayer" in arn for arn in made), name
    # made only where AgentFramework names it
    assert not any(m.startswith(("PydanticAILayer", "StrandsLayer")) for m in stack.physical)


# ---------------------------------------------------------------- the APIs (not in moto)


def _when(value: Any, conditions: dict[str, bool]) -> Any:
    """The value with each Fn::If decided by these conditions (AWS::NoValue dropped)."""
    if isinstance(value, dict):
        if set(value) == {"Fn::If"}:
            name, then, otherwise = value["Fn::If"]
            return _when(then if conditions[name] else otherwise, conditions)
        resolved = {k: _when(v, conditions) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v != {"Ref": "AWS::NoValue"}}
    if isinstance(value, list):
        return [_when(v, conditions) for v in value]
    return value


def _named(value: Any) -> str:
    """The logical id a Ref, a GetAtt or a one-resource Sub names."""
    if "Ref" in value:
        return str(value["Ref"])
    if "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    names = {n.split(".")[0] for n in re.findall(r"\$\{([^}]+)\}", value["Fn::Sub"]) if "::" not in n}
    (name,) = names - {"StageName"}
    return name


@pytest.mark.parametrize("auth_mode", auth_modes())
def test_the_apis_routes_reach_functions_with_the_authorization_of_the_auth_mode(auth_mode: str) -> None:
    template = transformed(auth_mode)
    source = checker.read_template()["Resources"]
    apis = _resources(template, "AWS::ApiGatewayV2::Api")
    # SAM's transform leaves the API resources as written
    for kind in ("Api", "Route", "Integration", "Authorizer", "Stage", "Deployment", "RouteResponse"):
        for name, resource in _resources(template, f"AWS::ApiGatewayV2::{kind}").items():
            assert resource == source[name], name
    assert template["Conditions"]["UseJwt"] == {"Fn::Equals": [{"Ref": "AuthMode"}, "jwt"]}
    conditions = {"UseJwt": auth_mode == "jwt", "AllowCrossOrigin": True}
    permitted = {
        (_named(p["Properties"]["FunctionName"]), _named(p["Properties"]["SourceArn"]))
        for p in _resources(template, "AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "apigateway.amazonaws.com"
    }
    functions = _resources(template, "AWS::Lambda::Function")
    # public on the HTTP API: the API's description and CORS preflights; the WebSocket API has no API
    # Gateway authorizer (the connections function checks the caller at $connect)
    public = {"GET /openapi.json", "OPTIONS /{proxy+}"}
    for name, route in _resources(template, "AWS::ApiGatewayV2::Route").items():
        props = _when(route["Properties"], conditions)
        api = _named(props["ApiId"])
        integration = template["Resources"][_named(props["Target"])]["Properties"]
        function = _named(integration["IntegrationUri"])
        assert _named(integration["ApiId"]) == api and function in functions, name
        assert (function, api) in permitted, f"{name}: API Gateway may not call {function}"
        if apis[api]["Properties"]["ProtocolType"] == "HTTP" and props["RouteKey"] not in public:
            if auth_mode == "jwt":
                assert props["AuthorizationType"] == "JWT", name
                assert props["AuthorizerId"] == {"Ref": "HttpJwtAuthorizer"}, name
            else:
                assert props.get("AuthorizationType", "NONE") == "NONE" and "AuthorizerId" not in props, name
        else:
            assert props.get("AuthorizationType", "NONE") == "NONE" and "AuthorizerId" not in props, name
    (authorizer,) = _resources(template, "AWS::ApiGatewayV2::Authorizer").values()
    assert authorizer["Condition"] == "UseJwt"  # made only under AuthMode jwt
    # the issuer given, else the stack's own user pool (tests/unit/test_template_user_pool.py)
    pool_issuer = {"Fn::Sub": "https://cognito-idp.${AWS::Region}.${AWS::URLSuffix}/${UserPool}"}
    assert authorizer["Properties"]["JwtConfiguration"] == {
        "Issuer": {"Fn::If": ["MakeUserPool", pool_issuer, {"Ref": "JwtIssuer"}]},
        "Audience": {
            "Fn::If": [
                "MakeUserPool",
                [{"Ref": "UserPoolClient"}],
                {"Fn::Split": [",", {"Ref": "JwtAudience"}]},
            ]
        },
    }
    stages = {
        _named(s["Properties"]["ApiId"]): s["Properties"]
        for s in _resources(template, "AWS::ApiGatewayV2::Stage").values()
    }
    assert set(stages) == set(apis)
    assert all(s["StageName"] == {"Ref": "StageName"} for s in stages.values())
