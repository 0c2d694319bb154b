"""The lines `riverbeam dev` writes for its handlers' records and its own: one short readable line each, an
exception as its type and message, its traceback only when asked for (--debug)."""

from __future__ import annotations

import logging
import re

from riverbeam_local.stack.dev_command import HandlerFormatter, StackFormatter


def record(
    name: str, message: str, *, extra: dict[str, object] | None = None, error: bool = False
) -> logging.LogRecord:
    exc_info = None
    if error:
        try:
            raise KeyError("missing")
        except KeyError as caught:
            exc_info = (type(caught), caught, caught.__traceback__)
    made = logging.LogRecord(name, logging.WARNING, __file__, 1, message, None, exc_info)
    made.__dict__.update(extra or {})
    return made


def test_a_handlers_record_is_one_line_with_its_key_fields_and_its_exception() -> None:
    line = HandlerFormatter(tracebacks=False).format(
        record("riverbeam.aws.push", "a frame was not pushed", extra={"connection_id": "abc"}, error=True)
    )
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d WARNING riverbeam\.aws\.push: a frame was not pushed"
        r" connection_id=abc \(KeyError: 'missing'\)",
        line,
    ), line


def test_keys_appended_by_the_handler_are_key_fields_and_powertools_own_are_not() -> None:
    formatter = HandlerFormatter(tracebacks=False)
    formatter.append_keys(session_id="s1", cold_start=True, function_request_id="r1")
    line = formatter.format(record("riverbeam", "subscribed"))
    assert line.endswith(" WARNING riverbeam: subscribed session_id=s1"), line


def test_what_a_line_holds_is_escaped_and_cut() -> None:
    line = HandlerFormatter(tracebacks=False).format(
        record("riverbeam", "refused \x1b]0;title\x07\nsecond", extra={"error": "x" * 1000})
    )
    assert "\n" not in line and "\x1b" not in line
    assert "refused \\x1b]0;title\\x07\\nsecond" in line
    assert line.endswith(" error=" + "x" * 97 + "...")


def test_the_traceback_follows_only_when_asked_for() -> None:
    failed = record("riverbeam.pipeline.execute", "agent run failed", error=True)
    assert "Traceback" not in HandlerFormatter(tracebacks=False).format(failed)
    first, *rest = HandlerFormatter(tracebacks=True).format(failed).splitlines()
    assert first.endswith("agent run failed (KeyError: 'missing')")
    assert rest[0] == "Traceback (most recent call last):" and rest[-1] == "KeyError: 'missing'"


def test_the_stacks_own_error_is_one_line_unless_asked_for() -> None:
    failed = record("riverbeam_local", "InvokeFunction failed on POST /invoke", error=True)
    line = StackFormatter(tracebacks=False).format(failed)
    assert re.fullmatch(r"\d\d:\d\d:\d\d InvokeFunction failed on POST /invoke \(KeyError: 'missing'\)", line)
    assert "Traceback (most recent call last):" in StackFormatter(tracebacks=True).format(failed)
    plain = StackFormatter(tracebacks=False).format(record("riverbeam_local", "POST /invoke 202 31 ms"))
    assert re.fullmatch(r"\d\d:\d\d:\d\d POST /invoke 202 31 ms", plain)


def test_another_librarys_error_is_one_line_naming_its_logger() -> None:
    formatter = StackFormatter(tracebacks=False, fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    line = formatter.format(record("uvicorn.error", "Exception in ASGI application\n", error=True))
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d WARNING uvicorn\.error: Exception in ASGI application\\n \(KeyError: 'missing'\)",
        line,
    ), line
