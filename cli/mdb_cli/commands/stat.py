"""``mdb-cli stat``: what LMDB's mdb_stat prints, in its layout, or as JSON.

Sections, in mdb_stat's order: environment info (-e), reader table (-r), free list
(-f, ``env.freelist()``, read by the mdb core's page walker), the main database (or
-s NAME), then every named database (-a). As in mdb_stat, -r without -s, -a or -f
leaves out the databases. The text layout follows mdb_stat line for line.
"""

from __future__ import annotations

from typing import Any, Optional

import click

from mdb_cli.context import App, name_bytes, named_dbs
from mdb_cli.errors import EXIT_USAGE
from mdb_cli.output import echo_json

HELP = """Show statistics of ENV, like LMDB's mdb_stat.

Without options: the main database's tree depth, page counts and entries.

\b
Examples:
  mdb-cli stat ./db                   main database
  mdb-cli stat -e -a ./db             environment info and every database
  mdb-cli stat -ff ./db               free list, one line per transaction
  mdb-cli stat -r ./db                reader table
  mdb-cli stat -e -f -r -a --json ./db
"""

_DB_FIELDS = (
    ("Tree depth", "depth"),
    ("Branch pages", "branch_pages"),
    ("Leaf pages", "leaf_pages"),
    ("Overflow pages", "overflow_pages"),
    ("Entries", "entries"),
)


@click.command(help=HELP)
@click.argument("env", metavar="ENV")
@click.option("-e", "--env-info", "show_env", is_flag=True, help="Environment information.")
@click.option(
    "-f",
    "--freelist",
    "freelist",
    count=True,
    help="Free list: -f totals, -ff per transaction, -fff every page.",
)
@click.option(
    "-r",
    "--readers",
    "readers",
    count=True,
    help="Reader table; -rr also clears stale readers first.",
)
@click.option("-a", "--all", "all_dbs", is_flag=True, help="Every named database as well.")
@click.option("-s", "--subdb", "name", metavar="NAME", help="The named database NAME only.")
@click.option("-n", "--nosubdir", is_flag=True, help="ENV is a data file, not a directory.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of text.")
@click.pass_obj
def stat(
    app: App,
    env: str,
    show_env: bool,
    freelist: int,
    readers: int,
    all_dbs: bool,
    name: Optional[str],
    nosubdir: bool,
    as_json: bool,
) -> None:
    if name is not None and all_dbs:
        app.abort("-s and -a do not go together", EXIT_USAGE)
    environment = app.open_env(env, nosubdir=nosubdir, readonly=readers < 2)
    try:
        with app.engine_errors(env):
            report = _collect(app, environment, env, show_env, freelist, readers, all_dbs, name)
    finally:
        environment.close()
    if as_json:
        echo_json(report)
    else:
        click.echo(_render(report, freelist).encode("utf-8", "surrogateescape"), nl=False)


def _collect(
    app: App,
    environment: Any,
    path: str,
    show_env: bool,
    freelist: int,
    readers: int,
    all_dbs: bool,
    name: Optional[str],
) -> dict[str, Any]:
    report: dict[str, Any] = {}
    if show_env:
        info = environment.info()
        psize = environment.stat()["psize"]
        report["environment"] = {
            "map_address": info["map_addr"],
            "map_size": info["map_size"],
            "page_size": psize,
            "max_pages": info["map_size"] // psize,
            "pages_used": info["last_pgno"] + 1,
            "last_txnid": info["last_txnid"],
            "max_readers": info["max_readers"],
            "readers_used": info["num_readers"],
        }
    if readers:
        section: dict[str, Any] = {}
        if readers > 1:
            section["before"] = parse_readers(environment.readers())
            section["stale_cleared"] = environment.reader_check()
        section["text"] = environment.readers()
        section["readers"] = parse_readers(section["text"])
        report["readers"] = section
    if freelist:
        report["freelist"] = _freelist(app, environment, path)
    dbs: dict[str, Any] = {}
    if readers and not (name is not None or all_dbs or freelist):
        # As mdb_stat: -r alone shows the reader table without the main database.
        report["databases"] = []
        return report
    with environment.begin() as txn:
        if name is not None:
            db = app.open_db(environment, txn, name, path)
            dbs[name] = txn.stat(db)
        else:
            dbs[""] = txn.stat(environment.open_db(None, txn=txn, create=False))
            if all_dbs:
                for db_name in named_dbs(environment, txn):
                    db = environment.open_db(name_bytes(db_name), txn=txn, create=False)
                    dbs[db_name] = txn.stat(db)
    report["databases"] = [
        {"name": (k or None), **{f: int(v[f]) for _label, f in _DB_FIELDS}} for k, v in dbs.items()
    ]
    return report


def parse_readers(text: str) -> list[dict[str, Any]]:
    """Rows of the reader table from mdb_reader_list's text (pid, thread, txnid)."""
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        pid, thread, txnid = parts
        rows.append(
            {
                "pid": int(pid),
                "thread": thread,
                "txnid": None if txnid == "-" else int(txnid),
            }
        )
    return rows


def _freelist(app: App, environment: Any, path: str) -> dict[str, Any]:
    """``env.freelist()`` (docs/python.md), or a one-line abort when it does not hold up."""
    eng = app.engine
    try:
        raw = environment.freelist()
    except eng.CorruptedError as exc:
        app.abort(f"{path}: cannot read the free list: {exc.reason}; run 'mdb-cli check {path}'")
    out: dict[str, Any] = {f: raw[f] for _label, f in _DB_FIELDS}
    out["free_pages"] = raw["free_pages"]
    out["txns"] = raw["txns"]
    return out


def _runs(pages: list[int]) -> list[tuple[int, int]]:
    """Sorted page numbers as (first, length) runs of consecutive pages."""
    runs: list[tuple[int, int]] = []
    for p in sorted(pages):
        if runs and runs[-1][0] + runs[-1][1] == p:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((p, 1))
    return runs


def _render(report: dict[str, Any], freelist: int) -> str:
    out: list[str] = []
    env = report.get("environment")
    if env is not None:
        addr = env["map_address"]
        out.append("Environment Info")
        out.append(f"  Map address: {hex(addr) if addr else '(nil)'}")
        out.append(f"  Map size: {env['map_size']}")
        out.append(f"  Page size: {env['page_size']}")
        out.append(f"  Max pages: {env['max_pages']}")
        out.append(f"  Number of pages used: {env['pages_used']}")
        out.append(f"  Last transaction ID: {env['last_txnid']}")
        out.append(f"  Max readers: {env['max_readers']}")
        out.append(f"  Number of readers used: {env['readers_used']}")
    rd = report.get("readers")
    if rd is not None:
        out.append("Reader Table Status")
        if "stale_cleared" in rd:
            out.append(_table_text(rd["before"]))
            out.append(f"  {rd['stale_cleared']} stale readers cleared.")
        out.append(rd["text"].rstrip("\n"))
    if "freelist" in report:
        fl = report["freelist"]
        out.append("Freelist Status")
        for label, f in _DB_FIELDS:
            out.append(f"  {label}: {fl[f]}")
        if freelist > 1:
            for t in fl["txns"]:
                runs = _runs(t["pages"])
                span = max((n for _p, n in runs), default=0)
                out.append(f"    Transaction {t['txnid']}, {len(t['pages'])} pages, maxspan {span}")
                if freelist > 2:
                    for first, n in runs:
                        out.append(f"     {first:9d}" + (f"[{n}]" if n > 1 else ""))
        out.append(f"  Free pages: {fl['free_pages']}")
    for db in report["databases"]:
        out.append(f"Status of {db['name'] if db['name'] is not None else 'Main DB'}")
        for label, f in _DB_FIELDS:
            out.append(f"  {label}: {db[f]}")
    return "\n".join(out) + "\n"


def _table_text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no active readers)"
    lines = ["    pid     thread     txnid"]
    for r in rows:
        txnid = "-" if r["txnid"] is None else str(r["txnid"])
        lines.append(f"{r['pid']:10d} {r['thread']} {txnid}")
    return "\n".join(lines)
