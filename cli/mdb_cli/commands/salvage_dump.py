"""``mdb-cli dump --salvage``: mdb_dump's format for what a damaged file still holds.

Owns: choosing the data file, running :mod:`mdb_cli.salvage` (which reads the file
itself, never through the engine), writing the sections with the same formatting
code as plain dump, and the report on stderr: the pages skipped, the databases
lost, and an estimate of the records lost where a database record gives a count.
Exit code 0 when nothing was wrong (the output is then plain dump's), else 1.
"""

from __future__ import annotations

import os
from typing import NamedTuple, Optional

import click

from mdb_cli.commands.dump import dump_output
from mdb_cli.context import App, name_text
from mdb_cli.formats import dump_header, jsonl_record, write_records
from mdb_cli.salvage import Database, Result, SalvageError, salvage

#: LMDB's reader table: a 192-byte head (with one slot), then 64 bytes per slot
_LOCK_HEAD, _SLOT, _DEFAULT_READERS = 192, 64, 126

#: problems listed on stderr (the rest are counted)
MAX_SHOWN = 40


def data_file(env: str, nosubdir: bool) -> tuple[str, str]:
    """(data file, lock file) of the environment at ``env``."""
    if nosubdir:
        return env, env + "-lock"
    return os.path.join(env, "data.mdb"), os.path.join(env, "lock.mdb")


def max_readers(lock_path: str) -> int:
    """The maxreaders mdb_dump reports: taken from an existing lock file's size when
    it is at least the default table, else the default (mdb_dump sets none)."""
    try:
        size = os.stat(lock_path).st_size
    except OSError:
        return _DEFAULT_READERS
    if size < _LOCK_HEAD + (_DEFAULT_READERS - 1) * _SLOT:
        return _DEFAULT_READERS
    return (size - _LOCK_HEAD) // _SLOT + 1


def _label(db: Database) -> str:
    return "the main database" if db.name is None else f"database {name_text(db.name)!r}"


class DumpRequest(NamedTuple):
    """dump's options, as `mdb-cli dump --salvage` got them."""

    name: Optional[str]
    all_dbs: bool
    printable: bool
    nosubdir: bool
    list_only: bool
    output: str
    fmt: str


def salvage_dump(app: App, env: str, req: DumpRequest) -> None:
    name, all_dbs, printable, nosubdir, list_only, output, fmt = req
    app.check_env_path(env, nosubdir)
    path, lock = data_file(env, nosubdir)
    try:
        result = salvage(path)
    except SalvageError as exc:
        app.abort(f"nothing could be salvaged: {exc}")
    named = [db for db in result.named_in_order() if b"\0" not in (db.name or b"")]
    if list_only:
        for db in named:
            assert db.name is not None
            click.echo(db.name + b"\n", nl=False)
        _report(app, env, result, named)
        return
    dbs: list[Database]
    if all_dbs:
        dbs = named
    elif name is None:
        dbs = [result.main]
    else:
        found = result.named.get(name.encode("utf-8", "surrogateescape"))
        if found is None:
            _report(app, env, result, [])
            app.abort(f"database {name!r} was not found among the records that could be read")
        dbs = [found]
    with dump_output(output) as out:
        mr = max_readers(lock)
        for db in dbs:
            if fmt == "jsonl":
                out.write("".join(jsonl_record(k, v) for k, v in db.records()))
                continue
            out.write(
                dump_header(
                    printable=printable,
                    name=None if db.name is None else name_text(db.name),
                    mapsize=result.mapsize,
                    maxreaders=mr,
                    flags=db.flag_dict(),
                    psize=result.psize,
                )
            )
            write_records(out, db.records(), printable)
    _report(app, env, result, dbs)


def _report(app: App, env: str, result: Result, dbs: list[Database]) -> None:
    """What could not be read, on stderr; abort (exit 1) when anything was wrong."""
    if not result.damaged():
        return
    lines = []
    for p in result.problems[:MAX_SHOWN]:
        where = []
        if p.page is not None:
            where.append(f"page {p.page}")
        if p.db is not None:
            where.append(f"database {name_text(p.db)!r}")
        lines.append(f"mdb-cli: salvage: {', '.join(where) or env}: {p.message}")
    if result.problem_count > MAX_SHOWN:
        lines.append(f"mdb-cli: salvage: ... and {result.problem_count - MAX_SHOWN} more")
    total_lost = 0
    everything = [result.main] + result.named_in_order()
    for db in everything:
        lost = result.lost_estimate(db)
        total_lost += lost
        if db.lost.empty() and not lost:
            continue
        got = db.count()
        if got == 0 and db.entries:
            lines.append(f"mdb-cli: salvage: {_label(db)} is lost ({db.entries} records)")
        elif lost:
            lines.append(
                f"mdb-cli: salvage: {_label(db)}: {got} records read, its record says "
                f"{db.entries}: about {lost} lost"
            )
        else:
            lines.append(f"mdb-cli: salvage: {_label(db)}: {got} records read; some parts lost")
    skipped = sorted({p.page for p in result.problems if p.page is not None and p.page > 1})
    if skipped:
        shown = ", ".join(str(p) for p in skipped[:20]) + (" ..." if len(skipped) > 20 else "")
        lines.append(f"mdb-cli: salvage: pages with problems: {shown}")
    click.echo("\n".join(lines), err=True)
    written = sum(db.count() for db in dbs)
    lost_text = f"about {total_lost} records lost" if total_lost else "records may be lost"
    app.abort(
        f"{env} is damaged: {result.problem_count} problem(s); wrote {written} records; {lost_text}"
    )
