"""``mdb-cli drop``: empty a named database, or delete it with --delete."""

from __future__ import annotations

import sys

import click

from mdb_cli.context import App

HELP = """Empty the named database NAME of ENV; with --delete, remove it as well.

This cannot be undone. On a terminal you are asked to confirm unless --yes is
given; in scripts (no terminal) it runs without asking.

\b
Examples:
  mdb-cli drop -s sessions ./db              remove every record of 'sessions'
  mdb-cli drop -s sessions --delete -y ./db  remove the database itself
"""


@click.command(help=HELP)
@click.argument("env", metavar="ENV")
@click.option("-s", "--subdb", "name", metavar="NAME", required=True, help="The database.")
@click.option("--delete", is_flag=True, help="Delete the database, not only its records.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("-n", "--nosubdir", is_flag=True, help="ENV is a data file, not a directory.")
@click.pass_obj
def drop(app: App, env: str, name: str, delete: bool, yes: bool, nosubdir: bool) -> None:
    environment = app.open_env(env, nosubdir=nosubdir, readonly=False)
    try:
        with app.engine_errors(env):
            txn = app.begin_write(environment, env)
            try:
                db = app.open_db(environment, txn, name, env)
                entries = txn.stat(db)["entries"]
                what = "delete" if delete else "empty"
                if not yes and sys.stdin.isatty():
                    click.confirm(
                        f"{what} database {name!r} of {env} ({entries} entries)?",
                        abort=True,
                        err=True,
                    )
                txn.drop(db, delete=delete)
                txn.commit()
            except BaseException:
                txn.abort()
                raise
    finally:
        environment.close()
    app.info(f"{'deleted' if delete else 'emptied'} database {name!r} ({entries} entries)")
