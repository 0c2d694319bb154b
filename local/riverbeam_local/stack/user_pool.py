"""`riverbeam dev --auth jwt`: the stack's Cognito user pool in its embedded server (moto's cognito-idp), so
the JWT path runs end to end without AWS (CONTRACT 18). moto signs its ID tokens with the key it ships and
serves that key's JWKS at `/<pool id>/.well-known/jwks.json`; its `iss` is Cognito's URL for the pool
(`https://cognito-idp.us-east-1.amazonaws.com/<pool id>`), so the functions are given that issuer, the app
client as the audience and the embedded server's JWKS URL (JWKS_URL), and verify tokens as they do on AWS.
The door stands in for the HTTP API's JWT authorizer with the same check (identity.verified_claims). The
caller is `cognito:username`. `riverbeam dev add-user` adds a user to a running stack's pool, with the
stack's AWS key from `<data dir>/aws.env`; the pool lives as long as the stack (a restart makes a new one)."""

from __future__ import annotations

import argparse
import contextlib
import getpass
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..stack_secret import DEFAULT_DATA_DIR

# moto answers unsigned Cognito requests (the sign-in, the JWKS) from its us-east-1 pools
REGION = "us-east-1"
POOL_NAME = "riverbeam-local"
CLIENT_NAME = "riverbeam-cli"
USER_ID_CLAIM, GROUPS_CLAIM = "cognito:username", "cognito:groups"
# a developer's pool: passwords of 8 characters at least, no classes of character required
MIN_PASSWORD = 8
PASSWORD_POLICY = {
    "MinimumLength": MIN_PASSWORD,
    "RequireUppercase": False,
    "RequireLowercase": False,
    "RequireNumbers": False,
    "RequireSymbols": False,
}


@dataclass(frozen=True)
class DevPool:
    """The pool, its app client and where moto serves them."""

    endpoint: str
    pool_id: str
    client_id: str

    @property
    def issuer(self) -> str:
        return f"https://cognito-idp.{REGION}.amazonaws.com/{self.pool_id}"

    def environment(self) -> dict[str, str]:
        """The functions' settings for AuthMode jwt with this pool."""
        return {
            "AUTH_MODE": "jwt",
            "JWT_ISSUER": self.issuer,
            "JWT_AUDIENCE": self.client_id,
            "JWKS_URL": f"{self.endpoint}/{self.pool_id}/.well-known/jwks.json",
            "USER_ID_CLAIM": USER_ID_CLAIM,
            "GROUPS_CLAIM": GROUPS_CLAIM,
        }

    def login(self) -> dict[str, str]:
        """`GET /login.json`: what `riverbeam login` needs to sign in (nothing secret)."""
        return {"region": REGION, "client_id": self.client_id, "endpoint": self.endpoint}

    def verifier(self) -> Callable[[str], dict[str, Any]]:
        """The HTTP API's JWT authorizer: a token's claims, or BeamError BEM-030 saying why not."""
        from riverbeam.aws.identity import verified_claims
        from riverbeam.aws.settings import Settings

        settings = Settings.model_validate({"TABLE_NAME": "authorizer", **self.environment()})
        return lambda token: verified_claims(settings, token)

    def banner(self, http_url: str, data_dir: Path) -> dict[str, str]:
        """The ready lines: the pool, how to add a user, how to sign in."""
        own = data_dir.expanduser() != DEFAULT_DATA_DIR.expanduser()
        where = f" --data-dir {shlex.quote(str(data_dir))}" if own else ""
        return {
            "User pool": f"{self.pool_id} (Cognito, embedded; AuthMode jwt, the caller {USER_ID_CLAIM})",
            "Add a user": f"riverbeam dev add-user NAME --group ops{where}",
            "Sign in": f"riverbeam login --url {http_url.rstrip('/')}",
        }


def add_auth_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--auth",
        choices=["none", "jwt"],
        default="none",
        help="none: the caller is who the request says (default); jwt: a Cognito user pool in the embedded "
        "server, and every request carries a user's token instead of the secret: `riverbeam dev add-user "
        "NAME` adds a user, `riverbeam login --url URL` signs in",
    )


def _idp(endpoint: str, credentials: dict[str, str] | None = None) -> Any:
    import boto3

    keys = credentials or {}
    return boto3.client(
        "cognito-idp",
        region_name=REGION,
        endpoint_url=endpoint,
        aws_access_key_id=keys.get("aws_access_key_id"),
        aws_secret_access_key=keys.get("aws_secret_access_key"),
    )


def start_pool(embedded: Any) -> DevPool:
    """The pool on the stack's embedded server; StartError where nothing is embedded."""
    from .server import StartError

    if embedded is None:
        raise StartError("--auth jwt keeps its user pool in the embedded server: unset AWS_ENDPOINT_URL_*")
    return make_pool(embedded.url)


def make_pool(endpoint: str) -> DevPool:
    """The pool and its app client on the embedded server (USER_PASSWORD_AUTH and REFRESH_TOKEN_AUTH, no
    client secret, as the template makes them)."""
    idp = _idp(endpoint)
    pool = idp.create_user_pool(PoolName=POOL_NAME, Policies={"PasswordPolicy": PASSWORD_POLICY})
    pool_id = pool["UserPool"]["Id"]
    client = idp.create_user_pool_client(
        UserPoolId=pool_id,
        ClientName=CLIENT_NAME,
        GenerateSecret=False,
        ExplicitAuthFlows=["ALLOW_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"],
    )
    return DevPool(endpoint, pool_id, client["UserPoolClient"]["ClientId"])


# ---------------------------------------------------------------------- riverbeam dev add-user


def _stack_aws(data_dir: Path) -> tuple[str, dict[str, str]]:
    """The embedded endpoint and the stack's AWS key, from `<data dir>/aws.env`."""
    path = data_dir.expanduser() / "aws.env"
    try:
        text = path.read_text()
    except OSError:
        raise SystemExit(
            f"riverbeam dev add-user: no {path}: is `riverbeam dev --auth jwt` running?"
        ) from None
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("export "):
            for word in shlex.split(line[len("export ") :]):
                name, _, value = word.partition("=")
                found[name] = value
    # every embedded service is at the one server's URL, Cognito too
    endpoint = next((v for k, v in found.items() if k.startswith("AWS_ENDPOINT_URL_")), "")
    keys = {"aws_access_key_id": found.get("AWS_ACCESS_KEY_ID", ""), "aws_secret_access_key": ""}
    keys["aws_secret_access_key"] = found.get("AWS_SECRET_ACCESS_KEY", "")
    return endpoint, keys


def add_user(idp: Any, name: str, password: str, groups: list[str]) -> str:
    """The user in the stack's pool with this permanent password and these groups; the pool's id."""
    pools = [p for p in idp.list_user_pools(MaxResults=60)["UserPools"] if p["Name"] == POOL_NAME]
    if not pools:
        raise SystemExit("riverbeam dev add-user: the stack has no user pool: start it with --auth jwt")
    pool_id = pools[-1]["Id"]
    idp.admin_create_user(UserPoolId=pool_id, Username=name, MessageAction="SUPPRESS")
    try:  # whole or not at all: a user refused its password or a group is taken out again
        idp.admin_set_user_password(UserPoolId=pool_id, Username=name, Password=password, Permanent=True)
        for group in groups:
            with contextlib.suppress(idp.exceptions.GroupExistsException):
                idp.create_group(UserPoolId=pool_id, GroupName=group)
            idp.admin_add_user_to_group(UserPoolId=pool_id, Username=name, GroupName=group)
    except Exception:
        idp.admin_delete_user(UserPoolId=pool_id, Username=name)
        raise
    return str(pool_id)


def add_user_main(argv: list[str]) -> int:
    found = argparse.ArgumentParser(
        prog="riverbeam dev add-user",
        description="Add a user to the user pool of a running `riverbeam dev --auth jwt`.",
    )
    found.add_argument("name")
    found.add_argument("--password", help="the user's password, 8 characters at least (default: asked)")
    found.add_argument("--group", action="append", default=[], help="a group of the user's (repeatable)")
    found.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="the stack's data dir")
    args = found.parse_args(argv)
    from botocore.exceptions import BotoCoreError, ClientError

    endpoint, keys = _stack_aws(args.data_dir)
    password = args.password or getpass.getpass("Password: ")
    try:
        pool_id = add_user(_idp(endpoint, keys), args.name, password, args.group)
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        said = {
            "InvalidPasswordException": f"the password is refused: {MIN_PASSWORD} characters at least",
            "UsernameExistsException": f"a user {args.name} exists already in the pool",
        }.get(code, f"{code}: {error.response.get('Error', {}).get('Message', '')}")
        print(f"riverbeam dev add-user: {said}", file=sys.stderr)
        return 1
    except BotoCoreError as error:
        print(f"riverbeam dev add-user: the stack cannot be reached ({error})", file=sys.stderr)
        return 1
    groups = f" in {', '.join(args.group)}" if args.group else ""
    print(f"added {args.name}{groups} to the pool {pool_id} (riverbeam login --url <the stack's URL>)")
    return 0
