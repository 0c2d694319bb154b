"""The queue worker: runs accepted jobs and producers' invoke requests, pushing frames to the session's
WebSocket connections; reports partial batch failures."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init: the collector paused, what it made frozen (riverbeam.aws.coldstart)
with init_without_gc():
    # its stage, imported at init (the import budgets are in docs/benchmarks.md)
    import riverbeam.pipeline.jobs  # noqa: F401
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime
    from riverbeam.aws.entry import lambda_entry
    from riverbeam.aws.worker import handle_batch

    runtime.prepare(agents=True, models=True, push=True)


@lambda_entry(correlation_id_path=None)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_batch(event, context)
