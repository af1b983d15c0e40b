"""Waiting for a child process to be ready for a signal, without a fixed sleep (a loaded machine is slow to
start an interpreter: a fixed wait is a flaky test); work that pytest-xdist's workers share done one at a time;
a script that may hang run in a child process under a time limit."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["guarded", "lock_file", "one_at_a_time", "sigint_default", "stop", "wait_until_read"]


def guarded(script: str, *args: str, pure: bool, timeout: float = 120.0, started: str = "starting") -> str:
    """The standard output of ``python -c script args...`` in a child process, C writer or pure Python
    (``AGENTMSG_PURE_PYTHON``), under a time limit (pytest's own cannot stop a C loop): a child that runs past it is
    killed and the test fails naming the last line it printed (``started`` when none), as one that exits non-zero
    fails with the end of its standard error."""
    env = dict(os.environ)
    env.pop("AGENTMSG_PURE_PYTHON", None)
    if pure:
        env["AGENTMSG_PURE_PYTHON"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"{out.splitlines()[-1:] or [started]} ran for over {timeout:g} s") from None
    assert proc.returncode == 0, err[-2000:]
    return out


def lock_file(work: Path) -> Path:
    """The lock :func:`one_at_a_time` holds for ``work``: a file in the temporary folder named from its path."""
    return Path(tempfile.gettempdir()) / f"agentmsg-{hashlib.sha256(bytes(work.resolve())).hexdigest()[:16]}.lock"


@contextlib.contextmanager
def one_at_a_time(work: Path) -> Iterator[None]:
    """Hold the lock of ``work`` (a folder something is installed or built in) for the block: under pytest-xdist,
    whatever the --dist mode, the workers that need it wait while one installs or builds, then find it done (two
    ``npm ci`` in one folder remove each other's files). Released when the block ends, or the process does."""
    with open(lock_file(work), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def _unread(pipe: int) -> int:
    """Bytes written to a pipe and not read yet (FIONREAD works on either end of a Linux pipe)."""
    return int(struct.unpack("i", fcntl.ioctl(pipe, termios.FIONREAD, b"\0\0\0\0"))[0])


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def wait_until_read(proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 120.0) -> None:
    """Return once ``proc`` has read all that was written to its stdin and is blocked again (sleeping, on its
    next read): its signal handlers are set up and what it read has been handled. Raises TimeoutError."""
    assert proc.stdin is not None
    deadline = time.monotonic() + timeout
    pipe = proc.stdin.fileno()
    sleeping = 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the process ended (exit {proc.returncode}) before it read its input")
        if _unread(pipe) == 0 and _state(proc.pid) == "S":
            sleeping += 1
            if sleeping >= 5:  # asleep at five looks 20 ms apart: waiting on its next read
                return
        else:
            sleeping = 0
        time.sleep(0.02)
    raise TimeoutError("the process did not read its input in time")


def sigint_default() -> None:
    """A child's SIGINT set to its default before it runs (``preexec_fn=``), so that a test that sends it Ctrl-C does
    not depend on how the test run was started: a job a non-interactive shell starts in the background has SIGINT
    ignored, its children inherit that, and Python then installs no KeyboardInterrupt handler (the CLI's Ctrl-C
    tests failed so under ``.ci/run &``)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupted(args: list[str], head: bytes) -> tuple[int, str, str]:
    """``agentmsg ARGS`` fed ``head`` on stdin and interrupted (SIGINT) once it has read it and waits for more,
    as Ctrl-C on ``producer | agentmsg ...`` does: (exit status, stdout, stderr)."""
    import signal
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "agentmsg", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=sigint_default,
    )
    assert proc.stdin is not None
    proc.stdin.write(head)
    proc.stdin.flush()
    wait_until_read(proc)  # the interpreter is up, has read the pipe and waits for more
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out.decode(), err.decode()


def stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 10.0) -> None:
    """Terminate ``proc`` and wait for it; kill it if it has not ended within ``timeout`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
