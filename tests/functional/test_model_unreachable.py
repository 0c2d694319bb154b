"""A model that cannot be called fails the run with a code naming the cause and the model, never a bare
internal error: no credentials (BEM-357), no region (BEM-358), no network or no Bedrock in the region
(BEM-359), access not granted (BEM-347, with Bedrock's words); the run is stored failed with that code and
a streamed run's error frame carries it."""

from __future__ import annotations

import boto3
import pytest
from beam_store import InMemoryStore
from botocore.config import Config
from botocore.exceptions import NoCredentialsError
from botocore.stub import Stubber
from riverbeam import BeamError, BedrockConverseModel, RiverBeam, ToolAgentRunner

from tests.support.agents import FrameLog, invoke_body

MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"


class NoCredentials:
    """A client whose every call finds no credentials, as botocore's does with none configured."""

    meta = None

    def converse_stream(self, **_: object) -> object:
        raise NoCredentialsError()


def beam_with(model: BedrockConverseModel) -> RiverBeam:
    beam = RiverBeam(InMemoryStore())
    beam.register_agent("author", ToolAgentRunner(model=model, tools=[]))
    return beam


def failed_run(beam: RiverBeam, code: str) -> str:
    with pytest.raises(BeamError) as raised:
        beam.invoke(invoke_body(text="Hi"))
    assert raised.value.code == code and MODEL in raised.value.message, raised.value.message
    assert "Traceback" not in raised.value.message
    return raised.value.message


def test_no_credentials_is_bem357() -> None:
    message = failed_run(beam_with(BedrockConverseModel(MODEL, client=NoCredentials())), "BEM-357")
    assert message == f"{MODEL}: no AWS credentials to call it (NoCredentialsError)"


def test_no_region_is_bem358(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")  # no region from a profile either
    failed_run(beam_with(BedrockConverseModel(MODEL)), "BEM-358")  # its client is made on first use


def test_no_network_is_bem359_naming_the_region() -> None:
    client = boto3.client(
        "bedrock-runtime",
        region_name="eu-west-3",
        endpoint_url="http://127.0.0.1:9",  # nothing listens: as with no network
        config=Config(retries={"max_attempts": 1}, connect_timeout=2),
    )
    message = failed_run(beam_with(BedrockConverseModel(MODEL, client=client)), "BEM-359")
    assert "eu-west-3" in message


def test_model_access_not_granted_is_bem347_with_bedrocks_words() -> None:
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    stubber = Stubber(client)
    said = "You don't have access to the model with the specified model ID."
    stubber.add_client_error("converse_stream", "AccessDeniedException", said, 403)
    stubber.activate()
    message = failed_run(beam_with(BedrockConverseModel(MODEL, client=client)), "BEM-347")
    assert message == f"{MODEL}: AccessDeniedException: {said}"


def test_a_streamed_run_stores_the_code_and_sends_it_in_its_error_frame() -> None:
    store = InMemoryStore()
    beam = RiverBeam(store)
    beam.register_agent(
        "author", ToolAgentRunner(model=BedrockConverseModel(MODEL, client=NoCredentials()), tools=[])
    )
    frames = FrameLog()
    ack = beam.invoke(invoke_body(text="Hi", stream=True), on_frame=frames)
    errors = [f for f in frames if f.type == "error"]  # type: ignore[attr-defined]
    assert [e.code for e in errors] == ["BEM-357"]  # type: ignore[attr-defined]
    run = store.get_run(ack.run_id or "")  # type: ignore[union-attr]
    assert (
        run is not None and run.status == "failed" and run.error is not None and run.error.code == "BEM-357"
    )
