"""The line of a Cedar syntax error. cedarpy's errors carry no position, so the text is cut into its
statements (at each `;` outside strings and comments) and the first one that does not parse alone is
found; within it, the first line whose text so far fails with the same error (not merely "unexpected end
of input") is the line named. Run only when a policy does not parse."""

from __future__ import annotations

from collections.abc import Callable, Iterator

Parse = Callable[[str], object]


def _statement_ends(text: str) -> Iterator[int]:
    """The offset just past each `;` that ends a statement, then the text's end."""
    quoted = escaped = comment = False
    for i, char in enumerate(text):
        if comment:
            comment = char != "\n"
        elif quoted:
            escaped, quoted = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            quoted = True
        elif char == "/" and text.startswith("//", i):
            comment = True
        elif char == ";":
            yield i + 1
    yield len(text)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _error(parse: Parse, text: str) -> str | None:
    try:
        parse(text)
    except ValueError as error:
        return str(error)
    return None


def _line_in(parse: Parse, text: str, start: int, end: int, message: str) -> int:
    """The first line of text[start:end] at whose end the statement already fails with `message`; for
    a statement left unfinished, its last line."""
    if "end of input" in message:
        return _line_of(text, len(text[:end].rstrip()))
    cut = text.find("\n", start)
    while 0 <= cut < end:
        if _error(parse, text[start:cut]) == message:
            return _line_of(text, cut)
        cut = text.find("\n", cut + 1)
    return _line_of(text, end)


def error_line(parse: Parse, text: str) -> int:
    """The line (from 1) where `text`, which `parse` refuses, goes wrong."""
    start = 0
    for end in _statement_ends(text):
        statement = text[start:end]
        message = _error(parse, statement) if statement.strip() else None
        if message is not None:
            first = start + len(statement) - len(statement.lstrip())
            return _line_in(parse, text, first, end, message)
        start = end
    return _line_of(text, len(text.rstrip()))
