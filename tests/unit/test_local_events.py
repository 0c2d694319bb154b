"""riverbeam dev's one hand-written part: requests as API Gateway's events, answers back as responses; and
the routes it reads from template.yaml."""

from __future__ import annotations

import base64
import json

from riverbeam_local import lambda_like
from riverbeam_local.stack import template

CONNECTION = lambda_like.Connection(
    "abc-_123456789A==", 1_700_000_000_000, "127.0.0.1", "pytest", "127.0.0.1:3000"
)


def _request(**overrides: object) -> lambda_like.Request:
    fields: dict[str, object] = {
        "method": "GET",
        "path": "/sessions/s1",
        "query_string": "user_id=u1&tag=a&tag=b",
        "headers": [("Host", "127.0.0.1:3000"), ("Cookie", "a=1; b=2"), ("X-Many", "1"), ("x-many", "2")],
        "source_ip": "127.0.0.1",
        "host": "127.0.0.1:3000",
        "path_parameters": {"id": "s1"},
    }
    fields.update(overrides)
    return lambda_like.Request(**fields)  # type: ignore[arg-type]


def test_http_event_is_payload_2_0() -> None:
    event = lambda_like.http_event(_request(), "GET /sessions/{id}")
    assert event["version"] == "2.0"
    assert event["routeKey"] == event["requestContext"]["routeKey"] == "GET /sessions/{id}"
    assert event["rawPath"] == event["requestContext"]["http"]["path"] == "/sessions/s1"
    assert event["rawQueryString"] == "user_id=u1&tag=a&tag=b"
    assert event["queryStringParameters"] == {"user_id": "u1", "tag": "a,b"}
    assert event["pathParameters"] == {"id": "s1"}
    assert event["cookies"] == ["a=1", "b=2"]
    assert event["headers"]["x-many"] == "1,2" and "cookie" not in event["headers"]
    assert event["requestContext"]["http"]["method"] == "GET"
    assert event["requestContext"]["stage"] == "$default"
    assert "body" not in event and event["isBase64Encoded"] is False


def test_http_event_bodies_text_or_base64() -> None:
    text = lambda_like.http_event(
        _request(method="POST", body=b'{"a": 1}', headers=[("content-type", "application/json")]), "POST /x"
    )
    assert (text["body"], text["isBase64Encoded"]) == ('{"a": 1}', False)
    binary = lambda_like.http_event(
        _request(method="POST", body=b"\xff\x00", headers=[("content-type", "application/octet-stream")]),
        "POST /x",
    )
    assert base64.b64decode(binary["body"]) == b"\xff\x00" and binary["isBase64Encoded"] is True


def test_http_answer_from_a_proxy_result_or_a_bare_value() -> None:
    answer = lambda_like.http_answer(
        {"statusCode": 202, "headers": {"Content-Type": "application/json"}, "body": "{}", "cookies": ["c=1"]}
    )
    assert answer.status == 202 and answer.body == b"{}"
    assert ("content-type", "application/json") in answer.headers and ("set-cookie", "c=1") in answer.headers
    encoded = lambda_like.http_answer(
        {"statusCode": 200, "body": base64.b64encode(b"\x01").decode(), "isBase64Encoded": True}
    )
    assert encoded.body == b"\x01"
    assert lambda_like.http_answer({"ok": True}) == lambda_like.HttpAnswer(
        200, [("content-type", "application/json")], json.dumps({"ok": True}).encode()
    )


def test_websocket_events() -> None:
    request = _request(path="/ws", query_string="session_id=s&user_id=u")
    connect = lambda_like.connect_event(CONNECTION, request, "v1")
    context = connect["requestContext"]
    assert (context["routeKey"], context["eventType"], context["stage"]) == ("$connect", "CONNECT", "v1")
    assert context["connectionId"] == CONNECTION.connection_id and context["apiId"]
    assert connect["queryStringParameters"] == {"session_id": "s", "user_id": "u"}
    message = lambda_like.message_event(CONNECTION, "invoke", '{"action": "invoke"}', "v1")
    assert message["requestContext"]["eventType"] == "MESSAGE" and message["body"] == '{"action": "invoke"}'
    gone = lambda_like.disconnect_event(CONNECTION, "v1", 1001, "going away")
    assert gone["requestContext"]["disconnectStatusCode"] == 1001
    assert gone["requestContext"]["requestId"] != message["requestContext"]["requestId"]


def test_route_selection_by_body_field() -> None:
    expression = "$request.body.action"
    assert lambda_like.selected_route('{"action": "resume"}', expression) == "resume"
    assert lambda_like.selected_route('{"other": 1}', expression) is None
    assert lambda_like.selected_route("not json", expression) is None
    assert lambda_like.selected_route('{"action": {"nested": 1}}', expression) is None


def test_routes_come_from_the_template() -> None:
    t = template.load()
    keys = {r.route_key: r.function.name for r in t.http_routes}
    assert keys["POST /invoke"] == "InvokeFunction"
    assert keys["GET /runs/{id}/frames"] == "RecordsFunction"
    assert {r.function.module_file.parent.name for r in t.http_routes} == {
        "invoke",
        "resume",
        "records",
        "slack",
        "mail",
    }
    assert keys["POST /channels/slack"] == "SlackFunction"
    assert keys["GET /channels/email/{token}"] == keys["POST /channels/email/{token}"] == "MailFunction"
    assert set(t.websocket_routes) == {"$connect", "$disconnect", "invoke", "resume"}
    assert t.websocket_routes["invoke"].responds and not t.websocket_routes["$connect"].responds
    assert t.route_selection_expression == "$request.body.action"
    assert t.queue_consumer.name == "WorkerFunction" and t.queue_consumer.timeout_seconds == 900
    assert t.queue.fifo and t.queue.max_receive_count == 3
    assert {a["AttributeName"] for a in t.table_definition["AttributeDefinitions"]} >= {"pk", "sk"}
