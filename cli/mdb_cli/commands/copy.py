"""``mdb-cli copy``: a consistent copy of an environment while writers go on.

The engine's copy runs inside one read transaction, so the copy is the snapshot
of the moment it began; writers are not blocked. It runs in a worker thread and
writes into a file we created, so the main thread can show progress by watching
that file grow.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional

import click

from mdb_cli.context import App
from mdb_cli.output import Progress, binary_stdout, human_size, stderr_is_tty

HELP = """Copy the environment SRC to DST, consistently, while writers go on.

DST is a directory (created if missing) that gets a data.mdb; with -n, SRC and
DST are data files. The copy has no lock file; it opens like any environment.
The destination must not already hold a data file. DST '-' writes the data
file to standard output (as mdb_copy does without a destination), e.g. to pipe
it to a compressor.

--compact leaves out free pages and renumbers the rest, so the copy is as
small as it can be (its transaction ids restart at 1).

\b
Examples:
  mdb-cli copy ./db /backup/db-2024-06-01
  mdb-cli copy --compact ./db ./db.compact
  mdb-cli copy -n ./data.mdb ./backup.mdb
  mdb-cli copy -c ./db - | zstd > db.mdb.zst
"""


@click.command(help=HELP)
@click.argument("src", metavar="SRC")
@click.argument("dst", metavar="DST")
@click.option("-c", "--compact", is_flag=True, help="Omit free pages (like mdb_copy -c).")
@click.option("-n", "--nosubdir", is_flag=True, help="SRC and DST are data files.")
@click.pass_obj
def copy(app: App, src: str, dst: str, compact: bool, nosubdir: bool) -> None:
    if dst == "-":
        _copy_to_stdout(app, src, compact, nosubdir)
        return
    target = dst if nosubdir else os.path.join(dst, "data.mdb")
    environment = app.open_env(src, nosubdir=nosubdir, readonly=True)
    try:
        if os.path.abspath(target) == os.path.abspath(
            src if nosubdir else os.path.join(src, "data.mdb")
        ):
            app.abort("SRC and DST are the same file")
        if not nosubdir:
            try:
                os.makedirs(dst, exist_ok=True)
            except OSError as exc:
                app.abort(f"{dst}: cannot create the directory: {exc.strerror}")
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            app.abort(f"{target} already exists; copy into an empty directory or a new file name")
        except OSError as exc:
            app.abort(f"{target}: cannot create the copy: {exc.strerror}")
        info = environment.info()
        expected = (info["last_pgno"] + 1) * environment.stat()["psize"]
        ok = False
        try:
            _run_copy(app, environment, fd, target, compact, expected)
            ok = True
        finally:
            os.close(fd)
            if not ok:
                _remove(target)
    finally:
        environment.close()
    size = os.path.getsize(target)
    app.info(f"copied {src} to {target}: {human_size(size)}{' (compacted)' if compact else ''}")


def _run_copy(
    app: App, environment: Any, fd: int, target: str, compact: bool, expected: int
) -> None:
    failure: list[BaseException] = []

    def work() -> None:
        try:
            environment.copyfd(fd, compact=compact)
        except BaseException as exc:  # handed to the main thread
            failure.append(exc)

    progress = Progress("copying", expected, stderr_is_tty() and not app.quiet, unit="bytes")
    worker = threading.Thread(target=work, name="mdb-cli-copy", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
            done = _size(fd)
            if done is not None and done > progress.items:
                progress.advance(done - progress.items, min(done, expected))
    finally:
        worker.join()
        done = _size(fd) or 0
        if done > progress.items:
            progress.advance(done - progress.items, min(done, expected))
        progress.finish()
    if failure:
        exc = failure[0]
        with app.engine_errors(target):
            raise exc


def _copy_to_stdout(app: App, src: str, compact: bool, nosubdir: bool) -> None:
    stdout = binary_stdout()
    try:
        fd = stdout.fileno()
    except (AttributeError, OSError, ValueError):
        app.abort("standard output is not a file descriptor; give DST as a path")
    if os.isatty(fd):
        app.abort("refusing to write a database to a terminal; redirect standard output")
    stdout.flush()
    environment = app.open_env(src, nosubdir=nosubdir, readonly=True)
    try:
        with app.engine_errors(src):
            environment.copyfd(fd, compact=compact)
    finally:
        environment.close()


def _size(fd: int) -> Optional[int]:
    try:
        return os.fstat(fd).st_size
    except OSError:
        return None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
