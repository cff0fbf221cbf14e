"""The App object that lives in ``ctx.obj``: settings, env opening, the abort path.

Owns: the global settings (verbosity), opening environments and databases with
messages that name the path and say what to do, and :meth:`App.abort`, the single
way a command ends with an error. Commands never call ``sys.exit`` and never print
errors themselves.

Layer: above :mod:`mdb_cli.engine` and :mod:`mdb_cli.errors`; below the commands.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, NoReturn, Optional

import click

from mdb_cli import engine
from mdb_cli.errors import EXIT_ERROR, CliError, describe

#: Named databases we allow to be open at once. LMDB reserves an array of this size
#: per environment and per transaction; 1024 costs a few tens of KiB.
MAX_DBS = 1024


@dataclass
class App:
    verbose: int = 0
    quiet: bool = False

    # --- the one exit path ---------------------------------------------------------

    def abort(self, message: str, code: int = EXIT_ERROR) -> NoReturn:
        """End the command: ``mdb-cli: error: <message>`` on stderr, exit ``code``."""
        raise CliError(message, code)

    def warn(self, message: str) -> None:
        if not self.quiet:
            click.echo(f"mdb-cli: warning: {message}", err=True)

    def info(self, message: str) -> None:
        """Progress and summaries for humans: stderr, silenced by -q."""
        if not self.quiet:
            click.echo(message, err=True)

    def debug(self, message: str) -> None:
        if self.verbose:
            click.echo(f"mdb-cli: {message}", err=True)

    @property
    def engine(self) -> Any:
        try:
            return engine.get()
        except engine.EngineUnavailable as exc:
            self.abort(str(exc))

    @contextmanager
    def engine_errors(self, where: str = "") -> Iterator[None]:
        """Turn engine exceptions raised inside the block into one-line aborts."""
        base = self.engine.Error
        try:
            yield
        except base as exc:
            self.abort(describe(exc, where))

    def begin_write(self, env: Any, path: str) -> Any:
        """Begin a write transaction; say so on stderr if another writer makes us wait.

        LMDB has one writer at a time and ``begin(write=True)`` blocks until the
        current writer ends. Without a word the command would look hung.
        """
        done = threading.Event()

        def notice() -> None:
            if not done.is_set():
                self.info(
                    f"mdb-cli: waiting for another process's write transaction on {path} to end..."
                )

        timer = threading.Timer(2.0, notice)
        timer.daemon = True
        timer.start()
        try:
            return env.begin(write=True)
        finally:
            done.set()
            timer.cancel()

    # --- environments ----------------------------------------------------------------

    def check_env_path(self, path: str, nosubdir: bool) -> None:
        """Abort with a precise message when ``path`` cannot hold an environment."""
        if nosubdir:
            if not os.path.exists(path):
                self.abort(f"{path}: no such file (is the environment missing?)")
            if os.path.isdir(path):
                self.abort(f"{path} is a directory; drop -n to open a directory environment")
            return
        if not os.path.exists(path):
            self.abort(f"{path}: no such environment (the directory does not exist)")
        if not os.path.isdir(path):
            self.abort(f"{path} is a file, not a directory; use -n for a NOSUBDIR environment")
        if not os.path.exists(os.path.join(path, "data.mdb")):
            self.abort(f"{path} has no data.mdb: it is not an environment")

    def open_env(
        self,
        path: str,
        *,
        nosubdir: bool = False,
        readonly: bool = True,
        create: bool = False,
        map_size: int = 0,
        lock: bool = True,
        max_readers: Optional[int] = None,
        max_map_size: Optional[int] = None,
    ) -> Any:
        """Open an environment, or abort with a message that names ``path``.

        ``map_size=0`` adopts the size recorded in the file (or LMDB's default for a
        new file), as LMDB's own tools do. ``max_readers`` sizes the reader table of
        an environment that nobody has open yet. ``max_map_size`` lets the map grow by
        itself up to that size (the mdb core only; callers check ``engine.on_core()``).
        """
        if not create:
            self.check_env_path(path, nosubdir)
        elif not nosubdir:
            if os.path.exists(path) and not os.path.isdir(path):
                self.abort(f"{path} is a file, not a directory; use -n for a NOSUBDIR environment")
            try:
                os.makedirs(path, exist_ok=True)
            except OSError as exc:
                self.abort(f"{path}: cannot create the environment directory: {exc.strerror}")
        eng = self.engine
        self.debug(f"opening {path} (readonly={readonly})")
        try:
            env = eng.open(
                path,
                subdir=not nosubdir,
                readonly=readonly,
                create=create,
                map_size=map_size,
                max_dbs=MAX_DBS,
                lock=lock,
                **({"max_readers": max_readers} if max_readers else {}),
                **({"max_map_size": max_map_size} if max_map_size else {}),
            )
        except eng.Error as exc:
            kind = type(exc).__name__
            if kind == "InvalidError":
                self.abort(f"{path} is not an LMDB database (the file has no valid meta page)")
            if kind == "LockError":
                self.abort(
                    f"{path} is locked by another process; wait for it, or see "
                    f"'mdb-cli readers {path}'"
                )
            if kind == "ReadonlyError" or "Permission denied" in str(exc):
                self.abort(f"{path}: permission denied; check the file's owner and mode")
            self.abort(describe(exc, path))
        notice = meta_notice(env.info().get("meta"))
        if notice:
            self.warn(f"{path}: {notice}")
        return env

    def open_db(self, env: Any, txn: Any, name: Optional[str], path: str = "") -> Any:
        """Open an existing database (``None`` = the main DB) or abort."""
        if name is None:
            return env.open_db(None, txn=txn, create=False)
        eng = self.engine
        try:
            return env.open_db(name_bytes(name), txn=txn, create=False)
        except eng.Error as exc:
            kind = type(exc).__name__
            where = f" in {path}" if path else ""
            if kind == "NotFoundError":
                self.abort(
                    f"database {name!r} does not exist{where}; "
                    f"list the databases with 'mdb-cli stat -a {path or 'ENV'}'"
                )
            if kind == "IncompatibleError":
                self.abort(f"{name!r}{where} is a key of the main database, not a database")
            self.abort(describe(exc, path))


def named_dbs(env: Any, txn: Any) -> list[str]:
    """Names of the named databases, as mdb_dump -a and mdb_stat -a find them.

    They are the keys of the main database that open as databases; keys with a NUL
    byte and plain records are skipped. Names that are not UTF-8 survive through
    surrogate escapes (see :func:`name_text`).
    """
    eng = engine.get()
    main = env.open_db(None, txn=txn, create=False)
    names: list[str] = []
    with txn.cursor(db=main) as cur:
        for key in cur.iternext(keys=True, values=False):
            key = bytes(key)
            if b"\0" in key:
                continue
            text = name_text(key)
            try:
                env.open_db(key, txn=txn, create=False)
            except eng.Error:
                continue
            names.append(text)
    return names


def name_text(raw: bytes) -> str:
    """A database name as text: UTF-8, with undecodable bytes kept as surrogate
    escapes, the way Python hands over command-line arguments. :func:`name_bytes`
    gives the exact bytes back, so any name LMDB accepts round-trips."""
    return raw.decode("utf-8", "surrogateescape")


def name_bytes(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def meta_notice(meta: Optional[dict[str, Any]]) -> str:
    """One line on a damaged meta page (``info()["meta"]``, the mdb core only), or ""."""
    if not meta or not meta.get("damaged"):
        return ""
    bad, used = meta["damaged_page"], meta["page"]
    what = f"meta page {bad} is damaged ({meta['reason']})"
    if meta["fallback"]:
        what += f"; opened the previous snapshot, txn {meta['txnid']}, from meta page {used}"
    else:
        what += f"; using meta page {used}, txn {meta['txnid']}"
    return what + f"; the next write commit rewrites page {bad}"
