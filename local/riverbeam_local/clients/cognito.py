"""A stack's Cognito user pool from the command line: `riverbeam login` (USER_PASSWORD_AUTH with the
pool's app client, no secret) and the renewal of an ID token (REFRESH_TOKEN_AUTH). The pool is the one
`<url>/login.json` names (the local stack serves it), or `--client-id` and `--region` (a deployment's outputs
name them). Requests to Cognito's sign-in are unsigned: no AWS credentials are needed."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from ..display import visible
from .client import ClientError
from .options import url_problem
from .tokens_file import Json, TokenProblem, login_hint, save_entry, stack_key

SIGN_IN_TIMEOUT_SECONDS = 30
POOL_HINT = "give --client-id and --region (the stack's outputs UserPoolClientId and its region)"


def _idp(entry: Json) -> Any:
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    config = Config(signature_version=UNSIGNED, connect_timeout=10, read_timeout=SIGN_IN_TIMEOUT_SECONDS)
    return boto3.client(
        "cognito-idp", region_name=entry["region"], endpoint_url=entry.get("endpoint") or None, config=config
    )


def _authenticated(entry: Json, flow: str, parameters: dict[str, str]) -> Json:
    """The tokens Cognito answers for `flow`; TokenProblem in one line for anything else."""
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError as AwsError

    try:
        answer = _idp(entry).initiate_auth(
            ClientId=entry["client_id"], AuthFlow=flow, AuthParameters=parameters
        )
    except AwsError as error:
        code = error.response.get("Error", {})
        raise TokenProblem(f"{code.get('Code', 'refused')}: {code.get('Message', '')}".strip()) from None
    except BotoCoreError as error:
        raise TokenProblem(f"the user pool cannot be reached: {error}") from None
    if "AuthenticationResult" not in answer:
        challenge = answer.get("ChallengeName", "a challenge")
        raise TokenProblem(
            f"the pool asks for {challenge}: give the user a permanent password first"
            " (aws cognito-idp admin-set-user-password --permanent)"
        )
    result: Json = answer["AuthenticationResult"]
    return result


def renewed(url: str, entry: Json) -> Json:
    """The entry with a new ID token, by its refresh token; TokenProblem saying to sign in again."""
    if not entry.get("refresh_token") or not entry.get("client_id") or not entry.get("region"):
        raise TokenProblem(f"the sign-in to {stack_key(url)} has expired: {login_hint(url)}")
    try:
        result = _authenticated(entry, "REFRESH_TOKEN_AUTH", {"REFRESH_TOKEN": entry["refresh_token"]})
    except TokenProblem as problem:
        raise TokenProblem(
            f"the sign-in to {stack_key(url)} has expired ({problem}): {login_hint(url)}"
        ) from None
    return {**entry, "id_token": result["IdToken"]}


def _pool(args: argparse.Namespace) -> Json:
    """The pool to sign in to: the options, else the stack's /login.json."""
    if args.client_id:
        if not args.region:
            raise TokenProblem("--client-id goes with --region (the stack's outputs name both)")
        return {"client_id": args.client_id, "region": args.region, "endpoint": args.endpoint}
    from .client import ApiClient, ApiError

    try:
        found = ApiClient(args.url, "login").request("GET", "/login.json")
    except ClientError as error:
        if isinstance(error, ApiError) and error.code == "BEM-033":  # a local stack that takes its secret
            said = f"the stack at {stack_key(args.url)} takes its secret, not tokens"
            raise TokenProblem(f"{said}: start it with `riverbeam dev --auth jwt`") from None
        raise TokenProblem(
            f"{stack_key(args.url)}/login.json names no user pool ({error.line()}): {POOL_HINT}"
        ) from None
    if not isinstance(found, dict) or not {"client_id", "region"} <= found.keys():
        raise TokenProblem(
            f"{stack_key(args.url)}/login.json names no user pool: give --client-id and --region"
        )
    return {"client_id": found["client_id"], "region": found["region"], "endpoint": found.get("endpoint")}


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="riverbeam login",
        description="Sign in to a stack's Cognito user pool; the tokens are kept for its --url "
        "($XDG_CONFIG_HOME/riverbeam/tokens.json, else ~/.config/riverbeam/, readable by you alone).",
    )
    found.add_argument("--url", required=True, help="the stack's HTTP API")
    found.add_argument("--client-id", help="the pool's app client (default: the stack's /login.json)")
    found.add_argument("--region", help="the pool's region (with --client-id)")
    found.add_argument("--endpoint", help=argparse.SUPPRESS)  # another Cognito endpoint (a test's)
    return found


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    problem = url_problem(args.url)
    if problem:
        print(f"riverbeam login: {problem}", file=sys.stderr)
        return 2
    try:
        pool = _pool(args)
        username = input("Username: ").strip()
        password = getpass.getpass("Password: ")  # never echoed
        result = _authenticated(pool, "USER_PASSWORD_AUTH", {"USERNAME": username, "PASSWORD": password})
        entry = {**pool, "username": username, "id_token": result["IdToken"]}
        entry["refresh_token"] = result.get("RefreshToken")
        path = save_entry(args.url, entry)
    except ClientError as error:
        print(f"riverbeam login: {visible(error.line())}", file=sys.stderr)
        return 1
    except EOFError:  # the input ended before a username and password were given
        print("\nriverbeam login: no username and password given", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("", file=sys.stderr)
        return 130
    print(f"signed in to {stack_key(args.url)} as {visible(username)}; tokens kept in {path}")
    return 0
