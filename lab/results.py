"""results.py -- the lab's rows: one flat JSON object per (experiment, engine, round,
metric), with its provenance, appended to results.jsonl in the results folder.

Provenance on every row: the git commit, the engine and its version string, whether the
engine was verified (every LMDB function back-mdb calls bound to it), the date, the machine
(cores, kernel), the size; and where the measuring code knows them, the other processes'
CPU share during the step (`busy` when over BUSY_SHARE), slapd's user/sys CPU seconds and
peak RSS, and the database's used size.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from provenance import git_commit  # type: ignore[import-not-found]  # noqa: E402

BUSY_SHARE = 0.25  # a row measured while others used over a quarter of the machine


class Recorder:
    def __init__(self, path: str, size: str, entries: int) -> None:
        self.path = path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.common = {
            "size": size,
            "entries": entries,
            "git_commit": git_commit(),
            "cores": os.cpu_count() or 0,
            "kernel": platform.release(),
        }
        self.count = 0
        # fields a row lacks are taken from the current step's measurements (Lab)
        self.defaults: Callable[[], dict[str, Any]] | None = None

    def _write(self, row: dict[str, Any]) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
        self.count += 1

    def row(
        self,
        experiment: str,
        engine: Any,
        rnd: int,
        metric: str,
        value: float,
        unit: str,
        **extra: Any,
    ) -> None:
        row = {
            "experiment": experiment,
            "engine": engine.name,
            "round": rnd,
            "metric": metric,
            "value": float(value),
            "unit": unit,
            "engine_version": engine.version,
            "engine_verified": True,  # rows are written only after the engine checks passed
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            **self.common,
        }
        if self.defaults is not None:
            row.update(self.defaults())
        row.update(extra)
        if "other_cpu_share" in row:
            row["busy"] = row["other_cpu_share"] > BUSY_SHARE
        self._write(row)

    def failure(self, experiment: str, engine: Any, rnd: int, message: str) -> None:
        self._write(
            {
                "experiment": experiment,
                "engine": engine.name,
                "round": rnd,
                "metric": "failure",
                "value": 1.0,
                "unit": "count",
                "message": message,
                "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                **self.common,
            }
        )


def load_rows(path: str) -> list[dict[str, Any]]:
    """Every row of a results folder (its results.jsonl) or of one .jsonl file."""
    if os.path.isdir(path):
        path = os.path.join(path, "results.jsonl")
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
