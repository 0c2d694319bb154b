"""The read routes (GET /sessions/{id}, /sessions/{id}/messages, /sessions/{id}/actions, /interactions/{id},
/runs/{id}, /runs/{id}/frames, /actions/{id}) and GET /openapi.json."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init: the collector paused, what it made frozen (riverbeam.aws.coldstart)
with init_without_gc():
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime
    from riverbeam.aws.entry import lambda_entry
    from riverbeam.aws.read_routes import records_routes
    from riverbeam.aws.router import http_app

    app = http_app(records_routes)
    runtime.prepare()


@lambda_entry()
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
