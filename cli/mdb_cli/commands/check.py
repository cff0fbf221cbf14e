"""``mdb-cli check``: run the engine's structural checker and report.

The checker is the mdb engine's ``env.check()`` (one page walker that also feeds
stat and compacting copy). This module only renders its report; the report's
shape is documented in docs/cli.md and checked by :func:`normalize_report`.
"""

from __future__ import annotations

from typing import Any

import click

from mdb_cli import engine
from mdb_cli.context import App
from mdb_cli.output import echo_json

HELP = """Check the structure of every database in ENV.

Walks every page reachable from the two meta pages: every database's tree,
overflow pages and the free list. It prints a summary (pages by kind, free and
leaked pages, depth and entries per database) and exits with code 1 and the
location of every problem when the file is damaged.

Needs the mdb engine (env.check()); with MDB_CLI_ENGINE=lmdb it is not run.

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
        if not engine.has_check(environment):
            app.abort(
                f"check was not run: the {engine.name()} engine has no structural checker "
                "(it needs the mdb engine's env.check()); install mdb and unset MDB_CLI_ENGINE"
            )
        with app.engine_errors(env):
            report = normalize_report(environment.check())
    finally:
        environment.close()
    if as_json:
        echo_json(report)
    else:
        click.echo(render(env, report), nl=False)
    problems = report["problems"]
    if problems:
        app.abort(
            f"{env} is damaged: {len(problems)} problem(s) found; dump what can be read "
            "('mdb-cli dump') or restore a copy"
        )


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def normalize_report(raw: Any) -> dict[str, Any]:
    """The checker's report as plain data; accepts a dict or an object with attributes."""
    pages_raw = _get(raw, "pages", {}) or {}
    pages = {k: int(_get(pages_raw, k, 0) or 0) for k in _PAGE_KINDS}
    pages["total"] = int(_get(pages_raw, "total", 0) or 0)
    dbs = []
    for d in _get(raw, "databases", []) or []:
        name = _get(d, "name")
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        dbs.append({"name": name, **{f: int(_get(d, f, 0) or 0) for f in _DB_FIELDS}})
    problems = []
    for p in _get(raw, "problems", []) or []:
        if isinstance(p, str):
            problems.append({"page": None, "database": None, "message": p})
            continue
        db = _get(p, "database")
        if isinstance(db, bytes):
            db = db.decode("utf-8", "replace")
        page = _get(p, "page")
        problems.append(
            {
                "page": None if page is None else int(page),
                "database": db,
                "message": str(_get(p, "message", "") or _get(p, "what", "")),
            }
        )
    return {
        "ok": not problems,
        "txnid": _get(raw, "txnid"),
        "page_size": _get(raw, "page_size"),
        "pages": pages,
        "databases": dbs,
        "problems": problems,
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
    lines.append("  pages: " + ", ".join(f"{pages[k]} {k}" for k in _PAGE_KINDS))
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
    lines.append(
        "ok: no problems found"
        if not report["problems"]
        else f"{len(report['problems'])} problem(s)"
    )
    return "\n".join(lines) + "\n"
