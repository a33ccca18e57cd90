"""Writing a file whole or not at all, with nothing left behind on any exit.

On Linux the data go to an unnamed file in the target's folder (``O_TMPFILE``): until it is
complete and on disk it has no name, so a kill, even SIGKILL, leaves nothing to clean up. It
is then named and renamed over the target in two system calls (the only moment a hidden
``.NAME.*.tmp`` exists). Elsewhere, or on a file system without ``O_TMPFILE``, a named
temporary file beside the target takes its place, removed again on every exit Python sees.
Files get the user's umask (``0o666 & ~umask``), as ``open`` would give them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

Data = str | bytes | bytearray | memoryview | Iterable[str | bytes]

# O_TMPFILE refused by the file system or kernel: fall back to a named temporary file
_NO_TMPFILE = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOTSUP}


def write_atomically(path: str | os.PathLike[str], data: Data, mode: int = 0o666) -> None:
    """Write ``data`` (text as UTF-8, bytes, or an iterable of either, written as it comes)
    to ``path``: afterwards the file holds all of it, or is as it was. ``mode`` is masked by
    the umask (0o777 for a script)."""
    target = Path(path)
    folder = target.parent
    handle = _unnamed(folder, mode)
    if handle is None:
        _write_named(target, data, mode)
        return
    directory = None
    try:
        _write_all(handle, data)
        os.fsync(handle)
        directory = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        while True:  # a free hidden name beside the target, for the two calls below
            temporary = f".{target.name}.{secrets.token_hex(4)}.tmp"
            try:  # (with a dst_dir_fd, os.link is linkat(AT_SYMLINK_FOLLOW): the file itself)
                os.link(f"/proc/self/fd/{handle}", temporary, dst_dir_fd=directory)
                break
            except FileExistsError:
                continue
            except OSError:  # no linking through /proc here: copy it the portable way
                os.lseek(handle, 0, os.SEEK_SET)
                _write_named(target, _read_all(handle), mode)
                return
        try:
            os.replace(temporary, target.name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            os.unlink(temporary, dir_fd=directory)
            raise
        with contextlib.suppress(OSError):  # the rename itself on disk
            os.fsync(directory)
    finally:
        os.close(handle)
        if directory is not None:
            os.close(directory)


def _unnamed(folder: Path, mode: int) -> int | None:
    """A descriptor of a new unnamed file in ``folder``, or None where there is none."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not Path("/proc/self/fd").is_dir():
        return None
    try:
        return os.open(folder, flag | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno in _NO_TMPFILE:
            return None
        raise


def _write_named(target: Path, data: Data, mode: int) -> None:
    """The portable way: a hidden temporary file beside the target, then a rename."""
    while True:
        temporary = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        try:
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            break
        except FileExistsError:
            continue
    try:
        try:
            _write_all(handle, data)
            os.fsync(handle)
        finally:
            os.close(handle)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)


def _write_all(handle: int, data: Data) -> None:
    chunks = [data] if isinstance(data, str | bytes | bytearray | memoryview) else data
    for chunk in chunks:
        view = memoryview(chunk.encode() if isinstance(chunk, str) else chunk)
        while view:
            written = os.write(handle, view)
            view = view[written:]


def _read_all(handle: int, size: int = 1 << 20) -> Iterable[bytes]:
    while chunk := os.read(handle, size):
        yield chunk


def _sync_folder(folder: Path) -> None:
    """Put the rename itself on disk (best effort: not every system can open a folder)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)
