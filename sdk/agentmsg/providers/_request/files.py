"""Local files for media (the file half of :class:`~agentmsg.providers._request.media.MediaPolicy`).

A file is read only under ``allowed_roots``: as written (``..`` collapsed, no filesystem call, so a path
outside every root is refused without touching it) and again after resolving ``..`` and symlinks (so neither
traversal nor a symlink can leave a root; opened from the root following no symlink, so neither can a directory swapped for
one after the check), only a regular file with one name (a hard link's other name may be outside the roots)
unless ``allow_hard_links``, at most ``max_bytes`` and not empty. Every refusal is a :class:`~agentmsg.ValidationError`
whose pointer is the block's.
"""

from __future__ import annotations

import os
import stat
from typing import Any, Final
from urllib.parse import unquote

from agentmsg.errors import ValidationError
from agentmsg.providers._request.download import Fetched, over_total, split_url

__all__ = ["LocalFiles"]

#: The longest path the system opens, in bytes (Linux: 4096): a longer one names no file it reads, and is refused
#: before it is resolved, which costs time quadratic in its length (a path of 800 kB took 19 s to refuse)
PATH_MAX: Final = int(os.pathconf("/", "PC_PATH_MAX")) if hasattr(os, "pathconf") else 4096


class LocalFiles:
    """Reads local files for one media session under its policy (a ``MediaPolicy``), each file once."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self._read: Fetched[bytes] = Fetched(policy)
        self._real_roots: tuple[str, ...] | None = None
        self._written_roots: tuple[str, ...] = ()

    def _roots(self) -> tuple[str, ...]:
        if self._real_roots is None:
            given = [os.fspath(r) for r in self.policy.allowed_roots]
            self._real_roots = tuple(os.path.realpath(r) for r in given)
            # the roots as written too: a path under /var/run is under the root /var/run, which resolves to /run
            self._written_roots = self._real_roots + tuple(os.path.abspath(r) for r in given)
        return self._real_roots

    def read(self, ref: str, scheme: str | None, pointer: str, room: int) -> bytes:
        """The bytes of the local file ``ref`` (a path, or a ``file:`` URL when ``scheme`` says so), under the
        policy, at most ``room`` bytes (what is left of the request's ``max_total_bytes``: read no further);
        every refusal a :class:`~agentmsg.ValidationError` at ``pointer``."""
        if scheme == "file":
            # RFC 8089: file:///abs, file://localhost/abs (a host name in any case) and file:/abs name the same
            # local file; any other host is a remote one
            parts = split_url(ref, pointer, "media-local-refused")
            if parts.netloc.lower() not in ("", "localhost"):
                raise ValidationError.single(pointer, "media-local-refused", f"file URL with a remote host: {ref}")
            path = unquote(parts.path)
            if path.startswith("//"):
                # file:////host/share/path, the UNC form (RFC 8089 E.3.2, five slashes too): a file on another
                # host; read here, "//host" is a path whose meaning POSIX leaves to the system
                raise ValidationError.single(
                    pointer,
                    "media-local-refused",
                    f"file URL in the UNC form (its path starts with //): a file on another host, not read: {ref}",
                )
            if not path.startswith("/"):
                raise ValidationError.single(
                    pointer,
                    "media-local-refused",
                    f"file URL with a relative path (RFC 8089: its path is absolute), not read: {ref}",
                )
        else:
            path = ref
        roots = self._roots()
        if not roots:
            raise ValidationError.single(
                pointer,
                "media-local-refused",
                f"local file {ref!r} not read: no allowed roots (MediaPolicy.allowed_roots)",
            )
        if "\x00" in path:
            raise ValidationError.single(pointer, "media-local-refused", "local path contains a NUL character")
        if len(path) > PATH_MAX or len(os.fsencode(path)) > PATH_MAX:
            raise ValidationError.single(
                pointer,
                "media-local-refused",
                f"local path of {len(os.fsencode(path))} bytes: longer than the system opens ({PATH_MAX}), not read",
            )
        # first as written, with no filesystem call: a path outside every root is not touched (not even its
        # folders looked up, as resolving it would), the caller allowed none of it
        if _under(os.path.abspath(path), self._written_roots) is None:
            raise ValidationError.single(
                pointer, "media-local-refused", f"local file {ref!r} is outside the allowed roots"
            )
        try:
            real = os.path.realpath(path)
        except (OSError, RecursionError) as exc:  # (a chain of symlinks too long for realpath's recursion)
            why = "a chain of symlinks too long to resolve" if isinstance(exc, RecursionError) else exc
            raise ValidationError.single(pointer, "media-local-refused", f"cannot resolve {ref!r}: {why}") from None
        root = _under(real, roots)
        if root is None:
            raise ValidationError.single(
                pointer, "media-local-refused", f"local file {ref!r} is outside the allowed roots"
            )
        cached = self._read.get(real, pointer, repr(ref), room)
        if cached is not None:
            return cached
        limit = self.policy.max_bytes
        cap = min(limit, room)
        try:
            fd = _open_under(root, real)
        except OSError as exc:
            raise ValidationError.single(
                pointer, "media-local-refused", f"cannot read {ref!r}: {exc.strerror or exc}"
            ) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ValidationError.single(pointer, "media-local-refused", f"{ref!r} is not a regular file")
            if st.st_nlink > 1 and not self.policy.allow_hard_links:
                # a hard link is a second name of the same file, just as real as the first: one made under
                # a root (by anyone who can write there) to a file outside it (/etc/shadow, another user's
                # key) passes every path check, and O_NOFOLLOW has no link to refuse. Its count shows it.
                raise ValidationError.single(
                    pointer,
                    "media-local-refused",
                    f"{ref!r} has {st.st_nlink} names (hard links), which may be outside the allowed roots "
                    "(MediaPolicy.allow_hard_links)",
                )
            if st.st_size > limit:
                raise ValidationError.single(
                    pointer, "media-too-large", f"{ref!r} has {st.st_size} bytes, over the limit of {limit}"
                )
            if st.st_size > room:
                raise over_total(pointer, repr(ref), self.policy, room, st.st_size)
            chunks = []
            total = 0
            while True:  # (the size may have changed since fstat: a file that grows is read no further)
                chunk = os.read(fd, min(1 << 20, cap + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise ValidationError.single(
                        pointer, "media-too-large", f"{ref!r} is over the limit of {limit} bytes"
                    )
                if total > room:
                    raise over_total(pointer, repr(ref), self.policy, room, total, more=True)
        finally:
            os.close(fd)
        result = b"".join(chunks)
        if not result:
            # an empty file is no media (an empty image, audio or document), refused as an empty download is
            raise ValidationError.single(pointer, "media-local-refused", f"local file {ref!r} is empty")
        return self._read.keep(real, result, len(result))


def _under(path: str, roots: tuple[str, ...]) -> str | None:
    """The first of ``roots`` (absolute, normalized) that ``path`` (the same) is in or is, else None."""
    return next((r for r in roots if path == r or path.startswith(r.rstrip(os.sep) + os.sep)), None)


_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)


def _open_under(root: str, real: str) -> int:
    """Open ``real`` (resolved, under ``root``) one component at a time from ``root``, following no
    symlink: a directory swapped for a symlink after the check cannot lead out of the root."""
    flags = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
    rel = os.path.relpath(real, root)
    if rel == os.curdir or not _NOFOLLOW or os.open not in os.supports_dir_fd:
        return os.open(real, flags)
    *dirs, name = rel.split(os.sep)
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in dirs:
            inner = os.open(part, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_DIRECTORY", 0), dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(name, flags, dir_fd=fd)
    finally:
        os.close(fd)
