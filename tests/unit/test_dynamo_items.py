"""DynamoBeamStore's item encoding, with no table: JSON fields as strings, and items of the older format."""

from __future__ import annotations

import json

from beam_store import Action, Message, ToolOutcome
from beam_store.dynamo import deserialize_item, record_attrs

NOW = "2024-01-01T00:00:00.000000Z"
IDS = {
    "session_id": "00000000-0000-4000-8000-000000000001",
    "interaction_id": "00000000-0000-4000-8000-000000000002",
    "run_id": "00000000-0000-4000-8000-000000000003",
}


def test_json_fields_are_stored_as_compact_utf8_json() -> None:
    action = Action(
        action_id="00000000-0000-4000-8000-000000000004",
        user_id="u1",
        agent_name="author",
        tool="git_push",
        args={"ref": "é", "f": 1e20, "n": [1, 1.0]},
        status="resolved",
        outcome=ToolOutcome(status="ok", output=1e20),
        created_at=NOW,
        updated_at=NOW,
        **IDS,
    )
    attrs = record_attrs(action)
    assert attrs["args"] == {"S": '{"ref":"é","f":1e+20,"n":[1,1.0]}'}
    assert attrs["outcome"] == {"S": '{"status":"ok","output":1e+20}'}
    assert attrs["status"] == {"S": "resolved"}
    back = Action.model_validate(deserialize_item(attrs))
    assert back == action and isinstance(back.args["f"], float)


def test_items_written_with_maps_and_lists_are_still_read() -> None:
    """The format before JSON strings: numbers come back as they did then (whole ones as ints)."""
    message = {
        "message_id": {"S": "00000000-0000-4000-8000-000000000005"},
        **{k: {"S": v} for k, v in IDS.items()},
        "seq": {"N": "7"},
        "role": {"S": "ai"},
        "type": {"S": "message"},
        "content": {
            "L": [
                {"M": {"type": {"S": "text"}, "text": {"S": "hi"}}},
                {
                    "M": {
                        "type": {"S": "tool_call"},
                        "tool_call_id": {"S": "c1"},
                        "name": {"S": "git_push"},
                        "args": {"M": {"ref": {"S": "x"}, "ratio": {"N": "0.5"}, "ok": {"BOOL": True}}},
                    }
                },
            ]
        },
        "created_at": {"S": NOW},
        "updated_at": {"S": NOW},
    }
    read = Message.model_validate(deserialize_item(message))
    assert read.seq == 7 and read.content[0].text == "hi"  # type: ignore[union-attr]
    assert read.content[1].args == {"ref": "x", "ratio": 0.5, "ok": True}  # type: ignore[union-attr]
    # an attribute named like a JSON field but written as a map is read as a map, not parsed
    assert deserialize_item({"args": {"M": {"s": {"S": json.dumps([1])}}}}) == {"args": {"s": "[1]"}}
