"""Duplicate-open guard shared by both backends.

Opening the same environment twice in one process is refused: two engine
handles on one lock file would let the second close drop the first one's
POSIX locks.  Environments are identified by ``(st_dev, st_ino)`` of their
data file.  Entries remember the pid that registered them, so a forked child
(which holds no locks) may open the environment anew.
"""

from __future__ import annotations

import os
import threading

from .errors import Error

_lock = threading.Lock()
_open: dict[tuple[int, int], int] = {}


def data_path(path: str, subdir: bool) -> str:
    """The data file of an environment at ``path``."""
    return os.path.join(path, "data.mdb") if subdir else path


def check(path: str, subdir: bool) -> None:
    """Raise :class:`mdb.Error` if the environment at path is open in this process."""
    try:
        st = os.stat(data_path(path, subdir))
    except OSError:
        return
    key = (st.st_dev, st.st_ino)
    with _lock:
        if _open.get(key) == os.getpid():
            raise Error(
                f"The environment {path!r} is already open in this process "
                "(or still referenced by exported buffers of a closed Environment); "
                "use the existing Environment."
            )


def register(fd: int) -> tuple[int, int]:
    """Record the open environment whose data file is ``fd``; returns its key."""
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    with _lock:
        _open[key] = os.getpid()
    return key


def release(key: tuple[int, int] | None) -> None:
    """Forget an environment after its engine handle was really closed."""
    if key is None:
        return
    with _lock:
        if _open.get(key) == os.getpid():
            del _open[key]
