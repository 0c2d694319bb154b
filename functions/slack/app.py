"""POST /channels/slack: Slack's interactivity requests, its signature checked before anything else."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init: the collector paused, what it made frozen (riverbeam.aws.coldstart)
with init_without_gc():
    import riverbeam.channels.slack_interact
    import riverbeam.pipeline.accept  # noqa: F401
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import runtime, slack
    from riverbeam.aws.entry import lambda_entry

    runtime.prepare(agents=True, queue=True)
    slack.prepare()


@lambda_entry()
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return slack.handle_interaction(event)
