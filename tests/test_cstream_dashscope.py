"""The whole-body fast path of DashScope's native stream parser (agentmsg._speedups.dashscope_stream,
sdk/agentmsg/_csrc/dashscope.c) against the Python parser (providers/dashscope.py StreamParser, no options: the
output's mode, incremental or cumulative, told from the stream): the same events, key for key and in the same order,
or it gives up (None). The recorded streams of the bench's row are all taken; mutations of them are taken or given
up, never read otherwise."""

from __future__ import annotations

import copy
import gc
import json
import random
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import _native
from agentmsg._limits import limits
from agentmsg.events._batch import EventList
from agentmsg.providers import dashscope
from agentmsg.providers._builder import arguments_problem
from agentmsg.providers.dashscope import StreamParser
from tests._cstream import PREFIX, STAMP, fast_events, python_events, same_or_gives_up
from tests.fuzz.budget import examples

FIX = Path(__file__).parent / "fixtures" / "providers" / "dashscope"
#: The bench row's recorded streams (bench/bench_streams.py): each is taken by the C path
BENCH = ["native_multimodal_stream_thinking_docs.sse", "native_stream_text_docs.sse", "native_stream_thinking_docs.sse"]

fast = getattr(_native.speedups, "dashscope_stream", None)
pytestmark = pytest.mark.skipif(fast is None, reason="agentmsg._speedups is not built")


def body_of(name: str) -> bytes:
    return (FIX / name).read_bytes()


def sse(payloads: list[Any], *, crlf: bool = False, space: bool = False) -> bytes:
    """An SSE body of DashScope's native shape (id, event:result, the status comment, data) for payloads (dicts,
    or raw bytes/str data)."""
    out = []
    for n, p in enumerate(payloads, 1):
        data = p if isinstance(p, bytes) else p.encode() if isinstance(p, str) else json.dumps(p).encode()
        out.append(b"id:%d\nevent:result\n:HTTP_STATUS/200\ndata:%s%s\n\n" % (n, b" " if space else b"", data))
    body = b"".join(out)
    return body.replace(b"\n", b"\r\n") if crlf else body


def payloads_of(body: bytes) -> list[Any]:
    return [orjson.loads(line[5:]) for line in body.split(b"\n") if line.startswith(b"data:")]


def cumulative(payloads: list[Any]) -> list[Any]:
    """The same stream as incremental_output=false sends it: each chunk's reasoning and content are all so far."""
    out = []
    so_far = {"reasoning_content": "", "content": ""}
    for p in payloads:
        p = json.loads(json.dumps(p))
        m = p["output"]["choices"][0]["message"]
        for key in so_far:
            value = m.get(key)
            if isinstance(value, list):
                value = "".join(part["text"] for part in value)
                so_far[key] += value
                m[key] = [{"text": so_far[key]}] if so_far[key] else []
            elif isinstance(value, str):
                so_far[key] += value
                m[key] = so_far[key]
        out.append(p)
    return out


def strip_ids(events: list[dict[str, Any]]) -> list[list[tuple[str, Any]]]:
    return [[(k, v) for k, v in e.items() if k not in ("id", "createdAt")] for e in events]


def clean(events: list[dict[str, Any]]) -> bool:
    """The Python parser read the body without saying anything (no problem, error or not-kept note)."""
    return not any(e["type"] == "CUSTOM" for e in events)


# ---- the recorded streams ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BENCH)
def test_bench_streams_are_taken(name: str) -> None:
    assert same_or_gives_up(StreamParser, fast, body_of(name))


@pytest.mark.parametrize("name", sorted(p.name for p in FIX.iterdir() if p.name != "README.md"))
def test_every_fixture_is_the_parsers_or_given_up(name: str) -> None:
    same_or_gives_up(StreamParser, fast, body_of(name))


def test_sdk_printed_json_lines_are_given_up() -> None:
    assert fast_events(fast, body_of("native_stream_reasoning_tool_call_sdkprint.jsonl")) is None


def tool_call_payloads() -> list[Any]:
    """The SDK-printed tool call stream's payloads (reasoning, then a call keyed by its id whose continuation has id
    "" and no index)."""
    text = body_of("native_stream_reasoning_tool_call_sdkprint.jsonl").decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_tool_call_stream_as_sse_is_taken() -> None:
    body = sse(tool_call_payloads())
    assert same_or_gives_up(StreamParser, fast, body)
    assert any(e["type"] == "TOOL_CALL_END" for e in python_events(StreamParser, body))


@pytest.mark.parametrize("name", BENCH)
def test_parse_stream_uses_the_fast_path(name: str) -> None:
    body = body_of(name)
    got = dashscope.parse_stream(body)
    assert type(got) is EventList
    assert strip_ids(list(got)) == strip_ids(list(dashscope.parse_stream([body])))  # (chunks: the Python parser)


# ---- the cases around the recorded ones -----------------------------------------------------------------


def test_cumulative_output_is_told_and_read() -> None:
    for name in BENCH:
        body = sse(cumulative(payloads_of(body_of(name))))
        assert same_or_gives_up(StreamParser, fast, body), name
        assert clean(python_events(StreamParser, body))


@pytest.mark.parametrize(
    "texts",
    [
        ["ha", "ha", "hab"],  # held, then cumulative
        ["ha", "ha", "x"],  # held, then incremental
        ["**", "**Plan", "**Plan!"],
        ["a", "ab", "ab", "abc"],
        ["a", "b", "a"],
        ["abc", "ab", "abd"],
        ["a", "ab", "abc", "x", "xy", "z"],  # cumulative, then restarts (said once)
        ["x", "x"],  # held to the end: cumulative
    ],
)
def test_mode_told_from_the_values(texts: list[str]) -> None:
    for key in ("content", "reasoning_content"):
        payloads = [
            {
                "output": {"choices": [{"message": {key: t, "role": "assistant"}, "finish_reason": "null"}]},
                "request_id": "r1",
                "usage": {"input_tokens": 3, "output_tokens": n},
            }
            for n, t in enumerate(texts)
        ]
        payloads[-1]["output"]["choices"][0]["finish_reason"] = "stop"
        assert same_or_gives_up(StreamParser, fast, sse(payloads)), (key, texts)


def test_held_reasoning_then_content() -> None:
    """A value held (the mode unknown) and a chunk of another kind of text: incremental (_moves_on)."""
    ps = [
        {"output": {"choices": [{"message": {"reasoning_content": "ab"}}]}, "request_id": "r"},
        {"output": {"choices": [{"message": {"reasoning_content": "ab"}}]}, "request_id": "r"},
        {"output": {"choices": [{"message": {"content": [{"text": "c"}]}, "finish_reason": "stop"}]}},
    ]
    assert same_or_gives_up(StreamParser, fast, sse(ps))


def _chunk(message: Any, reason: Any = "null", **top: Any) -> dict[str, Any]:
    return {"output": {"choices": [{"message": message, "finish_reason": reason}]}, **top}


#: two chunks that tell the output is incremental
KNOWN = [_chunk({"content": "h"}, request_id="r"), _chunk({"content": "i"})]


@pytest.mark.parametrize(
    "payloads",
    [
        # a model named on a later chunk (the native API names none): the blocks after it carry it
        [
            _chunk({"reasoning_content": "a"}, request_id="r"),
            _chunk({"reasoning_content": "b"}, model="qwen-x"),
            _chunk({"content": "c"}, "stop", model="other"),
        ],
        # the SDK's key for the id; the message under delta; two entries of choice 0
        [
            _chunk({"content": "a"}, requestId="r2"),
            {"output": {"choices": [{"delta": {"content": "b"}}]}},
            {
                "output": {
                    "choices": [{"index": 0, "message": {"content": "c"}}, {"index": 0, "message": {"content": "d"}}]
                }
            },
            _chunk({"content": ""}, "length"),
        ],
        # a finish reason, then more text and another reason; tool_calls as the reason with no call
        [_chunk({"content": "a"}, "stop", request_id="r"), _chunk({"content": "b"}, "tool_calls")],
        # usage only, output null, an empty output; [DONE] at the end
        [
            {"usage": {"input_tokens": 1}, "request_id": "r"},
            {"output": None, "usage": None},
            {"output": {}},
            _chunk({"content": "x", "role": "assistant"}, "stop"),
            "[DONE]",
        ],
        # no finish reason and no [DONE]: the reply ends interrupted
        [*KNOWN, _chunk({"content": "b"})],
        # no finish reason, [DONE]: whole
        [*KNOWN, "[DONE]", "[DONE]"],
        # content parts (several in one chunk) after incremental output is known
        [
            _chunk({"reasoning_content": "a", "content": []}, request_id="r"),
            _chunk({"reasoning_content": "b"}),
            _chunk({"content": [{"text": "c"}, {"text": ""}, "x", {"text": "d"}]}, "stop"),
        ],
    ],
)
def test_clean_cases(payloads: list[Any]) -> None:
    assert same_or_gives_up(StreamParser, fast, sse(payloads))


def _calls(*calls: Any, reason: Any = "null", **top: Any) -> dict[str, Any]:
    return _chunk({"content": "", "tool_calls": list(calls)}, reason, **top)


def _fn(name: Any = None, arguments: Any = None, **call: Any) -> dict[str, Any]:
    fn = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    return {"type": "function", "function": fn, **call}


C1 = [_fn("f", '{"a":', index=0, id="c1"), _fn("g", "{", index=1, id="c2")]
C2 = [_fn(None, "1}", index=0), _fn("g", "}", index=1, id="c2")]


@pytest.mark.parametrize(
    ("payloads", "taken"),
    [
        # by index, two calls in parallel, their arguments interleaved; a text before them
        ([*KNOWN, _calls(*C1), _calls(*C2), _calls(reason="tool_calls")], True),
        # no id: minted; continuations by the last key
        ([*KNOWN, _calls(_fn("f", "{")), _calls(_fn(None, "}", id="")), _calls(reason="stop")], True),
        # another id at an index: a new call; arguments that are no JSON object (said at the end)
        ([*KNOWN, _calls(_fn("f", "[1]", index=0, id="c1")), _calls(_fn("f", "{", index=0, id="c2"))], True),
        # an id at the index of a call that had none (minted): no news, the call goes on
        ([*KNOWN, _calls(_fn("f", "{", index=0)), _calls(_fn("f", "}", index=0, id="c9"))], True),
        # two calls by id, each continued (id "", no index: the last entry's call)
        (
            [
                *KNOWN,
                _calls(_fn("f", "{", id="c1")),
                _calls(_fn(None, "}", id="")),
                _calls(_fn("g", "{", id="c2")),
                _calls(_fn(None, "}", id=""), _fn(None, "", id="")),
            ],
            True,
        ),
        # no finish: interrupted, the arguments not judged
        ([*KNOWN, _calls(_fn("f", '{"a"', id="c1"))], True),
        # a call waiting for its name; a later name that differs; arguments as an object; an id repeated
        ([*KNOWN, _calls(_fn(None, "{", id="c1")), _calls(_fn("f", "}", id="c1"))], False),
        ([*KNOWN, _calls(_fn("f", "{", index=0)), _calls(_fn("g", "}", index=0))], False),
        ([*KNOWN, _calls(_fn("f", {"a": 1}, id="c1"))], False),
        ([*KNOWN, _calls(_fn("f", "{}", index=0, id="c1"), _fn("f", "{}", index=1, id="c1"))], False),
        # the mode not known yet when the call comes
        ([_calls(_fn("f", "{}", id="c1"), request_id="r")], False),
    ],
)
def test_tool_calls(payloads: list[Any], taken: bool) -> None:
    assert same_or_gives_up(StreamParser, fast, sse(payloads)) is taken


def test_many_tool_calls_are_given_up() -> None:
    """(cstream) Beyond 64 calls in a reply (each is looked for among the others in C) the parser reads it: time
    linear in the body."""
    calls = [_calls(_fn("f", "{}", id=f"c{k}")) for k in range(65)]
    assert same_or_gives_up(StreamParser, fast, sse([*KNOWN, *calls[:64]]))
    assert not same_or_gives_up(StreamParser, fast, sse([*KNOWN, *calls]))


def test_parse_stream_keeps_the_event_limit() -> None:
    """A body that may hold a line or an event over limits.max_event_bytes goes to the parser, which drops it and
    says so (the C path does not look at the limit)."""
    body = sse([*KNOWN, _chunk({"content": "x" * 300}), _chunk({"content": "y"}, "stop")])
    saved = limits.max_event_bytes
    limits.max_event_bytes = 250
    try:
        got = list(dashscope.parse_stream(body))
        want = list(dashscope.parse_stream([body]))
    finally:
        limits.max_event_bytes = saved
    assert any(e["type"] == "CUSTOM" for e in want)
    assert strip_ids(got) == strip_ids(want)


def test_bodies_the_sse_reader_gives_up_on_are_not_read_twice() -> None:
    """(cstream) A body the SSE reader gives up on halfway (a retry line) is given up, not read with the event
    before it read again."""
    body = body_of("native_stream_text_docs.sse").replace(b"id:2\n", b"retry:5\nid:2\n", 1)
    assert fast_events(fast, body) is None


@pytest.mark.parametrize(
    ("old", "new"),
    [(b"id:2\n", b"id:\xff2\n"), (b"event:result\n", b"event:res\xffult\n"), (b"id:2\n", b"id:\xc3\xa92\n")],
)
def test_fields_of_no_utf8(old: bytes, new: bytes) -> None:
    """(cstream) An id or event field of invalid UTF-8, which the SSE decoder says (utf-8): given up (as is one of
    any other byte beyond ASCII)."""
    body = body_of("native_stream_text_docs.sse").replace(old, new, 1)
    assert not same_or_gives_up(StreamParser, fast, body)


def test_usage_counts() -> None:
    base = payloads_of(body_of("native_stream_text_docs.sse"))
    for usage in [
        {"input_tokens": 5, "output_tokens": 2.0, "total_tokens": 7},
        {"input_tokens": 2**63 + 5, "output_tokens": 2**63, "prompt_tokens_details": {"cached_tokens": 1e19}},
        {"input_tokens": 0, "completion_tokens": 4},
        {"input_tokens": 5, "output_tokens": None, "total_tokens": 9},
        {"input_tokens": 5, "total_tokens": 9.0, "prompt_tokens_details": {"cached_tokens": None}},
    ]:
        ps = json.loads(json.dumps(base))
        ps[-1]["usage"] = usage
        assert same_or_gives_up(StreamParser, fast, sse(ps)), usage
    for usage in [
        {"input_tokens": 5, "output_tokens": -1},
        {"input_tokens": 5, "output_tokens": 1.5},
        {"input_tokens": True},
        {"output_tokens": 3},
        [],
        {"input_tokens": 5, "total_tokens": "9"},
    ]:
        ps = json.loads(json.dumps(base))
        ps[-1]["usage"] = usage
        same_or_gives_up(StreamParser, fast, sse(ps))
        # (an earlier chunk's usage that a later one replaced is never read: either way for it)
        ps = json.loads(json.dumps(base))
        ps[0]["usage"] = usage
        same_or_gives_up(StreamParser, fast, sse(ps))


# ---- fuzz ------------------------------------------------------------------------------------------------

VALUES: list[Any] = [
    None,
    0,
    -1,
    1,
    1.5,
    2.0,
    2**70,
    10**30,
    True,
    False,
    "",
    "x",
    "null",
    "stop",
    "tool_calls",
    "length",
    "\u00e9\u2028\ud83d\ude00",
    "\ud83d",
    'q"\\\n\t',
    {},
    [],
    {"text": "a"},
    [{"text": "b"}],
    [{"text": "c", "x": 1}],
    [{"image": "http://x/y.png"}],
    [{"text": 5}],
    [1, "a", None],
    {"a": {"b": [1]}},
    [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
]


def value(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(VALUES))


KEYS = [
    "request_id",
    "requestId",
    "output",
    "usage",
    "choices",
    "message",
    "delta",
    "content",
    "reasoning_content",
    "role",
    "finish_reason",
    "index",
    "logprobs",
    "tool_calls",
    "code",
    "message",
    "text",
    "model",
    "thoughts",
    "search_info",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "prompt_tokens_details",
    "cached_tokens",
    "zz_unknown",
]


def nodes(value: Any) -> list[Any]:
    """Every dict and list in a JSON value."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (dict, list)):
            out.append(v)
            stack.extend(v.values() if isinstance(v, dict) else v)
    return out


def mutate_payload(rng: random.Random, p: Any) -> Any:
    p = json.loads(json.dumps(p))
    for _ in range(rng.choice([1, 1, 2, 3])):
        node = rng.choice(nodes(p)) if nodes(p) else None
        if isinstance(node, dict) and node:
            key = rng.choice(list(node))
            what = rng.random()
            if what < 0.25:
                del node[key]
            elif what < 0.8:
                node[key] = value(rng)
            else:
                node[rng.choice(KEYS)] = value(rng)
        elif isinstance(node, list) and node:
            i = rng.randrange(len(node))
            if rng.random() < 0.5:
                node[i] = value(rng)
            else:
                node.append(json.loads(json.dumps(node[i])))
        elif isinstance(node, dict):
            node[rng.choice(KEYS)] = value(rng)
    return p


def mutate_body(rng: random.Random, payloads: list[Any]) -> bytes:
    ps: list[Any] = list(payloads)
    what = rng.randrange(12)
    if what == 0 and len(ps) > 1:
        del ps[rng.randrange(len(ps))]
    elif what == 1:
        i = rng.randrange(len(ps))
        ps.insert(i, ps[i])
    elif what == 2 and len(ps) > 1:
        i, j = rng.randrange(len(ps)), rng.randrange(len(ps))
        ps[i], ps[j] = ps[j], ps[i]
    elif what == 3:
        ps.insert(rng.randrange(len(ps) + 1), "[DONE]")
    elif what == 4:
        ps.insert(
            rng.randrange(len(ps) + 1),
            rng.choice(
                [
                    '{"code":"X","message":"m"}',
                    '{"foo":1}',
                    "",
                    " ",
                    "[1]",
                    "{bad",
                    '{"output":null,"code":"E","message":"m"}',
                ]
            ),
        )
    else:
        i = rng.randrange(len(ps))
        ps[i] = mutate_payload(rng, ps[i])
    body = sse(ps, crlf=rng.random() < 0.1, space=rng.random() < 0.2)
    r = rng.random()
    if r < 0.05:
        body = body.replace(b"event:result", b"event:error", 1)
    elif r < 0.1:
        body = body[: -rng.choice([1, 2, 3])]  # the last event's blank line, or more, cut
    elif r < 0.13:
        body = body.replace(b"\n\n", b"\n\n\n", rng.randrange(1, 4))
    elif r < 0.16:
        body = body.replace(b"id:2\n", b"id:2\nevent:ping\n", 1)
    elif r < 0.19:
        body = body.replace(
            rng.choice([b"id:", b"event:", b":HTTP"]), rng.choice([b"id:\xff", b"event:\xfe", b":\xff"]), 1
        )
    return body


def bases() -> list[list[Any]]:
    out = []
    for name in BENCH:
        ps = payloads_of(body_of(name))
        out += [ps, cumulative(ps)]
    return [*out, tool_call_payloads()]


def test_fuzz_mutations_are_the_parsers_or_given_up() -> None:
    rng = random.Random(20261127)
    base = bases()
    n = examples(3000)
    taken = readable = taken_readable = 0
    for k in range(n):
        body = mutate_body(rng, rng.choice(base))
        try:
            took = same_or_gives_up(StreamParser, fast, body)
        except AssertionError:
            raise AssertionError(f"divergence on mutation {k}: {body!r}") from None
        taken += took
        if clean(python_events(StreamParser, body)):
            readable += 1
            taken_readable += took
    print(
        f"dashscope fuzz: {n} bodies, C took {taken}; the parser read {readable} without a word, C took"
        f" {taken_readable} of them"
    )
    assert taken_readable >= 0.6 * readable, (taken_readable, readable)


def _fragment(rng: random.Random) -> dict[str, Any]:
    """A tool call entry of DashScope's shape, clean or not (index, id, name, arguments of any kind)."""
    tc: dict[str, Any] = {"type": "function"}
    if rng.random() < 0.4:
        tc["index"] = rng.choice([0, 0, 1, 2, True, "0", None, 1.0])
    if rng.random() < 0.6:
        tc["id"] = rng.choice(["c1", "c2", "", "", None, 5, "call_x"])
    fn: dict[str, Any] = {}
    if rng.random() < 0.6:
        fn["name"] = rng.choice(["f", "g", "", None, 3])
    if rng.random() < 0.8:
        fn["arguments"] = rng.choice(["{", "}", '"a":1', "{}", "", None, 7, {"a": 1}, "[", "]", '{"x":', "1}"])
    tc["function"] = fn if rng.random() < 0.95 else "x"
    return tc


def test_fuzz_tool_call_fragments() -> None:
    """Sequences of tool call fragments (keyed by index, id or the last key; named late or never; ...) among text,
    reasoning and finish reasons."""
    rng = random.Random(7)
    n = examples(2000)
    taken = 0
    for k in range(n):
        ps: list[Any] = [_chunk({"content": "h"}, request_id="r")]
        if rng.random() < 0.9:
            ps.append(_chunk({"reasoning_content": "i"}))  # (incremental output: told)
        for _ in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.6:
                ps.append(_calls(*[_fragment(rng) for _ in range(rng.randint(1, 3))]))
            elif r < 0.75:
                ps.append(_chunk({"content": rng.choice(["t", ""]), "reasoning_content": rng.choice(["", "u", None])}))
            else:
                ps.append(_chunk({"content": ""}, rng.choice(["stop", "tool_calls", "length", "null"])))
        if rng.random() < 0.2:
            ps.append("[DONE]")
        try:
            taken += same_or_gives_up(StreamParser, fast, sse(ps))
        except AssertionError:
            raise AssertionError(f"divergence on sequence {k}: {ps!r}") from None
    print(f"dashscope tool call fuzz: {n} bodies, C took {taken}")
    assert taken >= n // 20


def test_every_truncation_at_an_event_boundary() -> None:
    for ps in bases():
        body = sse(ps)
        ends = [i + 2 for i in range(len(body)) if body.startswith(b"\n\n", i)]
        for end in ends:
            for cut in (end, end - 1, end - 2):
                same_or_gives_up(StreamParser, fast, body[:cut])


# ---- memory --------------------------------------------------------------------------------------------


def test_no_leaks() -> None:
    bodies = [body_of(n) for n in BENCH] + [sse(ps) for ps in bases()]
    bodies.append(body_of("native_stream_text_docs.sse").replace(b"id:3\n", b"retry:5\nid:3\n"))  # given up
    bodies.append(sse([{"output": {"choices": [{"message": {"content": "a"}}]}, "request_id": "r"}, '{"foo": 1}']))
    texts = ["a", "ab", "abc", "x", "x"]  # held, cumulative, a restart (said), held to the end
    bodies.append(sse([_chunk({"content": t}, request_id="r") for t in texts]))
    bodies.append(sse([*KNOWN, _calls(_fn("f", "{", index=0)), _calls(_fn("f", "[", index=0, id="c"))]))  # minted

    def run(times: int) -> None:
        for body in bodies:
            for _ in range(times):
                fast(body, PREFIX, STAMP, orjson.loads, arguments_problem)

    run(200)
    gc.collect()
    before = sys.getallocatedblocks()
    run(20_000 // len(bodies))
    gc.collect()
    assert sys.getallocatedblocks() - before < 200
