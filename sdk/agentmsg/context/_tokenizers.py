"""The text counters behind :func:`agentmsg.context.count_tokens`: a real tokenizer where one is installed and runs
offline with the vocabulary its wheel ships, else an estimate from the text's characters.

- ``o200k_base`` / ``cl100k_base``: OpenAI's BPE vocabularies, from ``bpe-openai`` (MIT; the extra
  ``agentmsg[count]``). Its wheel bundles the files byte-identical to OpenAI's published ones, so nothing is
  downloaded at first use (tiktoken downloads them: shared reference, provider-fields.md section 7).
- ``qwen``: the Qwen BPE vocabulary ``dashscope`` (Apache-2.0) ships in its wheel (``resources/qwen.tiktoken``),
  read through dashscope's own tokenizer; nothing downloaded either.
- ``chars``: no tokenizer: about four bytes of ASCII text per token, one token per CJK character, two per other
  non-ASCII character (emoji, accents), measured against o200k on the corpus in ``tests/fixtures/context``.

No vocabulary is loaded before a count asks for it, and each is loaded once per process, by one thread: the others
wait for it (:data:`_LOADING`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import threading
import warnings
from collections.abc import Callable
from typing import Any, Final
from unicodedata import normalize

import attrs

__all__ = ["TextCounter", "chars_estimate", "counter"]

#: ASCII text, CJK ideographs / kana / hangul, everything else
_ASCII: Final = re.compile(r"[\x00-\x7f]+")
_CJK: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


@attrs.frozen
class TextCounter:
    """``count(text)`` -> tokens. ``name``: the vocabulary (``o200k_base``, ``qwen``, ``chars``); ``exact``: a real
    tokenizer (else an estimate); ``missing``: the package (its pip name) that would count exactly, when this is the
    estimate standing in for a vocabulary whose package is not installed (:data:`PACKAGES`)."""

    name: str
    exact: bool
    count: Callable[[str], int]
    missing: str | None = None


def chars_estimate(text: str) -> int:
    """Tokens of ``text`` without a tokenizer: ASCII runs at 4 bytes per token (at least one per run), one per CJK
    character, two per other non-ASCII character."""
    if not text:
        return 0
    if text.isascii():
        return (len(text) + 3) // 4
    ascii_runs = _ASCII.findall(text)
    ascii_len = sum(len(r) for r in ascii_runs)
    cjk = len(_CJK.findall(text))
    other = len(text) - ascii_len - cjk
    return (ascii_len + 3) // 4 + cjk + 2 * other


CHARS: Final = TextCounter("chars", False, chars_estimate)


@functools.cache
def _bpe_openai(name: str) -> TextCounter | None:
    if importlib.util.find_spec(_module(name)) is None:
        return None
    with warnings.catch_warnings():  # bpe-openai 0.1.4 reads its data with importlib.resources.open_binary
        warnings.simplefilter("ignore", DeprecationWarning)
        # (imported by name: an optional, untyped package that type checkers of user code need not follow; its
        # import reads cl100k already)
        bpe_openai = importlib.import_module("bpe_openai")
        enc: Any = bpe_openai.get_encoding(name)
        enc.encode_ordinary("load")  # (the vocabulary is read at the first encoding)
    encode = enc.encode_ordinary
    # its Python encode_ordinary wraps its Rust tokenizer's encode in three calls and a list of the tokens, about half
    # the cost of counting a short text: the tokenizer's own count gives the same number at once (a text of a lone
    # surrogate, which it refuses, is encoded as encode_ordinary replaces it; a longer text is cut into pieces
    # anyway). Where the pinned version's tokenizer is not there, or counts otherwise, encode_ordinary counts.
    native: Any = getattr(getattr(enc, "_backend", None), "count", None)
    if native is None or native(_PROBE) != len(encode(_PROBE)):
        native = None

    def count(text: str) -> int:
        if len(text) <= PIECE:
            if not text:
                return 0
            if native is not None:
                try:
                    return int(native(text))
                except UnicodeEncodeError:
                    pass
            return len(encode(text))
        return sum(len(encode(piece)) for piece in pieces(text))

    return TextCounter(name, True, count)


#: a text the native count is checked on before it is used: words, digits, punctuation, accents, CJK, an emoji
_PROBE: Final = "Hello, world! 12345 \u00e9t\u00e9 \u65e5\u672c\u8a9e \U0001f600\n\tend"

#: bpe-openai refuses a text of 1,000,000 characters or more ("Input too long to encode safely") and one that gives
#: more than 200,000 tokens (its chunk limit): a longer text is encoded in pieces of at most this many characters
#: (at most 4 tokens each: one per UTF-8 byte), and their counts summed
PIECE: Final = 50_000

#: a text up to its last space that follows a character other than whitespace (``\\s`` is what ``str.isspace``
#: takes): the greedy ``.*`` walks back from the end in the regex engine, not one Python step per character
_LAST_CUT: Final = re.compile(r"(?s).*\S(?= )")


def pieces(text: str, size: int = PIECE) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, each cut before a space that follows a character
    other than whitespace, where the o200k and cl100k pre-tokenizers always start a new piece (no pattern of theirs
    takes a space after such a character): the pieces' tokens are the whole text's. A stretch of ``size``
    characters with no such space (CJK text, base64) is cut where it ends, which may count a token or two more
    there."""
    out: list[str] = []
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = text.rfind(" ", start + 1, end)
        if cut > start and text[cut - 1].isspace():  # (a run of whitespace: its last space after another character)
            found = _LAST_CUT.match(text, start, cut)
            cut = -1 if found is None else found.end()
        if cut <= start:
            cut = end
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


@functools.cache
def _qwen() -> TextCounter | None:
    if importlib.util.find_spec(_module("qwen")) is None:
        return None
    tokenizers = importlib.import_module("dashscope.tokenizers")  # (optional: imported by name, as bpe_openai)
    tok: Any = tokenizers.get_tokenizer("qwen-plus")
    encode = tok.encode
    # dashscope's encode takes every special token ("all"), which tiktoken hands to its Rust core as a set of 208
    # strings on each call: about six times the cost of encoding a short text. A text that holds none of them (all
    # ``<|...|>``) encodes the same without them, so one is encoded ordinarily after the same NFC normalization, up
    # to a length dashscope encodes at once (its encode cuts a longer one at its lines); any other text by its encode.
    core: Any = getattr(tok, "_tokenizer", None)  # (dashscope's QwenTokenizer: a tiktoken Encoding)
    ordinary = getattr(core, "encode_ordinary", None)
    specials = getattr(core, "special_tokens_set", None)
    if ordinary is None or not specials or not all(s.startswith(_SPECIAL) for s in specials):
        return TextCounter("qwen", True, lambda text: len(encode(text)) if text else 0)

    # (tiktoken's encode_ordinary is a Python call around its Rust core's, which it retries on a UnicodeEncodeError
    # with the text made valid: the core's is called at once, checked once here, the Python one on that error)
    fast: Any = getattr(getattr(core, "_core_bpe", None), "encode_ordinary", None)
    if fast is None or fast(_PROBE) != ordinary(_PROBE):
        fast = ordinary

    def count(text: str) -> int:
        if not text:
            return 0
        nfc = text if text.isascii() else normalize("NFC", text)  # (ASCII is its own NFC)
        if len(nfc) <= PIECE and _SPECIAL not in nfc:
            try:
                return len(fast(nfc))
            except UnicodeEncodeError:
                return len(ordinary(nfc))
        return len(encode(text))

    return TextCounter("qwen", True, count)


#: how each of the Qwen vocabulary's special tokens starts: a text without it holds none
_SPECIAL: Final = "<|"


#: the package (its pip name) each vocabulary's loader reads it with: where it is not installed, the vocabulary's
#: counts are estimates that name it (``TextCounter.missing``, ``TokenCount.missing``); bpe-openai is the extra
#: ``agentmsg[count]``
PACKAGES: Final[dict[str, str]] = {"o200k_base": "bpe-openai", "cl100k_base": "bpe-openai", "qwen": "dashscope"}


def _module(name: str) -> str:
    """The module vocabulary ``name``'s package is imported as (its pip name with ``_`` for ``-``)."""
    return PACKAGES[name].replace("-", "_")


#: the loaders by vocabulary name: each returns None when its package (:data:`PACKAGES`) is not installed
_LOADERS: Final[dict[str, Callable[[], TextCounter | None]]] = {
    "o200k_base": lambda: _bpe_openai("o200k_base"),
    "cl100k_base": lambda: _bpe_openai("cl100k_base"),
    "qwen": _qwen,
}


#: held while a vocabulary is loaded: functools.cache does not keep two threads from loading the same one at once,
#: which read it twice and, the two ``warnings.catch_warnings`` of the loader crossing, could leave the process's
#: warning filters as the other thread had them (the loader's own "ignore" first)
_LOADING: Final = threading.Lock()


def counter(name: str) -> TextCounter:
    """The counter of a vocabulary, or when its package is not installed the estimate :data:`CHARS`, naming the
    package (``missing``)."""
    with _LOADING:
        found = _LOADERS[name]()
    return found if found is not None else _estimate(name)


@functools.cache
def _estimate(name: str) -> TextCounter:
    """:data:`CHARS` in the place of vocabulary ``name``, naming its missing package."""
    return attrs.evolve(CHARS, missing=PACKAGES.get(name))
