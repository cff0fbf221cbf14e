"""``mdb-cli readers``: the reader table, and clearing slots of dead processes."""

from __future__ import annotations

from typing import Any

import click

from mdb_cli.context import App
from mdb_cli.output import echo_json

HELP = """Show the reader table of ENV: one row per reader slot in use (process id,
thread id in hex, and the snapshot's transaction id, '-' when idle), the
snapshot's age in transactions committed since, and the pages it holds back (pages
freed since that writers cannot reuse while it lives).

A reader whose process died keeps its slot and pins old pages, so the file
grows; --clear-stale frees the slots of processes that no longer exist.

\b
Examples:
  mdb-cli readers ./db
  mdb-cli readers --clear-stale ./db
  mdb-cli readers --json ./db
"""


@click.command(help=HELP)
@click.argument("env", metavar="ENV")
@click.option("--clear-stale", is_flag=True, help="Clear the slots of dead processes first.")
@click.option("-n", "--nosubdir", is_flag=True, help="ENV is a data file, not a directory.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.pass_obj
def readers(app: App, env: str, clear_stale: bool, nosubdir: bool, as_json: bool) -> None:
    environment = app.open_env(env, nosubdir=nosubdir, readonly=not clear_stale)
    try:
        with app.engine_errors(env):
            cleared = environment.reader_check() if clear_stale else None
            text = environment.readers()
            detail: list[dict[str, Any]] = environment.readers(detail=True)
    finally:
        environment.close()
    if as_json:
        out: dict[str, object] = {"readers": [_json_row(r) for r in detail]}
        if cleared is not None:
            out["stale_cleared"] = cleared
        echo_json(out)
        return
    if cleared is not None:
        click.echo(f"{cleared} stale readers cleared.")
    if not detail:
        click.echo(text, nl=not text.endswith("\n"))
        return
    click.echo("    pid     thread     txnid  age(txns)  pages_held")
    for r in detail:
        idle = r["txnid"] is None
        txnid = "-" if idle else str(r["txnid"])
        age = "-" if idle else str(r["age"])
        held = "-" if idle else str(r["pages_held"])
        click.echo(f"{r['pid']:>10} {r['thread']:x} {txnid:>9} {age:>10} {held:>11}")


def _json_row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "pid": r["pid"],
        "thread": format(r["thread"], "x"),
        "txnid": r["txnid"],
        "age": None if r["txnid"] is None else r["age"],
        "pages_held": None if r["txnid"] is None else r["pages_held"],
    }
