"""GET and POST /channels/email/{token}: a mail link's confirmation page, and the decision it confirms."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init: the collector paused, what it made frozen (riverbeam.aws.coldstart)
with init_without_gc():
    import riverbeam.pipeline.accept  # noqa: F401
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import mail, runtime, slack
    from riverbeam.aws.entry import lambda_entry

    runtime.prepare(agents=True, queue=True)
    slack.prepare()  # agents.yaml's people: and notify:


@lambda_entry()
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return mail.handle_link(event)
