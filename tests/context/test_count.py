"""count_tokens: the parts sum to the total, each provider's framing and media rates, the tokenizer used offline and
the estimate without it."""

from __future__ import annotations

import base64
import functools
import importlib
import importlib.machinery
import math
import os
import random
import subprocess
import sys
import textwrap
import threading
import types
import warnings
import zlib
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import attrs
import orjson
import pytest

from agentmsg import (
    AudioBlock,
    Base64Source,
    ContentBlock,
    DataBlock,
    HintBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
    UserMessage,
    ValidationError,
    VideoBlock,
)
from agentmsg._codec import jsontext
from agentmsg.context import TokenCount, _media, _tokenizers, count_tokens
from agentmsg.context.count import profiled
from agentmsg.providers import NAMES, get
from tests._support.budget import SEED, rounds
from tests._support.tokenizers import without_tokenizer_packages
from tests.context import _images

WEATHER = {
    "name": "get_weather",
    "description": "Get the weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}},
}


def _msg(role: str, *blocks: Any, name: str | None = None) -> Msg:
    return Msg(role=role, content=list(blocks), name=name)


def _conversation() -> list[Msg]:
    return [
        _msg("SYSTEM", TextBlock(text="You are a helpful assistant.")),
        _msg("USER", TextBlock(text="What is the weather in Paris?")),
        _msg(
            "ASSISTANT",
            ThinkingBlock(thinking="The user wants the weather; call the tool.", metadata={"signature": "c2ln"}),
            ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"}),
        ),
        _msg("TOOL", ToolResultBlock(id="call_1", name="get_weather", output=[TextBlock(text="18 C, cloudy")])),
        _msg("ASSISTANT", TextBlock(text="It is 18 C and cloudy in Paris.")),
    ]


def _image(raw: bytes, mime: str) -> ImageBlock:
    return ImageBlock(source=Base64Source(media_type=mime, data=_images.b64(raw)))


def test_every_registry_provider_is_profiled() -> None:
    assert set(NAMES) == set(profiled())


def test_the_profile_is_the_providers_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting reads the profile from the provider's spec (``Spec.tokens``): a provider added with a profile of its
    own is counted by it, one added without one gets the o200k estimate stated within 50%, never another's."""
    import agentmsg.providers as registry

    real = registry.get("openai")
    msgs = _conversation()

    def with_tokens(tokens: Any) -> None:
        spec = attrs.evolve(real.spec, name="acme", tokens=tokens)
        monkeypatch.setattr(registry, "get", lambda name: SimpleNamespace(spec=spec))

    with_tokens(None)
    generic = count_tokens(msgs, provider="acme")
    assert generic.method == "estimate" and generic.error is not None and generic.error >= 0.5
    assert real.spec.tokens is not None
    with_tokens(attrs.evolve(real.spec.tokens, per_message=103))
    own = count_tokens(msgs, provider="acme")
    monkeypatch.undo()
    plain = count_tokens(msgs, provider="openai")
    assert own.messages == tuple(n + 100 for n in plain.messages)
    assert own.method == plain.method


def test_a_model_family_changes_its_profile() -> None:
    """A spec's ``models`` variants apply by name prefix: gpt-4o frames a message with 4 tokens, gpt-5 with 3."""
    msgs = _conversation()
    four = count_tokens(msgs, provider="openai", model="gpt-4o-mini")
    three = count_tokens(msgs, provider="openai", model="gpt-5")
    assert four.messages == tuple(n + 1 for n in three.messages)
    tokens = get("openai").spec.tokens
    assert tokens is not None and tokens.for_model("GPT-4.1").per_message == 4 and tokens.for_model(None) is tokens


@pytest.mark.parametrize("provider", sorted(profiled()))
def test_parts_sum_to_the_total_in_message_order(provider: str) -> None:
    msgs = _conversation()
    n = count_tokens(msgs, provider=provider, tools=[WEATHER])
    assert len(n.messages) == len(msgs)
    assert sum(n.messages) + n.tools + n.overhead == n.total
    assert all(c > 0 for c in n.messages) and n.tools > 0
    # each message's count is its own: counting a prefix gives the same leading counts (without the current-turn
    # thinking rule, which depends on the last user turn: the prefix ends where the full conversation does not)
    prefix = count_tokens(msgs[:2], provider=provider, tools=[WEATHER])
    assert prefix.messages == n.messages[:2]
    assert n.error is None or 0 < n.error < 2


def test_token_count_refuses_parts_that_do_not_sum() -> None:
    with pytest.raises(ValueError, match="sum"):
        TokenCount(total=10, messages=(3, 3), tools=0, overhead=3, method="estimate", error=0.1)


def test_openai_counts_with_o200k_and_the_cookbook_framing() -> None:
    enc = _tokenizers.counter("o200k_base")
    assert enc.exact, "bpe-openai (agentmsg[count]) is installed in the test environment"
    text = "Hello there, how are you today?"
    n = count_tokens([_msg("USER", TextBlock(text=text), name="bob")], provider="openai", model="gpt-5")
    assert n.method == "tokenizer:o200k_base" and n.error is None
    assert n.messages == (3 + enc.count(text) + 1,)
    assert n.overhead == 3 and n.total == n.messages[0] + 3
    # gpt-4o frames a message with 4 (measured on the corpus)
    n = count_tokens([_msg("USER", TextBlock(text=text))], provider="openai", model="gpt-4o")
    assert n.messages == (4 + enc.count(text),)
    # gpt-4 and gpt-3.5 use cl100k
    assert count_tokens([_msg("USER", TextBlock(text=text))], provider="openai", model="gpt-4-0613").method == (
        "tokenizer:cl100k_base"
    )


def test_dashscope_counts_with_the_qwen_vocabulary_shipped_in_dashscope() -> None:
    n = count_tokens([_msg("USER", TextBlock(text="你好，世界"))], provider="dashscope", model="qwen-plus")
    assert n.method == "tokenizer:qwen" and n.error is None
    assert n.messages == (5 + _tokenizers.counter("qwen").count("你好，世界"),)


@pytest.fixture(scope="module")
def qwen_tokenizer() -> Any:
    """dashscope's own Qwen tokenizer, the oracle: read from its vocabulary file once for the module (0.2 s a read;
    get_tokenizer keeps none)."""
    return importlib.import_module("dashscope.tokenizers").get_tokenizer("qwen-plus")


@pytest.mark.parametrize(
    "text",
    [
        "Question 7: what is the weather in city 7?",
        "<|im_start|>user\nhi<|im_end|>",  # (special tokens: one token each, as dashscope's encode takes them)
        "a <|endoftext|> b <|extra_3|>",
        "<| not special |>",
        "e\u0301 \u212b \ufb01",  # (NFC composes the first two; a compatibility ligature it keeps)
        "<\u0338|im_end|>",  # (NFC makes "<" and the combining stroke one character: no special token then)
        "你好，世界 🙂",
        "a\ud800b",  # (a lone surrogate, which tiktoken's core refuses: its encode_ordinary makes the text valid)
        "word " * 30_000,  # (beyond the length counted the short way)
        "<|im_end|>" + "word " * 30_000,
    ],
)
def test_the_qwen_count_is_dashscopes_encoding(qwen_tokenizer: Any, text: str) -> None:
    """The qwen counter counts a text without special tokens without handing dashscope's encode its 208 of them
    (about six times the cost of a short text): whatever the text, the count is the length of dashscope's own
    encoding, special tokens, NFC normalization and long texts included."""
    assert _tokenizers.counter("qwen").count(text) == len(qwen_tokenizer.encode(text))


@pytest.mark.parametrize("vocabulary", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize(
    "text",
    [
        "Question 7: what is the weather in city 7?",
        "a <|endoftext|> b",  # (no special token: encoded as ordinary text)
        "你好，世界 🙂 été",
        "a\ud800b",  # (a lone surrogate, which the native count refuses: encode_ordinary replaces it)
        "   \n\n\t x",
        "word " * 30_000,  # (beyond the length counted at once)
    ],
)
def test_the_openai_count_is_bpe_openais_encoding(vocabulary: str, text: str) -> None:
    """The o200k and cl100k counters count with the Rust tokenizer's own count, not the length of the list
    ``encode_ordinary`` builds through three Python calls (about half the cost of a short text): whatever the text,
    the count is that length."""
    counted = _tokenizers.counter(vocabulary)
    with warnings.catch_warnings():  # (bpe-openai 0.1.4 reads its data with the deprecated open_binary)
        warnings.simplefilter("ignore", DeprecationWarning)
        enc = importlib.import_module("bpe_openai").get_encoding(vocabulary)
    assert counted.count(text) == len(enc.encode_ordinary(text))


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "deepseek"])
def test_providers_without_an_offline_tokenizer_are_estimates_with_an_error(provider: str) -> None:
    n = count_tokens(_conversation(), provider=provider)
    assert n.method == "estimate"
    assert n.error is not None and 0 < n.error < 1


def test_without_a_tokenizer_package_the_count_is_a_character_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_tokenizers._LOADERS, "o200k_base", lambda: None)
    monkeypatch.setitem(_tokenizers._LOADERS, "qwen", lambda: None)
    for provider in ("openai", "dashscope"):
        n = count_tokens(_conversation(), provider=provider)
        assert n.method == "estimate" and n.error is not None and n.error >= 0.5
        assert sum(n.messages) + n.tools + n.overhead == n.total


def test_without_its_package_the_count_names_the_package_that_counts_exactly() -> None:
    """An estimate for a provider whose tokenizer runs offline, made because its package is not installed, names
    that package (it said only ``estimate`` and its error); a provider with no public tokenizer names none."""
    with without_tokenizer_packages():
        for provider, model, package in (
            ("openai", None, "bpe-openai"),
            ("openai", "gpt-4", "bpe-openai"),  # (cl100k)
            ("openai-responses", None, "bpe-openai"),
            ("dashscope", None, "dashscope"),
            ("anthropic", None, None),
            ("gemini", None, None),
            ("deepseek", None, None),
        ):
            n = count_tokens(_conversation(), provider=provider, model=model)
            assert n.method == "estimate" and n.missing == package, (provider, model)
            assert n.to_dict()["missing"] == package
    for provider in ("openai", "dashscope", "anthropic"):  # (the packages installed: none missing)
        n = count_tokens(_conversation(), provider=provider)
        assert n.missing is None and n.to_dict()["missing"] is None, provider


def test_a_vocabulary_asked_for_by_two_threads_at_once_is_loaded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """functools.cache let two threads that count at once for the first time both load the vocabulary, each
    inside its own warnings.catch_warnings (which, crossing, can leave one thread's filters on the process). The
    second thread now waits for the first. Deterministic: a stand-in bpe_openai whose loading waits until the
    second thread has either reached the loading too (two loads) or is waiting for the first."""
    loads: list[str] = []
    arrived = threading.Event()  # the second thread reached the loader, or the lock in front of it

    def get_encoding(name: str) -> Any:
        loads.append(threading.current_thread().name)
        if threading.current_thread().name == "second":
            arrived.set()
        else:
            second.start()
            assert arrived.wait(60)  # (a bound for a broken run only: set as soon as the second thread gets there)
        return SimpleNamespace(encode_ordinary=lambda text: list(text))

    class Watched:
        """The loading lock, saying when the second thread waits for it."""

        def __init__(self, lock: Any) -> None:
            self.lock = lock

        def __enter__(self) -> None:
            if threading.current_thread().name == "second":
                arrived.set()
            self.lock.__enter__()

        def __exit__(self, *exc: object) -> None:
            self.lock.__exit__(*exc)

    fake = types.ModuleType("bpe_openai")
    fake.__spec__ = importlib.machinery.ModuleSpec("bpe_openai", None)
    fake.get_encoding = get_encoding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bpe_openai", fake)
    monkeypatch.setattr(_tokenizers, "_LOADING", Watched(threading.Lock()), raising=False)
    counted: dict[str, int] = {}

    def count(who: str) -> None:
        counted[who] = _tokenizers.counter("o200k_base").count("abc")

    second = threading.Thread(target=count, args=("second",), name="second")
    first = threading.Thread(target=count, args=("first",), name="first")
    _tokenizers._bpe_openai.cache_clear()
    try:
        first.start()
        first.join()
        second.join()
    finally:
        _tokenizers._bpe_openai.cache_clear()  # (the real vocabulary for the next tests)
    assert loads == ["first"] and counted == {"first": 3, "second": 3}


@pytest.mark.parametrize("vocabulary", ["o200k_base", "cl100k_base"])
def test_a_text_beyond_what_bpe_openai_encodes_at_once_is_counted_in_pieces(vocabulary: str) -> None:
    """A text of 1,000,000 characters (or one of more than 200,000 tokens) made bpe-openai raise ('Input too long to
    encode safely'), so count_tokens, agentmsg count and trim crashed. Now counted in pieces cut before a space,
    where the pre-tokenizer cuts too: the same count as the whole text encoded at once."""
    bpe = importlib.import_module("bpe_openai").get_encoding(vocabulary)
    count = _tokenizers.counter(vocabulary).count
    assert count("word " * 200_000) == 200_001  # "word", then " word" 199,999 times, then " "
    line = "def quick(brown, fox):" + " " * 12 + "return internationalization  # 1234567!\n" + " " * 16 + "pass\n\t\n"
    under = line * 9000  # 873,000 characters, 189,000 tokens: what bpe-openai encodes at once, in 18 pieces here
    assert count(under) == len(bpe.encode_ordinary(under))  # just under the limit: as encoded whole
    mixed = "".join(
        f"{w}{' ' * (i % 3)}" for i, w in enumerate(["héllo", "日本語", "\n\n", "12345", "don't", "😀"] * 3000)
    )
    pieces = _tokenizers.pieces(mixed, 500)
    assert "".join(pieces) == mixed and max(map(len, pieces)) <= 500 and len(pieces) > 50
    assert sum(len(bpe.encode_ordinary(p)) for p in pieces) == len(bpe.encode_ordinary(mixed))
    assert _tokenizers.pieces("x" * 1200, 500) == ["x" * 500, "x" * 500, "x" * 200]  # no space: cut at the size
    n = count_tokens([_msg("USER", TextBlock(text="word " * 200_000))], provider="openai", model="gpt-4o")
    assert n.messages == (4 + count("word " * 200_000),)


def _cut_pieces(text: str, size: int) -> list[str]:
    """What :func:`_tokenizers.pieces` says it does, one character at a time: each piece cut before its last space
    that follows a character other than whitespace, else at its size."""
    out, start = [], 0
    while len(text) - start > size:
        cuts = [i for i in range(start + 1, start + size) if text[i] == " " and not text[i - 1].isspace()]
        out.append(text[start : cuts[-1] if cuts else start + size])
        start += len(out[-1])
    return [*out, text[start:]]


def test_a_long_run_of_whitespace_is_cut_in_a_bounded_number_of_steps() -> None:
    """pieces() walked a run of whitespace back one Python step per character (a ``rfind`` and an ``isspace``
    each) to find the space after another character: 100,000 spaces took 50,000 steps, 9 ms where 50,000 took
    0.4. Now the run is walked back in the regex engine: a few steps per piece whatever the run, the same pieces
    (unicode whitespace too: ``\\s`` is what ``isspace`` takes)."""

    class Counted(str):
        steps = 0

        def rfind(self, *args: Any) -> int:
            Counted.steps += 1
            return super().rfind(*args)

        def __getitem__(self, key: Any) -> str:
            Counted.steps += 1
            return super().__getitem__(key)

    for text, expected in [
        (" " * 100_000, [" " * 50_000, " " * 50_000]),
        ("a" + " " * 100_000, ["a", " " * 50_000, " " * 50_000]),
        ("a\n " * 40_000, ["a\n " * 16_666 + "a\n", " " + "a\n " * 16_666 + "a", "\n " + "a\n " * 6_666]),
        ("word" + " \u3000" * 50_000, ["word", " \u3000" * 25_000, " \u3000" * 25_000]),
    ]:
        Counted.steps = 0
        got = _tokenizers.pieces(Counted(text))
        assert got == expected and Counted.steps <= 4 * len(got)
    rng = random.Random(SEED)
    alphabet = ["a", "語", " ", " ", "\n", "\t", "\u3000", "\u2028", "\x1c", "\x85"]
    for _ in rounds(2000):
        text, size = "".join(rng.choices(alphabet, k=rng.randint(0, 60))), rng.randint(1, 20)
        assert _tokenizers.pieces(text, size) == _cut_pieces(text, size), (text, size)


def test_character_estimate() -> None:
    assert _tokenizers.chars_estimate("") == 0
    assert _tokenizers.chars_estimate("abcd" * 10) == 10
    assert _tokenizers.chars_estimate("你好") == 2
    assert _tokenizers.chars_estimate("ab你") == 2


def test_anthropic_counts_only_the_current_turns_thinking() -> None:
    msgs = _conversation()
    with_thinking = count_tokens(msgs, provider="anthropic").messages[2]
    # a new user turn after it: that thinking is a previous turn's, which Anthropic does not count
    later = count_tokens([*msgs, _msg("USER", TextBlock(text="Thanks!"))], provider="anthropic").messages[2]
    assert later < with_thinking
    # OpenAI Chat Completions takes no reasoning back: never counted
    no = count_tokens(msgs, provider="openai").messages[2]
    no_thinking = [msgs[0], msgs[1], _msg("ASSISTANT", *msgs[2].content[1:])]
    assert no == count_tokens(no_thinking, provider="openai").messages[2]


@pytest.mark.parametrize(
    "case", ["blank user message", "empty user message", "another agent's", "hint in the results", "hint after"]
)
def test_anthropics_current_turn_starts_where_the_request_sends_a_user_turn(case: str) -> None:
    """The current turn, whose signed thinking Anthropic counts, starts at the last user turn the request sends: a
    user message the formatter leaves out (blank) is none; another agent's assistant message, which the multi-agent
    request sends as a user turn, is one, and so is a hint, sent as a text of the user turn after its message. The
    count started it at the last USER message: a request of 1,239 tokens counted 36 (and trim let it through a budget
    of 1,000), one of 49 counted 1,252, one of 17 counted 380. Two conversations the formatter sends as one body count
    the same."""
    signed = {"provider": "anthropic", "signature": "c2lnbmF0dXJl"}
    call = ToolUseBlock(id="c1", name="search", input={})
    results = ToolResultBlock(id="c1", name="search", output=[TextBlock(text="sunny")])
    turn = [
        _msg("USER", TextBlock(text="question"), name="human"),
        _msg("ASSISTANT", ThinkingBlock(thinking="reasoning " * 300, metadata=signed), call, name="bot"),
        _msg("TOOL", results),
    ]
    multi = case == "another agent's"
    kw: dict[str, Any] = {"multi_agent": True, "agent_name": "bot"} if multi else {}
    ok = _msg("ASSISTANT", TextBlock(text="ok"), name="bot")
    if multi:
        one = [*turn, _msg("ASSISTANT", TextBlock(text="hello"), name="other"), ok]
        other = [*turn, _msg("USER", TextBlock(text="hello"), name="other"), ok]
    elif case == "hint in the results":
        one = [*turn[:2], _msg("TOOL", results, HintBlock(hint="be brief"))]
        other = [*turn, _msg("USER", TextBlock(text="be brief"))]
    elif case == "hint after":
        hinted = _msg("ASSISTANT", TextBlock(text="ok"), HintBlock(hint="be brief"), name="bot")
        one, other = [*turn, hinted], [*turn, ok, _msg("USER", TextBlock(text="be brief"))]
    else:
        one = turn
        other = [*turn, _msg("USER", TextBlock(text=" " if case.startswith("blank") else ""))]
    anthropic = get("anthropic")
    assert anthropic.format_request(one, **kw).body == anthropic.format_request(other, **kw).body
    assert count_tokens(one, provider="anthropic", **kw).total == count_tokens(other, provider="anthropic", **kw).total
    # (the thinking is the current turn's, counted; after a user turn, another agent's or a hint's too, an earlier
    # turn's)
    earlier = count_tokens([*turn, _msg("USER", TextBlock(text="next"))], provider="anthropic", **kw).messages[1]
    counted = count_tokens(one, provider="anthropic", **kw).messages[1]
    assert counted == earlier if multi or case.startswith("hint") else counted > earlier + 250


# ---- media ----------------------------------------------------------------------------------------------------


def _pdf(pages: int, packed: bool) -> bytes:
    """A PDF of ``pages`` pages: its page objects in the file (PDF 1.4), or ``packed`` in a compressed object stream
    with a cross-reference stream (PDF 1.5 and later, as most writers now write them)."""
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    kids = b" ".join(b"%d 0 R" % (3 + k) for k in range(pages))
    objects[2] = b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages
    for k in range(pages):
        objects[3 + k] = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"
    if not packed:
        return b"%PDF-1.4\n" + b"".join(b"%d 0 obj\n%s\nendobj\n" % (n, o) for n, o in objects.items()) + b"%%EOF\n"
    offsets, data = [], b""
    for n, o in objects.items():
        offsets.append(b"%d %d" % (n, len(data)))
        data += o + b"\n"
    head = b" ".join(offsets) + b"\n"
    stream = zlib.compress(head + data)
    start = b"<< /Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d >>" % (
        len(objects),
        len(head),
        len(stream),
    )
    return b"%PDF-1.5\n99 0 obj\n" + start + b"\nstream\n" + stream + b"\nendstream\nendobj\n%%EOF\n"


@pytest.mark.parametrize("packed", [False, True])
def test_a_pdf_costs_its_pages_wherever_its_page_objects_are(packed: bool) -> None:
    """A PDF is priced per page (docs/context.md): its page objects are counted in the file and in its compressed
    object streams, where PDF 1.5 and later writers keep them; a 50-page PDF written so counted 1 page."""

    def cost(raw: bytes) -> int:
        block = DataBlock(source=Base64Source(media_type="application/pdf", data=_images.b64(raw)))
        return count_tokens([_msg("USER", block)], provider="gemini").total

    one, fifty = cost(_pdf(1, packed)), cost(_pdf(50, packed))
    assert fifty - one == 49 * get("gemini").spec.tokens.pdf_per_page  # type: ignore[union-attr]


def test_a_pdf_of_many_object_streams_hands_zlib_each_stream_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each object stream was inflated from its start to the file's end, which zlib copied past the stream's end
    every time (N streams before an image of 30 MiB: N copies of it, 2,000 streams 5.5 s): each gets its own bytes,
    and a stream with no end after it is the last read. (Bytes handed to zlib counted, not time.)"""
    handed: list[int] = []
    real = zlib.decompressobj

    class Counting:
        def __init__(self) -> None:
            self.inner = real()

        def decompress(self, data: Any, max_length: int = 0) -> bytes:
            handed.append(len(data))
            return self.inner.decompress(data, max_length)

    monkeypatch.setattr(zlib, "decompressobj", Counting)  # (the module _media calls it through)
    stream = b"<< /Type /ObjStm /Filter /FlateDecode >>\nstream\n" + zlib.compress(b"/Type /Page ")
    tail = b"9 0 obj\n<< /Length 1000000 >>\nstream\n" + b"\x00" * 1_000_000 + b"\nendstream\n"
    raw = b"%PDF-1.5\n" + (stream + b"\nendstream\n") * 200 + tail
    assert _media.pdf_pages(raw) == 200 and sum(handed) < 200 * len(stream) + 200
    handed.clear()
    unended = b"%PDF-1.5\n" + stream * 200 + tail.replace(b"endstream", b"")
    assert _media.pdf_pages(unended) == 1 and len(handed) == 1


def test_a_pdf_stream_made_to_inflate_without_end_costs_a_bounded_read() -> None:
    """An object stream that inflates to far more than the file (a deflate bomb) is read within a budget."""
    bomb = zlib.compress(b"/Type /Page " * (1 << 22), 9)  # 48 MiB of page objects in about 50 kB
    raw = b"%PDF-1.5\n<< /Type /ObjStm /Filter /FlateDecode >>\nstream\n" + bomb + b"\nendstream\n"
    assert len(raw) < 1 << 17
    assert _media.pdf_pages(raw) <= 16 * len(raw) // len(b"/Type /Page ") + 1


@pytest.mark.parametrize(
    ("raw", "mime"),
    [
        (_images.png(1024, 1024), "image/png"),
        (_images.gif(1024, 1024), "image/gif"),
        (_images.jpeg(1024, 1024), "image/jpeg"),
        (_images.webp_vp8x(1024, 1024), "image/webp"),
    ],
)
def test_image_size_is_read_from_the_header(raw: bytes, mime: str) -> None:
    assert _media.image_size(Base64Source(media_type=mime, data=_images.b64(raw))) == (1024, 1024)


@pytest.mark.parametrize(("kind", "whole"), [(b"VP8 ", 30), (b"VP8L", 25), (b"VP8X", 30)])
def test_a_truncated_webp_header_is_no_size(kind: bytes, whole: int) -> None:
    """A WebP cut inside its size fields has no size: a VP8L one raised IndexError out of count_tokens (a
    non-SDK exception), a VP8X one was read as 1x1 (the missing bytes taken as zeros) and priced as known."""
    header = b"RIFF\x00\x00\x00\x00WEBP" + kind + b"\x0a\x00\x00\x00" + b"\x2f\x9d\x01\x2a" * 4
    url = ImageBlock(source=URLSource(url="https://example.com/cat.webp"))
    unknown = count_tokens([_msg("USER", TextBlock(text="x"), url)], provider="anthropic")
    for cut in range(12, whole):
        source = Base64Source(media_type="image/webp", data=_images.b64(header[:cut]))
        assert _media.image_size(source) is None, cut
        n = count_tokens([_msg("USER", TextBlock(text="x"), ImageBlock(source=source))], provider="anthropic")
        assert (n.total, n.error) == (unknown.total, unknown.error), cut
    assert _media.image_size(Base64Source(media_type="image/webp", data=_images.b64(header[:whole]))) is not None


def test_documented_image_costs() -> None:
    # OpenAI's docs examples (tile method), low detail
    assert _media.openai_tiles(1024, 1024) == 765
    assert _media.openai_tiles(2048, 4096) == 1105
    assert _media.openai_tiles(4000, 3000, "low") == 85
    # Anthropic: w*h/750, long edge resized to 1568, at most 1568 tokens
    assert _media.anthropic_image(1000, 1000) == 1334
    assert _media.anthropic_image(200, 200) == 54
    assert _media.anthropic_image(8000, 8000) == 1568
    # Gemini: 258 up to 384x384, else 258 per 768-px tile
    assert _media.gemini_image(384, 300) == 258
    assert _media.gemini_image(1024, 1024) == 4 * 258
    # Qwen-VL: 28x28 pixels a token, 4..1280, plus 2
    assert _media.qwen_image(280, 280) == 102
    assert _media.qwen_image(10, 10) == 6
    assert _media.qwen_image(4000, 4000) == 1282
    # the patch method: 32-px patches times the model's multiplier, at most 1536 patches
    assert _media.openai_patches(1024, 1024, 1.62) == 1659
    assert _media.openai_patches(4096, 4096, 1.0) == 1536


@pytest.mark.parametrize(
    ("provider", "model", "cost"),
    [
        ("openai", "gpt-4o", 765),
        ("openai", "gpt-4.1-mini", 1659),
        ("anthropic", None, 1399),
        ("gemini", None, 1032),
        ("dashscope", "qwen-vl-max", 1282),
    ],
)
def test_a_known_size_image_is_priced_by_the_providers_rate(provider: str, model: str | None, cost: int) -> None:
    text_only = count_tokens([_msg("USER", TextBlock(text="Describe it."))], provider=provider, model=model)
    with_image = count_tokens(
        [_msg("USER", TextBlock(text="Describe it."), _image(_images.png(1024, 1024), "image/png"))],
        provider=provider,
        model=model,
    )
    assert with_image.messages[0] - text_only.messages[0] == cost
    assert with_image.error is not None and with_image.error > (text_only.error or 0)


def test_an_image_of_unknown_size_is_priced_at_the_default_with_a_larger_error() -> None:
    url = ImageBlock(source=URLSource(url="https://example.com/cat.png"))
    known = count_tokens([_msg("USER", _image(_images.png(1024, 1024), "image/png"))], provider="openai")
    unknown = count_tokens([_msg("USER", url)], provider="openai")
    assert known.total == unknown.total  # the default size is 1024x1024
    assert unknown.error is not None and known.error is not None and unknown.error > known.error


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "dashscope"])
def test_media_in_a_data_url_is_counted_as_the_same_bytes_in_base64(provider: str) -> None:
    """The formatters send a data: URL inline, as its base64 bytes, but the count priced it as an image of
    unknown size (1024x1024, error 1.0): a 2000x300 PNG counted 1401 tokens for Anthropic in a data: URL and 494
    in a base64 source. Its header (and a WAV's, and a text file's bytes) is read from the URL now, and nothing
    else is: another URL is still not fetched."""
    raw = _images.png(2000, 300)
    inline = ImageBlock(source=Base64Source(media_type="image/png", data=_images.b64(raw)))
    data_url = ImageBlock(source=URLSource(url="data:image/png;base64," + _images.b64(raw)))
    assert count_tokens([_msg("USER", data_url)], provider=provider) == count_tokens(
        [_msg("USER", inline)], provider=provider
    )
    wav = _images.b64(_images.wav(3.0))
    audio = AudioBlock(source=URLSource(url="data:audio/wav;base64," + wav))
    assert _media.media_seconds(audio.source) == 3.0
    text = DataBlock(source=URLSource(url="data:text/plain,hello%20world"))
    same = DataBlock(source=Base64Source(media_type="text/plain", data=_images.b64(b"hello world")))
    if provider in ("anthropic", "gemini"):  # (OpenAI Chat and DashScope send a text file as a placeholder naming it)
        assert count_tokens([_msg("USER", text)], provider=provider) == count_tokens(
            [_msg("USER", same)], provider=provider
        )
    bad = ImageBlock(source=URLSource(url="data:image/png;base64,%%%"))  # (not base64: priced as unknown)
    assert _media.image_size(bad.source) is None


def test_audio_duration_from_a_wav_header() -> None:
    block = AudioBlock(source=Base64Source(media_type="audio/wav", data=_images.b64(_images.wav(3.0))))
    assert _media.media_seconds(block.source) == 3.0
    n = count_tokens([_msg("USER", TextBlock(text="x"), block)], provider="gemini")
    text = count_tokens([_msg("USER", TextBlock(text="x"))], provider="gemini")
    assert n.messages[0] - text.messages[0] == 96  # 32 tokens a second


@pytest.mark.parametrize("provider", ["openai", "anthropic", "deepseek", "dashscope", "gemini"])
def test_a_wav_duration_lowers_the_error_only_where_the_rate_is_documented(provider: str) -> None:
    """Audio is priced at Gemini's documented 32 tokens a second; the other providers borrowed the rate but also
    its claim (a 60-second WAV for OpenAI said error 0.1, as if the rate were OpenAI's). A known duration now lowers
    the stated error only where the rate is the provider's own (Gemini); elsewhere it stays that of audio unknown."""
    wav = AudioBlock(source=Base64Source(media_type="audio/wav", data=_images.b64(_images.wav(60.0))))
    url = AudioBlock(source=URLSource(url="https://example.com/a.wav"))
    known = count_tokens([_msg("USER", wav)], provider=provider)
    unknown = count_tokens([_msg("USER", url)], provider=provider)
    assert known.error is not None and unknown.error is not None
    if provider == "gemini":
        assert known.error < 0.7 < unknown.error
    elif provider in ("deepseek", "anthropic"):  # (no audio: sent as a placeholder, counted as its text)
        assert known.error == unknown.error == get(provider).spec.tokens.text_error  # type: ignore[union-attr]
    else:  # (the audio is nearly all of the count: its error, that of a rate not the provider's, nearly all of it)
        assert known.error > 0.95 and unknown.error > 0.95, (known.error, unknown.error)


@pytest.mark.parametrize("declared", [0xFFFFFFFF, 0, 10**9, 8_000])
def test_a_wav_is_timed_by_the_bytes_it_holds(declared: int) -> None:
    """A WAV written to a pipe says its data is 0xFFFFFFFF bytes (ffmpeg, sox): one second was priced as 37 hours
    (4,294,969 Gemini tokens), and a header of 0 as nothing. The size is now never more than the bytes there are,
    and 0 or the placeholder read as those bytes."""
    raw = _images.wav(1.0, declared=declared)
    block = AudioBlock(source=Base64Source(media_type="audio/wav", data=_images.b64(raw)))
    seconds = 0.25 if declared == 8_000 else 1.0  # (a header that says less than there is: what it says)
    assert _media.media_seconds(block.source) == seconds
    n = count_tokens([_msg("USER", TextBlock(text="x"), block)], provider="gemini")
    text = count_tokens([_msg("USER", TextBlock(text="x"))], provider="gemini")
    assert n.messages[0] - text.messages[0] == 32 * seconds


# ---- inputs ---------------------------------------------------------------------------------------------------


def test_bad_inputs() -> None:
    with pytest.raises(KeyError, match="unknown provider"):
        count_tokens([], provider="nope")
    with pytest.raises(ValidationError):
        count_tokens("hello", provider="openai")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        count_tokens([{"role": "USER"}], provider="openai")  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        count_tokens([], provider="openai", tools=[{"description": "no name"}])


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "dashscope", "deepseek", "openai"])
def test_a_tool_schema_with_an_integer_beyond_64_bits_is_counted(provider: str) -> None:
    """JSON has no integer limit and format_request sends such a tool (a schema's bound, 2**64 for a u64's
    exclusive maximum), but the count wrote the definitions with orjson, which stops at 64 bits: count_tokens
    raised a bare TypeError ("Integer exceeds 64-bit range") for every provider that counts tools as JSON. Such a
    definition is counted now, as its JSON text, a few more digits than a small bound."""

    def tools(bound: int) -> list[dict[str, Any]]:
        schema = {"type": "integer", "exclusiveMaximum": bound, "enum": [bound]}
        return [{"name": "f", "parameters": {"type": "object", "properties": {"x": schema}}}]

    get(provider).format_request([UserMessage("q")], tools=tools(2**64))  # (sent as it is)
    big = count_tokens([UserMessage("q")], provider=provider, tools=tools(2**64))
    small = count_tokens([UserMessage("q")], provider=provider, tools=tools(1))
    assert big.tools > small.tools and big.total - big.tools == small.total - small.tools


@pytest.mark.parametrize("provider", ["openai", "openai-responses"])
@pytest.mark.parametrize("required", [5, True, "xy", {"x": 1}])
def test_a_tool_schema_whose_required_is_no_list_is_counted(provider: str, required: Any) -> None:
    """A schema whose ``required`` is no list of names is sent as it is (format_request takes it, no diagnostic), but
    OpenAI's count, which writes the parameters as TypeScript and marks each required one, raised a bare TypeError
    ("argument of type 'int' is not iterable") for 5 or true, and read "xy" as naming "x" (a substring) and a dict as
    naming its keys. It now counts such a schema as naming none required."""

    def tools(value: Any) -> list[dict[str, Any]]:
        schema = {"type": "object", "properties": {"x": {"type": "string"}}, "required": value}
        return [{"name": "f", "parameters": schema}]

    assert not get(provider).format_request([UserMessage("q")], tools=tools(required)).diagnostics  # (sent as it is)
    assert count_tokens([UserMessage("q")], provider=provider, tools=tools(required)) == count_tokens(
        [UserMessage("q")], provider=provider, tools=tools([])
    )


@pytest.mark.parametrize(
    ("kwargs", "pointer"),
    [({"provider": 5}, "/provider"), ({"provider": None}, "/provider"), ({"provider": "openai", "model": 5}, "/model")],
)
def test_a_provider_or_model_of_the_wrong_type_is_refused_naming_it(kwargs: dict[str, Any], pointer: str) -> None:
    """count_tokens(provider=None) or model=5 raised a bare AttributeError from inside ('NoneType' object has no
    attribute 'spec'; 'int' object has no attribute 'lower'), and so did trim and place_cache_markers."""
    with pytest.raises(ValidationError) as exc:
        count_tokens([UserMessage("q")], **kwargs)
    assert exc.value.problems[0].pointer == pointer


def test_empty_conversation_is_the_framing_only() -> None:
    n = count_tokens([], provider="openai")
    assert n.messages == () and n.tools == 0 and n.total == n.overhead == 3


# ---- no network at first use ------------------------------------------------------------------------------------


def test_first_use_needs_no_network() -> None:
    """A fresh process whose sockets all fail, with proxies pointing at a dead port, loads every vocabulary and counts
    for every provider with the real tokenizers."""
    script = textwrap.dedent(
        """
        import socket
        def refuse(*a, **k):
            raise OSError("network is off in this test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from agentmsg import Msg, TextBlock
        from agentmsg.context import count_tokens
        from agentmsg.providers import NAMES, get
        msgs = [Msg(role="USER", content=[TextBlock(text="hello, 世界")])]
        for p in NAMES:
            n = count_tokens(msgs, provider=p, model="gpt-4-0613" if p == "openai" else None)
            print(p, n.method)
        """
    )
    env = {
        **os.environ,
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "TIKTOKEN_CACHE_DIR": os.devnull,
    }
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    methods = dict(line.split() for line in out.stdout.splitlines())
    assert methods["openai"] == "tokenizer:cl100k_base"
    assert methods["dashscope"] == "tokenizer:qwen"
    assert methods["anthropic"] == "estimate"


# ---- the walk against the formatter ---------------------------------------------------------------------------


def _random_conversation(rng: Any, n: int) -> list[Msg]:
    words = ["alpha", "beta", "你好", "naïve", "λ", "🙂", "tool", "the", "weather", "JSON {}", "\n", "  "]
    out: list[Msg] = []
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
        kind = rng.randint(0, 3)
        if kind == 0:
            out.append(_msg("USER", TextBlock(text=text), name=rng.choice([None, "ann"])))
        elif kind == 1:
            out.append(_msg("ASSISTANT", TextBlock(text=text)))
        elif kind == 2:
            call = ToolUseBlock(id=f"c{i}", name="lookup", input={"q": text})
            out.append(_msg("ASSISTANT", call))
            out.append(_msg("TOOL", ToolResultBlock(id=f"c{i}", name="lookup", output=[TextBlock(text=text)])))
        else:
            out.append(_msg("SYSTEM", TextBlock(text=text)))
    return out


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic", "dashscope", "deepseek"])
def test_a_messages_count_is_its_own_so_counts_of_parts_concatenate(provider: str) -> None:
    """Each message is priced alone (trimming removes messages and subtracts their counts): counting two halves
    gives the counts of the whole, and the total is the same whatever the split; but where the request sends a run
    of messages as one turn (Anthropic and Gemini: a run of one role, text ahead of the call it follows), a message
    the cut parts from its turn opens one of its own, framed once more."""
    import random

    framing = get(provider).spec.tokens.per_message  # type: ignore[union-attr]
    turns = provider in ("gemini", "anthropic")
    rng = random.Random(31)
    merged = 0
    for _ in range(40):
        msgs = _random_conversation(rng, rng.randint(2, 12))
        cut = rng.randint(0, len(msgs))
        whole = count_tokens(msgs, provider=provider).messages
        first = count_tokens(msgs[:cut], provider=provider).messages
        second = count_tokens(msgs[cut:], provider=provider).messages
        parts = first + second
        assert len(parts) == len(whole)
        for k in range(len(whole)):
            if whole[k] != parts[k]:  # (a frame, not content: the message opens a turn in its half alone)
                assert turns and parts[k] - whole[k] == framing, (k, cut)
                merged += 1
    assert merged > 0 if turns else merged == 0


def test_openai_text_counts_equal_the_formatted_bodys_tokens() -> None:
    """For a text conversation the walk and the formatter agree: the count is the o200k tokens of each message the
    formatter sends (its content) plus the cookbook's framing, message for message."""
    import random

    from agentmsg.providers import get

    enc = _tokenizers.counter("o200k_base")
    rng = random.Random(7)
    for _ in range(20):
        msgs = [m for m in _random_conversation(rng, 10) if m.role.value != "TOOL" and type(m.content[0]) is TextBlock]
        if not msgs:
            continue
        body = get("openai").format_request(msgs, model="gpt-5").body
        expected = sum(3 + enc.count(m["content"]) + (1 if m.get("name") else 0) for m in body["messages"]) + 3
        assert count_tokens(msgs, provider="openai", model="gpt-5").total == expected


def test_blocks_of_a_callers_subclass_count_as_their_class() -> None:
    """A text block of a caller's subclass appended after construction was not counted (8 tokens for 13): it counts
    as a TextBlock of the same text."""

    class MyText(TextBlock):
        pass

    expected = count_tokens([UserMessage(["hi", "more words here to count"])], provider="openai", model="gpt-4o")
    changed = UserMessage("hi")
    changed.content.append(MyText(text="more words here to count"))
    assert count_tokens([changed], provider="openai", model="gpt-4o") == expected


def test_roles_set_to_their_plain_strings_count_as_their_members() -> None:
    """A role set after construction to its plain string counts as its member (Anthropic's rule on the thinking of
    the current turn tells the user turns apart by identity); an unknown role, or an item that is no message, is a
    ValidationError naming it (the latter was a bare AttributeError)."""
    msgs = _conversation()
    expected = count_tokens(msgs, provider="anthropic")
    for m in msgs:
        m.role = m.role.value  # type: ignore[assignment]
    assert count_tokens(msgs, provider="anthropic") == expected
    msgs[1].role = "user"  # type: ignore[assignment]
    with pytest.raises(ValidationError) as info:
        count_tokens(msgs, provider="anthropic")
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/1/role", "enum")]
    with pytest.raises(ValidationError) as info:
        count_tokens([*msgs[:1], 1], provider="anthropic")  # type: ignore[list-item]
    assert [p.pointer for p in info.value.problems] == ["/1"]


def test_openai_results_in_one_message_count_as_the_tool_messages_sent() -> None:
    """OpenAI's formatter sends each tool result as a ``tool`` message of its own: two parallel results in one TOOL
    message and the same results in two TOOL messages make the same body, and now the same count (the first was 3
    short, one message's framing, where the count states no error)."""
    call = _msg(
        "ASSISTANT",
        ToolUseBlock(id="c1", name="f", input={"a": 1}),
        ToolUseBlock(id="c2", name="f", input={"a": 2}),
    )

    def result(k: int) -> ToolResultBlock:
        return ToolResultBlock(id=f"c{k}", name="f", output=[TextBlock(text=f"result {k}")])

    together = [_msg("USER", TextBlock(text="w")), call, _msg("TOOL", result(1), result(2), name="runner")]
    apart = [_msg("USER", TextBlock(text="w")), call, _msg("TOOL", result(1)), _msg("TOOL", result(2))]
    for provider in ("openai", "deepseek"):
        assert get(provider).format_request(together).body == get(provider).format_request(apart).body
        assert count_tokens(together, provider=provider).total == count_tokens(apart, provider=provider).total
    enc = _tokenizers.counter("o200k_base")
    body = get("openai").format_request(together, model="gpt-5").body
    sent = 3  # the reply's priming, then each message sent: its framing, its text, a call's or a result's framing
    for m in body["messages"]:
        sent += 3 + enc.count(m["content"] or "")
        sent += sum(
            enc.count(c["function"]["name"]) + enc.count(c["function"]["arguments"]) + 3
            for c in m.get("tool_calls", [])
        )
        sent += 3 if m["role"] == "tool" else 0
    found = count_tokens(together, provider="openai", model="gpt-5")
    assert (found.total, found.error) == (sent, None)


def test_deepseek_counts_media_as_the_placeholder_it_is_sent_as() -> None:
    """DeepSeek takes text only: its formatter sends an image, a WAV or a text file as a placeholder naming it
    (``[image: image/png]``). They were counted at the media rates (a 2048x2048 PNG alone: 775 tokens for a request of
    17, outside the 0.6 stated; this conversation 3,827 for 49); now as the placeholder's text, within DeepSeek's stated error."""
    wav = DataBlock(source=Base64Source(media_type="audio/wav", data=_images.b64(_images.wav(2.0))))
    notes = DataBlock(source=Base64Source(media_type="text/plain", data=_images.b64(b"word " * 2000)))
    call = _msg("ASSISTANT", ToolUseBlock(id="c1", name="look", input={}))
    shown = _msg("TOOL", ToolResultBlock(id="c1", name="look", output=[_image(_images.png(800, 600), "image/png")]))
    msgs = [_msg("USER", TextBlock(text="what is this"), _image(_images.png(2048, 2048), "image/png"), wav, notes)]
    msgs += [call, shown]
    request = get("deepseek").format_request(msgs)
    assert "media-unsupported" in {p.rule for p in request.diagnostics}
    enc = _tokenizers.counter("o200k_base")
    sent = 2  # (o200k tokens of what is sent, with DeepSeek's framing: the profile's, 4 a message, 2 the priming)
    for m in request.body["messages"]:
        sent += 4 + enc.count(m["content"] or "") + (3 if m["role"] == "tool" else 0)
        sent += sum(3 + enc.count(c["function"]["name"] + c["function"]["arguments"]) for c in m.get("tool_calls", []))
    found = count_tokens(msgs, provider="deepseek")
    assert found.error is not None
    assert abs(found.total - sent) <= found.error * sent
    assert found.messages[0] < 40


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "deepseek", "dashscope", "anthropic"])
def test_media_in_an_assistant_turn_count_as_the_placeholder_sent(provider: str) -> None:
    """Every formatter but Gemini's sends an image in an assistant turn as a placeholder naming it
    (``media-unsupported``); the count priced the image (OpenAI: 776 tokens for 17 sent, stating an error of 0.1).
    It now counts the placeholder's text, as a text block holding it counts; Gemini, which sends the image, prices
    it."""
    image = _image(_images.png(2048, 2048), "image/png")
    label = TextBlock(text="[image: image/png]")
    sent = [_msg("USER", TextBlock(text="draw")), _msg("ASSISTANT", TextBlock(text="here"), image)]
    said = [_msg("USER", TextBlock(text="draw")), _msg("ASSISTANT", TextBlock(text="here"), label)]
    request = get(provider).format_request(sent)
    assert "media-unsupported" in {p.rule for p in request.diagnostics}
    assert count_tokens(sent, provider=provider) == count_tokens(said, provider=provider)
    assert get("gemini").format_request(sent).diagnostics == ()
    assert count_tokens(sent, provider="gemini").total > count_tokens(said, provider="gemini").total + 1000


def test_openai_tool_result_media_count_as_the_messages_sent() -> None:
    """OpenAI Chat takes no media in a tool message: its formatter names them in the result's text and sends them
    again in a user message after the results, behind a line naming the call. The count missed the names, that line
    and that message's framing (three images: 786 tokens for 816 sent), and the newlines joining a result's texts
    (stating no error). It now counts them as the body sends them."""
    enc = _tokenizers.counter("o200k_base")
    image = _image(_images.png(32, 32), "image/png")
    rate = (
        count_tokens([_msg("USER", TextBlock(text="x"), image)], provider="openai", model="gpt-5").total
        - count_tokens([_msg("USER", TextBlock(text="x"))], provider="openai", model="gpt-5").total
    )
    call = _msg("ASSISTANT", ToolUseBlock(id="call_1", name="look", input={}))
    outputs: list[list[Any]] = [
        [image, image, image],
        [TextBlock(text="saw it"), image],
        [TextBlock(text="a"), TextBlock(text="b")],
        [image, TextBlock(text="saw it")],  # (named in their places in the text: the texts' tokens change)
        [TextBlock(text="a"), image, TextBlock(text="b")],
    ]
    for output in outputs:
        result = _msg("TOOL", ToolResultBlock(id="call_1", name="look", output=list(output)))
        msgs = [_msg("USER", TextBlock(text="look")), call, result]
        body = get("openai").format_request(msgs, model="gpt-5").body
        sent = 3  # (the reply's priming; each message its framing and text, a call's or result's framing, images)
        for m in body["messages"]:
            parts = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"] or ""}]
            sent += 3 + sum(enc.count(p["text"]) if p["type"] == "text" else rate for p in parts)
            sent += sum(
                3 + enc.count(c["function"]["name"]) + enc.count(c["function"]["arguments"])
                for c in m.get("tool_calls", [])
            )
            sent += 3 if m["role"] == "tool" else 0
        assert count_tokens(msgs, provider="openai", model="gpt-5").total == sent, output


def test_openai_texts_of_one_message_count_joined_as_sent() -> None:
    """OpenAI Chat sends an assistant or system message's text blocks as one text joined by newlines, whose tokens
    are not always the sum of the blocks' (``a`` and ``b``: 2 tokens, ``a\\nb``: 3): such a message counted one short
    where the count states no error. It now counts the joined text, as the formatted body has it."""
    import random

    enc = _tokenizers.counter("o200k_base")
    rng = random.Random(5)
    words = ["a", "b", "Hello", "there.", "x1", "", " ", "end!", "7", "\u00e9t\u00e9"]
    for _ in range(30):
        texts = [TextBlock(text=" ".join(rng.choices(words, k=rng.randint(0, 3)))) for _ in range(rng.randint(1, 4))]
        msgs = [_msg("SYSTEM", *texts), _msg("USER", TextBlock(text="q")), _msg("ASSISTANT", *texts)]
        body = get("openai").format_request(msgs, model="gpt-5").body
        sent = 3 + sum(3 + enc.count(m["content"]) for m in body["messages"])
        found = count_tokens(msgs, provider="openai", model="gpt-5")
        assert (found.total, found.error) == (sent, None), [t.text for t in texts]


def test_deepseek_counts_the_reasoning_its_formatter_sends_back() -> None:
    """DeepSeek's thinking mode takes back the reasoning of the current turn and of every turn that called tools
    (its formatter sends it in ``reasoning_content``; DeepSeek's docs: it joins the context), and ignores the rest.
    The count took none: a tool turn's 1,000 words of reasoning counted 0 tokens of the 1,100 sent, outside the 0.5
    stated. It now counts what the formatter sends back, and still not a plain answer's reasoning of an earlier
    turn."""
    long = "step " * 1000
    msgs = [
        _msg("USER", TextBlock(text="weather?")),
        _msg("ASSISTANT", ThinkingBlock(thinking=long), ToolUseBlock(id="c1", name="get_weather", input={})),
        _msg("TOOL", ToolResultBlock(id="c1", name="get_weather", output=[TextBlock(text="sunny")])),
        _msg("ASSISTANT", ThinkingBlock(thinking=long), TextBlock(text="Sunny.")),
        _msg("USER", TextBlock(text="and tomorrow?")),
        _msg("ASSISTANT", ThinkingBlock(thinking=long), TextBlock(text="No idea.")),
        _msg("USER", TextBlock(text="thanks")),
    ]
    body = get("deepseek").format_request(msgs).body
    sent = [bool(m.get("reasoning_content")) for m in body["messages"]]
    assert sent == [False, True, False, True, False, False, False]
    found = count_tokens(msgs, provider="deepseek")
    plain = count_tokens(
        [m.copy(content=[b for b in m.content if type(b) is not ThinkingBlock]) for m in msgs], provider="deepseek"
    )
    enc = _tokenizers.counter("o200k_base")
    extra = [a - b for a, b in zip(found.messages, plain.messages, strict=True)]
    assert extra == [0, math.ceil(enc.count(long) * 1.1), 0, math.ceil(enc.count(long) * 1.1), 0, 0, 0]


def test_deepseek_counts_the_reasoning_of_the_turn_its_formatter_calls_current() -> None:
    """The count started DeepSeek's current turn at the last user message holding more than tool results, the
    formatter at the last user message: after a user message with nothing to send (an empty one, or results
    appended to it after construction) the formatter prunes the answer's reasoning before it (thinking-pruned) and
    the count still took it (228 tokens for the 6 sent). Both now read where the turn starts from one definition
    (current_turn, with tool_turns, in providers/_request/context.py)."""
    long = "step " * 200
    answer = _msg("ASSISTANT", ThinkingBlock(thinking=long), TextBlock(text="ok"))
    appended = _msg("USER", TextBlock(text="x"))
    appended.content[:] = [ToolResultBlock(id="c1", name="f", output=[TextBlock(text="sunny")])]
    for last in (_msg("USER"), appended):
        msgs = [_msg("USER", TextBlock(text="weather?")), answer, last]
        request = get("deepseek").format_request(msgs)
        assert "thinking-pruned" in {p.rule for p in request.diagnostics}
        assert not any(m.get("reasoning_content") for m in request.body["messages"])
        plain = [msgs[0], _msg("ASSISTANT", TextBlock(text="ok")), last]
        assert (
            count_tokens(msgs, provider="deepseek").messages[1] == count_tokens(plain, provider="deepseek").messages[1]
        )


@pytest.mark.parametrize("provider", sorted(NAMES))
def test_tool_results_in_a_user_message_are_not_counted_as_no_formatter_sends_them(provider: str) -> None:
    """A user turn sends texts, media and hints: a tool result put in a USER message after construction is left out
    by every formatter (``block-dropped``), but the count took it (DeepSeek: 125 tokens for a message of 6 sent; the
    chat family also framed it as a tool message of its own). It is now counted as the message without it."""
    call = _msg("ASSISTANT", ToolUseBlock(id="c1", name="f", input={}))
    result = ToolResultBlock(id="c1", name="f", output=[TextBlock(text="result " * 100)])
    held = _msg("USER", TextBlock(text="next"))
    held.content.insert(0, result)
    msgs = [_msg("USER", TextBlock(text="q")), call, held]
    request = get(provider).format_request(msgs)
    assert ("/2/content/0", "block-dropped") in {(p.pointer, p.rule) for p in request.diagnostics}
    plain = [*msgs[:2], _msg("USER", TextBlock(text="next"))]
    assert get(provider).format_request(plain).body == request.body
    assert count_tokens(msgs, provider=provider) == count_tokens(plain, provider=provider)


_DROPPED_IN_TOOL: dict[str, ContentBlock] = {
    "text": TextBlock(text="word " * 100),
    "call": ToolUseBlock(id="c9", name="g", input={"a": "b" * 100}),
    "image": ImageBlock(source=Base64Source(media_type="image/png", data=base64.b64encode(_images.png(8, 8)).decode())),
    "thinking": ThinkingBlock(thinking="t " * 100, metadata={"signature": "c2ln"}),
}


@pytest.mark.parametrize("provider", sorted(NAMES))
@pytest.mark.parametrize("block", sorted(_DROPPED_IN_TOOL))
def test_blocks_a_tool_message_does_not_send_are_not_counted(provider: str, block: str) -> None:
    """A TOOL message sends its results (and hints): a text, a call, an image or reasoning beside a result is left
    out by every formatter (``block-dropped``), and a TOOL message of text builds as the schema takes it, but the
    count took them (OpenAI: 123 tokens for the 22 of the request sent with a text of 100 words, Anthropic 1,435 for
    36 with an image; with the ``repair`` option a call there was taken for one left open, and its error result counted
    too). Such a message is now counted as the one without them; so is a SYSTEM message holding a block other than text
    put in after construction (OpenAI: 776 for 11 with an image)."""
    result = ToolResultBlock(id="c1", name="f", output=[TextBlock(text="r")], state="success")
    ask = [_msg("USER", TextBlock(text="q")), _msg("ASSISTANT", ToolUseBlock(id="c1", name="f", input={}))]
    held = _msg("TOOL", result)
    held.content.append(_DROPPED_IN_TOOL[block])
    system = _msg("SYSTEM", TextBlock(text="s"))
    if block != "text":
        system.content.append(_DROPPED_IN_TOOL[block])
    msgs = [system, *ask, held]
    plain = [_msg("SYSTEM", TextBlock(text="s")), *ask, _msg("TOOL", result)]
    request = get(provider).format_request(msgs, options={"reasoning": "text"})
    assert ("/3/content/1", "block-dropped") in {(p.pointer, p.rule) for p in request.diagnostics}
    for options in (None, {"reasoning": "text"}, {"repair": True}):  # (a call there is none the repair answers)
        assert count_tokens(msgs, provider=provider, options=options) == count_tokens(
            plain, provider=provider, options=options
        )
    assert count_tokens([ask[0], _msg("TOOL", TextBlock(text="word " * 100))], provider=provider) == count_tokens(
        [ask[0], _msg("TOOL")], provider=provider
    )


def _responses_sent(body: dict[str, Any]) -> int:
    """The o200k tokens of a Responses request body with Chat Completions' framing (gpt-5: 3 a message, 3 the reply's
    priming, 3 a call's and a result's own): each input item framed as a message, the instructions as one."""
    enc = _tokenizers.counter("o200k_base")
    sent = 3 + (3 + enc.count(body["instructions"]) if "instructions" in body else 0)
    for item in body["input"]:
        kind = item.get("type")
        if kind == "function_call":
            sent += 3 + 3 + enc.count(item["name"]) + enc.count(item["arguments"])
        elif kind == "function_call_output":
            sent += 3 + 3 + enc.count(item["output"])
        elif kind == "reasoning":
            sent += 3 + sum(enc.count(part["text"]) for part in item["summary"] + item.get("content", []))
        else:
            content = item["content"]
            sent += 3 + enc.count(content if isinstance(content, str) else content[0]["text"])
    return sent


def test_openai_responses_counts_each_item_an_assistant_message_is_sent_as() -> None:
    """The Responses formatter sends an assistant message's blocks as items in their order: a run of texts is one
    message item (joined by newlines), a call a function_call item, a carrier (the reader's message id) ends the run
    before it. The count priced the message as Chat's one message: text, call, text counted 11 tokens for 18 sent
    (two message items and a call, each framed), stating no error; and it charged a speaker name, which this API
    has no field for (name-dropped). It now frames and joins them as sent, and charges no name."""
    import random

    rng = random.Random(11)
    carrier = ThinkingBlock(
        thinking="", metadata={"provider": "openai-responses", "providerBlock": {"type": "message", "id": "msg_1"}}
    )
    pieces: list[Callable[[int], ContentBlock]] = [
        lambda k: TextBlock(text=rng.choice(["a", "b", "Hello there.", "", "x1 7", "été"])),
        lambda k: ToolUseBlock(id=f"c{k}", name="look", input={"q": k}),
        lambda k: carrier,
        lambda k: _image(_images.png(8, 8), "image/png"),
    ]
    for _ in range(40):
        blocks = [rng.choice(pieces)(k) for k in range(rng.randint(1, 6))]
        calls = [b for b in blocks if type(b) is ToolUseBlock]
        msgs = [_msg("SYSTEM", TextBlock(text="Be brief.")), _msg("USER", TextBlock(text="q"), name="ann")]
        msgs.append(_msg("ASSISTANT", *blocks))
        msgs += [_msg("TOOL", ToolResultBlock(id=c.id, name="look", output=[TextBlock(text="r")])) for c in calls]
        body = get("openai-responses").format_request(msgs, model="gpt-5").body
        found = count_tokens(msgs, provider="openai-responses", model="gpt-5")
        assert (found.total, found.error) == (_responses_sent(body), None), blocks


def test_openai_responses_counts_the_reasoning_items_it_sends_back() -> None:
    """The Responses formatter sends this API's reasoning back as reasoning items (thinking metadata itemId, the
    encrypted content its signature); the count took none of it: 100 words of summary counted 0 tokens. It now counts
    each item sent, framed as one, its summary as sent, and states the error of what its encrypted content holds; the
    reasoning the formatter does not send (no encrypted content in a request not stored, another provider's, of no
    item) still counts nothing."""
    long = "step " * 100
    enc = _tokenizers.counter("o200k_base")

    def reasoning(**meta: Any) -> ThinkingBlock:
        return ThinkingBlock(thinking=long, metadata={"provider": "openai-responses", **meta})

    def conversation(*thinking: ThinkingBlock) -> list[Msg]:
        call = ToolUseBlock(id="c1", name="look", input={})
        result = ToolResultBlock(id="c1", name="look", output=[TextBlock(text="r")])
        return [_msg("USER", TextBlock(text="q")), _msg("ASSISTANT", *thinking, call), _msg("TOOL", result)]

    plain = count_tokens(conversation(), provider="openai-responses", model="gpt-5")
    one_item = conversation(reasoning(itemId="rs_1", signature="ZW5j"), reasoning(itemId="rs_1"))
    two_items = conversation(reasoning(itemId="rs_1", signature="ZW5j"), reasoning(itemId="rs_2", signature="ZW5j"))
    for msgs, items in ((one_item, 1), (two_items, 2)):
        body = get("openai-responses").format_request(msgs, model="gpt-5").body
        assert [i.get("type") for i in body["input"]].count("reasoning") == items
        found = count_tokens(msgs, provider="openai-responses", model="gpt-5")
        assert found.total == _responses_sent(body) == plain.total + 3 * items + 2 * enc.count(long)
        assert found.error is not None and found.error > 0.5
    for unsent in (reasoning(itemId="rs_1"), reasoning(), reasoning(itemId="rs_1", signature="x", provider="openai")):
        msgs = conversation(unsent)
        request = get("openai-responses").format_request(msgs, model="gpt-5")
        assert "thinking-dropped" in {p.rule for p in request.diagnostics}
        assert count_tokens(msgs, provider="openai-responses", model="gpt-5") == plain


#: media some formatter sends as a text placeholder naming them (each of OpenAI Chat, DashScope, Anthropic, Gemini,
#: the Responses API one at least) in a user turn and in a tool result: audio and video (most), a file of no known
#: type, media by a web URL of no known MIME type (Gemini)
_NAMED_MEDIA: list[Any] = [
    VideoBlock(source=URLSource(url="https://example.com/film.mp4")),
    AudioBlock(source=URLSource(url="https://example.com/clip")),
    ImageBlock(source=URLSource(url="https://example.com/cat")),
    DataBlock(source=URLSource(url="https://example.com/file")),
]

#: plain text whose bytes are not UTF-8, inline (a base64 source, a data: URL): Anthropic sends it as a placeholder
_NOT_UTF8 = base64.b64encode(b"caf\xe9 \xff\xfe " * 200).decode()
_NOT_UTF8_TEXT: list[Any] = [
    DataBlock(source=Base64Source(media_type="text/plain", data=_NOT_UTF8), name="notes.txt"),
    DataBlock(source=URLSource(url=f"data:text/plain;base64,{_NOT_UTF8}")),
]


@functools.cache
def _odd_conversations() -> dict[str, list[Msg]]:
    """Conversations whose blocks a formatter splits, drops, merges or moves, and whose messages it sends as one
    (leading system messages, runs of one role, text between a call and its result) or leaves out (empty ones).
    Built once: the structure test reads them in 1,820 cases (building them was 80% of its time), and nothing may
    change them (a formatter or count that did would fail the cases after it)."""

    def call(cid: str) -> ToolUseBlock:
        return ToolUseBlock(id=cid, name="f", input={"a": 1})

    def result(cid: str) -> ToolResultBlock:
        return ToolResultBlock(id=cid, name="f", output=[TextBlock(text="r")])

    signed = {"provider": "openai-responses", "signature": "ZW5j"}
    held = _msg("USER", TextBlock(text="next"))
    held.content.insert(0, result("c9"))  # (after construction: the schema refuses it)
    answers = _msg("ASSISTANT", TextBlock(text="x"))
    answers.content.append(result("c1"))  # (after construction too)
    own = _msg("ASSISTANT", TextBlock(text="y"), call("c2"))
    own.content.append(result("c2"))
    # (a reply of several model calls, as the reducer makes it: sent as a message for each call, after the results)
    calls = _msg("ASSISTANT", TextBlock(text="checking"), call("c5"), name="Me")
    calls.content += [result("c5"), HintBlock(hint="h"), ThinkingBlock(thinking="then"), TextBlock(text="next")]
    calls.content += [call("c6"), call("c7"), result("c6"), TextBlock(text="It is r.")]  # (c7: an orphan)
    theirs = _msg("ASSISTANT", TextBlock(text="look"), call("c8"), name="Alice")
    theirs.content += [result("c8"), TextBlock(text="seen")]
    first = _msg("ASSISTANT", TextBlock(text="ok"), name="Me")
    first.content.insert(0, result("c9"))
    stray_after = _msg("ASSISTANT", TextBlock(text="pre"), name="Me")
    stray_after.content.append(result("c0"))
    stray = _msg("ASSISTANT", TextBlock(text="post"), name="Me")
    stray.content.insert(0, result("c1"))
    url = ImageBlock(source=URLSource(url="https://example.com/cat.png"))
    film = VideoBlock(source=URLSource(url="https://example.com/film.mp4"))
    return {
        "text, call, text": [
            _msg("SYSTEM", TextBlock(text="Be brief.")),
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", TextBlock(text="a"), TextBlock(text="b"), call("c1"), TextBlock(text="c")),
            _msg("TOOL", result("c1")),
            _msg("ASSISTANT", TextBlock(text="done")),
        ],
        "reasoning": [
            _msg("USER", TextBlock(text="q")),
            _msg(
                "ASSISTANT",
                ThinkingBlock(thinking="plan", metadata={"itemId": "rs_1", **signed}),
                ThinkingBlock(thinking="more", metadata={"itemId": "rs_1"}),
                TextBlock(text="a"),
                ThinkingBlock(thinking="next", metadata={"itemId": "rs_2", **signed}),
                call("c1"),
            ),
            _msg("TOOL", result("c1")),
            _msg("ASSISTANT", ThinkingBlock(thinking="unsigned", metadata={"itemId": "rs_3"}), TextBlock(text="ok")),
        ],
        "results in a user turn": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", call("c9")),
            held,
            _msg("ASSISTANT", TextBlock(text="ok")),
        ],
        "names": [
            _msg("SYSTEM", TextBlock(text="sys"), name="boss"),
            _msg("USER", TextBlock(text="q"), name="ann"),
            _msg("ASSISTANT", TextBlock(text="a"), name="bot"),
            _msg("USER", TextBlock(text="q2"), name="ann"),
        ],
        "hints": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", call("c1"), HintBlock(hint="be brief")),
            _msg("TOOL", result("c1"), HintBlock(hint="check it")),
            _msg("ASSISTANT", TextBlock(text="ok")),
        ],
        "images by URL": [
            _msg("USER", TextBlock(text="look"), url, url),
            _msg("ASSISTANT", TextBlock(text="two cats"), url),
            _msg("USER", TextBlock(text="and?")),
        ],
        "text between a call and its result": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", call("c1")),
            _msg("ASSISTANT", TextBlock(text="wait")),
            _msg("ASSISTANT", TextBlock(text="more")),
            _msg("TOOL", result("c1")),
            _msg("ASSISTANT", TextBlock(text="a"), call("c2")),
            _msg("ASSISTANT", TextBlock(text="then")),
            _msg("TOOL", result("c2")),
            _msg("ASSISTANT", TextBlock(text="done")),
        ],
        "leading system messages": [
            _msg("SYSTEM", TextBlock(text="a")),
            _msg("SYSTEM", TextBlock(text="b")),
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", TextBlock(text="x")),
        ],
        "runs of one role": [
            _msg("USER", TextBlock(text="q")),
            _msg("USER", TextBlock(text="q2")),
            _msg("ASSISTANT", TextBlock(text="a")),
            _msg("ASSISTANT", call("c1")),
            _msg("TOOL", result("c1")),
            _msg("USER", TextBlock(text="and?")),
            _msg("ASSISTANT", TextBlock(text="b"), HintBlock(hint="be brief")),
            _msg("USER", TextBlock(text="r")),
        ],
        "a hint in a tool result": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", call("c1")),
            _msg("TOOL", ToolResultBlock(id="c1", name="f", output=[TextBlock(text="r"), HintBlock(hint="check")])),
            _msg("ASSISTANT", TextBlock(text="ok")),
        ],
        "parallel results": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", call("c1"), call("c2")),
            _msg("TOOL", result("c1"), result("c2")),
            _msg("ASSISTANT", call("c3"), call("c4")),
            _msg("TOOL", result("c3")),
            _msg("TOOL", result("c4")),
            _msg("ASSISTANT", TextBlock(text="ok")),
        ],
        "empty user messages": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", TextBlock(text="a")),
            _msg("USER"),
            _msg("USER", TextBlock(text="")),
            _msg("ASSISTANT", TextBlock(text="b")),
            _msg("USER", TextBlock(text=" ")),
        ],
        "results in an assistant message": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", call("c1")),
            answers,
            own,
            _msg("USER", TextBlock(text="r")),
        ],
        "orphan calls": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", call("c1"), call("c2"), HintBlock(hint="be brief")),
            _msg("TOOL", result("c1")),
            _msg("USER", TextBlock(text="next")),
            _msg("ASSISTANT", call("c3")),
            _msg("TOOL", result("c9")),
            _msg("SYSTEM", TextBlock(text="late")),
            _msg("ASSISTANT", TextBlock(text="a"), call("c4"), HintBlock(hint="check")),
        ],
        "a system message with no text": [
            _msg("SYSTEM"),
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", TextBlock(text="a")),
        ],
        "what a run of texts before a call holds": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", url, call("c1")),
            _msg("ASSISTANT", TextBlock(text="wait")),
            _msg("TOOL", result("c1")),
            _msg("ASSISTANT", TextBlock(text=""), TextBlock(text=""), call("c2")),
            _msg("ASSISTANT", TextBlock(text="wait")),
            _msg("TOOL", result("c2")),
            _msg("ASSISTANT", TextBlock(text="a"), HintBlock(hint="h"), call("c3")),
            _msg("ASSISTANT", TextBlock(text="wait")),
            _msg("TOOL", result("c3")),
        ],
        "own reasoning": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", ThinkingBlock(thinking="unsigned")),
            _msg("USER", TextBlock(text="r")),
            _msg("ASSISTANT", ThinkingBlock(thinking=""), name="Me"),
            _msg("USER", TextBlock(text="s")),
            _msg("ASSISTANT", ThinkingBlock(thinking="gone", metadata={"redacted": True}), name="Me"),
            _msg("USER", TextBlock(text="t")),
            _msg("ASSISTANT", TextBlock(text="a"), ThinkingBlock(thinking="then"), call("c1"), name="Me"),
            _msg("TOOL", result("c1")),
            _msg("ASSISTANT", ThinkingBlock(thinking="signed", metadata={"signature": "c2ln"}), name="Me"),
            _msg("USER", TextBlock(text="u")),
            _msg("ASSISTANT", ThinkingBlock(thinking="", metadata={"signature": "not base64!"}), name="Me"),
            _msg("USER", TextBlock(text="v")),
        ],
        "empty and blank hints": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", TextBlock(text="a"), HintBlock(hint="")),
            _msg("ASSISTANT", TextBlock(text="b"), HintBlock(hint=" ")),
            _msg("ASSISTANT", ToolUseBlock(id="c1", name="f", input={}), HintBlock(hint=" ")),
            _msg("TOOL", result("c1"), HintBlock(hint="")),
            _msg("ASSISTANT", HintBlock(hint="")),
            _msg("ASSISTANT", TextBlock(text="c")),
        ],
        "empty and blank texts in tool results": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", call("c1"), call("c2"), call("c3")),
            _msg("TOOL", ToolResultBlock(id="c1", name="f", output=[TextBlock(text=x) for x in ("", "a", "")])),
            _msg("TOOL", ToolResultBlock(id="c2", name="f", output=[TextBlock(text=""), TextBlock(text="")])),
            _msg("TOOL", ToolResultBlock(id="c3", name="f", output=[TextBlock(text=" "), HintBlock(hint="  ")])),
            _msg("ASSISTANT", TextBlock(text="ok")),
        ],
        "media in tool results": [
            _msg("USER", TextBlock(text="q"), film),
            _msg("ASSISTANT", call("c1"), call("c2"), call("c3")),
            _msg("TOOL", ToolResultBlock(id="c1", name="f", output=[TextBlock(text="r"), *_NAMED_MEDIA])),
            _msg("TOOL", ToolResultBlock(id="c2", name="f", output=[film, url])),
            _msg("TOOL", ToolResultBlock(id="c3", name="f", output=[_NAMED_MEDIA[3]])),  # (no medium sent after it)
            _msg("ASSISTANT", TextBlock(text="ok")),
        ],
        "model calls in one message": [
            _msg("USER", TextBlock(text="q")),
            calls,
            _msg("USER", TextBlock(text="more")),
            theirs,
            _msg("ASSISTANT", call("c9"), name="Me"),
            first,
        ],
        # (a reply's later piece, after a result that answers none of the calls open: they are orphans before it, and
        # the hint that waited for them is sent then, in the user turn of that result, not after the piece)
        "a hint, then a later piece": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", TextBlock(text="t"), HintBlock(hint="h"), call("c2"), name="Me"),
            stray,
        ],
        # (an empty text before a call sends nothing: the text between the call and its result joins the message
        # item before the call, another message's)
        "an empty text, then a call": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", TextBlock(text="a"), name="Me"),
            _msg("ASSISTANT", TextBlock(text=""), call("c1"), name="Me"),
            _msg("ASSISTANT", TextBlock(text="b"), name="Me"),
            _msg("TOOL", result("c1")),
        ],
        # (with the repair option a result that answers no call is left out: the text before it stays in the turn of
        # the call, which the text between the call and its result still goes ahead of)
        "text, then a stray result": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", TextBlock(text="t"), call("c2"), name="Me"),
            stray_after,
            _msg("ASSISTANT", TextBlock(text="a"), name="Me"),
            _msg("TOOL", result("c2")),
        ],
        # (a hint waits for the calls to be answered: the item the request ends with is still the call, whose message
        # item the text between joins)
        "a hint waits for the calls": [
            _msg("USER", TextBlock(text="q")),
            _msg("ASSISTANT", TextBlock(text="t"), HintBlock(hint="h"), call("c3"), name="Me"),
            _msg("ASSISTANT", call("c4"), name="Me"),
            _msg("ASSISTANT", TextBlock(text="a"), name="Me"),
            _msg("TOOL", result("c3")),
        ],
        "speakers": [
            _msg("SYSTEM", TextBlock(text="You are Me."), name="Me"),
            _msg("USER", TextBlock(text="hi all"), name="Bob"),
            _msg("ASSISTANT", TextBlock(text="I think so"), name="Alice"),
            _msg("ASSISTANT", TextBlock(text="let me look"), call("c1"), name="Alice"),
            _msg("TOOL", result("c1")),
            _msg("ASSISTANT", TextBlock(text="ok"), name="Me"),
            _msg("USER", TextBlock(text=""), name="Bob"),
            _msg("ASSISTANT", url, TextBlock(text="see"), name="Carol"),
            _msg("ASSISTANT", ThinkingBlock(thinking="hm"), name="Alice"),
            _msg("ASSISTANT", HintBlock(hint="be brief"), name="Bob"),
            _msg("ASSISTANT", TextBlock(text="a"), call("c2"), name="Me"),
            _msg("ASSISTANT", TextBlock(text="meanwhile"), name="Alice"),
            _msg("ASSISTANT", TextBlock(text="wait"), name="Me"),
            _msg("TOOL", result("c2")),
            _msg("USER", url, TextBlock(text="this?")),
            _msg("ASSISTANT", TextBlock(text="yes"), name="Me"),
        ],
    }


#: the multi-agent modes the structure tests run each conversation in: the format_request arguments (``options``
#: merged with the test's own)
_MODES: dict[str, dict[str, Any]] = {
    "single": {},
    "prefix": {"multi_agent": True, "agent_name": "Me", "options": {"multi_agent_layout": "prefix"}},
    "history": {"multi_agent": True, "agent_name": "Me", "options": {"multi_agent_layout": "history"}},
    "history, no agent": {"multi_agent": True, "options": {"multi_agent_layout": "history"}},
    "reasoning as text": {"options": {"reasoning": "text"}},
}


def _mode(mode: str, repair: bool) -> dict[str, Any]:
    """The format_request (and count_tokens) arguments of a multi-agent mode, with the repair option or not."""
    args = dict(_MODES[mode])
    options = {**args.get("options", {}), **({"repair": True} if repair else {})}
    if options:
        args["options"] = options
    return args


def _sent_items(body: dict[str, Any]) -> int:
    """The messages, turns or input items a request body sends, and its system prompt when it is hoisted."""
    listed = body.get("messages") or body.get("contents") or body["input"]
    if isinstance(listed, dict):  # (DashScope native: input.messages)
        listed = listed["messages"]
    hoisted = any(key in body for key in ("system", "systemInstruction", "instructions"))
    return len(listed) + hoisted


def _names_sent(body: dict[str, Any]) -> int:
    listed = body.get("messages") or body.get("contents") or body["input"]
    listed = listed["messages"] if isinstance(listed, dict) else listed
    return sum(1 for m in listed if m.get("name") and m.get("role") != "tool")


@pytest.mark.parametrize("case", sorted(_odd_conversations()))
@pytest.mark.parametrize("provider", sorted(NAMES))
@pytest.mark.parametrize("repair", [False, True])
@pytest.mark.parametrize("mode", sorted(_MODES))
def test_the_counts_framing_is_the_requests_structure(provider: str, case: str, repair: bool, mode: str) -> None:
    """For every provider and conversations its formatter reshapes, the count frames what the request sends: with a
    message's framing made 1,000,000 tokens (more than all else), the count holds one for each message, turn or item
    the body sends (and for a hoisted system prompt), and a speaker name costs the profile's figure for each name
    the body carries. (Before: Responses framed text, call, text as one message and its reasoning items not at all,
    and charged names it does not send; the chat family framed a tool result left out of a user message; Anthropic
    and Gemini framed each hint, sent as a text part of a user turn. Then each message was framed whatever the
    request made of it: a run of one role that Anthropic and Gemini send as one turn, the system messages they and
    the Responses API send as one prompt, text sent ahead of a call in the call's message, an empty user message
    left out, each of DashScope's parallel results sent as a message; and Responses framed a hint inside a tool
    result's output. Then the chat family and Responses framed an assistant message that holds results once more
    than it is sent; the calls left open before a message that answers none were never closed, so the turn family
    never sent the hints after them; the Responses API's instruction of leading system messages with no text was
    not framed; and with the ``repair`` option, which count_tokens did not take, the error results of unanswered
    calls were not framed, nor were results that answer no call left out. And count_tokens took no ``multi_agent``:
    the multi-agent request, which sends other speakers' turns as user turns, runs of them folded into one in the
    ``history`` layout, was counted as the single-agent one.)"""
    msgs = _odd_conversations()[case]
    real = get(provider)
    options = _mode(mode, repair)
    body = real.format_request(msgs, **options).body
    big = 1_000_000
    tokens = real.spec.tokens
    assert tokens is not None
    scaled = SimpleNamespace(
        spec=attrs.evolve(real.spec, tokens=attrs.evolve(tokens, per_message=big)), format_request=real.format_request
    )
    assert count_tokens(msgs, provider=scaled, **options).total // big == _sent_items(body)
    if (
        "multi_agent" in _MODES[mode] or case == "speakers"
    ):  # (a name is also a label, who speaks, whose text goes ahead
        # of a call)
        return
    unnamed = [m.copy(name=None) if m.name else m for m in msgs]
    named = (
        count_tokens(msgs, provider=provider, **options).total
        - count_tokens(unnamed, provider=provider, **options).total
    )
    assert named == tokens.per_name * _names_sent(body)


@pytest.mark.parametrize("provider", sorted(NAMES))
def test_a_medium_sent_as_a_placeholder_counts_as_the_placeholder_text(provider: str) -> None:
    """A medium the formatter sends as the text placeholder naming it (said ``media-unsupported``: Anthropic's audio,
    video and other files; OpenAI Chat's video and audio but WAV and MP3; Gemini's web URL of no known MIME type,
    whose placeholder joins a tool result's output text; Anthropic's plain text whose inline bytes are not UTF-8;
    ...) is counted as that text, in a user turn and in a tool result alike: the request is the one of the
    conversation holding the placeholder's text in the medium's place, and so is the count. (It was priced as the
    medium: Gemini's unknown-type URL image in a tool result as 1,032 tokens for the 10 its placeholder sends, an
    Anthropic video as 2,630, Anthropic's non-UTF-8 plain text as its text, 734 tokens for the 14 sent, and OpenAI
    Chat framed a user message for a tool result's video it never sends.) A base64 image beside it keeps the output a list of parts where the request
    would join texts alone into one (the Responses API)."""
    from agentmsg.providers._request.context import block_label

    image = ImageBlock(source=Base64Source(media_type="image/png", data=base64.b64encode(_images.png(8, 8)).decode()))

    def conversation(medium: Any, in_result: bool) -> list[Msg]:
        user = [TextBlock(text="q"), *([] if in_result else [medium])]
        output = [TextBlock(text="r"), *([medium, image] if in_result else [])]
        return [
            _msg("USER", *user),
            _msg("ASSISTANT", ToolUseBlock(id="c1", name="f", input={})),
            _msg("TOOL", ToolResultBlock(id="c1", name="f", output=output)),
            _msg("ASSISTANT", TextBlock(text="ok")),
        ]

    real = get(provider)
    checked = 0
    for medium in [*_NAMED_MEDIA, *_NOT_UTF8_TEXT]:
        for in_result in (False, True):
            msgs = conversation(medium, in_result)
            request = real.format_request(msgs)
            pointer = "/2/content/0/output/1" if in_result else "/0/content/1"
            if ("media-unsupported", pointer) not in {(p.rule, p.pointer) for p in request.diagnostics}:
                continue  # (sent as a medium)
            named = conversation(TextBlock(text=block_label(medium)), in_result)
            if provider != "dashscope":  # (its native request holding a medium is multimodal: the same texts, as parts)
                assert real.format_request(named).body == request.body
            assert count_tokens(msgs, provider=provider) == count_tokens(named, provider=provider), (medium, in_result)
            checked += 1
    assert checked > 0


#: the metadata of the reasoning _merging_conversation draws: the provider's own (none, signed, redacted with its data
#: or without, of a reasoning item with its encrypted content or without), another provider's
_THOUGHTS: list[dict[str, Any] | None] = [
    None,
    {"signature": "c2ln"},
    {"signature": "not base64!"},
    {"redacted": True},
    {"redacted": True, "redactedData": "ZGF0YQ=="},
    {"itemId": "rs_1", "signature": "c2ln"},
    {"itemId": "rs_2"},
    {"provider": "some-other-provider"},
]


_URL_IMAGE = ImageBlock(source=URLSource(url="https://example.com/cat.png"))


def _merging_conversation(rng: random.Random) -> list[Msg]:
    """1-7 messages of the shapes the formatters reshape across messages: user and system texts (empty, blank or
    none), assistant texts, calls (with text, an empty text, a medium, text and a hint before them, or nothing), their
    results in tool messages or in assistant messages (with text before or after), hints (empty or blank at times,
    which some formatters leave out), calls left unanswered, and reasoning (the provider's own, signed, with a
    signature not base64, or not, empty, redacted, of a reasoning item, or another provider's; alone, before a text or
    before a call)."""
    out: list[Msg] = []
    open_calls: list[str] = []
    for k in range(rng.randint(1, 7)):
        kind = rng.randint(0, 8)
        if kind == 0:
            out.append(_msg("USER", *[TextBlock(text=rng.choice(["q", "", " "]))] * rng.randint(0, 2)))
        elif kind == 1:
            out.append(_msg("ASSISTANT", *[TextBlock(text=rng.choice(["a", "", " "]))] * rng.randint(1, 2)))
        elif kind == 2:
            open_calls.append(f"c{k}")
            before: list[ContentBlock] = rng.choice(
                [
                    [],
                    [TextBlock(text="t")],
                    [TextBlock(text="")],
                    [_URL_IMAGE],
                    [TextBlock(text="t"), HintBlock(hint=rng.choice(["h", "", " "]))],
                ]
            )
            out.append(_msg("ASSISTANT", *before, ToolUseBlock(id=f"c{k}", name="f", input={})))
        elif kind in (3, 4) and open_calls:
            result = ToolResultBlock(id=open_calls.pop(0), name="f", output=[TextBlock(text="r")])
            if kind == 3:
                out.append(_msg("TOOL", result))
            else:
                where = rng.random()
                blocks = [TextBlock(text="pre"), result] if where < 0.3 else [result, TextBlock(text="post")]
                out.append(_msg("ASSISTANT", *(blocks if where < 0.6 else [result])))
        elif kind == 5:
            out.append(_msg("SYSTEM", *[TextBlock(text=rng.choice(["s", "", " "]))] * rng.randint(0, 2)))
        elif kind == 6:
            out.append(_msg("ASSISTANT", HintBlock(hint=rng.choice(["h", "", " "]))))
        elif kind == 7:
            thought = ThinkingBlock(thinking=rng.choice(["r", ""]), metadata=rng.choice(_THOUGHTS))
            after: list[Any] = rng.choice([[], [TextBlock(text="a")], [ToolUseBlock(id=f"c{k}", name="f", input={})]])
            if after and type(after[0]) is ToolUseBlock:
                open_calls.append(f"c{k}")
            out.append(_msg("ASSISTANT", *([TextBlock(text="t")] if rng.random() < 0.3 else []), thought, *after))
        else:
            out.append(_msg("USER", TextBlock(text="u")))
    return out


@pytest.mark.fuzz
@pytest.mark.parametrize("provider", sorted(NAMES))
@pytest.mark.parametrize("repair", [False, True])
@pytest.mark.parametrize("mode", sorted(_MODES))
def test_the_counts_framing_is_the_requests_structure_for_random_conversations(
    provider: str, repair: bool, mode: str
) -> None:
    """The structure test above, over seeded random conversations of the shapes the formatters merge, split or leave
    out across messages: the count's framing (``_frames.Frames``, which restates the formatters' rules to stay one
    cheap pass) must open exactly the messages, turns or items each formatted body sends. (A run of 3,000
    conversations a provider found the Responses API's merge cases the written ones missed.) In the multi-agent modes
    each user and assistant message is given a speaker (the current agent's, another's, or none), at random."""
    real = get(provider)
    tokens = real.spec.tokens
    assert tokens is not None
    big = 1_000_000
    scaled = SimpleNamespace(
        spec=attrs.evolve(real.spec, tokens=attrs.evolve(tokens, per_message=big)), format_request=real.format_request
    )
    options = _mode(mode, repair)
    rng = random.Random(f"{SEED}-{provider}-{repair}" + ("" if mode == "single" else f"-{mode}"))
    checked = 0
    for _ in rounds(150):
        msgs = _merging_conversation(rng)
        if "multi_agent" in _MODES[mode]:
            msgs = [
                m.copy(name=rng.choice(["Me", "Alice", None])) if m.role in ("USER", "ASSISTANT") else m for m in msgs
            ]
        try:
            body = real.format_request(msgs, **options).body
        except ValidationError:
            continue  # (a conversation the formatter refuses: nothing is sent to count)
        got = count_tokens(msgs, provider=scaled, **options).total // big
        assert got == _sent_items(body), [(m.role, [b.type for b in m.content]) for m in msgs]
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("layout", ["prefix", "history"])
@pytest.mark.parametrize("agent", ["Me", None])
def test_the_multi_agent_text_counts_as_the_tokens_of_the_text_sent(layout: str, agent: str | None) -> None:
    """For a provider whose tokenizer is its own (OpenAI, o200k), the multi-agent count of a conversation of texts is
    the tokens of the text the body sends (each content encoded with the same tokenizer), plus the framing of each
    message sent and of each name: in the prefix layout ``[Name]: text``; in the history layout each run of other
    speakers' turns one user turn (the prompt, ``<history>``, one line ``Name: text`` for each text, ``</history>``).
    (count_tokens took no ``multi_agent``: it counted the single-agent request, which sends neither labels nor the
    history turn; 57 tokens the body sends were not counted for the history layout here, 13 for the prefix one.)"""
    msgs = [
        _msg("SYSTEM", TextBlock(text="You are Me, one of three agents.")),
        _msg("USER", TextBlock(text="Plan the trip to Lisbon."), TextBlock(text="Budget: 900 EUR."), name="Bob"),
        _msg("ASSISTANT", TextBlock(text="Flights first; I found one at 240 EUR."), name="Alice"),
        _msg("ASSISTANT", TextBlock(text="Hotels near Alfama run 90 EUR a night."), name="Carol"),
        _msg("ASSISTANT", TextBlock(text="Then 240 + 5 x 90 = 690 EUR, within budget."), name="Me"),
        _msg("USER", TextBlock(text="And food?"), name="Bob"),
        _msg("ASSISTANT", TextBlock(text="About 40 EUR a day."), name="Alice"),
        _msg("ASSISTANT", TextBlock(text="So 890 EUR in all."), name="Me"),
    ]
    args: dict[str, Any] = {"multi_agent": True, "agent_name": agent, "options": {"multi_agent_layout": layout}}
    real = get("openai")
    tokens = real.spec.tokens
    assert tokens is not None
    body = real.format_request(msgs, **args).body
    sent = body["messages"]
    enc = _tokenizers.counter("o200k_base")

    def encoded(content: str | list[dict[str, Any]]) -> int:  # (a string, or text parts: each sent as a text)
        return enc.count(content) if isinstance(content, str) else sum(enc.count(p["text"]) for p in content)

    text = sum(encoded(m["content"]) for m in sent)
    framing = tokens.per_message * len(sent) + tokens.per_name * _names_sent(body)
    n = count_tokens(msgs, provider="openai", **args)
    assert n.method == "tokenizer:o200k_base"
    assert sum(n.messages) == text + framing
    if layout == "history":  # (the history turns' text, on the messages folded into them)
        folded = [i for i, m in enumerate(msgs) if m.role.value != "SYSTEM" and m.name != agent]
        turns = [m["content"] for m in sent if "<history>" in m["content"]]
        assert len(turns) == (2 if agent else 1)
        assert sum(n.messages[i] for i in folded) == sum(map(encoded, turns)) + tokens.per_message * len(turns)


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "dashscope", "dashscope-compatible"])
def test_text_the_request_joins_to_text_before_it_counts_the_joining_newline(provider: str) -> None:
    """Text between a call and its result joins the text of the call's message (a chat message's content, a
    Responses message item) by a newline, as the Responses API joins its leading system messages into one
    instruction: the request is the one of the conversation whose messages hold the joined texts already, and so is
    the count, newline included (it counted none: 1 token short for each joining newline)."""
    call = ToolUseBlock(id="c1", name="f", input={"a": 1})
    answer = _msg("TOOL", ToolResultBlock(id="c1", name="f", output=[TextBlock(text="r")]))
    check, wait = TextBlock(text="Let me check"), TextBlock(text="it may take a while")
    cases = [
        (
            [_msg("USER", TextBlock(text="q")), _msg("ASSISTANT", check, call), _msg("ASSISTANT", wait), answer],
            [_msg("USER", TextBlock(text="q")), _msg("ASSISTANT", check, wait, call), answer],
        ),
    ]
    if provider == "openai-responses":
        cases.append(
            (
                [_msg("SYSTEM", check), _msg("SYSTEM", wait), _msg("USER", TextBlock(text="q"))],
                [_msg("SYSTEM", check, wait), _msg("USER", TextBlock(text="q"))],
            )
        )
    for msgs, joined in cases:
        real = get(provider)
        assert real.format_request(msgs).body == real.format_request(joined).body
        assert count_tokens(msgs, provider=provider).total == count_tokens(joined, provider=provider).total


@pytest.mark.parametrize("entry", ["count_tokens", "trim", "place_cache_markers"])
def test_a_message_changed_to_what_to_json_refuses_is_refused_as_the_formatters_refuse_it(entry: str) -> None:
    """A field set after construction to what its schema does not allow: the formatters refuse it under the
    message's index with to_json's rule; the count, trim and the cache helper raised a bare TypeError (a text or a
    result's output set to None) or counted it (a NaN in a tool's input)."""
    from agentmsg import context

    cases: list[tuple[Callable[[Any], Any], str, str]] = [
        (lambda m: m.content[1].input.__setitem__("x", float("nan")), "/1/content/1/input/x", "json-value"),
        (lambda m: setattr(m.content[0], "text", None), "/1/content/0/text", "type"),
        (lambda m: setattr(m.content[1], "name", None), "/1/content/1/name", "type"),
        (lambda m: setattr(m, "content", None), "/1/content", "type"),
        (lambda m: m.content.append(object()), "/1/content/2", "json-value"),
    ]
    for change, pointer, rule in cases:
        msg = Msg(role="ASSISTANT", content=[TextBlock(text="hi"), ToolUseBlock(id="c1", name="f", input={})])
        change(msg)
        conversation = [UserMessage("q"), msg]
        with pytest.raises(ValidationError) as formatted:
            get("anthropic").format_request(conversation)
        with pytest.raises(ValidationError) as exc:
            if entry == "trim":
                context.trim(conversation, 10_000, provider="anthropic")
            else:
                getattr(context, entry)(conversation, provider="anthropic")
        said = [(p.pointer, p.rule) for p in exc.value.problems]
        assert said == [(p.pointer, p.rule) for p in formatted.value.problems] == [(pointer, rule)], entry


def test_options_that_are_not_the_formatters_are_refused_naming_them() -> None:
    """count_tokens takes the formatter's options (for ``repair``), as format_request does: anything else is a
    ValidationError at ``/options``, as format_request raises it."""
    msgs = [_msg("USER", TextBlock(text="q"))]
    for bad in ({"repiar": True}, 3):
        with pytest.raises(ValidationError) as info:
            count_tokens(msgs, provider="openai", options=bad)  # type: ignore[arg-type]
        assert [p.pointer for p in info.value.problems] == ["/options"]
    assert count_tokens(msgs, provider="openai", options={"repair": True}) == count_tokens(msgs, provider="openai")


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "dashscope", "dashscope-compatible"])
def test_repair_results_count_as_the_results_the_formatter_adds(provider: str) -> None:
    """With the ``repair`` option the formatter answers each unanswered call with an error result (before the message
    that answers none, or at the end) and leaves out a result that answers no call: the request is the one of the
    conversation that holds those results and not the stray one, and so is the count (count_tokens took no options:
    neither was counted)."""
    from agentmsg.providers._request.context import REPAIR_TEXT

    def result(cid: str, text: str) -> Msg:
        return _msg("TOOL", ToolResultBlock(id=cid, name="f", output=[TextBlock(text=text)]))

    call = [_msg("ASSISTANT", ToolUseBlock(id=f"c{k}", name="f", input={"a": k})) for k in range(3)]
    ask, stray = _msg("USER", TextBlock(text="next")), result("c9", "stray")
    msgs = [_msg("USER", TextBlock(text="q")), call[0], ask, call[1], result("c1", "r"), stray, call[2]]
    repaired = [msgs[0], call[0], result("c0", REPAIR_TEXT), ask, call[1], result("c1", "r"), call[2]]
    repaired.append(result("c2", REPAIR_TEXT))
    real = get(provider)
    repair = {"repair": True}
    assert real.format_request(msgs, options=repair).body == real.format_request(repaired).body
    assert (
        count_tokens(msgs, provider=provider, options=repair).total == count_tokens(repaired, provider=provider).total
    )


@pytest.mark.parametrize("provider", sorted(NAMES))
def test_an_error_result_and_a_repair_result_count_the_error_flag_sent(provider: str) -> None:
    """The error result the ``repair`` option adds is sent as a result in an error state (Anthropic's with
    ``is_error: true``): the request is the one of the conversation holding that result, and so is the count. A
    provider whose request carries the flag (``TokenProfile.per_error``: Anthropic's) prices it on both, stating its
    error (its rendering is not published); the others send an error result as the same text (the chat family, the
    Responses API) or under another key (Gemini's ``error``), priced as any result. (The flag was not priced.)"""
    from agentmsg.providers._request.context import REPAIR_TEXT

    def conversation(*answer: Msg) -> list[Msg]:
        call = _msg("ASSISTANT", ToolUseBlock(id="c1", name="f", input={"a": 1}))
        return [_msg("USER", TextBlock(text="q")), call, *answer, _msg("USER", TextBlock(text="next"))]

    def result(**state: Any) -> Msg:
        return _msg("TOOL", ToolResultBlock(id="c1", name="f", output=[TextBlock(text=REPAIR_TEXT)], **state))

    real = get(provider)
    tokens = real.spec.tokens
    assert tokens is not None
    unanswered, failed, answered = conversation(), conversation(result(state="error")), conversation(result())
    repair = {"repair": True}
    assert real.format_request(unanswered, options=repair).body == real.format_request(failed).body
    repaired = count_tokens(unanswered, provider=provider, options=repair)
    explicit = count_tokens(failed, provider=provider)  # (the same, but on a message of its own)
    assert (repaired.total, repaired.error) == (explicit.total, explicit.error)
    plain = count_tokens(answered, provider=provider)
    flagged = "is_error" in str(real.format_request(failed).body)
    assert (tokens.per_error > 0) == flagged
    assert repaired.total - plain.total == tokens.per_error
    if flagged:
        assert repaired.error is not None and plain.error is not None and repaired.error > plain.error


@pytest.mark.parametrize("provider", sorted(NAMES))
def test_reasoning_sent_as_text_counts_as_that_text(provider: str) -> None:
    """With the option ``reasoning="text"`` a formatter sends reasoning from another provider as text in its place
    (a chat message's joined content, a text part, a Responses message item's text): the request is the one of the
    conversation holding that text as text blocks, and so is the count. (It was not counted: 21 o200k tokens short
    for openai here.) Without the option it is left out, and not counted (Gemini's count, which counts all reasoning,
    counted it)."""
    thought = "The user wants a short answer; the capital of France is Paris, so say that plainly and stop."
    foreign = ThinkingBlock(thinking=thought, metadata={"provider": "some-other-provider"})
    question, thanks = _msg("USER", TextBlock(text="Capital of France?")), _msg("USER", TextBlock(text="thanks"))
    msgs = [question, _msg("ASSISTANT", foreign, TextBlock(text="Paris.")), thanks]
    as_text = [question, _msg("ASSISTANT", TextBlock(text=thought), TextBlock(text="Paris.")), thanks]
    options = {"reasoning": "text"}
    real = get(provider)
    assert real.format_request(msgs, options=options).body == real.format_request(as_text).body
    counted = count_tokens(msgs, provider=provider, options=options)
    assert counted == count_tokens(as_text, provider=provider)
    # (without the option it is left out, and not counted: Gemini's count, which counts all reasoning, counted it)
    dropped = [question, _msg("ASSISTANT", TextBlock(text="Paris.")), thanks]
    assert real.format_request(msgs).body == real.format_request(dropped).body
    assert count_tokens(msgs, provider=provider) == count_tokens(dropped, provider=provider)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai-responses"])
def test_own_reasoning_sent_as_text_counts_as_that_text(provider: str) -> None:
    """A provider's own reasoning that its formatter sends as no reasoning (OpenAI Chat's, which has no reasoning
    field; Anthropic's unsigned; the Responses API's of no reasoning item) is left out, and with ``reasoning="text"``
    sent as text in its place: the request is the one of the conversation holding that text as a text block, or
    none, and so is the count. (With the option it was not counted, 21 o200k tokens short for openai here; without
    it, Anthropic's count priced the unsigned reasoning of the current turn, which is not sent.)"""
    thought = "The user wants a short answer; the capital of France is Paris, so say that plainly and stop."
    question = _msg("USER", TextBlock(text="Capital of France?"))
    real = get(provider)
    for own in (ThinkingBlock(thinking=thought), ThinkingBlock(thinking=thought, metadata={"provider": provider})):
        msgs = [question, _msg("ASSISTANT", own, TextBlock(text="Paris."))]
        as_text = [question, _msg("ASSISTANT", TextBlock(text=thought), TextBlock(text="Paris."))]
        dropped = [question, _msg("ASSISTANT", TextBlock(text="Paris."))]
        for options, sent in (({"reasoning": "text"}, as_text), ({}, dropped)):
            assert real.format_request(msgs, options=options).body == real.format_request(sent).body
            assert count_tokens(msgs, provider=provider, options=options) == count_tokens(sent, provider=provider)


@pytest.mark.parametrize(
    ("provider", "blank"),
    [("dashscope", False), ("dashscope-compatible", False), ("anthropic", True), ("gemini", True)],
)
def test_texts_and_hints_the_formatter_leaves_out_are_not_counted(provider: str, blank: bool) -> None:
    """DashScope leaves out an empty text before joining an assistant's texts by newlines, and an empty hint; the turn
    family (Anthropic, Gemini) a blank hint too: the request is the one of the conversation without them, and so is
    the count. (DashScope's count joined the empty texts, one token over here, and framed the empty hint as the
    message it is not; Anthropic's and Gemini's priced the blank hint, and then the blank texts of a user or an
    assistant message, which they leave out too.)"""

    def sent(text: str) -> bool:
        return bool(text.strip() if blank else text)

    question = _msg("USER", TextBlock(text="Capital of France?"))
    blocks: list[TextBlock | HintBlock] = [TextBlock(text=x) for x in ("", "Paris.", "", " ", "", "It is.")]
    blocks += [HintBlock(hint=""), HintBlock(hint=" ")]
    asked = [TextBlock(text=x) for x in (" ", "thanks", "  ")]
    msgs = [question, _msg("ASSISTANT", *blocks), _msg("USER", *asked)]
    kept = [b for b in blocks if sent(b.text if isinstance(b, TextBlock) else b.hint)]
    without = [question, _msg("ASSISTANT", *kept), _msg("USER", *[b for b in asked if sent(b.text)])]
    real = get(provider)
    assert real.format_request(msgs).body == real.format_request(without).body
    assert count_tokens(msgs, provider=provider) == count_tokens(without, provider=provider)


#: tool result outputs of empty and blank texts, which formatters join into one text (the chat family,
#: the Responses API, Gemini) or send as parts, leaving out the blank ones (Anthropic)
_BLANK_OUTPUTS: list[list[Any]] = [
    [TextBlock(text=""), TextBlock(text="a"), TextBlock(text="")],
    [TextBlock(text=""), TextBlock(text="")],
    [TextBlock(text="")],
    [],
    [TextBlock(text=" "), TextBlock(text="a")],
    [TextBlock(text="  "), TextBlock(text=" ")],
    [TextBlock(text="a"), TextBlock(text=""), TextBlock(text="b")],
    [TextBlock(text="a"), TextBlock(text=" "), TextBlock(text="")],
]


@pytest.mark.parametrize("output", range(len(_BLANK_OUTPUTS)))
@pytest.mark.parametrize("provider", [*sorted(NAMES), "dashscope multimodal"])
def test_a_tool_results_empty_and_blank_texts_count_as_sent(provider: str, output: int) -> None:
    """A tool result's empty and blank texts: the request is the one of the conversation whose result holds the text
    the formatter sends, its texts joined by newlines into one (the chat family, the Responses API, Gemini: an empty
    text still adds its newline) or the parts it keeps (Anthropic leaves out a blank one), and so is the count. (The
    Responses API's count priced each text alone, without the newlines its one output string holds: ``["", "a", ""]``
    counted 2 o200k tokens short, stating no error; Gemini's likewise; Anthropic's priced the blank texts it leaves
    out.)"""
    name, _, multimodal = provider.partition(" ")
    model = "qwen-vl-max" if multimodal else None
    real = get(name)
    blocks = _BLANK_OUTPUTS[output]

    def conversation(out: list[Any]) -> list[Msg]:
        result = ToolResultBlock(id="c1", name="f", output=out)
        call = ToolUseBlock(id="c1", name="f", input={})
        return [_msg("USER", TextBlock(text="q")), _msg("ASSISTANT", call), _msg("TOOL", result)]

    joined = [TextBlock(text="\n".join(b.text for b in blocks))] if blocks else []
    kept = [b for b in blocks if b.text.strip()]
    body = real.format_request(conversation(blocks), model=model).body
    sent = [out for out in (joined, kept) if real.format_request(conversation(out), model=model).body == body]
    assert sent, "the body is neither the joined text's nor the kept parts'"
    found = count_tokens(conversation(blocks), provider=name, model=model)
    assert found == count_tokens(conversation(sent[0]), provider=name, model=model)


#: tool definitions some formatter refuses: an OpenAI custom tool, each provider's own tool, two tools of one name
REFUSED_TOOLS: dict[str, list[dict[str, Any]]] = {
    "custom": [{"type": "custom", "name": "sql", "format": {"type": "grammar", "syntax": "lark", "definition": "s"}}],
    "anthropic-own": [{"type": "web_search_20250305", "name": "web_search"}],
    "gemini-own": [{"googleSearch": {}}],
    "responses-own": [{"type": "file_search", "vector_store_ids": ["vs_1"]}],
    "duplicate": [{"name": "f", "parameters": {"type": "object"}}, {"name": "f"}],
}
#: the providers that take each of them
TAKEN_BY: dict[str, set[str]] = {
    "custom": {"openai", "openai-responses"},
    "anthropic-own": {"anthropic"},
    "gemini-own": {"gemini"},
    "responses-own": {"openai-responses"},
    "duplicate": set(),
}


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("case", sorted(REFUSED_TOOLS))
def test_tools_the_formatter_refuses_are_refused_by_the_count_as_it_refuses_them(provider: str, case: str) -> None:
    """The count is of the request the formatter would send: the tools its formatter refuses (a custom tool where the
    provider takes none, another provider's own tool, two of one name) were counted; the count raises the
    formatter's ValidationError (pointer, rule and message), and counts the tools it takes."""
    msgs = [UserMessage("hi")]
    tools = REFUSED_TOOLS[case]
    if provider in TAKEN_BY[case]:
        get(provider).format_request(msgs, tools=tools)
        assert count_tokens(msgs, provider=provider, tools=tools).tools > 0
        return
    with pytest.raises(ValidationError) as formatted:
        get(provider).format_request(msgs, tools=tools)
    with pytest.raises(ValidationError) as counted:
        count_tokens(msgs, provider=provider, tools=tools)
    assert counted.value.problems == formatted.value.problems
    assert str(counted.value) == str(formatted.value)


#: tool definitions no request body carries as given, with the pointer and rule of the leaf refused
UNWRITTEN_TOOLS: dict[str, tuple[list[dict[str, Any]], str, str]] = {
    "description": (
        [{"name": "f", "description": "a\ud800b", "parameters": {"type": "object"}}],
        "/tools/0/description",
        "lone-surrogate",
    ),
    "key": (
        [
            {
                "type": "function",
                "function": {"name": "f", "parameters": {"properties": {"a\udc00": {"type": "string"}}}},
            }
        ],
        "/tools/0/function/parameters/properties",
        "lone-surrogate",
    ),
    "enum": (
        [WEATHER, {"name": "g", "parameters": {"properties": {"u": {"type": "string", "enum": ["c", "\udfff"]}}}}],
        "/tools/1/parameters/properties/u/enum/1",
        "lone-surrogate",
    ),
    "own-tool": ([{"googleSearch": {"q": "\ud83d"}}], "/tools/0/googleSearch/q", "lone-surrogate"),
    # (an integer past Python's 4,300 digits: body_bytes refused it at "", and the count counted it on two providers)
    "digits": (
        [{"name": "f", "parameters": {"properties": {"a": {"maximum": 10**5000}}}}],
        "/tools/0/parameters/properties/a/maximum",
        "integer-range",
    ),
    # (refused before: here for the pure-Python quick test, whose orjson writes NaN as null)
    "nan": (
        [{"name": "f", "parameters": {"properties": {"a": {"maximum": math.nan}}}}],
        "/tools/0/parameters/properties/a/maximum",
        "json-value",
    ),
}


@pytest.mark.parametrize("kernel", ["c", "python"])
@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("case", sorted(UNWRITTEN_TOOLS))
def test_a_tool_leaf_no_body_carries_is_refused_alike_at_its_pointer(
    provider: str, case: str, kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone UTF-16 surrogate in a tool definition (its description, a schema key, an enum string, a provider's own
    tool) passed format_request on every provider and only body_bytes refused it, at its pointer in the body;
    count_tokens counted it on openai and openai-responses and refused it elsewhere at a pointer without its
    /tools/N. Both refuse it now, at its /tools/N pointer, rule lone-surrogate, in the body writer's words: the
    same error, with the C writer's quick test and with the pure-Python one. An integer of more digits than Python
    writes (10**5000) was refused by body_bytes at pointer "" and counted on two providers: refused alike too."""
    if kernel == "python":
        monkeypatch.setattr(jsontext, "_native_writes", None, raising=False)
    msgs = [UserMessage("hi")]
    tools, pointer, rule = UNWRITTEN_TOOLS[case]
    with pytest.raises(ValidationError) as formatted:
        get(provider).format_request(msgs, tools=tools)
    assert [(p.pointer, p.rule) for p in formatted.value.problems] == [(pointer, rule)]
    if rule == "lone-surrogate":
        said = "holds a lone UTF-16 surrogate (not encodable as UTF-8): no JSON body carries it"
        assert said in formatted.value.problems[0].message
    with pytest.raises(ValidationError) as counted:
        count_tokens(msgs, provider=provider, tools=tools)
    assert counted.value.problems == formatted.value.problems
    assert str(counted.value) == str(formatted.value)


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-2.0-flash", "gemini-1.5-pro"])
def test_a_gemini_own_tool_counts_as_its_json_whatever_the_models_tool_scale(model: str) -> None:
    """Gemini 1.x and 2.0 count function declarations at about a third of their JSON (``tools_scale`` 0.3, measured
    on declarations); its own tools (``{"google_search": {}}``, rendered as Gemini sees fit) were scaled so too,
    where every other provider's own tool counts as its JSON's estimate (error 1.0): on gemini-2.0-flash an own tool
    counted less than a function declaration of the same JSON size. Now an own tool counts as its JSON, and its
    per-tool framing, on every model: at least as much as a function tool of the same size."""
    msgs = [UserMessage("q")]
    fn = {"name": "timeRangeFilter", "parameters": {"startTime": "2024-01-01T00:00:00Z", "endTime": "2025-01-01"}}
    own = {"googleSearch": {"timeRangeFilter": {"startTime": "2024-01-01T00:00:00Z", "endTime": "2025-01-01T0Z"}}}
    assert len(orjson.dumps(own)) == len(orjson.dumps(fn))
    counted = count_tokens(msgs, provider="gemini", model=model, tools=[own])
    assert counted.tools >= count_tokens(msgs, provider="gemini", model=model, tools=[fn]).tools
    tokens = get("gemini").spec.tokens
    assert tokens is not None
    profile = tokens.for_model(model)
    latest = count_tokens(msgs, provider="gemini", model="gemini-2.5-flash", tools=[own])
    assert counted.tools - profile.per_tool == latest.tools - tokens.per_tool


@pytest.mark.parametrize("provider", ["openai", "dashscope-compatible", "anthropic"])
def test_bad_input_is_refused_before_any_vocabulary_loads(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages, options and tools are checked before the tokenizer's vocabulary is asked for: refusing them loads
    none (OpenAI's and Qwen's take a fresh process 1-2 s), and the refusal is the checks' own."""
    from agentmsg.context import count as count_module

    def no_vocabulary(name: str) -> Any:
        raise AssertionError(f"vocabulary {name!r} loaded before the input was checked")

    monkeypatch.setattr(count_module, "counter", no_vocabulary)
    msgs = [_msg("USER", TextBlock(text="q"))]
    bad_calls: list[Callable[[], Any]] = [
        lambda: count_tokens([msgs[0], "no message"], provider=provider),  # type: ignore[list-item]
        lambda: count_tokens(msgs, provider=provider, options={"repiar": True}),
        lambda: count_tokens(msgs, provider=provider, tools=[{"name": "f", "parameters": {"enum": [float("nan")]}}]),
    ]
    for call in bad_calls:
        with pytest.raises(ValidationError):
            call()
    with pytest.raises(AssertionError, match="loaded before"):  # (a good request does load it)
        count_tokens(msgs, provider=provider)
