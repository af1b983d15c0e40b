"""The words for JSON text msgspec refuses are orjson's, read from a prefix of the text (``_orjson_refusal``): the
same Problem as orjson reading the whole text, at a cost in proportion to where the error is."""

from __future__ import annotations

import json
import random
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

import orjson
import pytest

from agentmsg._codec import jsontext
from agentmsg._codec.jsontext import JsonInput, not_utf8, syntax_error, unreadable
from agentmsg.errors import Problem, ValidationError
from tests._support.budget import rounds


def _whole_text_problem(data: JsonInput, exc: Exception) -> Problem:
    """The oracle: ``_syntax_problem`` as it was, orjson reading the whole text (a lone surrogate at its string's
    pointer: :func:`_surrogate_at`)."""
    if not isinstance(data, str):
        undecodable = not_utf8(bytes(data))
        if undecodable is not None:
            at = _surrogate_at(data) if undecodable[0] == "lone-surrogate" else ""
            return Problem(at, undecodable[0], f"not valid JSON: {undecodable[1]}")
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError as other:
        if "surrogates not allowed" in str(other):
            syntax = syntax_error(data)
            if syntax is not None:
                return Problem("", "json", f"not valid JSON: {syntax}")
            return Problem(
                _surrogate_at(data), "lone-surrogate", "not valid JSON: the text holds a lone UTF-16 surrogate"
            )
        rule, words = unreadable(other, data)
        if rule == "lone-surrogate":
            return Problem(_surrogate_at(data), rule, f"not valid JSON: a lone UTF-16 surrogate escape ({words})")
        return Problem("", rule, f"not valid JSON: {words}")
    except Exception:
        pass
    if isinstance(exc, UnicodeError):
        return Problem("", "lone-surrogate", "not valid JSON: the text holds a lone UTF-16 surrogate")
    return Problem("", "json", f"not valid JSON: {exc}")


def _surrogate_at(data: JsonInput) -> str:
    """The pointer of the first string (a key: its object) holding a lone surrogate, read by json (recursively: the
    texts here are shallow)."""

    def walk(node: object, at: str) -> str | None:
        if isinstance(node, str):
            return at if jsontext.has_lone_surrogate(node) else None
        items = (
            list(node.items()) if isinstance(node, dict) else list(enumerate(node)) if isinstance(node, list) else []
        )
        for key, child in items:
            if isinstance(key, str) and jsontext.has_lone_surrogate(key):
                return at
            found = walk(child, f"{at}/{str(key).replace('~', '~0').replace('/', '~1')}")
            if found is not None:
                return found
        return None

    try:
        value = json.loads(data if isinstance(data, str) else bytes(data).decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):  # (no UTF-8 nor JSON otherwise: no pointer)
        return ""
    return walk(value, "") or ""


def _problems(data: JsonInput) -> tuple[Problem, ...] | None:
    try:
        jsontext.loads(data)
    except ValidationError as error:
        return tuple(error.problems)
    return None


@contextmanager
def _first_prefix(size: int) -> Iterator[None]:
    """Prefixes from ``size`` characters on (64 KiB in use: small texts are read whole at once)."""
    saved = jsontext._FIRST_PREFIX
    jsontext._FIRST_PREFIX = size
    try:
        yield
    finally:
        jsontext._FIRST_PREFIX = saved


def _check(data: JsonInput, first_prefixes: tuple[int, ...] = (1, 40, 1 << 16)) -> None:
    saved = jsontext._syntax_problem
    jsontext._syntax_problem = _whole_text_problem
    try:
        expected = _problems(data)
    finally:
        jsontext._syntax_problem = saved
    for size in first_prefixes:
        with _first_prefix(size):
            assert _problems(data) == expected, (size, data[:200])


_DOCS = [
    '{"role": "user", "content": [{"type": "text", "text": "h\\u00e9 \\ud83d\\ude00 \\"q\\" \\n"}],\r\n'
    ' "metadata": {"n": -1.5e10, "z": 0, "ok": true, "no": false, "x": null, "l": [1, 2.25, [], {}]}}',
    '[\n  "caf\u00e9 \u4e2d\u6587 \U0001f600",\n  12345678901234,\n  {"k": ["a", {"b": [null]}]}\n]',
    '{"a":{"b":{"c":[[[["deep"]]]]}},"num":1E+2,"neg":-0.0,"s":"tab\\tslash\\/"}',
]
_BAD = ["x", ",", '"', "\x01", "}", "]", "\\", ":", "tru", "-", "1e", "\\ud800", "\ud800", "\\udc00\\ud800"]
_BAD_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x80"]


def _corpus(doc: str, step: int = 1) -> Iterator[JsonInput]:
    raw = doc.encode("utf-8")
    for i in range(0, len(doc) + 1, step):
        yield doc[:i]
        yield doc[:i].encode("utf-8", "surrogatepass")
        for bad in _BAD:
            yield doc[:i] + bad + doc[i:]
        yield jsontext.BOM_CHAR + doc[:i] + "x" + doc[i:]
    for i in range(0, len(raw) + 1, step):
        yield raw[:i]
        for bad_bytes in _BAD_BYTES:
            yield raw[:i] + bad_bytes + raw[i:]
        yield jsontext.BOM + raw[:i] + b"\r\n]" + raw[i:]


@pytest.mark.parametrize("doc", _DOCS, ids=range(len(_DOCS)))
def test_broken_text_is_worded_as_orjson_reading_it_whole(doc: str) -> None:
    for data in _corpus(doc, step=3):
        _check(data)


def _long(at: int, bad: str, size: int) -> str:
    body = '{"k": "' + "a" * 100 + '", "n": [1, 2.5, true]}, '
    text = "[" + body * (size // len(body))
    return text[:at] + bad + text[at:] + "null]"


_LONG = [
    "[" + "1" * 100_000 + ".",
    "[" + "1" * 100_000 + "e-300]x",  # (cut inside the number: infinity, where the whole number is not)
    "[" + "1" * 400 + "e-300, " * 20_000 + "x]",
    '["' + "a" * 100_000 + '\\ud800x"]',
    '["' + "a" * 100_000 + "\\ud800" + "\\udc00" * 20_000 + '"] x',
    '["' + "\\ud800\\udc00" * 20_000 + '",]',
    "[" * 600 + "x",
    "[" * 300 + " " * 100_000 + "x",
    "[1," + " " * 100_000 + "]",
    "[" + "\r\n" * 50_000 + "tru]",
    '{"a":' + '"\u00e9\u4e2d\U0001f600"' * 20_000 + "}",
    '["\u00e9' * 30_000 + "\ud800",
]


@pytest.mark.parametrize("text", _LONG, ids=range(len(_LONG)))
def test_long_tokens_cut_by_a_prefix_are_worded_as_orjson_reading_them_whole(text: str) -> None:
    _check(text)
    _check(text.encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("at", [5, 1000, 70_000, 199_000])
def test_an_early_or_late_error_in_long_text_is_worded_as_orjson_reading_it_whole(at: int) -> None:
    for bad in ["x", "\\ud800", "1e999", ",]"]:
        text = _long(at, bad, 200_000)
        _check(text, (1 << 16,))
        _check(text.encode(), (1 << 16,))


@pytest.mark.fuzz
def test_broken_text_is_worded_as_orjson_reading_it_whole_everywhere() -> None:
    for doc in _DOCS:
        for data in _corpus(doc):
            _check(data)
    for k in rounds(300):
        rng = random.Random(k)
        doc = rng.choice(_DOCS) * rng.randint(1, 3)
        pieces = [*_BAD, "\n", "\r\n", " " * rng.randint(1, 200), "1" * rng.randint(1, 500), '"' + "b" * 300]
        text = doc
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(text))
            text = text[:at] + rng.choice(pieces) + text[at:]
        text = text[: rng.randint(0, len(text))] if rng.random() < 0.3 else text
        raw = text.encode("utf-8", "surrogatepass")
        if rng.random() < 0.3:
            at = rng.randint(0, len(raw))
            raw = raw[:at] + rng.choice(_BAD_BYTES) + raw[at:]
        _check(text, (1, rng.randint(2, 200)))
        _check(raw, (1, rng.randint(2, 200)))
        _check(bytearray(raw), (7,))
        _check(memoryview(jsontext.BOM + raw), (7,))


def _refusal_peak(data: JsonInput) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(ValidationError) as refused:
            jsontext.loads(data)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        assert refused.value.problems[0].message.startswith("not valid JSON: unexpected character")


@pytest.mark.parametrize("as_str", [False, True])
def test_an_early_syntax_error_in_long_text_costs_little_to_word(as_str: bool) -> None:
    raw = b'{"a": 1,, "b": "' + b"x" * (32 << 20) + b'"}'
    data = raw.decode() if as_str else raw
    assert _refusal_peak(data) < 2 * len(raw)
