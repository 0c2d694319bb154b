"""The attribute names of Riverbeam's spans: OpenTelemetry's GenAI conventions and Riverbeam's own
(`riverbeam.*`). Plain strings, so readers of spans (tests, `riverbeam trace`) import no OpenTelemetry."""

from __future__ import annotations

import os

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
CONVERSATION_ID = "gen_ai.conversation.id"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"

INTERACTION_ID = "riverbeam.interaction.id"
RUN_ID = "riverbeam.run.id"
RUN_KIND = "riverbeam.run.kind"
RUN_STATUS = "riverbeam.run.status"
INTERRUPTED = "riverbeam.interrupted"
ACTION_ID = "riverbeam.action.id"
ARGS_SHA256 = "riverbeam.args_sha256"
DECISION = "riverbeam.decision"
DECIDED_BY = "riverbeam.decided_by"
RESPONSE = "riverbeam.response"
ASKED_AT = "riverbeam.asked_at"
DECIDED_AT = "riverbeam.decided_at"

# the event an asking run's span carries per action it asks for
APPROVAL_REQUESTED = "riverbeam.approval.requested"
# the event a run's span carries per call a policy or a grant refused unasked
CALL_DENIED = "riverbeam.call.denied"

INVOKE_AGENT = "invoke_agent"
CHAT = "chat"
EXECUTE_TOOL = "execute_tool"

# what a captured argument or result is cut to: a span is no place for a file's content
CAPTURE_LIMIT = 4096
CAPTURE_ARGS_ENV = "RIVERBEAM_CAPTURE_ARGS"


def capture_args() -> bool:
    """Whether tool args and results go on spans: only where RIVERBEAM_CAPTURE_ARGS is `true` (read at each
    call, so a deployment's setting and a test's apply at once). Off by default: args may hold secrets."""
    return os.environ.get(CAPTURE_ARGS_ENV, "").strip().lower() == "true"
