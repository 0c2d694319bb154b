"""The sweep, on a schedule: expires the pending actions past their time, closes what waited on them and
pushes an `action_expired` frame to each session's WebSocket connections."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init: the collector paused, what it made frozen (riverbeam.aws.coldstart)
with init_without_gc():
    # its stage, imported at init (the import budgets are in docs/benchmarks.md)
    import riverbeam.pipeline.sweep  # noqa: F401
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime
    from riverbeam.aws.entry import lambda_entry
    from riverbeam.aws.scheduled_sweep import handle_schedule

    runtime.prepare(push=True)


@lambda_entry(correlation_id_path=None)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_schedule(event, context)
