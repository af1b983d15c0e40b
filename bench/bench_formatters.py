"""Formatting a conversation for each provider: agentmsg vs AgentScope Python's formatters, and a floor.

One synthetic conversation, built twice from the same turns: as agentmsg messages and as AgentScope
Python 2.x messages (``pip install agentscope``; optional, the rows say when it is missing). A turn is:
a user message (text, and an image by URL every third turn), an assistant message with signed thinking,
text and two parallel tool calls, the two tool results, and an assistant answer; agentmsg holds the results
in a TOOL message, AgentScope in the assistant message after its calls (its own layout). Per message below
means per agentmsg message (4 per turn) for every side.

Sides:

* ``agentmsg``: ``format_request`` (the whole body: messages, model, provider rules, diagnostics);
* ``AgentScope``: ``await formatter.format(msgs)`` of its ``*ChatFormatter`` (the messages list only), driven
  without an event loop (its coroutine never awaits). Its Anthropic and Gemini formatters download every image
  URL (``requests.get``) to send it inline in base64: the bench answers those calls from memory (a stub that
  returns the image's bytes), so no network is timed, only what the formatter does with the bytes; agentmsg
  sends the URL, which both APIs take;
* ``floor``: the least Python that builds agentmsg's very body for this conversation (checked equal to it):
  no rules, no diagnostics, no checks; it keeps what agentmsg keeps.
* ``check``: the one check agentmsg makes of its input before formatting it, alone (a message changed after
  construction to what its schema does not allow is refused, naming the field: the C writer's walk of the
  conversation). The floor plus the check is a bound on agentmsg's time (each is the least of its job), and
  AgentScope's time over it the most its speed-up could be with the walk as cheap as the floor's: shown beside
  the 2x target, not judged.

Equal work is checked before timing, for every provider and size: the floor's body equals agentmsg's; agentmsg
and AgentScope send the same texts, tool calls (id and arguments), tool results (id and output) and images
(each image's URL, or its bytes inline), and AgentScope sends no thinking or signature that agentmsg does not
(agentmsg keeps more where the provider takes it: a DashScope ``reasoning_content``, a Gemini ``thoughtSignature``;
the table's last column says what each side keeps).

Times are CPU time of the benchmarking thread (the machine is shared; wall time would count other
processes), minimum over interleaved runs, the garbage collector off while timing (as timeit); a
call's time includes freeing its result. The floor shows how per-message time grows with the conversation
on this machine by itself: at 10,000 messages the input and output no longer fit the CPU's per-core cache,
so every memory access costs more; instructions per message stay the same.

``--instructions`` also counts the instructions each call executes, under valgrind (callgrind,
collecting only inside the measured calls): deterministic, blind to the other processes of a shared
machine, and the same for both implementations. Instructions per message from 100 to 10,000 messages
tell whether the work per message is flat; CPU time adds the memory hierarchy.

Targets (reported, not asserted): agentmsg >= 2x faster than AgentScope at 1,000 messages for each
provider, and agentmsg's time per message at 10,000 messages within 1.2x of that at 100.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import _callgrind
import orjson
from peers import agentscope_missing

from agentmsg import (
    AssistantMessage,
    ImageBlock,
    MsgRole,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    URLSource,
    UserMessage,
)
from agentmsg.providers import get
from agentmsg.providers._request.context import check_messages

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
)
MODEL = "bench-model"
TARGET_VS_AGENTSCOPE = 2.0
_clock = time.thread_time
TARGET_FLAT = 1.2
PROVIDERS = {  # agentmsg registry name -> AgentScope formatter class
    "openai": "OpenAIChatFormatter",
    "anthropic": "AnthropicChatFormatter",
    "gemini": "GeminiChatFormatter",
    "dashscope": "DashScopeChatFormatter",
}
SIZES = (100, 1000, 10000)
#: A conversation as an agent loop sends it early on (a system prompt and two turns): shown first, not judged (each
#: call's fixed cost, spread over few messages, is most of its time)
SMALL = 9
SYSTEM = "You are a helpful assistant."
RESULTS = ("sunny", "light rain")


def _turn_texts(t: int) -> tuple[str, str, str, str]:
    return (
        f"Question {t}: what is the weather in city {t} and in city {t + 1}? Please compare them.",
        f"I need the weather for two cities (turn {t}); I will call the tool twice in parallel.",
        f"Let me look up city {t} and city {t + 1}.",
        f"City {t} is sunny at {t % 30} degrees; city {t + 1} has light rain. Take an umbrella there.",
    )


def signature(t: int) -> str:
    """The thinking's signature (base64, as the providers' are: Gemini's must be)."""
    return base64.b64encode(f"signature of turn {t}".encode()).decode()


def image_url(t: int) -> str:
    return f"https://images.example.com/weather/{t}.png"


def image_bytes(url: str) -> bytes:
    """What the image URL serves (each URL its own bytes, so that an image sent inline tells which it is)."""
    return PNG + url.encode()


def conversation(n: int) -> list[Any]:
    """About ``n`` agentmsg messages: a system prompt, then turns of 4 messages."""
    msgs: list[Any] = [SystemMessage(SYSTEM)]
    t = 0
    while len(msgs) < n:
        question, thought, lead, answer = _turn_texts(t)
        user: list[Any] = [TextBlock(text=question)]
        if t % 3 == 0:
            user.append(ImageBlock(source=URLSource(url=image_url(t), mime_type="image/png")))
        msgs.append(UserMessage(user, name="alice"))
        msgs.append(
            AssistantMessage(
                [
                    ThinkingBlock(thinking=thought, metadata={"signature": signature(t)}),
                    TextBlock(text=lead),
                    ToolUseBlock(id=f"call_{t}_a", name="get_weather", input={"city": f"city {t}"}),
                    ToolUseBlock(id=f"call_{t}_b", name="get_weather", input={"city": f"city {t + 1}"}),
                ],
                name="Friday",
            )
        )
        msgs.append(
            ToolResultMessage(
                [
                    ToolResultBlock(id=f"call_{t}_a", name="get_weather", output=RESULTS[0], state="success"),
                    ToolResultBlock(id=f"call_{t}_b", name="get_weather", output=RESULTS[1], state="success"),
                ],
                name="Friday",
            )
        )
        msgs.append(AssistantMessage(answer, name="Friday"))
        t += 1
    return msgs[:n]


def agentscope_conversation(n: int) -> list[Any]:
    """The same turns as AgentScope Python 2.x messages."""
    from agentscope.message import (
        DataBlock,
        Msg,
        TextBlock,
        ThinkingBlock,
        ToolCallBlock,
        ToolResultBlock,
        URLSource,
    )

    msgs: list[Any] = [Msg(name="system", role="system", content=[TextBlock(text=SYSTEM)])]
    t = 0
    while 1 + 4 * t < n:  # agentmsg's turn t: messages 1 + 4t (user) to 4 + 4t (answer), those below n
        kept = n - 1 - 4 * t  # how many of the turn's 4 messages agentmsg has
        question, thought, lead, answer = _turn_texts(t)
        user: list[Any] = [TextBlock(text=question)]
        if t % 3 == 0:
            user.append(DataBlock(source=URLSource(url=image_url(t), media_type="image/png")))
        msgs.append(Msg(name="alice", role="user", content=user))
        if kept >= 2:
            blocks: list[Any] = [
                ThinkingBlock(thinking=thought, signature=signature(t)),
                TextBlock(text=lead),
                ToolCallBlock(id=f"call_{t}_a", name="get_weather", input=orjson.dumps({"city": f"city {t}"}).decode()),
                ToolCallBlock(
                    id=f"call_{t}_b", name="get_weather", input=orjson.dumps({"city": f"city {t + 1}"}).decode()
                ),
            ]
            if kept >= 3:  # agentmsg's TOOL message: the results, after the calls in AgentScope's layout
                blocks += [
                    ToolResultBlock(id=f"call_{t}_a", name="get_weather", output=RESULTS[0], state="success"),
                    ToolResultBlock(id=f"call_{t}_b", name="get_weather", output=RESULTS[1], state="success"),
                ]
            msgs.append(Msg(name="Friday", role="assistant", content=blocks))
        if kept >= 4:
            msgs.append(Msg(name="Friday", role="assistant", content=[TextBlock(text=answer)]))
        t += 1
    return msgs


class _Downloaded:
    """What the stub of ``requests.get`` returns: the image URL's bytes."""

    def __init__(self, url: str) -> None:
        self.content = image_bytes(url)

    def raise_for_status(self) -> None:
        return None


class _Requests:
    """Stands for ``requests`` in AgentScope's Anthropic and Gemini formatters: ``get`` answers from memory."""

    @staticmethod
    def get(url: str, timeout: float | None = None) -> _Downloaded:
        return _Downloaded(url)


@contextlib.contextmanager
def no_downloads() -> Iterator[None]:
    """AgentScope's formatters get the image URLs' bytes from memory, not from the network."""
    import agentscope.formatter._anthropic_formatter as anthropic_module
    import agentscope.formatter._gemini_formatter as gemini_module

    saved = [(m, m.requests) for m in (anthropic_module, gemini_module)]
    try:
        for module, _ in saved:
            module.requests = _Requests  # type: ignore[assignment]
        yield
    finally:
        for module, original in saved:
            module.requests = original


def _drive(coro: Any) -> Any:
    """Run a coroutine that never awaits anything pending, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the formatter awaited something; cannot drive it without a loop")


def _best(fns: list[Callable[[], Any]], budget: float) -> list[float]:
    """Minimum seconds per call of each function: CPU time of this thread (``time.thread_time``), so
    that other processes on a shared machine do not count; rounds interleave the functions (drift
    hits all alike), each running a few calls in a row (warm caches for all alike); the garbage
    collector off while timing (as timeit)."""
    reps = []
    for fn in fns:
        t = _clock()
        fn()
        reps.append(max(3, min(50, int(0.05 / max(_clock() - t, 1e-6)))))
    best = [float("inf")] * len(fns)
    deadline = time.perf_counter() + budget
    rounds = 0
    while rounds < 3 or (time.perf_counter() < deadline and rounds < 200):
        gc.collect()
        gc.disable()
        try:
            for k, fn in enumerate(fns):
                for _ in range(reps[k]):
                    t = _clock()
                    fn()
                    best[k] = min(best[k], _clock() - t)
        finally:
            gc.enable()
        rounds += 1
    return best


# ---- the floors: agentmsg's body, with nothing but the loop that builds it ----------------------------------

_USER, _ASSISTANT, _TOOL, _SYSTEM = MsgRole.USER, MsgRole.ASSISTANT, MsgRole.TOOL, MsgRole.SYSTEM


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def floor_openai(msgs: list[Any]) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for m in msgs:
        role = m.role
        if role is _ASSISTANT:
            text = None
            calls = []
            for b in m.content:
                kind = b.type
                if kind == "text":
                    text = b.text
                elif kind == "tool_use":
                    fn = {"name": b.name, "arguments": _dumps(b.input)}
                    calls.append({"id": b.id, "type": "function", "function": fn})
            entry: dict[str, Any] = {"role": "assistant", "content": text, "name": m.name}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        elif role is _TOOL:
            out.extend({"role": "tool", "content": b.output[0].text, "tool_call_id": b.id} for b in m.content)
        elif role is _USER:
            blocks = m.content
            if len(blocks) == 1:
                content: Any = blocks[0].text
            else:
                content = [
                    {"type": "text", "text": b.text}
                    if b.type == "text"
                    else {"type": "image_url", "image_url": {"url": b.source.url}}
                    for b in blocks
                ]
            out.append({"role": "user", "content": content, "name": m.name})
        else:
            out.append({"role": "system", "content": m.content[0].text})
    return {"model": MODEL, "messages": out}


def floor_anthropic(msgs: list[Any]) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    system = None
    for m in msgs:
        role = m.role
        if role is _ASSISTANT:
            content = []
            for b in m.content:
                kind = b.type
                if kind == "text":
                    content.append({"type": "text", "text": b.text})
                elif kind == "tool_use":
                    content.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
                elif kind == "thinking":
                    content.append({"type": "thinking", "thinking": b.thinking, "signature": b.metadata["signature"]})
            out.append({"role": "assistant", "content": content})
        elif role is _TOOL:
            results = [
                {"type": "tool_result", "tool_use_id": b.id, "content": [{"type": "text", "text": b.output[0].text}]}
                for b in m.content
            ]
            out.append({"role": "user", "content": results})
        elif role is _USER:
            content = [
                {"type": "text", "text": b.text}
                if b.type == "text"
                else {"type": "image", "source": {"type": "url", "url": b.source.url}}
                for b in m.content
            ]
            out.append({"role": "user", "content": content})
        else:
            system = m.content[0].text
    return {"model": MODEL, "max_tokens": 4096, "messages": out, "system": system}


def floor_gemini(msgs: list[Any]) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    system = None
    for m in msgs:
        role = m.role
        if role is _ASSISTANT:
            parts = []
            for b in m.content:
                kind = b.type
                if kind == "text":
                    parts.append({"text": b.text})
                elif kind == "tool_use":
                    parts.append({"functionCall": {"id": b.id, "name": b.name, "args": b.input}})
                elif kind == "thinking":
                    parts.append({"text": b.thinking, "thought": True, "thoughtSignature": b.metadata["signature"]})
            out.append({"role": "model", "parts": parts})
        elif role is _TOOL:
            responses = [
                {"functionResponse": {"id": b.id, "name": b.name, "response": {"output": b.output[0].text}}}
                for b in m.content
            ]
            out.append({"role": "user", "parts": responses})
        elif role is _USER:
            parts = [
                {"text": b.text}
                if b.type == "text"
                else {"fileData": {"mimeType": b.source.mime_type, "fileUri": b.source.url}}
                for b in m.content
            ]
            out.append({"role": "user", "parts": parts})
        else:
            system = {"parts": [{"text": m.content[0].text}]}
    return {"contents": out, "systemInstruction": system}


def floor_dashscope(msgs: list[Any]) -> dict[str, Any]:
    """The multimodal form (the conversation holds images): every content a list of parts."""
    out: list[dict[str, Any]] = []
    for m in msgs:
        role = m.role
        if role is _ASSISTANT:
            content = []
            thinking = None
            calls = []
            for b in m.content:
                kind = b.type
                if kind == "text":
                    content.append({"text": b.text})
                elif kind == "tool_use":
                    fn = {"name": b.name, "arguments": _dumps(b.input)}
                    calls.append({"id": b.id, "type": "function", "function": fn})
                elif kind == "thinking":
                    thinking = b.thinking
            entry: dict[str, Any] = {"role": "assistant", "content": content, "name": m.name}
            if thinking is not None:
                entry["reasoning_content"] = thinking
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        elif role is _TOOL:
            out.extend(
                {"role": "tool", "content": [{"text": b.output[0].text}], "tool_call_id": b.id, "name": b.name}
                for b in m.content
            )
        elif role is _USER:
            content = [{"text": b.text} if b.type == "text" else {"image": b.source.url} for b in m.content]
            out.append({"role": "user", "content": content, "name": m.name})
        else:
            out.append({"role": "system", "content": [{"text": m.content[0].text}]})
    return {"model": MODEL, "input": {"messages": out}, "parameters": {"result_format": "message"}}


FLOORS: dict[str, Callable[[list[Any]], dict[str, Any]]] = {
    "openai": floor_openai,
    "anthropic": floor_anthropic,
    "gemini": floor_gemini,
    "dashscope": floor_dashscope,
}


# ---- equal work --------------------------------------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _dicts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _dicts(v)


def facts(output: Any, turns: int) -> dict[str, set[Any]]:
    """What an output sends of the conversation, whatever its shape: the turns' texts, thinking and
    signatures found as strings; a tool call (id, city) and a tool result (id, output) in each object holding
    a call id; each image by its URL or its bytes (a data URL, or base64)."""
    calls = {f"call_{t}_{x}" for t in range(turns) for x in "ab"}
    texts = {s for t in range(turns) for i, s in enumerate(_turn_texts(t)) if i != 1}
    thoughts = {_turn_texts(t)[1] for t in range(turns)}
    signatures = {signature(t) for t in range(turns)}
    images = {image_url(t): t for t in range(0, turns, 3)}
    inline = {image_bytes(u): t for u, t in images.items()}
    found: dict[str, set[Any]] = {k: set() for k in ("texts", "thinking", "signatures", "calls", "results", "images")}
    for s in _strings(output):
        if s in texts:
            found["texts"].add(s)
        elif s in thoughts:
            found["thinking"].add(s)
        elif s in signatures:
            found["signatures"].add(s)
        elif s in images:
            found["images"].add(images[s])
        elif len(s) > 80 and s not in texts:
            data = s.partition(";base64,")[2] if s.startswith("data:") else s
            with contextlib.suppress(ValueError):
                t = inline.get(base64.b64decode(data, validate=True))
                if t is not None:
                    found["images"].add(t)
    for d in _dicts(output):
        ids = [v for v in d.values() if isinstance(v, str) and v in calls]
        if not ids:
            continue
        inside = list(_strings({k: v for k, v in d.items() if v not in ids}))
        result = [s for s in inside if s in RESULTS]
        if result:
            found["results"].add((ids[0], result[0]))
            continue
        for s in inside:
            args = s if s.startswith("city ") else None
            if s.startswith("{"):
                args = orjson.loads(s).get("city")
            if args:
                found["calls"].add((ids[0], args))
    return found


def check_equal_work(provider: str, msgs: list[Any], as_output: Any | None) -> str:
    """Raises AssertionError where the sides do different work; returns what each keeps of the thinking."""
    ours = get(provider).format_request(msgs, model=MODEL).body
    floor = FLOORS[provider](msgs)
    if floor != ours:
        raise AssertionError(f"{provider}: the floor's body is not agentmsg's")
    if as_output is None:
        return ""
    turns = (len(msgs) - 2) // 4 + 1
    mine, theirs = facts(ours, turns), facts(as_output, turns)
    for kind in ("texts", "calls", "results", "images"):
        if mine[kind] != theirs[kind]:
            raise AssertionError(
                f"{provider}, {len(msgs)} messages: {kind} differ: agentmsg only {sorted(mine[kind] - theirs[kind])[:3]},"
                f" AgentScope only {sorted(theirs[kind] - mine[kind])[:3]}"
            )
    for kind in ("thinking", "signatures"):
        if not theirs[kind] <= mine[kind]:
            raise AssertionError(f"{provider}: AgentScope sends {kind} agentmsg does not")
    if not mine["images"]:
        raise AssertionError(f"{provider}: no image in the conversation")

    def kept(side: dict[str, set[Any]]) -> str:
        return "signed" if side["signatures"] else "text" if side["thinking"] else "none"

    return f"thinking: agentmsg {kept(mine)}, AgentScope {kept(theirs)}"


def run(quick: bool = False) -> list[dict[str, Any]]:
    if tracemalloc.is_tracing():  # it would count every allocation of both implementations
        tracemalloc.stop()
    budget = 0.3 if quick else 1.0
    sizes = (SMALL, *SIZES)
    try:
        import agentscope
        import agentscope.formatter as asf

        as_version = getattr(agentscope, "__version__", "?")
    except ImportError as exc:
        asf = None
        as_version = agentscope_missing(exc.name)
    rows: list[dict[str, Any]] = []
    with no_downloads() if asf is not None else contextlib.nullcontext():
        for provider, as_name in PROVIDERS.items():
            fmt = get(provider).format_request
            floor = FLOORS[provider]
            formatter = getattr(asf, as_name)() if asf is not None else None
            for n in sizes:
                msgs = conversation(n)
                fns: list[Callable[[], Any]] = [
                    lambda: fmt(msgs, model=MODEL),
                    lambda: floor(msgs),
                    lambda: check_messages(msgs),
                ]
                kept = ""
                if formatter is not None:
                    as_msgs = agentscope_conversation(n)
                    kept = check_equal_work(provider, msgs, _drive(formatter.format(as_msgs)))
                    fns.append(lambda: _drive(formatter.format(as_msgs)))
                else:
                    check_equal_work(provider, msgs, None)
                times = _best(fns, budget * (2 if n == sizes[-1] else 1))
                row: dict[str, Any] = {
                    "provider": provider,
                    "messages": n,
                    "agentmsg_us_per_msg": times[0] / n * 1e6,
                    "floor_us_per_msg": times[1] / n * 1e6,
                    "check_us_per_msg": times[2] / n * 1e6,
                    "agentscope_us_per_msg": float("nan"),
                    "ratio": float("nan"),
                    "kept": kept,
                }
                if formatter is not None:
                    row["agentscope_us_per_msg"] = times[3] / n * 1e6
                    row["ratio"] = times[3] / times[0]
                rows.append(row)
    rows.append({"agentscope": as_version})
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    version = rows[-1].get("agentscope", "?")
    data = [r for r in rows if "provider" in r]
    print(f"\n== formatters: conversation -> provider request (µs per message; AgentScope Python {version}) ==")
    print(
        f"{'provider':<11} {'messages':>8} {'agentmsg':>9} {'AgentScope':>11} {'floor':>7} {'check':>6} {'speed-up':>9}"
        f" {'x floor':>8}  what each keeps of the thinking"
    )
    for r in data:
        ratio = "" if r["ratio"] != r["ratio"] else f"{r['ratio']:.2f}x"
        theirs = "" if r["agentscope_us_per_msg"] != r["agentscope_us_per_msg"] else f"{r['agentscope_us_per_msg']:.2f}"
        print(
            f"{r['provider']:<11} {r['messages']:>8,} {r['agentmsg_us_per_msg']:>9.2f} {theirs:>11}"
            f" {r['floor_us_per_msg']:>7.2f} {r['check_us_per_msg']:>6.2f} {ratio:>9}"
            f" {r['agentmsg_us_per_msg'] / r['floor_us_per_msg']:>7.2f}x"
            f"  {r['kept'].removeprefix('thinking: ')}"
        )
    for t in targets(rows):
        value = "-" if t["value"] != t["value"] else f"{t['value']:.2f}x"
        verdict = "AgentScope not installed" if t["met"] is None else "met" if t["met"] else "MISSED"
        print(f"{t['row']}: {value}, target {t['target']}: {verdict}{t.get('note', '')}")


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each target: what it is about, the measured ratio, the target, met (None: AgentScope not installed)."""
    data = [r for r in rows if "provider" in r]
    out = []
    for provider in PROVIDERS:
        mine = {r["messages"]: r for r in data if r["provider"] == provider}
        at = mine[1000]["ratio"]
        bound = mine[1000]["agentscope_us_per_msg"] / (mine[1000]["floor_us_per_msg"] + mine[1000]["check_us_per_msg"])
        out.append(
            {
                "row": f"{provider}: AgentScope / agentmsg at 1,000 messages",
                "value": at,
                "target": f">= {TARGET_VS_AGENTSCOPE:g}",
                "met": None if at != at else at >= TARGET_VS_AGENTSCOPE,
                "note": "" if bound != bound else f" (AgentScope / (floor + check): {bound:.2f}x)",
            }
        )
        flat = mine[SIZES[-1]]["agentmsg_us_per_msg"] / mine[SIZES[0]]["agentmsg_us_per_msg"]
        floor_flat = mine[SIZES[-1]]["floor_us_per_msg"] / mine[SIZES[0]]["floor_us_per_msg"]
        out.append(
            {
                "row": f"{provider}: agentmsg per message, {SIZES[-1]:,} / {SIZES[0]:,} messages",
                "value": flat,
                "target": f"<= {TARGET_FLAT:g}",
                "met": flat <= TARGET_FLAT,
                "note": f" (the floor: {floor_flat:.2f}x)",
            }
        )
    return out


# ---- instruction counts (valgrind) ----------------------------------------------------------------

CALLS = {100: 20, 1000: 3, 10000: 1}  # measured calls per size (after one warm call)


def _callable(impl: str, provider: str, n: int) -> Callable[[], Any]:
    if impl == "agentmsg":
        fmt, msgs = get(provider).format_request, conversation(n)
        return lambda: fmt(msgs, model=MODEL)
    if impl == "floor":
        floor, msgs = FLOORS[provider], conversation(n)
        return lambda: floor(msgs)
    import agentscope.formatter as asf

    formatter, as_msgs = getattr(asf, PROVIDERS[provider])(), agentscope_conversation(n)
    return lambda: _drive(formatter.format(as_msgs))


def _child(impl: str, provider: str, n: int) -> None:
    """Under callgrind (bench/_callgrind.py): one warm call, then the measured calls, the only ones counted
    (setup, imports and the warm call are not)."""
    fn = _callable(impl, provider, n)
    with no_downloads() if impl == "agentscope" else contextlib.nullcontext():
        fn()

        def calls() -> None:
            for _ in range(CALLS[n]):
                fn()

        _callgrind.measured(calls)


def _count(impl: str, provider: str, n: int) -> float:
    """Instructions per message of one implementation (nan when valgrind cannot tell)."""
    (total,) = _callgrind.count([__file__, "--child", impl, provider, str(n)])
    return total / CALLS[n] / n


def instructions() -> list[dict[str, Any]]:
    """Instructions per message: agentmsg at every size (is the work per message flat?), AgentScope and the
    floor at 1,000 messages (the ratio the target is about). Each count is one valgrind run (minutes)."""
    if not _callgrind.available():
        return []
    try:
        import agentscope.formatter  # noqa: F401

        peer = True
    except ImportError:
        peer = False
    jobs = [("agentmsg", p, n) for p in PROVIDERS for n in SIZES] + [("floor", p, 1000) for p in PROVIDERS]
    if peer:
        jobs += [("agentscope", p, 1000) for p in PROVIDERS]
    counts = _callgrind.count_all(jobs, lambda job: _count(*job))
    return [
        {
            "provider": p,
            "messages": n,
            "agentmsg_instructions_per_msg": counts[("agentmsg", p, n)],
            "agentscope_instructions_per_msg": counts.get(("agentscope", p, n), float("nan")),
            "floor_instructions_per_msg": counts.get(("floor", p, n), float("nan")),
        }
        for p in PROVIDERS
        for n in SIZES
    ]


def print_instructions(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("\n(instruction counts need valgrind on PATH)")
        return
    print("\n== formatters: instructions per message (valgrind callgrind, measured calls only) ==")
    print(
        f"{'provider':<11} {'messages':>8} {'agentmsg':>10} {'AgentScope':>11} {'floor':>8} {'speed-up':>9} {'x floor':>8}"
    )
    for r in rows:
        ours, theirs = r["agentmsg_instructions_per_msg"], r["agentscope_instructions_per_msg"]
        floor = r["floor_instructions_per_msg"]
        ratio = "" if theirs != theirs else f"{theirs / ours:.2f}x"
        shown = "" if theirs != theirs else f"{theirs:,.0f}"
        floor_shown, x_floor = ("", "") if floor != floor else (f"{floor:,.0f}", f"{ours / floor:.2f}x")
        print(
            f"{r['provider']:<11} {r['messages']:>8,} {ours:>10,.0f} {shown:>11} {floor_shown:>8} {ratio:>9} {x_floor:>8}"
        )
    for p in PROVIDERS:
        mine = {r["messages"]: r["agentmsg_instructions_per_msg"] for r in rows if r["provider"] == p}
        print(
            f"{p:<11} agentmsg instructions per message, {SIZES[-1]:,} vs {SIZES[0]:,} messages: "
            f"{mine[SIZES[-1]] / mine[SIZES[0]]:.2f}x"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        print_rows(run(quick="--quick" in sys.argv))
        if "--instructions" in sys.argv:
            print_instructions(instructions())
