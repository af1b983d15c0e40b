"""Fixtures of the client tests."""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import httpx._transports.default
import pytest

from tests._support.raw_server import RawServer


@pytest.fixture(autouse=True, scope="session")
def _one_default_ssl_context() -> Iterator[None]:
    """Every client these tests make (hundreds, each with its own httpx client) built httpx's default SSL context,
    the CA bundle parsed again each time (30 ms of CPU), for servers on plain http:// that never use it. The
    default context is made once per CA bundle it reads (``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, as httpx reads them)
    and shared; any other ``verify`` or ``cert`` is made as httpx makes it."""
    made: dict[tuple[str | None, str | None], ssl.SSLContext] = {}
    original = httpx.create_ssl_context  # (what the transports call, by the name they import)

    def create(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is not True or cert is not None or not trust_env:
            return original(verify=verify, cert=cert, trust_env=trust_env)
        key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if key not in made:
            made[key] = original(verify=verify, cert=cert, trust_env=trust_env)
        return made[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(httpx._transports.default, "create_ssl_context", create)
        yield


@pytest.fixture
def raw() -> Iterator[Callable[[Callable[[socket.socket], None]], RawServer]]:
    """A :class:`RawServer` per handler, closed after the test."""
    servers: list[RawServer] = []

    def make(handler: Callable[[socket.socket], None]) -> RawServer:
        servers.append(RawServer(handler))
        return servers[-1]

    yield make
    for s in servers:
        s.close()
