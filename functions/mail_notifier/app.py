"""The approvals' mail: fed by the table's DynamoDB stream (the outbox items each write inserted), it sends
each approver of an action asked for a message with a link per decision; reports partial batch failures."""

from typing import Any

from riverbeam.aws.coldstart import init_without_gc

# the function's init: the collector paused, what it made frozen (riverbeam.aws.coldstart)
with init_without_gc():
    # its stages, imported at init: the batch utility, the outbox's records, the channel
    import aws_lambda_powertools.utilities.batch  # noqa: F401
    import riverbeam.aws.publisher
    import riverbeam.channels.mail  # noqa: F401
    from aws_lambda_powertools.utilities.typing import LambdaContext
    from riverbeam.aws import mail, runtime, slack
    from riverbeam.aws.entry import lambda_entry

    runtime.prepare()
    slack.prepare()  # agents.yaml's people: and notify:


@lambda_entry(correlation_id_path=None)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return mail.handle_stream(event, context)
