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
                f"check was not run: this {engine.name()} engine has no structural checker "
                "(it needs env.check() from an mdb build on the mdb core, not on the "
                "system liblmdb)"
            )
        with app.engine_errors(env):
            report = normalize_report(environment.check())
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


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


#: "no page" in the core's problem records (P_INVALID, all ones)
_NO_PAGE = (1 << 64) - 1, (1 << 32) - 1


def _name(value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if value in (None, "@main"):
        return None
    return value


def normalize_report(raw: Any) -> dict[str, Any]:
    """The checker's report as plain data.

    Accepts a dict or an object with attributes, in either of two shapes:
    - nested (docs/cli.md): ``pages`` {meta, branch, leaf, overflow, freelist, free,
      leaked, total}, ``databases`` [{name, depth, entries, *_pages}], ``problems``
      [{page, database, message}];
    - flat, as the core's mdbcore_check_report: ``psize``, ``next_pgno``, ``txnid``,
      ``meta_pages``, ``branch_pages``, ``leaf_pages``, ``overflow_pages``,
      ``free_pages``, ``leaked_pages``, ``dbs`` (with "@free" and "@main"),
      ``problems`` [{pgno, code, db, msg}], ``problems_total``.
    """
    pages_raw = _get(raw, "pages")
    dbs_raw = list(_get(raw, "databases", None) or _get(raw, "dbs", None) or [])
    freelist_pages = 0
    dbs = []
    for d in dbs_raw:
        name = _get(d, "name")
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        row = {f: int(_get(d, f, 0) or 0) for f in _DB_FIELDS}
        if name == "@free":
            freelist_pages = row["branch_pages"] + row["leaf_pages"] + row["overflow_pages"]
            continue
        dbs.append({"name": _name(name), **row})
    dbs.sort(key=lambda d: d["name"] is not None)  # the main DB first, then in key order
    if pages_raw is not None:
        pages = {k: int(_get(pages_raw, k, 0) or 0) for k in _PAGE_KINDS}
        pages["total"] = int(_get(pages_raw, "total", 0) or 0)
    else:
        pages = {
            "meta": int(_get(raw, "meta_pages", 0) or 0),
            "branch": int(_get(raw, "branch_pages", 0) or 0),
            "leaf": int(_get(raw, "leaf_pages", 0) or 0),
            "overflow": int(_get(raw, "overflow_pages", 0) or 0),
            "freelist": freelist_pages,
            "free": int(_get(raw, "free_pages", 0) or 0),
            "leaked": int(_get(raw, "leaked_pages", 0) or 0),
            "total": int(_get(raw, "next_pgno", 0) or 0),
        }
        for extra in ("twice_pages", "free_and_used"):
            if _get(raw, extra):
                pages[extra.replace("_pages", "")] = int(_get(raw, extra))
    problems: list[dict[str, Any]] = []
    for p in _get(raw, "problems", []) or []:
        if isinstance(p, str):
            problems.append({"page": None, "database": None, "kind": None, "message": p})
            continue
        page = _get(p, "page", _get(p, "pgno"))
        if page is not None and int(page) in _NO_PAGE:
            page = None
        db = _get(p, "database", _get(p, "db"))
        if isinstance(db, bytes):
            db = db.decode("utf-8", "replace")
        if db == "":
            db = None
        kind = _get(p, "kind", _get(p, "code"))
        problems.append(
            {
                "page": None if page is None else int(page),
                "database": db,
                "kind": None if kind is None else str(kind),
                "message": str(_get(p, "message", None) or _get(p, "msg", "") or ""),
            }
        )
    total = _get(raw, "problems_total")
    total = len(problems) if total is None else max(int(total), len(problems))
    return {
        "ok": total == 0,
        "txnid": _get(raw, "txnid"),
        "page_size": _get(raw, "page_size", _get(raw, "psize")),
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
    lines.append("ok: no problems found" if report["ok"] else f"{total} problem(s)")
    return "\n".join(lines) + "\n"
