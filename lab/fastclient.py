"""fastclient.py -- the lab's compiled load client (lab/ldload/ldload.c) as a rate job.

Why a second client: lab/load.py's Python clients spend enough CPU per request (about a
third of this 2-core machine at 25,000 searches/s) that they, not slapd, can set the
rate.  ldload does the same jobs (SearchRate, ModRate, both at once; the same requests,
the same warm-up, window and intervals) with threads in one C process and a fraction of
the CPU.  The Python client stays for what it checks (its own parsing of every response,
and the failure experiments' logs); table4, table5 and table6 run both, and every row
names its client (`client`: "lab" or "ldload") and carries that client's CPU share of the
machine, flagged `client_bound` above CLIENT_SHARE_MAX.

ldload is compiled here at run time (like bench/'s programs) into build/lab/ldload and
never committed.  `run_job` returns what load.run_job returns, so experiments.rate_rows
writes either client's rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from . import load
from .makeldif import PEOPLE, ROOTDN, ROOTPW

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "lab", "ldload", "ldload.c")
BIN = os.path.join(ROOT, "build", "lab", "ldload")
CLIENT_SHARE_MAX = 0.15  # the bound on the load client's share of the machine
GRACE_S = 10.0  # ldload's drain time after the window; then unanswered requests are errors
# requests in flight per ldload thread (the threads are the lab job's clients).  Deeper
# than the Python client's 4 and 2: each recv then brings several answers and each send
# several requests, and the system calls are nearly all of ldload's CPU (measured at
# smoke size, machine shared: 2 threads x 4 searches took 0.7-1.0 recv per search and
# 8.5-11.7 us of system CPU per search, 2 x 8 took 0.55-0.63 recv and 6.5-8.1 us).
DEPTH = {"search": 8, "modify": 4}
# At --size smoke (make test) ldload's window is 2 s instead of 3 (its counts are per
# second like every size's, and a smoke run's rates are a smoke test, not a figure): the
# second client then adds about a minute to tests/lab's smoke run, not 1.5.
SMOKE_DURATION_S = 2.0
CONNECT_S = 0.5  # from start to the common start: connect (and bind) on 127.0.0.1


class ClientError(RuntimeError):
    """ldload could not be built, or did not run to its end."""


def build(cc: str | None = None) -> str:
    """build/lab/ldload, compiled when missing or older than its source; its path."""
    if os.path.exists(BIN) and os.path.getmtime(BIN) >= os.path.getmtime(SRC):
        return BIN
    os.makedirs(os.path.dirname(BIN), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="ldload.", dir=os.path.dirname(BIN))
    os.close(fd)
    cmd = [cc or os.environ.get("CC", "cc"), "-O2", "-g", "-Wall", "-Wextra", "-Werror"]
    cmd += ["-pthread", SRC, "-o", tmp, "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        os.unlink(tmp)
        raise ClientError(f"building ldload failed:\n{r.stderr}")
    os.replace(tmp, BIN)  # atomic: a concurrent build never leaves half a binary
    return BIN


@dataclass
class FastKind:
    """One kind's results from ldload, shaped like load.KindResult for rate_rows."""

    kind: str
    ops: int
    errors: int
    intervals: list[int]
    client_cpu_s: float
    stats: dict[str, float] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    def summary(self, duration: float) -> dict[str, float]:
        return {
            "ops_s": self.ops / duration,
            "avg_ms": self.stats["avg_ms"],
            "p50_ms": self.stats["p50_ms"],
            "p99_ms": self.stats["p99_ms"],
            "errors": float(self.errors),
        }


def command(
    port: int, n: int, specs: list[load.JobSpec], tm: load.Timing, seed: int, acked: str | None
) -> list[str]:
    cmd = [build(), "--port", str(port), "--entries", str(n), "--seed", str(seed)]
    cmd += ["--warmup", str(tm.warmup), "--duration", str(tm.duration)]
    cmd += ["--interval", str(tm.interval), "--grace", str(GRACE_S)]
    cmd += ["--base", PEOPLE, "--bind-dn", ROOTDN, "--bind-pw", ROOTPW]
    for spec in specs:
        if spec.rate:
            raise ValueError("ldload runs unpaced: a paced job goes to lab/load.py's client")
        cmd += [f"--{spec.kind}", f"{spec.clients}x{DEPTH.get(spec.kind, spec.depth)}"]
    if acked:
        cmd += ["--acked", acked]
    return cmd


def parse_output(text: str) -> tuple[dict[str, FastKind], dict[str, Any]]:
    """ldload's JSON lines: ({kind: FastKind}, the process line)."""
    kinds: dict[str, FastKind] = {}
    process: dict[str, Any] | None = None
    for line in text.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj["kind"] == "process":
            process = obj
            continue
        kinds[obj["kind"]] = FastKind(
            kind=obj["kind"],
            ops=int(obj["ops"]),
            errors=int(obj["errors"]),
            intervals=[int(c) for c in obj["intervals"]],
            client_cpu_s=float(obj["cpu_s"]),
            stats={k: float(obj[k]) for k in ("avg_ms", "p50_ms", "p99_ms")},
            raw=obj,
        )
    if process is None or not kinds:
        raise ClientError(f"ldload printed no results: {text[-500:]!r}")
    return kinds, process


def run_job(
    port: int,
    slapd_pid: int,
    n: int,
    specs: list[load.JobSpec],
    tm: load.Timing,
    seed: int = 1,
    acked: str | None = None,
) -> dict[str, Any]:
    """One rate job from ldload, measured like load.run_job (slapd's and the rest of the
    machine's CPU over the same window): the same dict, plus client "ldload" and ldload's
    own figures under "process".  acked: a file for the last acknowledged modify value of
    every entry written ("dn<TAB>value" lines)."""
    t0 = time.monotonic() + CONNECT_S
    cmd = command(port, n, specs, tm, seed, acked) + ["--start-at", f"{t0:.6f}"]
    cores = os.cpu_count() or 1
    hz = os.sysconf("SC_CLK_TCK")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(max(0.0, t0 + tm.warmup - time.monotonic()))
        slapd0, busy0 = load._proc_cpu_s(slapd_pid), load._busy_jiffies()
        time.sleep(max(0.0, t0 + tm.warmup + tm.duration - time.monotonic()))
        slapd1, busy1 = load._proc_cpu_s(slapd_pid), load._busy_jiffies()
        out, err = p.communicate(timeout=GRACE_S + 30)
    except BaseException:
        p.kill()
        p.communicate()
        raise
    kinds, process = parse_output(out)
    shape = ", ".join(f"{k} {v.raw['threads']}x{v.raw['depth']}" for k, v in sorted(kinds.items()))
    failures = [k.raw["failure"] for k in kinds.values() if k.raw.get("failure")]
    if p.returncode != 0:
        raise ClientError(f"ldload exited {p.returncode}: {'; '.join(failures) or err.strip()}")
    window_total_s = (busy1[1] - busy0[1]) / hz
    busy_s = (busy1[0] - busy0[0]) / hz
    slapd_s = slapd1 - slapd0
    client_s = float(process["cpu_s"])
    total_ops = sum(k.ops for k in kinds.values())
    return {
        "client": "ldload",
        "client_shape": shape,
        "duration": tm.duration,
        "kinds": kinds,
        "process": process,
        "failures": failures,
        "slapd_cpu_s": slapd_s,
        "slapd_cpu_us_per_op": slapd_s * 1e6 / total_ops if total_ops else 0.0,
        "client_cpu_share": client_s / (tm.duration * cores),
        "other_cpu_share": max(0.0, (busy_s - slapd_s - client_s) / max(window_total_s, 1e-9)),
        "warmup_buckets": round(tm.warmup / tm.interval),
    }


def timing(size: str, tm: load.Timing) -> load.Timing:
    """ldload's window for a lab size: the Python client's, shorter at smoke."""
    return load.Timing(tm.warmup, SMOKE_DURATION_S, tm.interval) if size == "smoke" else tm


def read_acked(path: str) -> dict[str, str]:
    """ldload's --acked file: {dn: the value of its last acknowledged modify}."""
    out = {}
    with open(path) as f:
        for line in f:
            dn, value = line.rstrip("\n").split("\t")
            out[dn] = value
    return out


def verify_acked(
    lab: Any, exp: str, eng: Any, rnd: int, port: int, path: str, **extra: Any
) -> None:
    """Read back a sample of the entries ldload's modifies acknowledged (in path), with
    lab/verify.py's ldap3 checks, off the timed path: its rows (verify_checked,
    verify_mismatches, named client=ldload) and a LabError on a wrong value.
    """
    from . import verify

    verify.modified_rows(lab, exp, eng, rnd, port, read_acked(path), client="ldload", **extra)


def order(rnd: int) -> tuple[str, str]:
    """Both clients run one after the other on the same server; which goes first
    alternates between rounds, so neither is always the one on a warmer server."""
    return ("lab", "ldload") if rnd % 2 == 0 else ("ldload", "lab")
