"""provenance.py -- where a benchmark figure comes from, stamped on every result row:
the git commit, the date, the machine (cores, kernel), and how busy the rest of the
machine was while the measured process ran (its CPU share is not ours to control on a
shared machine, so it is reported beside the figure instead)."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from collections.abc import Callable, Iterable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_DIR = os.path.join(ROOT, "build")


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        return out + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> dict[str, Any]:
    return {
        "cores": os.cpu_count() or 0,
        "kernel": platform.release(),
        "machine": platform.machine(),
    }


def base(**extra: Any) -> dict[str, Any]:
    """The fields every row carries, plus `extra`."""
    row = {
        "git_commit": git_commit(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    row.update(machine())
    row.update(extra)
    return row


def _busy_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat's first line."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return total - idle, total


class OtherCpu:
    """Measures the share of the machine's CPU used by processes other than the one
    measured: busy time of all CPUs during the interval less the measured process's own
    CPU seconds, over (wall seconds x cores).  0.0 is an idle machine, 1.0 a full one."""

    def __enter__(self) -> OtherCpu:
        self._t0 = _busy_jiffies()
        self.share = 0.0
        return self

    def finish(self, own_cpu_seconds: float) -> float:
        busy1, total1 = _busy_jiffies()
        busy = busy1 - self._t0[0]
        total = total1 - self._t0[1]
        if total <= 0:
            return 0.0
        hz = os.sysconf("SC_CLK_TCK")
        other = busy - own_cpu_seconds * hz
        self.share = max(0.0, min(1.0, other / total))
        return self.share

    def __exit__(self, *exc: object) -> None:
        return None


def write_jsonl(path: str, rows: Iterable[dict[str, Any]]) -> None:
    import json

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")


def median_spread(values: list[float], fmt: Callable[[float], str] = "{:.2f}".format) -> str:
    """'median (min..max)' of a list of ratios."""
    import statistics

    return f"{fmt(statistics.median(values))} ({fmt(min(values))}..{fmt(max(values))})"
