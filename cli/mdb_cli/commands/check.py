"""``mdb-cli check``: run the engine's structural checker and report.

The checker is the mdb core's, through ``env.check()`` (the page walker that also reads
the free list for ``stat -f``). This module only renders its report; the printed shape
is documented in docs/cli.md and made by :func:`normalize_report`.
"""

from __future__ import annotations

from typing import Any

import click

from mdb_cli.context import App, meta_notice
from mdb_cli.output import echo_json

HELP = """Check the structure of every database in ENV.

Walks every page reachable from the meta page in use: every database's tree,
overflow pages and the free list. A damaged meta page that the open did not use
(it fell back to the other one) is reported on its own line, and on stderr.
It prints a summary (pages by kind, free and leaked pages, depth and entries
per database) and exits with code 1 and the location of every problem when
the file is damaged.

\b
Examples:
  mdb-cli check ./db
  mdb-cli check --json ./db
"""

_PAGE_KINDS = ("meta", "branch", "leaf", "overflow", "freelist", "free", "leaked")
_DB_FIELDS = ("depth", "entries", "branch_pages", "leaf_pages", "overflow_pages")


@click.command(help=HELP)
@click.argument("env", metavar="ENV")
@click.option("-n", "--nosubdir", is_flag=True, help="ENV is a data file, not a directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def check(app: App, env: str, nosubdir: bool, as_json: bool) -> None:
    environment = app.open_env(env, nosubdir=nosubdir, readonly=True)
    try:
        with app.engine_errors(env):
            report = normalize_report(environment.check())
            meta = environment.info().get("meta")
            if meta is not None:  # the mdb core's info() has it
                report["meta"] = meta
    finally:
        environment.close()
    if as_json:
        echo_json(report)
    else:
        click.echo(render(env, report), nl=False)
    if not report["ok"]:
        app.abort(
            f"{env} is damaged: {report['problems_total']} problem(s) found; write out what can "
            f"still be read with 'mdb-cli dump --salvage -a {env}' (and without -a for the main "
            "database), or restore a copy"
        )


#: "no page" in the core's problem records (P_INVALID, all ones)
_NO_PAGE = (1 << 64) - 1


def normalize_report(raw: dict[str, Any]) -> dict[str, Any]:
    """``env.check()``'s report (docs/python.md: the core's mdbcore_check_report as a
    dict) in the shape ``check`` prints and ``--json`` writes (docs/cli.md):
    ``pages`` {meta, branch, leaf, overflow, freelist, free, leaked, total, and twice /
    free_and_used when not 0}, ``databases`` [{name, depth, entries, *_pages}] with the
    main DB first, ``problems`` [{page, database, kind, message}], ``problems_total``."""
    freelist_pages = 0
    dbs = []
    for d in raw["dbs"]:
        row = {f: int(d[f]) for f in _DB_FIELDS}
        if d["name"] == "@free":
            freelist_pages = row["branch_pages"] + row["leaf_pages"] + row["overflow_pages"]
            continue
        dbs.append({"name": None if d["name"] == "@main" else d["name"], **row})
    dbs.sort(key=lambda d: d["name"] is not None)  # the main DB first, then in key order
    pages = {
        "meta": raw["meta_pages"],
        "branch": raw["branch_pages"],
        "leaf": raw["leaf_pages"],
        "overflow": raw["overflow_pages"],
        "freelist": freelist_pages,
        "free": raw["free_pages"],
        "leaked": raw["leaked_pages"],
        "total": raw["next_pgno"],
    }
    for extra in ("twice_pages", "free_and_used"):
        if raw[extra]:
            pages[extra.replace("_pages", "")] = raw[extra]
    problems = [
        {
            "page": None if p["pgno"] == _NO_PAGE else p["pgno"],
            "database": p["db"] or None,
            "kind": str(p["code"]),
            "message": p["msg"],
        }
        for p in raw["problems"]
    ]
    total = max(raw["problems_total"], len(problems))
    return {
        "ok": total == 0,
        "txnid": raw["txnid"],
        "page_size": raw["psize"],
        "pages": pages,
        "databases": dbs,
        "problems": problems,
        "problems_total": total,
    }


def render(env: str, report: dict[str, Any]) -> str:
    pages = report["pages"]
    head = f"checked {env}"
    extra = []
    if report.get("txnid") is not None:
        extra.append(f"txn {report['txnid']}")
    if report.get("page_size"):
        extra.append(f"page size {report['page_size']}")
    if pages.get("total"):
        extra.append(f"{pages['total']} pages")
    lines = [head + (f" ({', '.join(extra)})" if extra else "")]
    kinds = list(_PAGE_KINDS) + [k for k in ("twice", "free_and_used") if pages.get(k)]
    lines.append("  pages: " + ", ".join(f"{pages[k]} {k.replace('_', ' ')}" for k in kinds))
    for d in report["databases"]:
        label = "Main DB" if d["name"] is None else d["name"]
        used = d["branch_pages"] + d["leaf_pages"] + d["overflow_pages"]
        lines.append(
            f"  {label}: depth {d['depth']}, {d['entries']} entries, {used} pages "
            f"({d['branch_pages']} branch, {d['leaf_pages']} leaf, "
            f"{d['overflow_pages']} overflow)"
        )
    for p in report["problems"]:
        where = []
        if p["page"] is not None:
            where.append(f"page {p['page']}")
        if p["database"] is not None:
            where.append(f"database {p['database']!r}")
        loc = ", ".join(where) or "environment"
        lines.append(f"  problem: {loc}: {p['message']}")
    listed, total = len(report["problems"]), report["problems_total"]
    if total > listed:
        lines.append(f"  ... and {total - listed} more problem(s) not listed")
    meta = report.get("meta")
    if meta and meta["damaged"]:
        lines.append(f"  meta: {meta_notice(meta)}")
    lines.append("ok: no problems found" if report["ok"] else f"{total} problem(s)")
    return "\n".join(lines) + "\n"
