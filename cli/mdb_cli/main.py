"""The root command group of ``mdb-cli`` and the console-script entry point.

Owns: the global options, the table of subcommands (loaded lazily from
"module:attr" strings, so ``mdb-cli dump`` never imports the code of ``load``), and
the last line of defence: an unexpected exception becomes one line (a traceback
with -v) and exit code 1.

The root callback does no work beyond storing settings in the :class:`App`.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Any, Optional

import click

from mdb_cli import __version__, engine
from mdb_cli.context import App
from mdb_cli.errors import EXIT_ERROR, CliError

#: command name -> "module:attribute". Order here is the order in --help.
COMMANDS: dict[str, str] = {
    "dump": "mdb_cli.commands.dump:dump",
    "load": "mdb_cli.commands.load:load",
    "stat": "mdb_cli.commands.stat:stat",
    "copy": "mdb_cli.commands.copy:copy",
    "check": "mdb_cli.commands.check:check",
    "readers": "mdb_cli.commands.readers:readers",
    "drop": "mdb_cli.commands.drop:drop",
}

ROOT_HELP = """Look at, move and repair mdb / LMDB environments.

ENV is an environment directory (holding data.mdb and lock.mdb), or with -n a
single data file (NOSUBDIR).

\b
Examples:
  mdb-cli stat -e ./db                   environment and main database
  mdb-cli dump -a ./db > db.dump         every named database, mdb_dump format
  mdb-cli load -f db.dump ./copy         load it into another environment
  mdb-cli copy --compact ./db ./backup   consistent, compacted copy
  mdb-cli check ./db                     structural check

\b
Exit codes:
  0  success
  1  an error in the data or the file (bad input, damaged or missing
     database, map full, locked environment, ...)
  2  usage error (unknown option, missing argument)

\b
Environment variables:
  MDB_CLI_VERBOSE  same as -v
"""


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use.

    It also converts anything a command lets escape into the CLI's error contract:
    engine errors become one line with exit code 1, and an unexpected exception
    becomes one line (plus a traceback with -v) and exit code 1.
    """

    def __init__(self, *args: Any, lazy: Optional[dict[str, str]] = None, **kw: Any):
        super().__init__(*args, **kw)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.lazy) + sorted(super().list_commands(ctx))

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        target = self.lazy.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module_name, attr = target.split(":")
        cmd = getattr(importlib.import_module(module_name), attr)
        if not isinstance(cmd, click.Command):
            raise TypeError(f"{target} is not a click command")
        return cmd

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except engine.EngineUnavailable as exc:
            raise CliError(str(exc)) from exc
        except KeyboardInterrupt:
            raise CliError("interrupted", 130) from None
        except BrokenPipeError:
            # `mdb-cli dump ... | head`: the reader went away; that is not our failure.
            raise click.exceptions.Exit(0) from None
        except Exception as exc:
            app = ctx.find_object(App)
            verbose = bool(app and app.verbose)
            base = _engine_error_base()
            if base is not None and isinstance(exc, base):
                from mdb_cli.errors import describe

                if verbose:
                    traceback.print_exc(file=sys.stderr)
                raise CliError(describe(exc)) from exc
            if isinstance(exc, OSError):
                name = f"{exc.filename}: " if exc.filename else ""
                if verbose:
                    traceback.print_exc(file=sys.stderr)
                raise CliError(f"{name}{exc.strerror or exc}") from exc
            if verbose:
                traceback.print_exc(file=sys.stderr)
                raise CliError(f"internal error: {type(exc).__name__}: {exc}") from exc
            raise CliError(
                f"internal error: {type(exc).__name__}: {exc} "
                "(this is a bug in mdb-cli; run again with -v for the traceback)"
            ) from exc


def _engine_error_base() -> Optional[type]:
    try:
        return engine.error_base()
    except engine.EngineUnavailable:
        return None


def _version_message() -> str:
    return f"mdb-cli {__version__}\n{engine.version_text()}"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(_version_message())
    ctx.exit(0)


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    help=ROOT_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version of mdb-cli and of the engine, and exit.",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    envvar="MDB_CLI_VERBOSE",
    show_envvar=True,
    help="Say more: what is opened, and tracebacks for failures.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bars, summaries or warnings.")
@click.pass_context
def cli(ctx: click.Context, verbose: int, quiet: bool) -> None:
    ctx.obj = App(verbose=verbose, quiet=quiet)


def main(argv: Optional[list[str]] = None) -> None:
    """Console-script entry point (``mdb-cli = mdb_cli.main:main``)."""
    try:
        cli.main(args=argv, prog_name="mdb-cli")
    except SystemExit:
        raise
    except Exception as exc:  # outside any command: parsing, lazy import
        click.echo(f"mdb-cli: error: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":
    main()
