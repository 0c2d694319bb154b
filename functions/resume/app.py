"""POST /resume and the WebSocket route `resume`."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init, with the garbage collector paused and what it made frozen (coldstart says why)
with init_without_gc():
    # the stage a resume runs here (accept), at init: RiverBeam imports it on first use (and jobs, which
    # abandons a job the queue refused, where that happens)
    import riverbeam.pipeline.accept  # noqa: F401
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime, service
    from riverbeam.aws.entry import is_websocket, lambda_entry
    from riverbeam.aws.http import http_app, resume_routes

    app = http_app(resume_routes)
    # made at init in Lambda (runtime.prepare says why): every resume checks its agent's tools and queues
    # its run (its decisions' events go in its write's outbox: the events function puts them)
    runtime.prepare(agents=True, queue=True)


@lambda_entry()
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if is_websocket(event):
        return service.message(event)
    return app.resolve(event, context)
