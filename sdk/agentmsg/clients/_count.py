"""A provider's own token count: the request ``count_tokens`` sends and the count read from its reply (no IO here;
``_sync`` and ``_async`` send it). Everything about the endpoint comes from the spec's ``counting``
(:class:`~agentmsg.providers.spec.CountEndpoint`): its path, which keys of the formatted body it takes, the wrapping,
and where the count is in the reply."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import attrs
import orjson

from agentmsg.clients._errors import BadRequestError, BrokenStreamError, json_bytes, provider_message, request_id
from agentmsg.clients._retry import header
from agentmsg.context import ProviderCount
from agentmsg.providers import FormattedRequest, Spec

__all__ = ["counting_request", "read_count"]


def counting_request(spec: Spec, request: FormattedRequest) -> FormattedRequest:
    """The counting endpoint's request for a formatted (non-streaming) request. Raises :class:`BadRequestError`
    when the provider has no counting endpoint (nothing is sent)."""
    endpoint = spec.counting
    if endpoint is None:
        raise BadRequestError(
            f"{spec.name} has no token-counting endpoint: count offline with agentmsg.context.count_tokens",
            provider=spec.name,
        )
    body: dict[str, Any] = dict(request.body)
    if endpoint.keep:
        body = {k: v for k, v in body.items() if k in endpoint.keep}
    path, model = endpoint.path, request.model
    if endpoint.collections:
        collection, name = _resource(endpoint.collections, model or "")
        path, model = path.replace("{model}", f"{collection}/{quote(name, safe='')}"), f"{collection}/{name}"
    elif endpoint.model_prefix:  # (deprecated)
        model = f"{endpoint.model_prefix}{model}"
    if endpoint.wrap is not None:
        body = {endpoint.wrap: {"model": model, **body}}
    return attrs.evolve(request, body=body, path=path, stream=False, parser_options={})


def _resource(collections: tuple[str, ...], model: str) -> tuple[str, str]:
    """The collection a model is named in and its name there: ``C/NAME`` for a C of ``collections`` is NAME of C
    (its NAME may hold a ``/``: quoted, it stays one path segment), any other name one of the first collection."""
    for collection in collections:
        if model.startswith(f"{collection}/"):
            return collection, model[len(collection) + 1 :]
    return collections[0], model


def read_count(spec: Spec, model: str | None, body: bytes, status: int, headers: Any) -> ProviderCount:
    """The count in a counting endpoint's reply. A reply that holds none (not JSON, another shape) raises
    :class:`BrokenStreamError` with the status, the request id and the body (read in its encoding, as an error
    body is). A JSON body in UTF-16 or UTF-32 is read as httpx's ``response.json()`` reads it
    (:func:`~agentmsg.clients._errors.json_bytes`)."""
    endpoint = spec.counting
    assert endpoint is not None
    where = ".".join(endpoint.reply)
    try:
        reply = orjson.loads(json_bytes(body))
    except (orjson.JSONDecodeError, UnicodeDecodeError):
        reply = None
    value: Any = reply
    for key in endpoint.reply:
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(reply, dict) or type(value) is not int or value < 0:
        _message, parsed, body_id = provider_message(body, content_type=header(headers, "content-type"))
        raise BrokenStreamError(
            f"the response is not {spec.name}'s token count: no count at {where}",
            provider=spec.name,
            status_code=status,
            body=parsed,
            request_id=body_id or request_id(headers),
        )
    return ProviderCount(total=value, provider=spec.name, model=model, reply=reply)
