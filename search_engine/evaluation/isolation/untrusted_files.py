"""Files in a directory the sandbox can write, as the trusted parent must touch them.

A candidate can replace any name in its workdir with a symlink (to a root-only host file,
to `/proc/self/environ`) or a FIFO (an `open` that never returns). So the parent never
opens such a name by path in the ordinary way: reads open with O_NOFOLLOW | O_NONBLOCK,
accept only a regular file (fstat) and read at most a bound; writes first remove whatever
name is there (unlink does not follow links) and create the file with O_EXCL | O_NOFOLLOW;
better, `write_private` puts a file the sandbox must read in a fresh subdirectory of the
parent's, reached only through descriptors (a planted name is never even looked at).
Logs are better not read by path at all: `read_fd_tail` reads the descriptor the parent made.
Stdlib only (the isolation package runs before torch is imported).
"""

from __future__ import annotations

import errno
import os
import secrets
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


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PRIVATE_FILE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK
                       | os.O_CLOEXEC | os.O_NOCTTY)


def write_private(directory, name: str, data: bytes, prefix: str = "parent-") -> str:
    """`data` as the file `name` in a NEW subdirectory of `directory` (a directory the
    sandbox can write, e.g. its workdir), for the sandbox to read; returns the file's path.

    Nothing is opened by a path the sandbox could have prepared: `directory` is opened with
    O_NOFOLLOW (a workdir swapped for a link is refused), the subdirectory gets an
    unguessable name, is made with mkdir (never follows or reuses a planted name), opened
    through the directory's descriptor with O_NOFOLLOW and must be the parent's own; the
    file is created through that descriptor with O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK,
    so a planted link, FIFO or file is never followed, opened or waited on. When the parent
    runs as root and the sandbox as another user, the subdirectory (0755, the parent's) is
    one the sandbox never had write access to. Raises UntrustedFileError when a name was
    not what the parent made; OSError (a full disk) otherwise."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"{name!r} is not a plain file name")
    try:
        dfd = os.open(directory, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UntrustedFileError(f"{directory} is not a directory (a link?); not written"
                                     ) from None
        raise
    try:
        sub = prefix + secrets.token_hex(12)
        try:
            os.mkdir(sub, 0o700, dir_fd=dfd)
        except FileExistsError:
            raise UntrustedFileError(f"{directory}/{sub} was already there; not used") from None
        try:
            sfd = os.open(sub, _DIR_FLAGS, dir_fd=dfd)
        except OSError as exc:
            raise UntrustedFileError(f"{directory}/{sub} was replaced before it was opened "
                                     f"({exc.strerror}); not written") from None
        try:
            info = os.fstat(sfd)
            if info.st_uid != os.geteuid() or not stat.S_ISDIR(info.st_mode):
                raise UntrustedFileError(f"{directory}/{sub} is not the parent's own "
                                         "directory; not written")
            os.fchmod(sfd, 0o755)  # readable by the sandbox's user, writable by nobody else
            try:
                fd = os.open(name, _PRIVATE_FILE_FLAGS, 0o644, dir_fd=sfd)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ELOOP, errno.ENXIO, errno.EISDIR):
                    raise
                raise UntrustedFileError(f"{directory}/{sub}/{name} could not be created "
                                         f"fresh ({exc.strerror}); not written") from None
            try:
                os.fchmod(fd, 0o644)  # whatever the umask
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        finally:
            os.close(sfd)
    finally:
        os.close(dfd)
    return os.path.join(os.fspath(directory), sub, name)
