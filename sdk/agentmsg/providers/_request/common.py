"""Small helpers the provider modules share: media kinds, MIME routing, default models."""

from __future__ import annotations

from typing import Any, Final

from agentmsg.blocks import AudioBlock, DataBlock, ImageBlock, VideoBlock
from agentmsg.providers._request.media import data_url_mime, guess_mime, scheme_of

#: tool_use metadata key the stream builder writes and the formatters read: the call's id, when agentmsg minted it
#: (the provider gave none, see StreamBuilder._start_call). A formatter for a provider that matches id-less calls by
#: name and order (Gemini) sends no id for such a call: the provider never gave one. The value is the id itself, so
#: a call whose id was changed since is not taken for one.
MINTED_ID: Final = "agentmsg_minted_id"

#: the URL prefixes of the web (``scheme_of`` ``http``/``https``, written in lowercase: the usual way) that every
#: provider takes as they are; an image's fast part (``Walk.inline_image``) passes such a URL through, as
#: ``MediaSession.resolve`` does
WEB_URL: Final = ("https:", "http:")

_KIND_BY_TYPE: Final = {ImageBlock: "image", AudioBlock: "audio", VideoBlock: "video"}


def mime_of(source: Any) -> str | None:
    """The MIME type a source declares, or that its URL's extension (or data: prefix) implies, in lowercase (a MIME
    type's case means nothing: ``Audio/WAV`` is ``audio/wav``)."""
    if source.type == "base64":
        return source.media_type.lower()  # type: ignore[no-any-return]
    if source.mime_type:
        return source.mime_type.lower()  # type: ignore[no-any-return]
    url: str = source.url
    if scheme_of(url) == "data":
        return data_url_mime(url)
    return guess_mime(url)


def media_kind(block: Any) -> tuple[str, str | None]:
    """(kind, mime): kind is image / audio / video for those blocks; a data block is routed by its
    MIME type's main type, and is ``file`` for anything else (PDF, text, unknown)."""
    kind = _KIND_BY_TYPE.get(type(block))
    mime = mime_of(block.source)
    if kind is not None:
        return kind, mime
    if mime:
        main = mime.split("/", 1)[0]
        if main in ("image", "audio", "video"):
            return main, mime
    return "file", mime


def is_data_block(block: Any) -> bool:
    return type(block) is DataBlock


AUDIO_FORMATS: Final = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mp3": "mp3",
    "audio/mpeg": "mp3",
}
