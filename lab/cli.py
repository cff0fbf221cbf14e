"""cli.py -- `python -m lab list | run | plot | report`, one command per step."""

from __future__ import annotations

import datetime as dt
import glob
import os
import shutil
import sys

import click

from . import experiments
from .slapd import ALL_ENGINES, ENGINES, LabError, make_baseline, make_engine

LAB = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(LAB, "results")


def newest_results() -> str:
    found = sorted(
        (
            d
            for d in glob.glob(os.path.join(RESULTS, "*"))
            if os.path.isfile(os.path.join(d, "results.jsonl"))
        ),
        key=lambda d: os.path.getmtime(os.path.join(d, "results.jsonl")),
    )
    if not found:
        raise click.ClickException(f"no results under {RESULTS}: run `python -m lab run` first")
    return found[-1]


@click.group()
def main() -> None:
    """The lab: slapd on stock LMDB and on our engine, the seed papers' experiments."""


@main.command("list")
def list_cmd() -> None:
    """The experiments, one line each."""
    for name in experiments.EXPERIMENTS:
        click.echo(f"{name:9s} {experiments.describe(name)}")


@main.command()
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--size", type=click.Choice(sorted(experiments.SIZES)), default="smoke", show_default=True
)
@click.option(
    "--engine",
    "engine",
    type=click.Choice([*ALL_ENGINES, "both"]),
    default="both",
    show_default=True,
)
@click.option(
    "--also",
    "also",
    type=click.Choice(ALL_ENGINES),
    multiple=True,
    help="one more engine in the same rounds (repeatable), e.g. stock-nordahead",
)
@click.option("--rounds", type=click.IntRange(1, 50), default=3, show_default=True)
@click.option(
    "--out", type=click.Path(file_okay=False), help="results folder [lab/results/<date>-<size>]"
)
@click.option(
    "--work",
    type=click.Path(file_okay=False),
    default="/tmp/mdblab",
    show_default=True,
    help="scratch: LDIF cache, slapd instances",
)
@click.option("--keep", is_flag=True, help="keep every instance directory")
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False),
    help="also run this build of our library (engine `baseline`) in the same rounds",
)
def run(
    names: tuple[str, ...],
    size: str,
    engine: str,
    also: tuple[str, ...],
    rounds: int,
    out: str | None,
    work: str,
    keep: bool,
    baseline: str | None,
) -> None:
    """Run EXPERIMENT... (or `all`); rows go to OUT/results.jsonl."""
    chosen = list(experiments.EXPERIMENTS) if names == ("all",) else list(names)
    unknown = [n for n in chosen if n not in experiments.EXPERIMENTS]
    if unknown:
        raise click.UsageError(
            f"unknown experiment(s) {', '.join(unknown)}; see `python -m lab list`"
        )
    try:
        wanted = list(ENGINES if engine == "both" else (engine,))
        wanted += [e for e in also if e not in wanted]
        engines = [make_engine(e) for e in wanted]
        if baseline:
            if "seed001" in chosen:
                raise LabError(
                    "seed001 builds its own program on ours or on liblmdb: "
                    "--baseline does not cover it"
                )
            engines.append(make_baseline(baseline))
    except LabError as e:
        raise click.ClickException(str(e)) from None
    out = out or os.path.join(RESULTS, f"{dt.date.today().isoformat()}-{size}")
    if os.path.exists(os.path.join(out, "results.jsonl")):
        os.rename(os.path.join(out, "results.jsonl"), os.path.join(out, "results.jsonl.previous"))
    shutil.rmtree(os.path.join(out, "logs"), ignore_errors=True)
    lab = experiments.Lab(experiments.SIZES[size], engines, rounds, out, work, keep)
    for e in engines:
        lab.say(f"engine {e.name}: {e.version}; {len(e.called)} LMDB functions checked per process")
    try:
        failures = experiments.run(lab, chosen)
    finally:
        lab.cleanup()
    click.echo(f"{lab.rec.count} rows -> {lab.rec.path}")
    if failures:
        click.echo(f"{len(failures)} step(s) failed (logs in {out}/logs):", err=True)
        for f in failures:
            click.echo("  " + f, err=True)
        sys.exit(1)


@main.command()
@click.option(
    "--results", "results_dir", type=click.Path(exists=True), help="results folder [the newest]"
)
@click.option("--out", type=click.Path(file_okay=False), help="where the PNGs go [RESULTS/plots]")
def plot(results_dir: str | None, out: str | None) -> None:
    """One PNG per experiment (matplotlib)."""
    from . import plots

    results_dir = results_dir or newest_results()
    out = out or os.path.join(results_dir, "plots")
    for path in plots.plot_all(results_dir, out):
        click.echo(path)


@main.command()
@click.option(
    "--results", "results_dir", type=click.Path(exists=True), help="results folder [the newest]"
)
@click.option(
    "--reference",
    type=click.Choice(["stock", "baseline", "lmdb-src", "stock-nordahead"]),
    default="stock",
    show_default=True,
    help="the engine mdb is compared with (baseline: a run with --baseline)",
)
def report(results_dir: str | None, reference: str) -> None:
    """A Markdown table of the headline results (reference, mdb, ratio with min..max)."""
    from . import report as rep

    results_dir = results_dir or newest_results()
    text = rep.markdown(results_dir, reference)
    with open(os.path.join(results_dir, "report.md"), "w") as f:
        f.write(text)
    click.echo(text)
