"""``mdb-cli dump``: write databases in mdb_dump's text format (or JSON lines).

The output matches LMDB's mdb_dump byte for byte (see mdb_cli.formats for the one
documented exception, backslashes in -p output), so LMDB's mdb_load reads it.
Everything is read inside one read transaction: the dump is a consistent snapshot
even while writers go on.
"""

from __future__ import annotations

import io
import os
from contextlib import contextmanager
from typing import IO, Any, Iterator, Optional

import click

from mdb_cli import engine
from mdb_cli.commands import format_option
from mdb_cli.context import App, name_bytes, named_dbs
from mdb_cli.errors import EXIT_USAGE
from mdb_cli.formats import dump_header, jsonl_record, write_records
from mdb_cli.output import binary_stdout

HELP = """Write the contents of databases of ENV as text.

The default format is LMDB's mdb_dump format, which LMDB's mdb_load and
'mdb-cli load' read back. Without -s or -a the main database is written.

\b
Examples:
  mdb-cli dump ./db                      main database, hex items
  mdb-cli dump -p -s users ./db          named database, printable items
  mdb-cli dump -a -o all.dump ./db       every named database into one file
  mdb-cli dump -n ./data.mdb             a NOSUBDIR environment
  mdb-cli dump --format jsonl ./db       JSON lines for other tools
  mdb-cli dump -l ./db                   only list the named databases
  mdb-cli dump --salvage -a ./db > s.dump   what can still be read of a damaged file

--salvage reads the data file without the engine, walking from both meta pages
and skipping every page that fails its checks. It writes the records it can
reach in the same format, lists on stderr what it could not read, and exits
with code 1 when anything was lost (0 and plain dump's output when the file is
intact).
"""


@click.command(help=HELP)
@click.argument("env", metavar="ENV")
@click.option("-s", "--subdb", "name", metavar="NAME", help="Dump the named database NAME.")
@click.option("-a", "--all", "all_dbs", is_flag=True, help="Dump every named database.")
@click.option("-p", "--print", "printable", is_flag=True, help="Printable items (format=print).")
@click.option("-n", "--nosubdir", is_flag=True, help="ENV is a data file, not a directory.")
@click.option("-l", "--list", "list_only", is_flag=True, help="List the named databases and exit.")
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False, writable=True, allow_dash=True),
    default="-",
    metavar="FILE",
    help="Write to FILE instead of standard output.",
)
@format_option("mdb_dump text, or JSON lines (one database only).")
@click.option(
    "--salvage",
    is_flag=True,
    help="Damaged file: write every record still reachable, report what was lost.",
)
@click.pass_obj
def dump(
    app: App,
    env: str,
    name: Optional[str],
    all_dbs: bool,
    printable: bool,
    nosubdir: bool,
    list_only: bool,
    output: str,
    fmt: str,
    salvage: bool,
) -> None:
    if name is not None and all_dbs:
        app.abort("-s and -a do not go together: dump one database or all of them", EXIT_USAGE)
    if fmt == "jsonl" and (all_dbs or printable):
        app.abort("--format jsonl writes one database and has no -p form", EXIT_USAGE)
    if salvage:
        from mdb_cli.commands.salvage_dump import DumpRequest, salvage_dump

        salvage_dump(
            app, env, DumpRequest(name, all_dbs, printable, nosubdir, list_only, output, fmt)
        )
        return
    environment = app.open_env(env, nosubdir=nosubdir, readonly=True)
    try:
        with app.engine_errors(env):
            with environment.begin() as txn:
                if list_only:
                    for listed in named_dbs(environment, txn):
                        click.echo(name_bytes(listed) + b"\n", nl=False)
                    return
                names: list[Optional[str]]
                if all_dbs:
                    names = list(named_dbs(environment, txn))
                else:
                    names = [name]
                # Open every database before writing anything, so a missing one
                # fails before a partial dump reaches the output.
                dbs = [(n, app.open_db(environment, txn, n, env)) for n in names]
                with dump_output(output) as out:
                    info = environment.info()
                    psize = environment.stat()["psize"]
                    for db_name, db in dbs:
                        if fmt == "jsonl":
                            _write_jsonl(out, txn, db)
                            continue
                        out.write(
                            dump_header(
                                printable=printable,
                                name=db_name,
                                mapsize=info["map_size"],
                                maxreaders=info["max_readers"],
                                flags=engine.db_flags(db, txn),
                                psize=psize,
                            )
                        )
                        with txn.cursor(db=db) as cur:
                            write_records(out, cur.iternext(), printable)
    finally:
        environment.close()


def _open_output(output: str) -> IO[str]:
    if output == "-":
        return io.TextIOWrapper(
            binary_stdout(), encoding="utf-8", errors="surrogateescape", newline="\n"
        )
    return open(output, "w", encoding="utf-8", errors="surrogateescape", newline="\n")


@contextmanager
def dump_output(output: str) -> Iterator[IO[str]]:
    """The text stream of -o OUTPUT ("-": standard output, left open), flushed at the end;
    on an error no half-written dump file is left behind."""
    out = _open_output(output)
    try:
        yield out
    except BaseException:
        if output != "-":
            out.close()
            _remove(output)
        raise
    finally:
        if not out.closed:
            out.flush()
            if isinstance(out, io.TextIOWrapper) and output == "-":
                out.detach()
            else:
                out.close()


def _write_jsonl(out: IO[str], txn: Any, db: Any) -> None:
    with txn.cursor(db=db) as cur:
        buf: list[str] = []
        for key, value in cur.iternext():
            buf.append(jsonl_record(bytes(key), bytes(value)))
            if len(buf) >= 4096:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
