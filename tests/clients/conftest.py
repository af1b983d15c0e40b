"""Fixtures of the client tests."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest

from tests._support.raw_server import RawServer


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
