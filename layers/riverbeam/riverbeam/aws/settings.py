"""The deployment's settings, read once from the function's environment (template.yaml sets them)."""

# no `from __future__ import annotations`: the model is built at import, and pydantic would compile and
# evaluate every field's annotation string first
import os
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..pipeline import DEFAULT_FRAME_TTL_SECONDS


class Settings(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    table_name: str = Field(alias="TABLE_NAME", min_length=3)
    queue_url: str = Field(default="", alias="QUEUE_URL")
    # `none` trusts the body's auth_context and the `user_id` query parameter: local use only
    auth_mode: Literal["jwt", "none"] = Field(default="jwt", alias="AUTH_MODE")
    jwt_issuer: str = Field(default="", alias="JWT_ISSUER")
    jwt_audience: tuple[str, ...] = Field(default=(), alias="JWT_AUDIENCE")
    # the token's claim that lists the caller's groups (an approval policy's Group parents)
    groups_claim: str = Field(default="cognito:groups", alias="GROUPS_CLAIM", min_length=1)
    # the token's claim that names the caller (`cognito:username` where approvers are listed by name)
    user_id_claim: str = Field(default="sub", alias="USER_ID_CLAIM", min_length=1)
    # where the issuer's signing keys are; by default `<issuer>/.well-known/jwks.json` (Cognito's path)
    jwks_url: str = Field(default="", alias="JWKS_URL")
    # the API Gateway management API of the WebSocket stage: https://<api>.execute-api.<region>.amazonaws.com/<stage>
    websocket_endpoint: str = Field(default="", alias="WEBSOCKET_ENDPOINT")
    frame_ttl_seconds: int = Field(default=DEFAULT_FRAME_TTL_SECONDS, alias="FRAME_TTL_SECONDS", gt=0)
    # the S3 bucket that keeps content too large for a DynamoDB item; empty: such content fails its run
    content_bucket: str = Field(default="", alias="CONTENT_BUCKET")
    # `module:function` called with the RiverBeam to register more agents beside the built-in `author`
    agents: str = Field(default="", alias="RIVERBEAM_AGENTS")
    data_dir: str = Field(default="/tmp/riverbeam", alias="RIVERBEAM_DATA_DIR")
    # agents.yaml (riverbeam.agent.config): its agents are registered beside, or instead of, `author`
    agents_file: str = Field(default="", alias="RIVERBEAM_AGENTS_FILE")
    # the EventBridge bus the approval events go to (riverbeam/aws/bus.py); empty: none are put
    event_bus_name: str = Field(default="", alias="EVENT_BUS_NAME")
    # `offline` runs every configured agent on the offline model (riverbeam dev, the tests)
    model: Literal["bedrock", "offline"] = Field(default="bedrock", alias="RIVERBEAM_MODEL")

    @field_validator("jwt_audience", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @property
    def signing_keys_url(self) -> str:
        return self.jwks_url or self.jwt_issuer.rstrip("/") + "/.well-known/jwks.json"

    @classmethod
    def from_environment(cls) -> Self:
        return cls.model_validate(dict(os.environ))
