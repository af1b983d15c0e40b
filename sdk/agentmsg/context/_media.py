"""Media sizes and the providers' documented token costs of images, audio and video.

An image's size is read from the header of its bytes when it is inline (base64 PNG, JPEG, GIF, WebP: a base64
source, or a ``data:`` URL, which the formatters send inline too); any other URL's image is not fetched, so its size
is unknown and it is priced as :data:`DEFAULT_SIZE`. Audio and video durations are read from a WAV header; other
audio, and all video, are priced as :data:`DEFAULT_SECONDS`. Every default is reported as an unknown in the count's
error (``count.py``).

Sources (shared reference provider-fields.md): OpenAI's tile method (section 1.5: low 85; high: fit in 2048, shortest
side 768, 170 per 512-px tile + 85) and patch method (32-px patches, capped at 1536, times the model's multiplier);
Anthropic's ``w * h / 750`` after resizing to a 1568-px long edge (section 2.6); Gemini's 258 tokens for an image
whose sides are both at most 384 px, else 258 per 768-px tile, 263 tokens per second of video and 32 per second of
audio (section 3.6); Qwen-VL (DashScope) one token per 28x28 pixels, between 4 and 1280 tokens per image (the
default ``max_pixels``), plus 2 (DashScope's vision docs; the reference did not verify a formula).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
import zlib
from typing import Any, Final

from agentmsg.providers._request.media import inline_base64

__all__ = ["DEFAULT_SECONDS", "DEFAULT_SIZE", "image_size", "inline_base64", "media_seconds", "pdf_pages"]

#: the size an image whose bytes are not at hand (a URL) is priced at
DEFAULT_SIZE: Final = (1024, 1024)
#: the duration audio or video whose length is not read is priced at
DEFAULT_SECONDS: Final = 10.0
#: base64 characters decoded to find a header (a JPEG's size marker may follow its EXIF data)
_HEAD: Final = 262_144


def _head(source: Any) -> bytes | None:
    data = inline_base64(source)
    if data is None:
        return None
    head = data[:_HEAD]
    head = head[: len(head) - len(head) % 4]
    try:
        return base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return None


def image_size(source: Any) -> tuple[int, int] | None:
    """(width, height) of an inline image from its header, or None (a URL, or a format not read)."""
    raw = _head(source)
    if raw is None:
        return None
    try:
        if raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR":
            w, h = struct.unpack(">II", raw[16:24])
            return _sane(w, h)
        if raw[:6] in (b"GIF87a", b"GIF89a"):
            w, h = struct.unpack("<HH", raw[6:10])
            return _sane(w, h)
        if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
            return _webp(raw)
        if raw[:2] == b"\xff\xd8":
            return _jpeg(raw)
    except struct.error:
        return None
    return None


def _sane(w: int, h: int) -> tuple[int, int] | None:
    return (w, h) if w > 0 and h > 0 else None


#: the bytes a WebP header holds up to the end of its size fields, by its chunk kind (a header cut short has no size:
#: the bytes missing are not zeros)
_WEBP_HEAD: Final = {b"VP8 ": 30, b"VP8L": 25, b"VP8X": 30}


def _webp(raw: bytes) -> tuple[int, int] | None:
    kind = raw[12:16]
    if len(raw) < _WEBP_HEAD.get(kind, 0):
        return None
    if kind == b"VP8 ":
        w, h = struct.unpack("<HH", raw[26:30])
        return _sane(w & 0x3FFF, h & 0x3FFF)
    if kind == b"VP8L":
        b = raw[21:25]
        w = 1 + (((b[1] & 0x3F) << 8) | b[0])
        h = 1 + (((b[3] & 0xF) << 10) | (b[2] << 2) | ((b[1] & 0xC0) >> 6))
        return _sane(w, h)
    if kind == b"VP8X":
        w = 1 + int.from_bytes(raw[24:27], "little")
        h = 1 + int.from_bytes(raw[27:30], "little")
        return _sane(w, h)
    return None


def _jpeg(raw: bytes) -> tuple[int, int] | None:
    i = 2
    n = len(raw)
    while i + 4 <= n:
        if raw[i] != 0xFF:
            i += 1
            continue
        marker = raw[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            i += 1 if marker == 0xFF else 2
            continue
        (length,) = struct.unpack(">H", raw[i + 2 : i + 4])
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            h, w = struct.unpack(">HH", raw[i + 5 : i + 9])
            return _sane(w, h)
        i += 2 + length
    return None


def media_seconds(source: Any) -> float | None:
    """Duration of inline WAV audio from its header, or None. The data chunk's size is what the header says, but
    never more than the bytes there are after it (a WAV written to a pipe says 0xFFFFFFFF: ffmpeg, sox; a header
    of 0 is taken as unknown too: the bytes there are)."""
    raw = _head(source)
    if raw is None or raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        return None
    text = inline_base64(source) or ""
    whole = (len(text) - len(text[-2:]) + len(text[-2:].rstrip("="))) * 3 // 4  # the decoded length (about)
    i = 12
    byte_rate = 0
    try:
        while i + 8 <= len(raw):
            cid = raw[i : i + 4]
            (size,) = struct.unpack("<I", raw[i + 4 : i + 8])
            if cid == b"fmt ":
                (byte_rate,) = struct.unpack("<I", raw[i + 16 : i + 20])
            elif cid == b"data":
                there = whole - (i + 8)  # the bytes after the chunk's header
                size = there if size in (0, 0xFFFFFFFF) else min(size, there)
                return size / byte_rate if byte_rate and size > 0 else None
            i += 8 + size + (size & 1)
    except struct.error:
        return None
    return None


# ---- the providers' image costs: (width, height) -> tokens ------------------------------------------------------


#: a page object of a PDF (``/Type /Page``, not the ``/Pages`` of a page tree node)
_PDF_PAGE: Final = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
#: the dictionary of a compressed object stream (PDF 1.5 and later), up to where its data starts
_PDF_OBJECT_STREAM: Final = re.compile(rb"<<[^<>]*?/Type\s*/ObjStm[^<>]*>>\s*stream\r?\n")
_PDF_FLATE: Final = re.compile(rb"/Filter\s*/FlateDecode(?![A-Za-z])")
#: what a PDF's object streams may inflate to, in all (a stream that would inflate past it is read so far)
PDF_INFLATE_MAX: Final = 64 << 20


def pdf_pages(raw: bytes) -> int:
    """The pages of a PDF, at least 1: its page objects (``/Type /Page``), looked for in the file and in its
    compressed object streams (PDF 1.5 and later may keep every page object there: a 50-page file written so counted
    1 page), each inflated within a budget (16 times the file, at most :data:`PDF_INFLATE_MAX` in all), so that a
    stream made to inflate without end costs no more."""
    pages = len(_PDF_PAGE.findall(raw))
    budget = min(PDF_INFLATE_MAX, 16 * len(raw))
    view = memoryview(raw)
    for found in _PDF_OBJECT_STREAM.finditer(raw):
        if budget <= 0:
            break
        if _PDF_FLATE.search(found.group(0)) is None:
            continue
        # (the stream alone: zlib copies what follows its end, each time; with no end after it, the last one read)
        end = raw.find(b"endstream", found.end())
        try:
            inflated = zlib.decompressobj().decompress(view[found.end() : end if end >= 0 else len(raw)], budget)
        except zlib.error:
            inflated = b""
        budget -= len(inflated)
        pages += len(_PDF_PAGE.findall(inflated))
        if end < 0:
            break
    return max(1, pages)


def openai_tiles(w: int, h: int, detail: str = "high") -> int:
    """OpenAI's tile method (gpt-4o class): low 85; high: fit in 2048x2048, scale the shortest side to 768 (never
    up), 170 per 512-px tile plus 85. The docs' examples: 1024x1024 -> 765, 2048x4096 -> 1105."""
    if detail == "low":
        return 85
    scale = min(1.0, 2048 / max(w, h))
    fw, fh = w * scale, h * scale
    scale = min(1.0, 768 / min(fw, fh))
    fw, fh = fw * scale, fh * scale
    return 170 * math.ceil(fw / 512) * math.ceil(fh / 512) + 85


#: OpenAI's patch-method models and their multipliers (reference section 1.5: secondary sources)
PATCH_MULTIPLIERS: Final = {"gpt-4.1-mini": 1.62, "gpt-4.1-nano": 2.46}


def openai_patches(w: int, h: int, multiplier: float) -> int:
    """OpenAI's patch method: 32-px patches, at most 1536 (the image scaled down to fit), times the multiplier."""
    patches = math.ceil(w / 32) * math.ceil(h / 32)
    if patches > 1536:
        shrink = math.sqrt(1536 * 32 * 32 / (w * h))
        patches = min(1536, math.ceil(w * shrink / 32) * math.ceil(h * shrink / 32))
    return math.ceil(patches * multiplier)


def anthropic_image(w: int, h: int) -> int:
    """Anthropic: ``w * h / 750`` after resizing to a 1568-px long edge, at most 1568 tokens."""
    scale = min(1.0, 1568 / max(w, h))
    w2, h2 = w * scale, h * scale
    return min(1568, max(1, math.ceil(w2 * h2 / 750)))


def gemini_image(w: int, h: int) -> int:
    """Gemini: 258 when both sides are at most 384 px, else 258 per 768x768 tile."""
    if w <= 384 and h <= 384:
        return 258
    return 258 * math.ceil(w / 768) * math.ceil(h / 768)


def qwen_image(w: int, h: int, min_pixels: int | None = None, max_pixels: int | None = None) -> int:
    """Qwen-VL: one token per 28x28 pixels, the image scaled into [min_pixels, max_pixels] (default 4 and 1280
    tokens' worth), plus 2 vision tokens."""
    lo = min_pixels if min_pixels is not None else 4 * 28 * 28
    hi = max_pixels if max_pixels is not None else 1280 * 28 * 28
    pixels = w * h
    if pixels > hi:
        pixels = hi
    elif pixels < lo:
        pixels = lo
    return max(4, pixels // (28 * 28)) + 2


def image_tokens(method: str, w: int, h: int, model: str | None, min_pixels: int | None, max_pixels: int | None) -> int:
    """A ``w`` x ``h`` image's tokens by the pricing method a token profile names (``TokenProfile.image``: these
    are the methods, not the providers; a provider takes whichever its spec names): ``anthropic``, ``gemini``,
    ``qwen`` (with the block's pixel bounds), else ``openai`` (the patch method for the models of
    :data:`PATCH_MULTIPLIERS`, else the tile method)."""
    if method == "anthropic":
        return anthropic_image(w, h)
    if method == "gemini":
        return gemini_image(w, h)
    if method == "qwen":
        return qwen_image(w, h, min_pixels, max_pixels)
    name = (model or "").lower()
    for prefix, multiplier in PATCH_MULTIPLIERS.items():
        if name.startswith(prefix):
            return openai_patches(w, h, multiplier)
    return openai_tiles(w, h)
