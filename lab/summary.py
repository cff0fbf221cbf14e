"""summary.py -- medians with min..max over rounds, and per-round ratios, from rows."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

# row fields that split one metric into several series (a concurrency, a DB count, the
# load client of a rate job, ...)
SERIES_KEYS = ("variant", "concurrency", "ndbs", "n", "mode", "client")
# metrics where more is better; everything else (times, sizes, CPU per op) is better lower
HIGHER_IS_BETTER = ("ops_s", "entries_s")
ENGINE_ORDER = ("stock", "mdb")


def higher_is_better(metric: str) -> bool:
    return metric.endswith(HIGHER_IS_BETTER)


def measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows that hold a result (not failures, not per-interval samples, not the time
    points of events such as a kill)."""
    return [
        r for r in rows if r["metric"] != "failure" and "interval" not in r and "event" not in r
    ]


def series_of(row: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple((k, row[k]) for k in SERIES_KEYS if k in row)


def stats(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def group(rows: list[dict[str, Any]]) -> dict[tuple, dict[str, dict[int, float]]]:
    """{(experiment, metric, series): {engine: {round: value}}}."""
    out: dict[tuple, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in measured(rows):
        out[(r["experiment"], r["metric"], series_of(r))][r["engine"]][r["round"]] = r["value"]
    return out


def ratio(
    per_engine: dict[str, dict[int, float]], reference: str = "stock"
) -> tuple[float, float, float] | None:
    """mdb / reference (stock, or a `--baseline` build of ours), round by round (rounds
    are interleaved pairs): median, min, max."""
    a, b = per_engine.get(reference, {}), per_engine.get("mdb", {})
    pairs = [b[k] / a[k] for k in sorted(set(a) & set(b)) if a[k] > 0]
    return stats(pairs) if pairs else None
