"""What every UI protocol shares (``agentmsg.ui._protocol``): the notes its codecs keep."""

from __future__ import annotations

import copy
import json
import pickle
import tracemalloc
from typing import Any

import pytest

from agentmsg import ui
from agentmsg.errors import Problem
from agentmsg.ui import _protocol

CODECS = [(name, side) for name in ui.names() for side in ("encoder", "decoder")]


@pytest.mark.parametrize(("name", "side"), CODECS, ids=[f"{n}-{s}" for n, s in CODECS])
def test_a_codec_keeps_max_notes_then_counts_the_rest_in_bounded_memory(
    name: str, side: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream of ever new events a codec cannot use (a hostile server's, for a decoder): each was a note, and its
    said-once key, held for the stream's life (50,000 such events: 12-18 MB). Now a codec keeps MAX_NOTES notes;
    one last note (rule max-problems) counts the rest, and a fifth of the events after the cap adds next to nothing."""
    monkeypatch.setattr(_protocol, "MAX_NOTES", 50)
    codec = ui.get(name).encoder() if side == "encoder" else ui.get(name).decoder()
    for k in range(200):
        codec.feed({"type": f"BOGUS_{k}", "n": k})
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(200, 1200):
            codec.feed({"type": f"BOGUS_{k}", "n": k})
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000, grown  # (a note and its key held: ~300 bytes, 300 kB for these 1,000)
    if not codec.notes:  # (agentscope's: AgentEvents as they are, nothing to note)
        assert name == "agentscope"
        return
    assert len(codec.notes) == 51, len(codec.notes)
    assert (codec.notes[-1].rule, codec.notes[-1].message) == (
        "max-problems",
        "1,150 more notes were not kept (a stream keeps 50)",
    )


def test_capped_notes_pickle_and_copy_with_their_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """A list subclass is unpickled (and copied) by appending its items again: the count note was counted as one more
    note not kept, before the count itself was restored."""
    monkeypatch.setattr(_protocol, "MAX_NOTES", 3)
    notes = _protocol.Notes()
    for k in range(7):
        notes.append(Problem(f"/{k}", "ui-wrapped", "no AG-UI event"))
    for again in (pickle.loads(pickle.dumps(notes)), copy.copy(notes), copy.deepcopy(notes)):
        assert type(again) is _protocol.Notes and again == notes and again.omitted == 4
        again.append(Problem("/7", "ui-wrapped", "no AG-UI event"))
        assert len(again) == 4 and again[-1].message == "5 more notes were not kept (a stream keeps 3)"


EVENT_TYPES = [
    *("AGENT_START", "AGENT_END", "MODEL_CALL_START", "MODEL_CALL_END", "CUSTOM"),
    *(f"{kind}_BLOCK_{step}" for kind in ("TEXT", "THINKING", "DATA") for step in ("START", "DELTA", "END")),
    *("TOOL_CALL_START", "TOOL_CALL_DELTA", "TOOL_CALL_END", "TOOL_RESULT_START", "TOOL_RESULT_TEXT_DELTA"),
    *("TOOL_RESULT_DATA_DELTA", "TOOL_RESULT_END", "REQUIRE_USER_CONFIRM", "HINT_BLOCK"),
]


@pytest.mark.parametrize("name", ui.names())
@pytest.mark.parametrize("key", ["blockId", "toolCallId", "replyId"])
@pytest.mark.parametrize("bad", [[], {"a": 1}, 7, True], ids=["list", "object", "number", "bool"])
def test_an_encoder_carries_an_event_whose_id_is_no_string(name: str, key: str, bad: Any) -> None:
    """The encoders take any event (a bad one is carried as it is, with a note): an id that is a list or an object
    was a dict key in the AG-UI encoder (TypeError: unhashable). Every event type, opened with good ids first (so
    the bad one meets open blocks, calls and results), then the frames are written as a server writes them."""
    at = {"createdAt": "2025-01-01T00:00:00Z"}
    good = {"replyId": "r", "blockId": "b", "toolCallId": "c", "toolCallName": "f", "name": "F", "delta": "x"}
    encoder = ui.get(name).encoder()
    frames: list[Any] = []
    for n, kind in enumerate(EVENT_TYPES):
        frames += encoder.feed(
            {**at, **good, "type": kind.replace("_DELTA", "_START").replace("_END", "_START"), "id": f"g{n}"}
        )
        frames += encoder.feed({**at, **good, "type": kind, "id": f"e{n}", key: bad})
    frames += encoder.close()
    text = b"".join(_protocol.sse_frame(frame, None) for frame in frames)
    if name in ("agentscope", "ag-ui"):  # (events as they are; a bad one as AG-UI's CUSTOM event): each one's id
        assert [n for n in range(len(EVENT_TYPES)) if f'"e{n}"'.encode() not in text] == []
    if name != "agentscope":  # (which passes AgentEvents on as they are)
        assert encoder.notes, "a bad event is carried with a note"


@pytest.mark.parametrize("name", ui.names())
def test_an_encoder_writes_a_tool_results_data_json_does_not_hold_as_text(name: str) -> None:
    """A TOOL_RESULT_DATA_DELTA's data with an integer beyond 64 bits (the reducer refuses it): the AG-UI encoder
    wrote the result's parts with orjson (TypeError); every encoder now gives frames a server writes."""
    at = {"createdAt": "2025-01-01T00:00:00Z", "replyId": "r"}
    events: list[dict[str, Any]] = [
        {**at, "type": "AGENT_START", "id": "1", "name": "F"},
        {**at, "type": "TOOL_RESULT_START", "id": "2", "toolCallId": "c", "toolCallName": "f"},
        {**at, "type": "TOOL_RESULT_DATA_DELTA", "id": "3", "toolCallId": "c", "data": {"type": "x", "k": 2**64}},
        {**at, "type": "TOOL_RESULT_END", "id": "4", "toolCallId": "c", "state": "success"},
        {**at, "type": "AGENT_END", "id": "5"},
    ]
    encoder = ui.get(name).encoder()
    frames = [frame for e in events for frame in encoder.feed(e)] + encoder.close()
    text = b"".join(_protocol.sse_frame(frame, None) for frame in frames)
    assert b"18446744073709551616" in text  # (carried, as text or whole: nothing dropped)


def test_not_acceptable_is_an_sdk_error() -> None:
    """NotAcceptable (no protocol fits a request) was a plain Exception, outside ``except agentmsg.AgentmsgError``."""
    from agentmsg import AgentmsgError

    with pytest.raises(AgentmsgError):
        ui.negotiate(list(ui.PROTOCOLS.values()), "nope", None)
    assert issubclass(ui.NotAcceptable, Exception)


AG_UI = "application/vnd.ag-ui.event+json"


@pytest.mark.parametrize(
    ("accept", "chosen"),
    [
        ("text/html;q=2", None),  # (was: the range left out, the header read as none: the default protocol)
        ("text/html;q=0.5e0", None),
        (f"{AG_UI};q=0.5, text/event-stream;q=0.0_1", "agentscope"),  # (was: q 0.01 for SSE, ag-ui chosen)
        (f"{AG_UI};q=0.5, text/event-stream;q=0.0001", "agentscope"),
        (f"{AG_UI};q=0.5, text/event-stream;q=.1", "agentscope"),
        (f"{AG_UI};q=0.501, text/event-stream;Q=0.5", "ag-ui"),
        (f"{AG_UI};q=1.000, text/event-stream;q=1", "ag-ui"),
        (f"{AG_UI};q=0, text/event-stream", "agentscope"),
        ("text/event-stream;q=0", None),
    ],
)
def test_a_q_that_is_no_rfc_9110_qvalue_is_the_default_weight(accept: str, chosen: str | None) -> None:
    """The q of an Accept range was read with ``float`` (``0.0_1``, ``0.5e0``, ``.1``, ``0.0001``: no qvalue of RFC
    9110, 12.4.2) and a range whose q fell outside 0 to 1 was left out, so ``Accept: text/html;q=2`` read as no
    header (the default protocol, where no protocol fits: 406). Now a qvalue is the RFC's (0 to 1, at most three
    decimals) and a q that is none is the default weight, 1 (as Django reads one): the range counts as named."""
    offered = list(ui.PROTOCOLS.values())
    if chosen is None:
        with pytest.raises(ui.NotAcceptable):
            ui.negotiate(offered, None, accept)
    else:
        assert ui.negotiate(offered, None, accept).name == chosen


@pytest.mark.parametrize(
    ("query", "accept", "pointer"), [(1, None, "/query"), (None, 1, "/accept"), (b"ag-ui", None, "/query")]
)
def test_negotiate_refuses_a_query_or_an_accept_that_is_no_string(query: Any, accept: Any, pointer: str) -> None:
    """``negotiate(query=1)`` raised a bare TypeError from slicing, ``accept=1`` an AttributeError from split."""
    from agentmsg import ValidationError

    with pytest.raises(ValidationError) as info:
        ui.negotiate(list(ui.PROTOCOLS.values()), query, accept)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, "type")]


@pytest.mark.parametrize(
    ("offered", "pointer", "rule"),
    [
        (None, "/offered", "type"),  # was a bare TypeError (not subscriptable)
        ("ag-ui", "/offered", "type"),  # a name, not the protocol: was an AttributeError with a query
        ([], "/offered", "minItems"),  # was a bare IndexError
        ([1], "/offered/0", "type"),  # was returned as the protocol chosen, silently
        ([ui.get("ag-ui"), "ai-sdk"], "/offered/1", "type"),
    ],
)
def test_negotiate_refuses_offered_protocols_that_are_no_protocols(offered: Any, pointer: str, rule: str) -> None:
    from agentmsg import ValidationError

    for query in (None, "ag-ui"):
        with pytest.raises(ValidationError) as info:
            ui.negotiate(offered, query, None)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]


def test_a_quoted_value_is_written_as_json_stringify_writes_it() -> None:
    """A decoder's note quotes a value as the TypeScript decoders do (``quoted``, sdk/typescript/src/notes.ts), so
    that the notes of both are word for word the same. Python's JSON writer wrote numbers and keys its own way:
    ``1.0``, ``-0.0``, ``1e-07``, an integer past 2**53 in all its digits, and keys in the order read, where
    ``JSON.stringify`` (of what ``JSON.parse`` read) writes ``1``, ``0``, ``1e-7``, the double the integer became,
    and an object's integer keys first, ascending. The expected texts are Node's."""
    text = (
        '{"b":1,"1":2,"01":3,"4294967295":4,"4294967294":5,"n":[1.0,-0.0,100.0,1e-7,0.000001,1e21,1e20,'
        "123456789012345678901,2e300,1.5e-300,12345678901234567890,9007199254740993,1e400,0.1,-2.5e-8]}"
    )
    assert _protocol.quoted(json.loads(text), 1000) == (
        '{"1":2,"4294967294":5,"b":1,"01":3,"4294967295":4,"n":[1,0,100,1e-7,0.000001,1e+21,100000000000000000000,'
        "123456789012345680000,2e+300,1.5e-300,12345678901234567000,9007199254740992,null,0.1,-2.5e-8]}"
    )
    assert _protocol.quoted({"t": "\ud800\U0001f600", "u": [True, None]}) == '{"t":"\\ud800\U0001f600","u":[true,null]}'
    # a value far longer than a note quotes is written only as far as the note shows it
    big = {"k": list(range(2_000_000))}
    assert _protocol.quoted(big, 12) == '{"k":[0,1,2,...'


@pytest.mark.parametrize(
    "event",
    [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a\nb\r\nc\rd\u2028e\u0085f\x00"},
        {"type": "CUSTOM", "name": "n", "value": {"s": "\ud800", "k": 2**64}},  # (json_text's way: no orjson)
        {"type": "CUSTOM", "name": "n", "value": {"nested": [[[]]], "f": 1.5, "u": "\U0001f600"}},
    ],
)
@pytest.mark.parametrize(("position", "kind"), [(None, None), (0, None), (7, None), (-1, None), (3, "x"), (None, "y")])
def test_a_frame_is_what_the_sse_writer_writes_of_the_event_s_json(
    event: dict[str, Any], position: int | None, kind: str | None
) -> None:
    """``sse_frame`` puts the common frame (no ``event:`` field, an int position or none) together from orjson's
    bytes, without the SSE writer: byte for byte what the writer gives of the event's JSON text, line ends and
    all (none in compact JSON), and the writer's own way for the rest."""
    from agentmsg._wire.sse import encode_event

    written = encode_event(
        _protocol.json_text(event), id=None if position is None else str(position), event=kind
    ).encode()
    assert _protocol.sse_frame(event, position, kind) == written


@pytest.mark.parametrize("position", [True, False, 1.5, "3", 2.0])
def test_a_position_that_is_no_int_is_refused_as_the_sdk_s_error(position: Any) -> None:
    """A position is an int (or None): ``sse_frame(event, True)`` wrote ``id: True`` (a bool's type is not int, so
    it took the writer's way, ``str(position)``), 1.5 ``id: 1.5``, ``"3"`` ``id: 3``. Now a ValidationError (a
    TypeError too), rule type at /position, on every frame's way and every protocol that writes an ``id:``."""
    from agentmsg import ValidationError

    for event, kind in (({"type": "x"}, None), ({"type": "x"}, "x"), ({"type": "x", "k": 2**64}, None)):
        with pytest.raises(ValidationError) as info:
            _protocol.sse_frame(event, position, kind)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/position", "type")]
        assert isinstance(info.value, TypeError)
    for name in ui.names():
        if name == "ai-sdk":  # (no id: the position is not written)
            continue
        with pytest.raises(ValidationError) as info:
            ui.get(name).frame({"type": "RUN_STARTED"}, position)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/position", "type")], name


def test_a_position_of_more_digits_than_python_writes_is_refused_as_the_sdk_s_error() -> None:
    """A frame's position past Python's int string limit (sys.get_int_max_str_digits(), 4,300 digits) raised a bare
    ValueError from ``%d`` or ``str``: ValidationError now, rule integer-range at /position, on every frame's way
    (an event orjson writes or not, an ``event:`` kind or none) and every protocol that writes an ``id:`` (the
    AI SDK writes none: its frame is written). A position below the limit is written as its digits."""
    from agentmsg import ValidationError

    huge = 10**5000
    for event, kind in (({"type": "x"}, None), ({"type": "x"}, "x"), ({"type": "x", "k": 2**64}, None)):
        with pytest.raises(ValidationError) as info:
            _protocol.sse_frame(event, huge, kind)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/position", "integer-range")]
    for name in ui.names():
        protocol = ui.get(name)
        if name == "ai-sdk":
            assert protocol.frame({"type": "start"}, huge) == b'data: {"type":"start"}\n\n'
            continue
        events: tuple[dict[str, Any], ...] = ({"type": "RUN_STARTED"}, {"type": "RUN_STARTED", "k": {1}})
        for event in events:
            with pytest.raises(ValidationError) as info:
                protocol.frame(event, huge)
            assert [(p.pointer, p.rule) for p in info.value.problems] == [("/position", "integer-range")], name
    assert _protocol.sse_frame({"type": "x"}, 10**4299, "x").startswith(b"id: 1" + b"0" * 4299 + b"\n")
