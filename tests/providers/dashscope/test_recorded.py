"""The dashscope reader on the recorded replies (tests/fixtures/providers/): equal to what the official SDK rebuilds
from the same stream (marker ``oracle``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests._support.providers import FIXTURES, STREAMS, comparable, ids, module, recorded_payloads, reduce_checked

pytestmark = pytest.mark.oracle

DASHSCOPE_NATIVE = [p for p in STREAMS if p.parent.name == "dashscope" and not p.name.startswith("compat_")]


@pytest.mark.parametrize("path", DASHSCOPE_NATIVE, ids=ids(DASHSCOPE_NATIVE))
def test_dashscope_equals_sdk_aggregate(path: Path) -> None:
    pytest.importorskip("dashscope")
    from dashscope.v2.resources.chat.completions import _aggregate
    from dashscope.v2.types.completions import parse_chunk

    data = path.read_bytes()
    payloads = recorded_payloads(path)
    final = _aggregate([parse_chunk(p) for p in payloads]).model_dump(mode="json", exclude_none=True)
    # back into the native wire shape of a non-streaming reply
    body = {
        "request_id": final.get("request_id") or payloads[0].get("requestId"),
        "output": {
            "choices": [{"finish_reason": c["finish_reason"], "message": c["message"]} for c in final["choices"]]
        },
        "usage": final.get("usage"),
    }
    mod = module("dashscope")
    ours, theirs = comparable(reduce_checked(list(mod.parse_stream(data)))), comparable(mod.parse_response(body))
    if path.name == "native_stream_reasoning_tool_call_sdkprint.jsonl":
        # dashscope 2.0.2's _aggregate takes tool-call fragments without an index for cumulative snapshots,
        # so the continuation (id "", arguments '"}') replaces the call: the SDK loses the name, the id
        # and the first half of the arguments. agentmsg routes the continuation to the open call.
        assert [(c["id"], c["function"].get("name")) for c in final["choices"][0]["message"]["tool_calls"]] == [
            ("", None)
        ]
        call = ours["content"][-1]
        assert (call["id"], call["name"], call["input"]) == (
            "call_ecc41296dccc47baa01567",
            "get_current_weather",
            {"location": "杭州"},
        )
        ours["content"], theirs["content"] = ours["content"][:-1], theirs["content"][:-1]
    assert ours == theirs


def test_dashscope_search_info_is_what_the_sdk_reads() -> None:
    """The web search's sources (output.search_info) the message keeps (agentmsg_grounding) are what dashscope's v2
    types read of the docs' response (parse_completion: SearchInfo, extra keys kept). Streamed, dashscope's _aggregate
    keeps the last chunk's search_info, which DashScope sends with empty lists after the chunk that carries the
    results: the SDK's snapshot loses them, agentmsg keeps the value that says something (docs/streams.md)."""
    pytest.importorskip("dashscope")
    from dashscope.v2.resources.chat.completions import _aggregate
    from dashscope.v2.types.completions import parse_chunk, parse_completion

    path = FIXTURES / "dashscope" / "native_response_search_info_docs.json"
    body = orjson.loads(path.read_bytes())
    sdk = parse_completion(body).search_info
    assert sdk is not None and len(sdk.search_results) == 10
    kept = module("dashscope").parse_response(path.read_bytes()).metadata["agentmsg_grounding"]
    assert kept == {"provider": "dashscope", "search_info": sdk.model_dump(mode="json", exclude_unset=True)}
    # streamed as DashScope streams it: the sources first, then empty lists
    empty: dict[str, list[Any]] = {"extra_tool_info": [], "search_results": []}
    text = body["output"]["choices"][0]["message"]["content"]
    chunks = []
    for content, finish, info in (("", "null", body["output"]["search_info"]), (text, "stop", empty)):
        message = {"role": "assistant", "content": content}
        output = {"choices": [{"message": message, "finish_reason": finish}], "search_info": info}
        chunks.append({"output": output, "usage": body["usage"], "request_id": body["request_id"]})
    assert _aggregate([parse_chunk(c) for c in chunks]).search_info.search_results == []  # the SDK's snapshot
    sse = b"".join(b"data:" + orjson.dumps(c) + b"\n\n" for c in chunks)
    streamed = reduce_checked(list(module("dashscope").parse_stream(sse, incremental=True)))
    assert streamed.metadata["agentmsg_grounding"] == kept
