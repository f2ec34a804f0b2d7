"""Files in a directory the sandbox can write, as the trusted parent must touch them.

A candidate can replace any name in its workdir with a symlink (to a root-only host file,
to `/proc/self/environ`) or a FIFO (an `open` that never returns). So the parent never
opens such a name by path in the ordinary way: reads open with O_NOFOLLOW | O_NONBLOCK,
accept only a regular file (fstat) and read at most a bound; writes first remove whatever
name is there (unlink does not follow links) and create the file with O_EXCL | O_NOFOLLOW.
Logs are better not read by path at all: `read_fd_tail` reads the descriptor the parent made.
Stdlib only (the isolation package runs before torch is imported).
"""

from __future__ import annotations

import os
import stat

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY


class UntrustedFileError(OSError):
    """A name in a sandbox-writable directory is not a plain file the parent may use."""


def read_untrusted(path, limit: int, tail: bool = False) -> bytes:
    """At most `limit` bytes of the regular file at `path` (its end when `tail`); raises
    UntrustedFileError for a link, FIFO, device or directory, OSError when it is missing."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last component is a symbolic link
            raise UntrustedFileError(f"{path} is a symbolic link; not followed") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedFileError(f"{path} is not a regular file (mode {info.st_mode:o}); "
                                     "not read")
        return read_fd_tail(fd, limit) if tail else _pread_all(fd, 0, min(limit, info.st_size))
    finally:
        os.close(fd)


def read_fd_tail(fd: int, limit: int) -> bytes:
    """The last `limit` bytes of the regular file behind `fd` (a log the parent created),
    read with pread: the file offset the child shares is left alone."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return b""
    size = info.st_size
    return _pread_all(fd, max(0, size - limit), min(limit, size))


def _pread_all(fd: int, offset: int, count: int) -> bytes:
    chunks, got = [], 0
    while got < count:
        chunk = os.pread(fd, min(count - got, 1 << 20), offset + got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def create_fresh(path, mode: int = 0o644) -> int:
    """A new, empty file at `path` (a descriptor open for reading and writing). Whatever name was there
    (a planted link or FIFO) is removed, never followed; a race that puts one back fails."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISDIR(info.st_mode):
            raise UntrustedFileError(f"{path} is a directory; not replaced")
        os.unlink(path)
    try:
        return os.open(path, _CREATE_FLAGS, mode)
    except FileExistsError:
        raise UntrustedFileError(f"{path} reappeared while being created; not written") from None


def write_fresh(path, data: bytes, mode: int = 0o644) -> None:
    fd = create_fresh(path, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
