"""The queue worker: runs accepted jobs and producers' invoke requests, pushing frames to the session's
WebSocket connections; reports partial batch failures."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init, with the garbage collector paused and what it made frozen (coldstart says why)
with init_without_gc():
    # the stage it runs (jobs, with accept and execute), at init: RiverBeam imports it on first use, and no
    # request should pay for it
    import riverbeam.pipeline.jobs  # noqa: F401
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime
    from riverbeam.aws.entry import lambda_entry
    from riverbeam.aws.worker import handle_batch

    # made at init in Lambda (runtime.prepare says why): every job runs an agent and pushes its frames
    runtime.prepare(agents=True, models=True, push=True)


@lambda_entry(correlation_id_path=None)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_batch(event, context)
