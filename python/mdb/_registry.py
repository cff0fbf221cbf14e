"""Duplicate-open guard shared by both backends.

Opening the same environment twice in one process is refused: two engine
handles on one lock file would let the second close drop the first one's
POSIX locks.  Environments are identified by ``(st_dev, st_ino)`` of their
data file and of their lock file (either one matching means "the same").
Entries remember the pid that registered them, so a forked child (which holds
no locks) may open the environment anew.
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


def lock_path(path: str, subdir: bool) -> str:
    """The lock file of an environment at ``path``."""
    return os.path.join(path, "lock.mdb") if subdir else path + "-lock"


def check(path: str, subdir: bool) -> None:
    """Raise :class:`mdb.Error` if the environment at path is open in this process."""
    keys = []
    for p in (data_path(path, subdir), lock_path(path, subdir)):
        try:
            st = os.stat(p)
        except OSError:
            continue
        keys.append((st.st_dev, st.st_ino))
    pid = os.getpid()
    with _lock:
        if any(_open.get(k) == pid for k in keys):
            raise Error(
                f"The environment {path!r} is already open in this process "
                "(or still referenced by exported buffers of a closed Environment); "
                "use the existing Environment."
            )


def register(fd: int, path: str, subdir: bool) -> tuple[tuple[int, int], ...]:
    """Record the open environment whose data file is ``fd``; returns its keys."""
    st = os.fstat(fd)
    keys = [(st.st_dev, st.st_ino)]
    try:
        lst = os.stat(lock_path(path, subdir))
        keys.append((lst.st_dev, lst.st_ino))
    except OSError:  # lock=False: no lock file
        pass
    pid = os.getpid()
    with _lock:
        for k in keys:
            _open[k] = pid
    return tuple(keys)


def release(keys: tuple[tuple[int, int], ...] | None) -> None:
    """Forget an environment after its engine handle was really closed."""
    if not keys:
        return
    pid = os.getpid()
    with _lock:
        for k in keys:
            if _open.get(k) == pid:
                del _open[k]
