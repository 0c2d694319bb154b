"""BeamError and the catalogue of error codes (CONTRACT section 5)."""

# no `from __future__ import annotations`: models evaluate their annotations faster as objects

from typing import Any

from pydantic import BaseModel, ConfigDict

CATALOGUE: dict[str, tuple[int, str]] = {
    "BEM-001": (400, "the request does not fit the request model"),
    "BEM-002": (413, "the request is over a limit"),
    "BEM-003": (415, "the request body is not sent as application/json"),
    "BEM-010": (404, "no such route"),
    "BEM-020": (404, "session not found"),
    "BEM-021": (404, "unknown agent_name"),
    "BEM-022": (404, "interaction not found"),
    "BEM-023": (404, "run not found"),
    "BEM-027": (404, "action not found"),
    "BEM-030": (401, "the caller is not authenticated"),
    "BEM-031": (403, "the session belongs to another user"),
    "BEM-032": (503, "the token keys are unavailable; try again later"),
    "BEM-033": (401, "the local stack's secret is missing or wrong"),
    "BEM-034": (403, "the request comes from another origin or names another host than the local stack"),
    "BEM-040": (409, "the interaction already has a run in progress"),
    "BEM-041": (500, "the agent exceeded its turn limit"),
    "BEM-042": (409, "the run is being executed by another worker"),
    "BEM-043": (409, "the request_id was sent before with another request"),
    "BEM-044": (409, "the request with this request_id is still being answered; retry later"),
    "BEM-045": (400, "the args nest too deep"),
    "BEM-046": (413, "the tool call's args are over the size limit"),
    "BEM-062": (400, "resume needs an interaction_id"),
    "BEM-063": (400, "an action_id is not a UUID"),
    "BEM-064": (400, "the action belongs to another interaction"),
    "BEM-065": (400, "the interaction belongs to another session"),
    "BEM-066": (400, "the action is not pending"),
    "BEM-067": (400, "the response payload does not match the stored tool and args"),
    "BEM-068": (400, "the action was requested by another agent"),
    "BEM-069": (400, "the person cancelled the action"),
    "BEM-070": (410, "the action expired before it was answered"),
    "BEM-071": (400, "the tool forbids editing its args"),
    "BEM-080": (403, "the approval policy denies the tool call"),
    "BEM-081": (400, "the approval policy denies the tool call with the edited args"),
    "BEM-082": (400, "the tool call's args hold a number the approval policy cannot read"),
    "BEM-083": (409, "the agent changed since its run paused: the run cannot go on"),
    "BEM-084": (409, "the tool call's args are not the approved ones: it did not run"),
    "BEM-085": (400, "the tool cannot be granted for the session"),
    "BEM-086": (403, "only the session's owner may grant a tool for the session"),
    "BEM-087": (404, "grant not found"),
    "BEM-090": (403, "the action needs another person's approval (four eyes)"),
    "BEM-091": (409, "this person has already voted on the action"),
    "BEM-092": (400, "an action that needs several approvals cannot be approved with edited args"),
    "BEM-094": (500, "the framework's agent paused in a way Riverbeam cannot answer"),
    # the approval channels (CONTRACT 16): their own door, never the stack's secret nor a JWT
    "BEM-095": (401, "the Slack request's signature is missing or wrong"),
    "BEM-096": (401, "the Slack request's timestamp is outside the 5-minute window"),
    "BEM-097": (401, "the Slack request was sent before (a replay)"),
    "BEM-098": (403, "this Slack user is mapped to no Riverbeam user in agents.yaml's people"),
    "BEM-099": (401, "the mail link is forged, tampered, expired or used before"),
    "BEM-330": (502, "the push was rejected by the remote"),
    "BEM-331": (502, "the tool failed"),
    "BEM-332": (400, "the tool's arguments do not fit its schema"),
    "BEM-333": (404, "the tool is not available to this agent"),
    "BEM-334": (502, "the tool's outcome is unknown: its worker stopped"),
    "BEM-340": (502, "the model's guardrail intervened"),
    "BEM-341": (502, "the model's answer was filtered"),
    "BEM-342": (502, "the model's output was malformed"),
    "BEM-343": (502, "the model asked for a tool call that is malformed"),
    "BEM-344": (413, "the conversation is over the model's context window"),
    "BEM-345": (503, "the model is throttled or unavailable; retries ran out"),
    "BEM-346": (502, "the model refused the request as invalid"),
    "BEM-347": (502, "access to the model is denied"),
    "BEM-348": (502, "the model was not found"),
    "BEM-350": (502, "the git remote could not be cloned"),
    "BEM-351": (503, "the git credentials cannot be read from Secrets Manager"),
    "BEM-352": (503, "the MCP server cannot be reached"),
    "BEM-353": (504, "the MCP server did not answer in time"),
    "BEM-354": (502, "the MCP server answered an error"),
    "BEM-355": (502, "the MCP server has no such tool"),
    "BEM-356": (503, "the MCP server's headers cannot be read from Secrets Manager"),
    "BEM-357": (502, "there are no AWS credentials to call the model"),
    "BEM-358": (502, "no AWS region is set to call the model in"),
    "BEM-359": (503, "the model's endpoint cannot be reached"),
    "BEM-360": (502, "the MCP server's input schema for the tool is refused"),
    "BEM-361": (502, "the MCP server's answer is malformed"),
    "BEM-362": (503, "the agent is disabled: its MCP server could not be listed when the agents loaded"),
    "BEM-500": (500, "internal error"),
    "BEM-503": (503, "the store is busy; try again"),
    "BEM-504": (504, "the worker running the step stopped"),
}


# an error body stays small whatever the request held (CONTRACT 5: at most 64 KiB)
MAX_MESSAGE_CHARS = 2000
MAX_REQUEST_ID_CHARS = 200


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, marked where it was cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ErrorBody(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built by the first refusal

    code: str
    message: str
    request_id: str | None = None


class ErrorResponse(BaseModel):
    model_config = ConfigDict(defer_build=True)  # built by the first refusal

    error: ErrorBody


class BeamError(Exception):
    """A refusal with its catalogue code and HTTP status; `field` names the offending request field."""

    def __init__(self, code: str, message: str | None = None, *, field: str | None = None) -> None:
        status, title = CATALOGUE[code]
        self.code = code
        self.status = status
        self.field = field
        self.message = clip(message or title, MAX_MESSAGE_CHARS)
        super().__init__(f"{code}: {self.message}")

    def to_response(self, request_id: str | None = None) -> ErrorResponse:
        clipped = clip(request_id, MAX_REQUEST_ID_CHARS) if request_id is not None else None
        return ErrorResponse(error=ErrorBody(code=self.code, message=self.message, request_id=clipped))

    def to_dict(self, request_id: str | None = None) -> dict[str, Any]:
        return self.to_response(request_id).model_dump(mode="json")


class ToolError(BeamError):
    """A tool's own failure: recorded as the tool's outcome, not as a failure of the run."""
