"""``agentmsg._wire.peek.Peeked``: the read-ahead stream ``agentmsg.check`` and ``agentmsg events`` tell a file's
kind with. Whatever the sizes asked, what it gives is the stream's bytes once each, in order; every line
``readline`` gives is one line of the stream (the head's end is no line break)."""

from __future__ import annotations

import io
import itertools

import pytest

from agentmsg._wire.peek import Peeked

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

DATA = b'{"a": 1}\n\n{"b": [2, 3]}\nno newline at the end'


class _Pipe(io.RawIOBase):
    """A stream that gives at most ``step`` bytes a read (a pipe) and counts what it gave."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data, self._step, self.given = data, step, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self._step, len(self._data) - self.given)
        buffer[:n] = self._data[self.given : self.given + n]
        self.given += n
        return n


@pytest.mark.parametrize("head", [0, 1, 5, 9, 10, len(DATA), len(DATA) + 10])
def test_the_head_is_the_start_and_is_served_again(head: int) -> None:
    stream = io.BytesIO(DATA)
    peeked = Peeked(stream, head)
    assert peeked.head == DATA[:head]
    assert stream.tell() == min(head, len(DATA))  # read ahead once, not again
    assert peeked.read() == DATA


@pytest.mark.parametrize(("head", "size"), list(itertools.product([0, 3, 9, 10, 11, 30, 100], [1, 2, 7, 64])))
def test_reads_of_any_size_give_the_stream_once(head: int, size: int) -> None:
    peeked = Peeked(io.BytesIO(DATA), head)
    parts = list(iter(lambda: peeked.read(size), b""))
    assert b"".join(parts) == DATA
    assert all(0 < len(part) <= size for part in parts)


@pytest.mark.parametrize(("head", "size"), list(itertools.product([0, 3, 9, 10, 11, 30, 100], [-1, 1, 4, 64])))
def test_readline_gives_the_stream_lines_across_the_head(head: int, size: int) -> None:
    """A line the head cuts is given whole (with ``size`` -1): the rest is read from the stream."""
    peeked = Peeked(io.BytesIO(DATA), head)
    got = list(iter(lambda: peeked.readline(size), b""))
    assert b"".join(got) == DATA
    assert all(size < 0 or len(line) <= size for line in got)
    if size < 0:
        assert got == io.BytesIO(DATA).readlines()


def test_a_pipe_behind_a_buffer_gives_a_whole_head() -> None:
    """A pipe gives a few bytes a read; through a buffered reader (``sys.stdin.buffer``, ``open(path, "rb")``)
    the head is ``size`` bytes all the same, and the rest comes after it."""
    pipe = _Pipe(DATA, 4)
    peeked = Peeked(io.BufferedReader(pipe), 16)
    assert peeked.head == DATA[:16]
    assert peeked.readline() == b'{"a": 1}\n' and peeked.read() == DATA[9:]
    assert pipe.given == len(DATA)
