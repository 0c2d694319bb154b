"""`riverbeam dev --model bedrock` checks, before it starts, what its agents need to call Bedrock: a region
and credentials, found as boto3 finds them (the environment, a profile, an SSO login). A missing one is one
line saying what to set, not a run that fails later."""

from __future__ import annotations


def bedrock_problem() -> str | None:
    """What keeps the agents from calling Bedrock from here, or None."""
    import boto3
    from botocore.exceptions import BotoCoreError

    session = boto3.Session()
    if not session.region_name:
        return "--model bedrock needs an AWS region: set AWS_DEFAULT_REGION (or a profile's region)"
    try:
        credentials = session.get_credentials()
    except BotoCoreError as error:  # a profile that names a provider that fails
        return f"--model bedrock: the AWS credentials cannot be read: {error}"
    if credentials is None:
        return (
            "--model bedrock needs AWS credentials: set AWS_PROFILE (or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY), or log in with `aws sso login`"
        )
    return None
