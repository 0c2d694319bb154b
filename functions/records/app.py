"""The read routes (GET /sessions/{id}, /sessions/{id}/messages, /sessions/{id}/actions, /interactions/{id},
/runs/{id}, /runs/{id}/frames, /actions/{id}) and GET /openapi.json."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init, with the garbage collector paused and what it made frozen (coldstart says why)
with init_without_gc():
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime
    from riverbeam.aws.entry import lambda_entry
    from riverbeam.aws.read_routes import records_routes
    from riverbeam.aws.router import http_app

    app = http_app(records_routes)
    # made at init in Lambda (runtime.prepare says why): every read reads the table
    runtime.prepare()


@lambda_entry()
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
