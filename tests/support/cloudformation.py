"""The transformed template deployed into moto's CloudFormation (mock_aws): the code objects uploaded as
`sam package` leaves them, the stack created and updated, the physical resources it made.

moto's CloudFormation has no AWS::ApiGatewayV2 resources (it warns and skips them, and leaves a Ref or a
${} to them unresolved); the tests check those in the transformed template instead. Where moto creates a
resource but drops part of it, `moto_cloudformation` fills in that part, narrowly, so the deployed resource
can be compared with the template."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import boto3
from moto import mock_aws
from moto.awslambda.models import LambdaFunction, LayerVersion
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.table import Table
from moto.events.models import EventBus
from moto.iam.models import Role
from moto.sqs.models import Queue

from tests.support.stores import REGION

STACK = "riverbeam"


def _fifo_queue_name(original: Any) -> Any:
    # CloudFormation names a FIFO queue it names itself <stack>-<logical id>-<suffix>.fifo (SQS refuses a
    # FIFO queue whose name lacks .fifo); moto leaves out the .fifo and fails the stack
    def create(cls: Any, resource_name: str, cloudformation_json: Any, *args: Any, **kwargs: Any) -> Any:
        fifo = str(cloudformation_json.get("Properties", {}).get("FifoQueue", "")).lower() == "true"
        if fifo and not resource_name.endswith(".fifo"):
            resource_name = f"{resource_name[:75]}.fifo"
        return original(cls, resource_name, cloudformation_json, *args, **kwargs)

    return classmethod(create)


def _function_layers_and_tracing(original: Any) -> Any:
    # moto's AWS::Lambda::Function takes neither Layers nor TracingConfig from the template
    def create(cls: Any, resource_name: str, cloudformation_json: Any, *args: Any, **kwargs: Any) -> Any:
        function = original(cls, resource_name, cloudformation_json, *args, **kwargs)
        properties = cloudformation_json["Properties"]
        if "Layers" in properties:
            function.layers = function._get_layers_data(properties["Layers"])
        if "TracingConfig" in properties:
            function.tracing_config = properties["TracingConfig"]
        return function

    return classmethod(create)


def _table_ttl_and_recovery(original: Any) -> Any:
    # moto's AWS::DynamoDB::Table ignores TimeToLiveSpecification and PointInTimeRecoverySpecification:
    # apply them through moto's own UpdateTimeToLive and UpdateContinuousBackups
    def create(cls: Any, resource_name: str, cloudformation_json: Any, *args: Any, **kwargs: Any) -> Any:
        table = original(cls, resource_name, cloudformation_json, *args, **kwargs)
        properties = cloudformation_json["Properties"]
        backend = dynamodb_backends[table.account_id][table.region_name]
        if "TimeToLiveSpecification" in properties:
            backend.update_time_to_live(table.name, properties["TimeToLiveSpecification"])
        if "PointInTimeRecoverySpecification" in properties:
            backend.update_continuous_backups(table.name, properties["PointInTimeRecoverySpecification"])
        return table

    return classmethod(create)


def _role_policies_as_json(original: Any) -> Any:
    # moto keeps an AWS::IAM::Role's inline policy documents as the template's objects and sends them back
    # in Python's notation; IAM holds (and GetRolePolicy returns) JSON, as moto does for the trust policy
    def create(cls: Any, resource_name: str, cloudformation_json: Any, *args: Any, **kwargs: Any) -> Any:
        for policy in cloudformation_json["Properties"].get("Policies", []):
            if not isinstance(policy["PolicyDocument"], str):
                policy["PolicyDocument"] = json.dumps(policy["PolicyDocument"])
        return original(cls, resource_name, cloudformation_json, *args, **kwargs)

    return classmethod(create)


@contextmanager
def moto_cloudformation() -> Iterator[None]:
    """mock_aws, with moto's CloudFormation completed where it drops what the template says."""
    with ExitStack() as stack:
        stack.enter_context(mock_aws())
        for cls, fill in (
            (Queue, _fifo_queue_name),
            (LambdaFunction, _function_layers_and_tracing),
            (Table, _table_ttl_and_recovery),
            (Role, _role_policies_as_json),
        ):
            original = cls.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]
            stack.enter_context(mock.patch.object(cls, "create_from_cloudformation_json", fill(original)))
        # moto leaves an Fn::If's AWS::NoValue in a list (Layers) as None; CloudFormation drops it
        layers_of = LambdaFunction._get_layers_data
        stack.enter_context(
            mock.patch.object(
                LambdaFunction,
                "_get_layers_data",
                lambda self, arns: layers_of(self, [arn for arn in arns if arn is not None]),
            )
        )
        # a Ref to these returns the object itself in moto; CloudFormation returns the bus's name and the
        # layer version's ARN
        for cls, physical_id in ((EventBus, "name"), (LayerVersion, "arn")):
            value = property(lambda self, attribute=physical_id: getattr(self, attribute))
            stack.enter_context(mock.patch.object(cls, "physical_resource_id", value, create=True))
        yield


@dataclass
class Stack:
    """A deployed stack: its name, its parameters as given, each resource's physical id by logical id, and
    its outputs."""

    name: str
    parameters: dict[str, str]
    physical: dict[str, str]
    outputs: dict[str, str]


def _upload_code(template: Mapping[str, Any]) -> None:
    """Put an object at each S3 location the template's functions and layers name (moto reads them)."""
    s3 = boto3.client("s3", region_name=REGION)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("app.py", "def lambda_handler(event, context):\n    return None\n")
    for resource in template["Resources"].values():
        code = resource.get("Properties", {}).get("Code") or resource.get("Properties", {}).get("Content")
        if isinstance(code, dict) and "S3Key" in code:
            buckets = {b["Name"] for b in s3.list_buckets()["Buckets"]}
            if code["S3Bucket"] not in buckets:
                s3.create_bucket(Bucket=code["S3Bucket"])
            s3.put_object(Bucket=code["S3Bucket"], Key=code["S3Key"], Body=archive.getvalue())


def _described(name: str, parameters: Mapping[str, str]) -> Stack:
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    (described,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
    summaries = cloudformation.list_stack_resources(StackName=name)["StackResourceSummaries"]
    return Stack(
        name=name,
        parameters=dict(parameters),
        physical={
            s["LogicalResourceId"]: s["PhysicalResourceId"] for s in summaries if s["LogicalResourceId"]
        },
        outputs={o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])},
    )


def _stack_parameters(parameters: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()]


def create_stack(template: Mapping[str, Any], parameters: Mapping[str, str], name: str = STACK) -> Stack:
    """Deploy a transformed template (inside moto_cloudformation) as a stack of these parameter values."""
    _upload_code(template)
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.create_stack(
        StackName=name,
        TemplateBody=json.dumps(template),
        Parameters=_stack_parameters(parameters),
        Capabilities=["CAPABILITY_IAM"],
    )
    status = cloudformation.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"]
    assert status == "CREATE_COMPLETE", status
    return _described(name, parameters)


def update_stack(stack: Stack, template: Mapping[str, Any], parameters: Mapping[str, str]) -> Stack:
    """Update the stack with these parameter values (the same template)."""
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    cloudformation.update_stack(
        StackName=stack.name,
        TemplateBody=json.dumps(template),
        Parameters=_stack_parameters(parameters),
        Capabilities=["CAPABILITY_IAM"],
    )
    status = cloudformation.describe_stacks(StackName=stack.name)["Stacks"][0]["StackStatus"]
    assert status == "UPDATE_COMPLETE", status
    return _described(stack.name, parameters)
