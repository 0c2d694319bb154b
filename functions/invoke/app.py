"""POST /invoke and the WebSocket route `invoke`."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init: the collector paused, what it made frozen (riverbeam.aws.coldstart)
with init_without_gc():
    # its stage, imported at init (the import budgets are in docs/benchmarks.md)
    import riverbeam.pipeline.accept  # noqa: F401
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime, service
    from riverbeam.aws.entry import is_websocket, lambda_entry
    from riverbeam.aws.http import http_app, invoke_routes

    app = http_app(invoke_routes)
    runtime.prepare(agents=True, queue=True)


@lambda_entry()
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if is_websocket(event):
        return service.message(event)
    return app.resolve(event, context)
