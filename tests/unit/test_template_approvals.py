"""What template.yaml declares for approvals: the sweep on a schedule with least privilege, the approval
events' bus and who may put on it, and CORS for the HTTP API closed unless origins are given."""

from __future__ import annotations

from typing import Any

from riverbeam_local.stack.template import ROOT, load, read


def _resources() -> dict[str, Any]:
    return read(ROOT)["Resources"]  # type: ignore[no-any-return]


def _actions(function: str) -> set[str]:
    statements = _resources()[function]["Properties"]["Policies"][0]["Statement"]
    found: set[str] = set()
    for statement in statements:
        action = statement["Action"]
        found |= {action} if isinstance(action, str) else set(action)
    return found


def test_the_sweep_runs_on_a_schedule_with_what_it_needs_only() -> None:
    doc = read(ROOT)
    sweep = doc["Resources"]["SweepFunction"]["Properties"]
    (event,) = sweep["Events"].values()
    assert event["Type"] == "Schedule" and event["Properties"]["Schedule"] == {"Ref": "SweepSchedule"}
    assert doc["Parameters"]["SweepSchedule"]["Default"] == "rate(1 minute)"
    assert _actions("SweepFunction") == {
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        # its frame kept by a conditional put (store.add_frame); an expiry's outbox item, in its transaction
        "dynamodb:PutItem",
        "dynamodb:DeleteItem",  # a gone connection forgotten
        "execute-api:ManageConnections",
        "s3:GetObject",  # large content read back (its actions' outcomes, its runs' frames); none put
        "s3:ListBucket",  # so that a missing object answers 404 (the store's missing content), not 403
    }
    # the local stack finds it the same way and runs it periodically
    assert [f.name for f in load().scheduled] == ["SweepFunction"]


def test_only_the_events_function_puts_events_and_the_tables_stream_feeds_it() -> None:
    """The functions that decide or expire write their events to the outbox; the events function, fed by
    the table's stream, puts them on the bus."""
    putting = {
        name for name in _resources() if name.endswith("Function") and "events:PutEvents" in _actions(name)
    }
    assert putting == {"EventsFunction"}
    assert _resources()["Table"]["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    source = load().stream_consumer
    assert source is not None and source.function.name == "EventsFunction"
    env = read(ROOT)["Globals"]["Function"]["Environment"]["Variables"]
    assert env["EVENT_BUS_NAME"] == {
        "Fn::If": ["CreateEventBus", {"Ref": "ApprovalBus"}, {"Ref": "ApprovalEventBus"}]
    }
    assert _resources()["ApprovalBus"]["Condition"] == "CreateEventBus"


def test_cors_is_closed_unless_origins_are_given() -> None:
    doc = read(ROOT)
    assert doc["Parameters"]["AllowedOrigins"]["Default"] == ""
    cors = doc["Resources"]["HttpApi"]["Properties"]["CorsConfiguration"]["Fn::If"]
    assert cors[0] == "AllowCrossOrigin" and cors[2] == {"Ref": "AWS::NoValue"}
    assert cors[1]["AllowOrigins"] == {"Ref": "AllowedOrigins"}
    assert set(cors[1]["AllowHeaders"]) == {"authorization", "content-type"}
