"""The mdb-cli subcommands, and the options more than one of them takes."""

from __future__ import annotations

from typing import Any, Callable

import click


def format_option(help_text: str) -> Callable[[Any], Any]:
    """--format dump|jsonl (default dump) as the parameter fmt: dump's and load's."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["dump", "jsonl"]),
        default="dump",
        show_default=True,
        help=help_text,
    )
