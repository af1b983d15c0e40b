"""``agentmsg.context.place_cache_markers``: markers where they pay (tools, system prompt, last stable turn), within
the providers' four breakpoints, on copies; the result formats with the markers where the helper said."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import (
    AssistantMessage,
    ContentBlock,
    HintBlock,
    ImageBlock,
    Msg,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolUseBlock,
    URLSource,
    UserMessage,
    ValidationError,
)
from agentmsg.context import CacheMarker, place_cache_markers
from tests._support.budget import examples
from tests._support.providers import TOOLS, tool_loop
from tests.oracles import formatted


def _conversation() -> list[Msg]:
    return [
        SystemMessage("You are helpful."),
        UserMessage("q1"),
        AssistantMessage("a1"),
        UserMessage("q2"),
        AssistantMessage("a2"),
        UserMessage("q3"),
    ]


def test_anthropic_tools_system_and_last_stable_turn() -> None:
    msgs = _conversation()
    before = copy.deepcopy([m.to_dict() for m in msgs])
    tools = [dict(t) for t in TOOLS]
    got = place_cache_markers(msgs, provider="anthropic", tools=tools, ttl="1h")
    assert [m.to_dict() for m in msgs] == before and tools == TOOLS  # nothing given is changed
    assert got.placed == (
        CacheMarker("tools", f"/tools/{len(TOOLS) - 1}", {"ttl": "1h"}),
        CacheMarker("system", "/0", {"ttl": "1h"}),
        CacheMarker("turn", "/4", {"ttl": "1h"}),  # the message before the newest user turn
    )
    assert got.messages[4].metadata["_cache_control"] == {"ttl": "1h"} and got.messages[5] is msgs[5]
    r = formatted("anthropic", got.messages, tools=got.tools)
    b = r.body
    assert b["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert b["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert b["messages"][3]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert not [d for d in r.diagnostics if d.rule.startswith("cache")]


@pytest.mark.parametrize("provider", ["dashscope", "dashscope-compatible"])
def test_dashscope_no_tool_marker_no_ttl(provider: str) -> None:
    got = place_cache_markers(_conversation(), provider=provider, tools=TOOLS, ttl="1h")
    assert [p.where for p in got.placed] == ["system", "turn"]
    assert all(p.value is True for p in got.placed) and "ttl 1h not set" in got.notes[0]
    assert got.tools == [dict(t) for t in TOOLS]
    r = formatted(provider, got.messages, tools=got.tools)
    assert not [d for d in r.diagnostics if d.rule.startswith("cache")]


@pytest.mark.parametrize("provider", ["openai", "deepseek", "gemini"])
def test_providers_that_cache_on_their_own_get_none(provider: str) -> None:
    msgs = _conversation()
    got = place_cache_markers(msgs, provider=provider, tools=TOOLS)
    assert got.placed == () and got.messages == msgs and "on its own" in got.notes[0]


def test_existing_markers_count_against_the_limit() -> None:
    msgs = _conversation()
    msgs[1] = msgs[1].copy(metadata={"_cache_control": {"blocks": [0]}})
    msgs[3] = msgs[3].copy(metadata={"_cache_control": True})
    got = place_cache_markers(msgs, provider="anthropic", tools=[dict(TOOLS[0], _cache_control=True)])
    # 3 taken (two messages, a tool): room for one, the system prompt
    assert [p.where for p in got.placed] == ["system"]
    assert got.messages[1] is msgs[1] and got.messages[3] is msgs[3]
    assert any("already" in n for n in got.notes)


def test_marker_names_the_last_block_that_takes_one() -> None:
    msgs = [
        UserMessage("q"),
        AssistantMessage(
            [
                TextBlock(text="answer"),
                ThinkingBlock(thinking="t", metadata={"signature": "s", "provider": "anthropic"}),
                HintBlock(hint="reminder"),
            ]
        ),
        UserMessage("q2"),
    ]
    got = place_cache_markers(msgs, provider="anthropic")
    assert got.placed == (CacheMarker("turn", "/1", {"blocks": [0]}),)
    r = formatted("anthropic", got.messages)
    assert r.body["messages"][1]["content"][1] == {
        "type": "text",
        "text": "answer",
        "cache_control": {"type": "ephemeral"},
    }


@pytest.mark.parametrize(
    ("provider", "model"), [("dashscope", None), ("dashscope-compatible", None), ("openai", "gpt-5.6")]
)
def test_a_message_of_tool_calls_alone_takes_no_marker_where_markers_go_on_content_parts(
    provider: str, model: str | None
) -> None:
    # the chat family puts a message's marker on its last content part: an assistant message of tool calls (and
    # reasoning) has none, and its formatter drops the marker (cache-breakpoint-dropped). The helper marked the call
    # as the last block that takes one, as for Anthropic, where a tool_use block takes one
    calls = AssistantMessage(
        [ThinkingBlock(thinking="t"), ToolUseBlock(id="c1", name="search", input={}), ToolUseBlock(id="c2", name="f")]
    )
    msgs = [UserMessage("q"), calls, UserMessage("go on")]
    got = place_cache_markers(msgs, provider=provider, model=model)
    assert got.placed == ()
    assert "message 1 has no block that takes a marker" in got.notes
    kw = {"model": model} if model else {}
    r = formatted(provider, got.messages, **kw)
    assert not [d for d in r.diagnostics if d.rule == "cache-breakpoint-dropped"], r.diagnostics_dicts()
    anthropic = place_cache_markers(msgs, provider="anthropic")  # (a tool_use block takes one there)
    assert anthropic.placed == (CacheMarker("turn", "/1", True),)


def test_short_prefixes_are_not_marked() -> None:
    def count(messages: Any) -> int:
        return 500 * len(messages)

    got = place_cache_markers(_conversation(), provider="anthropic", count=count, min_tokens=1024)
    assert [p.where for p in got.placed] == ["turn"]  # the system prompt alone: 500 tokens
    assert any("under 1024 tokens" in n for n in got.notes)


def test_no_user_turn_no_turn_marker_and_bad_ttl() -> None:
    got = place_cache_markers([SystemMessage("s"), AssistantMessage("a")], provider="anthropic")
    assert [p.where for p in got.placed] == ["system"]
    with pytest.raises(ValidationError):
        place_cache_markers(_conversation(), provider="anthropic", ttl="2h")


@pytest.mark.parametrize(
    ("kwargs", "pointer"),
    [
        ({"limit": -1}, "/limit"),
        ({"limit": True}, "/limit"),
        ({"limit": None}, "/limit"),
        ({"min_tokens": float("nan"), "count": len}, "/min_tokens"),
        ({"count": 5}, "/count"),
        ({"count": lambda messages: None}, "/count"),
        ({"count": lambda messages: float("nan")}, "/count"),
        ({"count": lambda messages: float("inf")}, "/count"),
        ({"count": lambda messages: -1}, "/count"),
        ({"tools": 5}, "/tools"),
        ({"tools": [5]}, "/tools"),
        ({"model": 5}, "/model"),
        ({"provider": None}, "/provider"),
    ],
)
def test_an_argument_of_the_wrong_kind_is_refused_naming_it(kwargs: dict[str, Any], pointer: str) -> None:
    """limit=-1, limit=True or min_tokens=NaN were taken in silence (notes saying "at most -1 breakpoints", "under
    nan tokens"), so was a count giving NaN (every prefix "under 1024 tokens": no marker placed), infinity or -1, and limit=None, count=5, a count giving None (or a TokenCount), tools=5 or model=5 raised a bare
    TypeError or AttributeError from inside."""
    args: dict[str, Any] = {"provider": "anthropic", **kwargs}
    with pytest.raises(ValidationError) as exc:
        place_cache_markers(_conversation(), **args)
    assert exc.value.problems[0].pointer == pointer


def test_an_unknown_provider_name_raises_as_the_other_entry_points_do() -> None:
    """A misspelt provider name is an error (KeyError listing the known names), as ``get``, ``count_tokens`` and
    ``trim`` raise it: not a result that places nothing with a note."""
    from agentmsg.context import count_tokens, trim
    from agentmsg.providers import get

    said = []
    for call in (
        lambda: get("antropic"),
        lambda: count_tokens(_conversation(), provider="antropic"),
        lambda: trim(_conversation(), budget=100, provider="antropic"),
        lambda: place_cache_markers(_conversation(), provider="antropic"),
    ):
        with pytest.raises(KeyError) as exc:
            call()
        said.append(str(exc.value))
    assert len(set(said)) == 1 and "unknown provider 'antropic'" in said[0] and "anthropic" in said[0]


def test_tool_loop_marks_before_the_newest_user_turn() -> None:
    """An agent loop (calls and results after the user turn): the turn before the user message is the system prompt,
    marked once."""
    got = place_cache_markers(tool_loop(), provider="anthropic", tools=TOOLS)
    assert [p.where for p in got.placed] == ["tools", "system"]


ROLES = st.sampled_from(["USER", "ASSISTANT", "SYSTEM"])


@given(
    st.lists(st.tuples(ROLES, st.sampled_from([None, True, {"ttl": "1h"}])), min_size=1, max_size=12),
    st.sampled_from(["anthropic", "dashscope"]),
    st.sampled_from([None, "5m", "1h"]),
)
@settings(max_examples=examples(60), deadline=None)
def test_never_beyond_the_limit_and_formats_without_drops(
    shape: list[tuple[str, Any]], provider: str, ttl: str | None
) -> None:
    msgs: list[Msg] = []
    for k, (role, marker) in enumerate(shape):
        meta = {"_cache_control": marker} if marker is not None else {}
        msgs.append(Msg(role, f"m{k}", metadata=meta))
    got = place_cache_markers(msgs, provider=provider, tools=TOOLS, ttl=ttl)
    taken = sum(1 for m in got.messages if m.metadata.get("_cache_control")) + sum(
        1 for t in got.tools or [] if t.get("_cache_control")
    )
    given_marks = sum(marker is not None for _, marker in shape)
    assert taken == max(given_marks, min(4, given_marks + len(got.placed)))
    assert len(got.placed) <= max(0, 4 - given_marks)
    if any(m.role.value != "SYSTEM" for m in msgs) and given_marks <= 4:
        r = formatted(provider, got.messages, tools=got.tools)
        assert not [d for d in r.diagnostics if d.rule == "cache-breakpoint-dropped"], r.diagnostics_dicts()
        if provider == "anthropic":  # the helper's markers never break the order of lifetimes the given ones keep
            given_order = [r.rule for r in formatted(provider, msgs).diagnostics if r.rule == "cache-ttl-order"]
            said = [d.rule for d in r.diagnostics if d.rule == "cache-ttl-order"]
            assert len(said) <= len(given_order), (shape, ttl, r.diagnostics_dicts())


def test_lifetime_follows_the_markers_already_there() -> None:
    msgs = _conversation()
    msgs[0] = msgs[0].copy(metadata={"_cache_control": True})  # a 5m system prompt
    got = place_cache_markers(msgs, provider="anthropic", ttl="1h")
    assert got.placed == (CacheMarker("turn", "/4", {"ttl": "5m"}),)
    msgs[4] = msgs[4].copy(metadata={"_cache_control": {"ttl": "1h"}})
    msgs[0] = msgs[0].copy(metadata={})
    got = place_cache_markers(msgs, provider="anthropic", tools=TOOLS)  # 5m asked, before a 1h one: 1h
    assert [(p.where, p.value) for p in got.placed] == [("tools", {"ttl": "1h"}), ("system", {"ttl": "1h"})]
    assert not [d for d in formatted("anthropic", got.messages, tools=got.tools).diagnostics if "cache" in d.rule]


@pytest.mark.parametrize("first", [UserMessage("q1", metadata={"_cache_control": {"blocks": [3]}}), UserMessage([])])
def test_a_marker_the_request_sends_nowhere_neither_counts_nor_binds_a_lifetime(first: Msg) -> None:
    """A marker naming only blocks beyond its message, or on a message the formatter leaves out, is no breakpoint of
    the request: it was counted against the limit and taken for a 5m one, so the marker placed before a 1h one got 5m
    and the request was refused (``cache-ttl-order``, an error)."""
    if not first.metadata:
        first = first.copy(metadata={"_cache_control": True})
    msgs = [first, AssistantMessage("answer"), UserMessage("q2", metadata={"_cache_control": {"ttl": "1h"}})]
    got = place_cache_markers(msgs, provider="anthropic")
    assert got.placed == (CacheMarker("turn", "/1", {"ttl": "1h"}),)
    assert got.notes[0] == "1 breakpoint(s) already in the conversation or tools, kept"
    rules = [d.rule for d in formatted("anthropic", got.messages).diagnostics]
    assert "cache-ttl-order" not in rules and len(rules) == 1  # (the marker sent nowhere, or the message, said)


def test_a_marker_on_calls_alone_counts_where_the_request_sends_it() -> None:
    """DashScope's multimodal request sends a marker on a message of tool calls alone (on its ``[{"text": ""}]``): the
    four already there are the four it takes, and the helper places none, where it took them for none and placed two
    more, which the formatter then dropped (``cache-breakpoint-dropped``) with the caller's own."""
    image = ImageBlock(source=URLSource(url="https://example.com/photo.png"))
    msgs: list[Msg] = [SystemMessage("you are a bot"), UserMessage([TextBlock(text="what is in this photo?"), image])]
    for i in range(4):
        msgs.append(AssistantMessage([ToolUseBlock(id=f"c{i}", name="s", input={})], metadata={"_cache_control": True}))
        msgs.append(ToolResultMessage([ToolResultBlock(id=f"c{i}", name="s", output=["r"])]))
    msgs += [AssistantMessage("done"), UserMessage("next?")]
    got = place_cache_markers(msgs, provider="dashscope")
    assert got.placed == () and got.notes[0] == "4 breakpoint(s) already in the conversation or tools, kept"
    request = formatted("dashscope", got.messages)
    assert json.dumps(request.body).count("cache_control") == 4 and not request.diagnostics


@pytest.mark.parametrize("form", ["plain", "openai"])
def test_a_tool_marker_is_seen_in_either_tool_form(form: str) -> None:
    """Tools in OpenAI's form carry their marker inside ``function``: the helper counted it against the limit but
    did not see it when deciding to mark the tools or when ordering lifetimes, so it placed a second tools marker
    and 1h markers after that 5m one (Anthropic refuses them: cache-ttl-order). Both forms are now read alike."""
    msgs = _conversation()
    plain: list[dict[str, Any]] = [{**TOOLS[0], "_cache_control": True}, *TOOLS[1:]]
    tools = plain if form == "plain" else [{"type": "function", "function": t} for t in plain]
    got = place_cache_markers(msgs, provider="anthropic", tools=tools, ttl="1h")
    assert [p.where for p in got.placed] == ["system", "turn"]
    assert all(p.value == {"ttl": "5m"} for p in got.placed)  # (after the 5m tools marker: 5m, said)
    assert not [d for d in formatted("anthropic", got.messages, tools=got.tools).diagnostics if "cache" in d.rule]


@pytest.mark.parametrize("provider", ["anthropic", "dashscope", "openai"])
@pytest.mark.parametrize("form", ["plain", "openai"])
@pytest.mark.parametrize("mark", [{"ttl": "2h"}, 5, {"blocks": [0]}, {"ttl": "5m", "type": "ephemeral"}])
def test_a_tool_marker_that_is_none_is_refused_as_the_formatter_refuses_it(provider: str, form: str, mark: Any) -> None:
    """A tool's marker that is no marker (a ttl of 2h, a number, blocks named on a tool) is refused by every formatter
    (ValidationError at ``/tools/0/_cache_control``); the helper put its own marker over it on the last tool, in
    silence (``{"ttl": "2h"}`` became ``true``), so the caller's mistake was lost and the request went out. It is
    now refused by the helper too, naming the same place and rule."""
    plain: list[dict[str, Any]] = [*TOOLS[:-1], {**TOOLS[-1], "_cache_control": mark}]
    tools = plain if form == "plain" else [{"type": "function", "function": t} for t in plain]
    k = len(TOOLS) - 1
    pointer = f"/tools/{k}/_cache_control" if form == "plain" else f"/tools/{k}/function/_cache_control"
    with pytest.raises(ValidationError) as formatter:
        formatted(provider, _conversation(), tools=tools)
    with pytest.raises(ValidationError) as helper:
        place_cache_markers(_conversation(), provider=provider, tools=tools)
    assert [(p.pointer, p.rule) for p in helper.value.problems] == [(pointer, "type")]
    assert helper.value.problems == formatter.value.problems


def test_openai_explicit_breakpoints_by_model() -> None:
    got = place_cache_markers(_conversation(), provider="openai", tools=TOOLS, model="gpt-5.6", ttl="1h")
    assert [(p.where, p.value) for p in got.placed] == [("system", True), ("turn", True)]
    r = formatted("openai", got.messages, tools=got.tools, model="gpt-5.6")
    assert [
        m["content"][0].get("prompt_cache_breakpoint") for m in r.body["messages"] if isinstance(m["content"], list)
    ]
    assert not [d for d in r.diagnostics if d.rule.startswith("cache")]
    assert place_cache_markers(_conversation(), provider="openai", model="gpt-4o").placed == ()


@pytest.mark.parametrize(
    ("provider", "model", "key"),
    [
        ("anthropic", None, "cache_control"),
        ("dashscope", None, "cache_control"),
        ("dashscope-compatible", None, "cache_control"),
        ("openai", "gpt-5.6", "prompt_cache_breakpoint"),
    ],
)
def test_markers_already_there_count_as_the_breakpoints_the_request_sends(
    provider: str, model: str | None, key: str
) -> None:
    """A marker naming blocks was counted one breakpoint per index: ``{"blocks": [0, 0, 1]}`` three against the limit
    of four, where Anthropic's request sends two (an index named twice is one breakpoint, merged, as the formatters
    merge it) and DashScope's and OpenAI's, which mark a whole message on its last part, one. With two such messages
    DashScope and OpenAI then had no room for the system prompt's and the last stable turn's markers (placed none of
    four). The markers already there now count as the request sends them, and the duplicate is said."""
    msgs = [
        SystemMessage("You are helpful."),
        UserMessage(["a", "b", "c"], metadata={"_cache_control": {"blocks": [0, 0, 1]}}),
        AssistantMessage("a1"),
        UserMessage(["d", "e"], metadata={"_cache_control": {"blocks": [1, 0]}}),
        AssistantMessage("a2"),
        UserMessage("q3"),
    ]
    given_marks = json.dumps(formatted(provider, msgs, model=model).body).count(f'"{key}"')
    assert given_marks == (4 if provider == "anthropic" else 2)
    got = place_cache_markers(msgs, provider=provider, model=model)
    r = formatted(provider, got.messages, model=model)
    assert not [d for d in r.diagnostics if d.rule.startswith("cache")], r.diagnostics_dicts()
    sent = json.dumps(r.body).count(f'"{key}"')
    assert sent == min(4, given_marks + 2) == given_marks + len(got.placed)
    assert f"{given_marks} breakpoint(s) already in the conversation or tools, kept" in got.notes
    assert "message 1's marker names block(s) 0 more than once: one breakpoint each" in got.notes


_THINKING = ThinkingBlock(thinking="t", metadata={"signature": "c2ln", "provider": "anthropic"})


@pytest.mark.parametrize(
    "after",
    [
        pytest.param([_THINKING, TextBlock(text="more")], id="thinking"),
        pytest.param([TextBlock(text="   ")], id="whitespace-text"),
    ],
)
def test_named_blocks_that_land_on_one_part_count_as_one_breakpoint(after: list[ContentBlock]) -> None:
    """Anthropic walks a marker on a block that takes none (reasoning, a hint, a text empty or of whitespace alone,
    which the formatter leaves out) back to the nearest block before it that does: ``{"blocks": [0, 1]}`` on text,
    thinking, text (or on "a", "   ") sends one breakpoint, on the first text. The markers already there were counted
    one per named block (a whitespace text, after the first fix, as a part of its own): two such messages counted four
    of four, and the helper placed nothing where the request sent two. They now count as the parts they land on, and
    the system prompt is marked."""

    def answer(text: str) -> Msg:
        content: list[ContentBlock] = [TextBlock(text=text), *after]
        return Msg(role="ASSISTANT", content=content, metadata={"_cache_control": {"blocks": [0, 1]}})

    msgs = [SystemMessage("You are helpful."), UserMessage("q1"), answer("a"), UserMessage("q2"), answer("b")]
    msgs.append(UserMessage("q3"))
    assert json.dumps(formatted("anthropic", msgs).body).count('"cache_control"') == 2
    got = place_cache_markers(msgs, provider="anthropic")
    assert "2 breakpoint(s) already in the conversation or tools, kept" in got.notes
    assert [p.where for p in got.placed] == ["system"]
    r = formatted("anthropic", got.messages)
    assert not [d for d in r.diagnostics if d.rule.startswith("cache")]
    assert json.dumps(r.body).count('"cache_control"') == 3
