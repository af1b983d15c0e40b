"""EventEndpoint speaking the UI protocols of agentmsg.ui over real HTTP: the protocol picked per request
(``?protocol=``, the Accept header, the default), 406 for one not served, agentscope's bytes unchanged, one
translated buffer per protocol (made when first asked for, from the events still kept) and resume where the
protocol has it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson
import pytest

from agentmsg import ui
from agentmsg.errors import Problem
from agentmsg.ui import Decoder, Encoder
from agentmsg.ui._protocol import sse_frame
from agentmsg.web import EventEndpoint
from tests.web._http import events, get, serving, starlette_app


class _Pairs:
    """A test protocol: each AgentEvent becomes two events ({"n": i, "of": type}), and the stream ends with one
    {"end": true} ({"failed": message} when the source raised)."""

    def __init__(self) -> None:
        self.notes: list[Problem] = []

    def feed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [{"n": 1, "of": event.get("type")}, {"n": 2, "of": event.get("type")}]

    def close(self) -> list[dict[str, Any]]:
        return [{"end": True}]

    def fail(self, message: str) -> list[dict[str, Any]]:
        return [{"failed": message}]


class Pairs:
    name = "pairs"
    media_type = "application/vnd.test.pairs+json"
    response_headers: tuple[tuple[str, str], ...] = (("x-pairs", "v1"),)

    def __init__(self, resumable: bool = True) -> None:
        self.resumable = resumable

    def encoder(self) -> Encoder:
        return _Pairs()

    def decoder(self, *, strict: bool = False) -> Decoder:
        raise NotImplementedError

    def frame(self, event: Mapping[str, Any], position: int) -> bytes:
        return sse_frame(event, position if self.resumable else None)

    def trailer(self, error: str | None) -> bytes:
        return b"data: [DONE]\n\n"


def pairs_of(source: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"n": n, "of": e["type"]} for e in source for n in (1, 2)] + [{"end": True}]


def test_the_registry_and_the_contract() -> None:
    assert ui.names()[0] == "agentscope"
    for name in ui.names():
        protocol = ui.get(name)
        assert isinstance(protocol, ui.UIProtocol) and protocol.name == name
        assert isinstance(protocol.encoder(), ui.Encoder) and isinstance(protocol.decoder(), ui.Decoder)
    with pytest.raises(KeyError, match="no UI protocol 'nope'"):
        ui.get("nope")
    assert isinstance(Pairs(), ui.UIProtocol)


def test_agentscope_is_the_default_and_its_bytes_are_unchanged() -> None:
    source = events(5)
    plain = EventEndpoint(source, protocols=["agentscope"])
    every = EventEndpoint(source, protocols=["agentscope", Pairs()])
    with serving(starlette_app(plain)) as p1, serving(starlette_app(every)) as p2:
        want = get(p1, "/events")
        for headers in ({}, {"Accept": "text/event-stream"}, {"Accept": "*/*"}, {"Accept": "\xff"}):
            got = get(p2, "/events", headers)
            assert got.status == 200 and got.raw == want.raw, headers
        assert get(p2, "/events?protocol=agentscope").raw == want.raw
        assert get(p2, "/events", {"Accept": "application/vnd.agentscope.event+json"}).raw == want.raw
    assert "vary" not in want.headers and got.headers["vary"] == "accept"


def test_a_protocol_is_picked_by_query_or_accept() -> None:
    source = events(3)
    stream = EventEndpoint(source, protocols=["agentscope", Pairs()])
    with serving(starlette_app(stream)) as port:
        by_query = get(port, "/events?protocol=pairs")
        by_accept = get(port, "/events", {"Accept": "text/event-stream;q=0.5, application/vnd.test.pairs+json"})
        by_q = get(port, "/events", {"Accept": "application/vnd.test.pairs+json;q=0.9, text/event-stream"})
        neither = get(port, "/events", {"Accept": "application/vnd.test.pairs+json;q=0, text/event-stream"})
    for r in (by_query, by_accept):
        assert r.status == 200 and r.headers["x-pairs"] == "v1"
        assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert [e.json() for e in r.sse if e.data != "[DONE]"] == pairs_of(source)
        assert r.raw.endswith(b"data: [DONE]\n\n")
    assert [e.id for e in by_query.sse[:-1]] == [str(i) for i in range(1, 2 * len(source) + 2)]
    # text/event-stream selects any protocol, the default first; q decides before specificity
    assert "x-pairs" not in by_q.headers and by_q.sse[-1].event == "end"
    assert "x-pairs" not in neither.headers


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/events?protocol=nope", {}),
        ("/events?protocol=pairs", {}),  # registered nowhere here
        ("/events", {"Accept": "application/json"}),
        ("/events", {"Accept": "text/event-stream;q=0"}),
    ],
)
def test_a_protocol_not_served_is_406_with_one_line(path: str, headers: dict[str, str]) -> None:
    with serving(starlette_app(EventEndpoint(events(2), protocols=["agentscope"]))) as port:
        r = get(port, path, headers)
    assert r.status == 406 and r.headers["content-type"].startswith("text/plain")
    assert r.raw.endswith(b"\n") and r.raw.count(b"\n") == 1


def test_two_protocols_in_the_query_are_refused() -> None:
    with serving(starlette_app(EventEndpoint(events(2), protocols=["agentscope", Pairs()]))) as port:
        r = get(port, "/events?protocol=pairs&protocol=agentscope")
    assert r.status == 400 and b"more than one protocol" in r.raw


@pytest.mark.parametrize(
    "query", ["protocol=", "protocol", "protocol=&x=1", "x=1&protocol", "%70rotocol=", "protocol=&protocol="]
)
def test_an_empty_protocol_in_the_query_is_refused_not_served_the_default(query: str) -> None:
    """``?protocol=`` with no name was served the default protocol (parse_qs drops a blank value): a client that
    built its query from an unset variable got a stream in a protocol it never asked for, and read it as its
    own. It is a 400 now, one line naming the parameter and the protocols served; no ``protocol`` key at all is
    still the default."""
    stream = EventEndpoint(events(2), protocols=["agentscope", Pairs()])
    with serving(starlette_app(stream)) as port:
        r = get(port, f"/events?{query}")
        plain = get(port, "/events?x=1")
    assert r.status == 400 and r.headers["content-type"].startswith("text/plain")
    assert r.raw == b"the query's protocol is empty: name one of agentscope, pairs (or leave it out: agentscope)\n"
    assert plain.status == 200 and plain.sse[-1].event == "end"


def test_each_protocol_resumes_in_its_own_positions() -> None:
    source = events(20)
    stream = EventEndpoint(iter(source), drop_every=5, protocols=["agentscope", Pairs()])
    with serving(starlette_app(stream)) as port:
        for query, want in (("?protocol=pairs", pairs_of(source)), ("", source)):
            got: list[Any] = []
            last: str | None = None
            for _ in range(40):
                r = get(port, f"/events{query}", {"Last-Event-ID": last} if last else None)
                assert r.status == 200
                sse = r.sse
                got += [e.json() for e in sse if e.event != "end" and e.data != "[DONE]"]
                if r.raw.endswith((b"data: [DONE]\n\n", b"event: end\ndata: {}\n\n")):
                    break
                last = sse[-1].id
            assert got == want


def test_a_protocol_asked_for_late_is_translated_from_the_events_still_kept() -> None:
    source = events(20)  # 24 events
    stream = EventEndpoint(source, replay=5, protocols=["agentscope", Pairs()])
    with serving(starlette_app(stream)) as port:
        assert len(get(port, "/events").events) == 24
        late = get(port, "/events?protocol=pairs")
    assert [e.json() for e in late.sse if e.data != "[DONE]"] == pairs_of(source[-5:])[-5:]


@pytest.mark.parametrize("name", ["ag-ui", "ai-sdk"])
def test_a_protocol_asked_for_late_sends_integers_beyond_64_bits_as_one_asked_for_early(name: str) -> None:
    """A protocol asked for late is translated from the frames kept, read back as JSON: orjson read an integer
    beyond 64 bits as a float, so the late client got ``1e+30`` where the early one got the integer's digits."""
    source = events(2)
    big = {"type": "CUSTOM", "id": "x", "createdAt": source[0]["createdAt"], "replyId": "r", "name": "n"}
    source[2:2] = [{**big, "value": {"big": 10**30, "u64": 2**64, "low": -(2**63) - 1, "text": "1" * 40}}]
    with serving(starlette_app(EventEndpoint(source, replay=None))) as port:
        early = get(port, f"/events?protocol={name}").raw
    stream = EventEndpoint(source, replay=None)
    with serving(starlette_app(stream)) as port:
        assert len(get(port, "/events").events) == len(source)  # every event read before the protocol is asked for
        late = get(port, f"/events?protocol={name}").raw
    assert b"1000000000000000000000000000000" in early
    assert late == early


@pytest.mark.parametrize("is_async", [False, True])
def test_a_small_replay_buffer_loses_no_translated_frame_a_lone_client_waits_for(is_async: bool) -> None:
    """A translated protocol gives more frames than events: a synchronous source read in batches of ``replay``
    events pushed the first frames of the batch out of the protocol's buffer before the client that asked for them
    read them (it got an empty 200, with no end). The batch now ends before that."""
    source = events(20)  # 24 events, 48 frames of pairs

    async def agent() -> AsyncIterator[dict[str, Any]]:
        for e in source:
            yield e

    stream = EventEndpoint(agent() if is_async else list(source), replay=24, protocols=["agentscope", Pairs()])
    with serving(starlette_app(stream)) as port:
        r = get(port, "/events?protocol=pairs")
    assert [e.json() for e in r.sse if e.data != "[DONE]"] == pairs_of(source)
    assert [e.id for e in r.sse[:-1]] == [str(i) for i in range(1, 50)] and r.raw.endswith(b"data: [DONE]\n\n")


@pytest.mark.parametrize("name", ["agentscope", "ag-ui", "ai-sdk"])
@pytest.mark.parametrize("is_async", [False, True])
def test_one_event_of_several_large_frames_reaches_the_client_waiting_for_it(name: str, is_async: bool) -> None:
    """An event a protocol gives several frames of, together over ``replay_bytes`` (the AI SDK's AGENT_END with
    large metadata: the event as data and its finish chunk's metadata): a synchronous source's batch held them until
    the client that asked read them, but an async source's event did not, and a lone client reading from the start
    got "fell behind" instead of the stream."""
    source: list[dict[str, Any]] = [
        {"type": "AGENT_START", "id": "s", "replyId": "r", "name": "a"},
        {"type": "AGENT_END", "id": "e", "replyId": "r", "metadata": {"x": "z" * 50_000}},
    ]

    async def agent() -> AsyncIterator[dict[str, Any]]:
        for e in source:
            yield e

    whole = get_whole(EventEndpoint(list(source), replay=None), name)
    stream = EventEndpoint(agent() if is_async else list(source), replay_bytes=10_000)
    with serving(starlette_app(stream)) as port:
        r = get(port, f"/events?protocol={name}")
    assert r.status == 200 and b"fell behind" not in r.raw
    assert r.raw == whole


def get_whole(stream: EventEndpoint, name: str) -> bytes:
    with serving(starlette_app(stream)) as port:
        return get(port, f"/events?protocol={name}").raw


@pytest.mark.parametrize("resumable", [False, True])
def test_a_client_that_falls_behind_the_buffer_with_no_id_to_resume_gets_the_protocols_error(resumable: bool) -> None:
    """One event giving more frames than ``replay``: the client that had none of them yet ends with the protocol's
    error and end (it ended with nothing: an empty 200, taken for the whole stream), with no id of its own."""
    stream = EventEndpoint(events(2), replay=1, protocols=["agentscope", Pairs(resumable)])
    with serving(starlette_app(stream)) as port:
        r = get(port, "/events?protocol=pairs")
    assert r.status == 200 and r.raw.endswith(b"data: [DONE]\n\n") and b"id:" not in r.raw
    (error,) = [e for e in r.sse if e.data != "[DONE]"]
    assert error.json() == {
        "failed": "this connection fell behind the stream: its event 1 is no longer kept (replay 1, replay_bytes 67108864)"
    }


def test_a_failing_source_ends_each_protocol_its_own_way() -> None:
    def failing() -> Any:
        yield from events(2)
        raise RuntimeError("boom")

    stream = EventEndpoint(failing(), protocols=["agentscope", Pairs()])
    with serving(starlette_app(stream)) as port:
        native = get(port, "/events")
        pairs = get(port, "/events?protocol=pairs")
    assert native.sse[-1].event == "error" and "boom" in native.sse[-1].json()["message"]
    assert pairs.sse[-2].json() == {"failed": "RuntimeError: boom"} and pairs.raw.endswith(b"data: [DONE]\n\n")


def test_a_protocol_without_resume_refuses_a_last_event_id() -> None:
    with serving(starlette_app(EventEndpoint(events(2), protocols=["agentscope", Pairs(resumable=False)]))) as port:
        r = get(port, "/events?protocol=pairs", {"Last-Event-ID": "3"})
        fresh = get(port, "/events?protocol=pairs")
    assert r.status == 400 and b"does not resume" in r.raw
    assert fresh.status == 200 and b"id:" not in fresh.raw


@pytest.mark.parametrize("name", [n for n in ui.names() if ui.get(n).resumable])
def test_every_resumable_protocol_resumes_to_the_stream_read_whole(name: str) -> None:
    """Each registered protocol that resumes, read through connections closed every 3 events and resumed with
    Last-Event-ID, gives exactly the events one connection gives; decoded, the AgentEvents served."""
    source = events(10)
    stream = EventEndpoint(iter(source), drop_every=3)
    once = EventEndpoint(source)
    with serving(starlette_app(stream)) as port, serving(starlette_app(once)) as port_once:
        get_whole = get(port_once, f"/events?protocol={name}")
        whole = [e.data for e in get_whole.sse if e.event != "end"]
        got: list[str] = []
        last: str | None = None
        for _ in range(40):
            r = get(port, f"/events?protocol={name}", {"Last-Event-ID": last} if last else None)
            assert r.status == 200
            with_ids = [e for e in r.sse if e.event != "end"]
            got += [e.data for e in with_ids]
            if len(with_ids) < 3:
                break
            last = with_ids[-1].id
    assert got == whole
    decoder = ui.get(name).decoder(strict=True)
    back: list[Any] = []
    for data in got:
        back += decoder.feed(orjson.loads(data))
    back += decoder.close()
    assert back == source


def test_the_default_endpoint_serves_ag_ui_on_request() -> None:
    with serving(starlette_app(EventEndpoint(events(2)))) as port:
        by_accept = get(port, "/events", {"Accept": "application/vnd.ag-ui.event+json"})
        default = get(port, "/events", {"Accept": "text/event-stream"})
    assert [e.json()["type"] for e in by_accept.sse][:2] == ["RUN_STARTED", "TEXT_MESSAGE_START"]
    assert by_accept.sse[-1].json()["type"] == "RUN_FINISHED" and b"event:" not in by_accept.raw
    assert default.sse[0].event == "AGENT_START"
