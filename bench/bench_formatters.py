"""Formatting a conversation for each provider: agentmsg vs AgentScope Python's formatters.

One synthetic conversation, built twice from the same turns: as agentmsg messages and as AgentScope
Python 2.x messages (``pip install agentscope``; optional, the rows say when it is missing). A turn is:
a user message (text, and a small inline PNG every third turn: AgentScope downloads image URLs), an assistant message with thinking, text
and two parallel tool calls, the two tool results, and an assistant answer; agentmsg holds the results
in a TOOL message, AgentScope in the assistant message after its calls (its own layout). Per message
below means per agentmsg message (4 per turn) for both.

Work compared: agentmsg ``format_request`` (the whole body: messages, model, provider rules,
diagnostics) against AgentScope's ``await formatter.format(msgs)`` (the messages list only), each
formatter driven without an event loop (its coroutine never awaits). Equal work is checked before
timing: both outputs hold every text and every tool-call id of the conversation.

Times are CPU time of the benchmarking thread (the machine is shared; wall time would count other
processes), minimum over interleaved runs, the garbage collector off while timing (as timeit); a
call's time includes freeing its result. A reference floor row (the least Python that builds the
OpenAI messages, no rules) shows how per-message time grows with the conversation on this machine
by itself: at 10,000 messages the input and output (~16 MB) no longer fit the CPU's per-core cache,
so every memory access costs more; instructions per message stay the same.

``--instructions`` also counts the instructions each call executes, under valgrind (callgrind,
collecting only inside the measured calls): deterministic, blind to the other processes of a shared
machine, and the same for both implementations. Instructions per message from 100 to 10,000 messages
tell whether the work per message is flat; CPU time adds the memory hierarchy.

Targets (reported, not asserted): agentmsg >= 2x faster than AgentScope at 1,000 messages for each
provider, and agentmsg's time per message at 10,000 messages within 1.2x of that at 100.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
from peers import agentscope_missing

from agentmsg import (
    AssistantMessage,
    Base64Source,
    ImageBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    UserMessage,
)
from agentmsg.providers import get

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
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


def _turn_texts(t: int) -> tuple[str, str, str, str]:
    return (
        f"Question {t}: what is the weather in city {t} and in city {t + 1}? Please compare them.",
        f"I need the weather for two cities (turn {t}); I will call the tool twice in parallel.",
        f"Let me look up city {t} and city {t + 1}.",
        f"City {t} is sunny at {t % 30} degrees; city {t + 1} has light rain. Take an umbrella there.",
    )


def conversation(n: int) -> list[Any]:
    """About ``n`` agentmsg messages: a system prompt, then turns of 4 messages."""
    msgs: list[Any] = [SystemMessage("You are a helpful assistant.")]
    t = 0
    while len(msgs) < n:
        question, thought, lead, answer = _turn_texts(t)
        user: list[Any] = [TextBlock(text=question)]
        if t % 3 == 0:
            user.append(ImageBlock(source=Base64Source(media_type="image/png", data=PNG)))
        msgs.append(UserMessage(user, name="alice"))
        msgs.append(
            AssistantMessage(
                [
                    ThinkingBlock(thinking=thought, metadata={"signature": f"sig{t}", "provider": "anthropic"}),
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
                    ToolResultBlock(id=f"call_{t}_a", name="get_weather", output="sunny", state="success"),
                    ToolResultBlock(id=f"call_{t}_b", name="get_weather", output="light rain", state="success"),
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
        Base64Source,
        DataBlock,
        Msg,
        TextBlock,
        ThinkingBlock,
        ToolCallBlock,
        ToolResultBlock,
    )

    msgs: list[Any] = [Msg(name="system", role="system", content=[TextBlock(text="You are a helpful assistant.")])]
    count, t = 1, 0
    while count < n:
        question, thought, lead, answer = _turn_texts(t)
        user: list[Any] = [TextBlock(text=question)]
        if t % 3 == 0:
            user.append(DataBlock(source=Base64Source(data=PNG, media_type="image/png")))
        msgs.append(Msg(name="alice", role="user", content=user))
        blocks: list[Any] = [
            ThinkingBlock(thinking=thought, signature=f"sig{t}"),
            TextBlock(text=lead),
            ToolCallBlock(id=f"call_{t}_a", name="get_weather", input=orjson.dumps({"city": f"city {t}"}).decode()),
            ToolCallBlock(id=f"call_{t}_b", name="get_weather", input=orjson.dumps({"city": f"city {t + 1}"}).decode()),
        ]
        count += 2  # agentmsg: the assistant message and the TOOL message
        if count <= n:
            blocks += [
                ToolResultBlock(id=f"call_{t}_a", name="get_weather", output="sunny", state="success"),
                ToolResultBlock(id=f"call_{t}_b", name="get_weather", output="light rain", state="success"),
            ]
        msgs.append(Msg(name="Friday", role="assistant", content=blocks))
        if count < n:
            msgs.append(Msg(name="Friday", role="assistant", content=[TextBlock(text=answer)]))
            count += 1
        count += 1
        t += 1
    return msgs


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


def floor_openai(msgs: list[Any]) -> list[dict[str, Any]]:
    """Reference floor, not a formatter: the least Python that builds OpenAI messages for this
    conversation (no rules, no diagnostics, no media or name handling). Its time per message shows
    what the machine itself does from 100 to 10,000 messages (allocation, caches)."""
    from agentmsg import MsgRole
    from agentmsg import TextBlock as T
    from agentmsg import ToolUseBlock as U

    assistant, tool = MsgRole.ASSISTANT, MsgRole.TOOL
    dumps = orjson.dumps
    out: list[dict[str, Any]] = []
    for m in msgs:
        role = m.role
        if role is assistant:
            texts: list[str] = []
            calls: list[dict[str, Any]] = []
            for b in m.content:
                t = type(b)
                if t is T:
                    texts.append(b.text)
                elif t is U:
                    fn = {"name": b.name, "arguments": dumps(b.input).decode()}
                    calls.append({"id": b.id, "type": "function", "function": fn})
            entry: dict[str, Any] = {"role": "assistant", "content": texts[0] if texts else None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        elif role is tool:
            out.extend({"role": "tool", "tool_call_id": b.id, "content": b.output[0].text} for b in m.content)
        else:
            out.append({"role": role.value.lower(), "content": m.content[0].text})
    return out


def _check_equal_work(ours: Any, theirs: Any, n: int) -> None:
    a = orjson.dumps(ours.body).decode()
    b = orjson.dumps(theirs).decode()
    turns = (n - 1) // 4 + 1
    for t in range(turns):
        for text in _turn_texts(t)[0::2]:
            if text in a and text not in b:
                raise AssertionError(f"AgentScope output lacks {text!r}")
        for cid in (f"call_{t}_a", f"call_{t}_b"):
            if (cid in a) != (cid in b):
                raise AssertionError(f"tool call {cid} in one output only")


def run(quick: bool = False) -> list[dict[str, Any]]:
    if tracemalloc.is_tracing():  # it would count every allocation of both implementations
        tracemalloc.stop()
    budget = 0.3 if quick else 1.0
    sizes = SIZES
    try:
        import agentscope
        import agentscope.formatter as asf

        as_version = getattr(agentscope, "__version__", "?")
    except ImportError as exc:
        asf = None
        as_version = agentscope_missing(exc.name)
    rows: list[dict[str, Any]] = []
    for provider, as_name in PROVIDERS.items():
        fmt = get(provider).format_request
        formatter = getattr(asf, as_name)() if asf is not None else None
        for n in sizes:
            msgs = conversation(n)
            fns: list[Callable[[], Any]] = [lambda: fmt(msgs)]
            if formatter is not None:
                as_msgs = agentscope_conversation(n)
                _check_equal_work(fmt(msgs), _drive(formatter.format(as_msgs)), n)
                fns.append(lambda: _drive(formatter.format(as_msgs)))
            if provider == "openai":
                fns.append(lambda: floor_openai(msgs))
            times = _best(fns, budget * (2 if n == sizes[-1] else 1))
            row: dict[str, Any] = {
                "provider": provider,
                "messages": n,
                "agentmsg_us_per_msg": times[0] / n * 1e6,
                "agentscope_us_per_msg": float("nan"),
                "ratio": float("nan"),
            }
            if formatter is not None:
                row["agentscope_us_per_msg"] = times[1] / n * 1e6
                row["ratio"] = times[1] / times[0]
            if provider == "openai":
                row["floor_us_per_msg"] = times[-1] / n * 1e6
            rows.append(row)
    rows.append({"agentscope": as_version})
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    version = rows[-1].get("agentscope", "?")
    data = [r for r in rows if "provider" in r]
    print(f"\n== formatters: conversation -> provider request (AgentScope Python {version}) ==")
    print(f"{'provider':<11} {'messages':>8} {'agentmsg µs/msg':>16} {'AgentScope µs/msg':>18} {'speed-up':>9}")
    for r in data:
        ratio = "" if r["ratio"] != r["ratio"] else f"{r['ratio']:.2f}x"
        theirs = "" if r["agentscope_us_per_msg"] != r["agentscope_us_per_msg"] else f"{r['agentscope_us_per_msg']:.2f}"
        print(f"{r['provider']:<11} {r['messages']:>8,} {r['agentmsg_us_per_msg']:>16.2f} {theirs:>18} {ratio:>9}")
    floor = {r["messages"]: r["floor_us_per_msg"] for r in data if "floor_us_per_msg" in r}
    if floor:
        print(
            "reference floor (plain loop building OpenAI messages, no rules): "
            + ", ".join(f"{n:,}: {v:.2f} µs/msg" for n, v in floor.items())
            + f" ({floor[SIZES[-1]] / floor[SIZES[0]]:.2f}x from {SIZES[0]:,} to {SIZES[-1]:,})"
        )
    floor_note = f"; the reference floor: {floor[SIZES[-1]] / floor[SIZES[0]]:.2f}x" if floor else ""
    for provider in PROVIDERS:
        mine = {r["messages"]: r for r in data if r["provider"] == provider}
        flat = mine[SIZES[-1]]["agentmsg_us_per_msg"] / mine[SIZES[0]]["agentmsg_us_per_msg"]
        at = mine[1000]["ratio"]
        vs = (
            "AgentScope not installed"
            if at != at
            else f"{'met' if at >= TARGET_VS_AGENTSCOPE else 'MISSED'} ({at:.2f}x at 1,000 messages)"
        )
        print(
            f"{provider:<11} target >= {TARGET_VS_AGENTSCOPE:.0f}x AgentScope: {vs}; "
            f"flat within {TARGET_FLAT}x from {SIZES[0]:,} to {SIZES[-1]:,}: "
            f"{'met' if flat <= TARGET_FLAT else 'MISSED'} ({flat:.2f}x{floor_note})"
        )


# ---- instruction counts (valgrind) ----------------------------------------------------------------

CALLS = {100: 20, 1000: 3, 10000: 1}  # measured calls per size (after one warm call)


def _callable(impl: str, provider: str, n: int) -> Callable[[], Any]:
    if impl == "agentmsg":
        fmt, msgs = get(provider).format_request, conversation(n)
        return lambda: fmt(msgs)
    if impl == "floor":
        msgs = conversation(n)
        return lambda: floor_openai(msgs)
    import agentscope.formatter as asf

    formatter, as_msgs = getattr(asf, PROVIDERS[provider])(), agentscope_conversation(n)
    return lambda: _drive(formatter.format(as_msgs))


def _child(impl: str, provider: str, n: int) -> None:
    """Under callgrind: one warm call, then the measured calls inside ``sys.call_tracing`` (the only
    function callgrind collects in: setup, imports and the warm call are not counted)."""
    fn = _callable(impl, provider, n)
    fn()
    gc.collect()
    gc.disable()

    def calls() -> None:
        for _ in range(CALLS[n]):
            fn()

    sys.call_tracing(calls, ())


def _count(impl: str, provider: str, n: int) -> float:
    """Instructions per message of one implementation (nan when valgrind cannot tell)."""
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--collect-atstart=no",
        "--toggle-collect=_PyEval_CallTracing",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        impl,
        provider,
        str(n),
    ]
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None or int(found.group(1)) == 0:
        return float("nan")
    return int(found.group(1)) / CALLS[n] / n


def instructions() -> list[dict[str, Any]]:
    """Instructions per message: agentmsg at every size (is the work per message flat?), AgentScope
    at 1,000 messages (the ratio the target is about). Each count is one valgrind run (minutes)."""
    if shutil.which("valgrind") is None:
        return []
    try:
        import agentscope.formatter  # noqa: F401

        peer = True
    except ImportError:
        peer = False
    jobs = [("agentmsg", p, n) for p in PROVIDERS for n in SIZES]
    if peer:
        jobs += [("agentscope", p, 1000) for p in PROVIDERS]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: _count(*job), jobs), strict=True))
    return [
        {
            "provider": p,
            "messages": n,
            "agentmsg_instructions_per_msg": counts[("agentmsg", p, n)],
            "agentscope_instructions_per_msg": counts.get(("agentscope", p, n), float("nan")),
        }
        for p in PROVIDERS
        for n in SIZES
    ]


def print_instructions(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("\n(instruction counts need valgrind on PATH)")
        return
    print("\n== formatters: instructions per message (valgrind callgrind, measured calls only) ==")
    print(f"{'provider':<11} {'messages':>8} {'agentmsg':>10} {'AgentScope':>11} {'speed-up':>9}")
    for r in rows:
        ours, theirs = r["agentmsg_instructions_per_msg"], r["agentscope_instructions_per_msg"]
        ratio = "" if theirs != theirs else f"{theirs / ours:.2f}x"
        shown = "" if theirs != theirs else f"{theirs:,.0f}"
        print(f"{r['provider']:<11} {r['messages']:>8,} {ours:>10,.0f} {shown:>11} {ratio:>9}")
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
