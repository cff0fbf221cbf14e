"""load.py -- SLAMD-style rate jobs (SearchRate, ModRate, both at once) and full scans.

A job is a set of client processes, each with one connection to slapd and `depth`
requests in flight (a closed loop: a request is sent as soon as one completes).  All
clients start together; the first `warmup` seconds are run but not counted; then
`duration` seconds are measured, cut into `interval`-second buckets for the time series,
as SLAMD's statistics intervals are.  Every loop is bounded: no new request after the
window, and the outstanding ones are drained within a fixed grace period.

A ModRate client j of k writes only the entries x with x % k == j and never has two
modifies of one entry in flight, so that what the job leaves is decidable: each entry must
hold the value of its last acknowledged modify.  The job returns that record as `acked`
(lab/verify.py reads a sample back after the window).

What a job reports per operation kind: operations and errors in the window, ops/s per
interval and overall, average/p50/p99 latency, and the CPU split of the window (slapd
from /proc, clients from their own os.times(), the rest of the machine from /proc/stat),
so that a client-bound or disturbed run shows in its numbers.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import random
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from . import ldapwire
from .makeldif import PEOPLE, ROOTDN, ROOTPW, SUFFIX

GRACE_S = 30.0  # longest wait for outstanding responses after the window


@dataclass
class JobSpec:
    kind: str  # "search" or "modify"
    clients: int
    depth: int
    rate: float = 0.0  # requests a second per client, at most depth in flight; 0: unpaced


@dataclass
class Timing:
    warmup: float
    duration: float
    interval: float


@dataclass
class KindResult:
    kind: str
    ops: int = 0
    errors: int = 0
    latencies_us: list[float] = field(default_factory=list)
    intervals: list[int] = field(default_factory=list)
    client_cpu_s: float = 0.0
    acked: dict[int, int] = field(default_factory=dict)  # modify: entry -> seq (own entries)
    value_seed: int = 0  # modify: the seed of modify_value

    def summary(self, duration: float) -> dict[str, float]:
        lat = sorted(self.latencies_us)

        def pct(p: float) -> float:
            return lat[min(len(lat) - 1, int(p * len(lat)))] / 1000 if lat else 0.0

        return {
            "ops_s": self.ops / duration,
            "avg_ms": statistics.fmean(lat) / 1000 if lat else 0.0,
            "p50_ms": pct(0.50),
            "p99_ms": pct(0.99),
            "errors": float(self.errors),
        }


def _search(n: int, r: random.Random) -> bytes:
    """SearchRate: (uid=user.[0-N)) under ou=People, every user attribute."""
    return ldapwire.search_request(PEOPLE, ldapwire.equality("uid", f"user.{r.randrange(n)}"))


def modify_value(seed: int, seq: int) -> str:
    """The 80 characters the modify client with this seed writes in its seq-th modify: a
    function of the two, so a client reports what it wrote as {entry: seq} and the parent
    rebuilds the values it needs (a million entries' values would not travel well)."""
    return hashlib.blake2b(f"{seed}:{seq}".encode(), digest_size=40).hexdigest()


class Owned:
    """The entries one modify client writes and which of them have a modify in flight: it
    never sends a second modify of an entry before the first was answered, so the modifies
    of an entry form a sequence and its last acknowledged one is the one that must stand.
    With shared entries (lab/failures.py's mpr), one pick in four comes from those."""

    def __init__(self, own: Sequence[int], r: random.Random, shared: Sequence[int] = ()) -> None:
        self.own, self.shared, self.r = own, shared, r
        self.busy: set[int] = set()

    def pick(self) -> int | None:
        """A random entry with no modify in flight, marked busy; None after 20 busy tries."""
        pool = self.shared if self.shared and self.r.random() < 0.25 else self.own
        for _ in range(20):
            x = self.r.choice(pool)
            if x not in self.busy:
                self.busy.add(x)
                return x
        return None

    def done(self, x: int) -> None:
        self.busy.discard(x)


def entry_dn(x: int) -> str:
    return f"uid=user.{x},{PEOPLE}"


class Acked(Mapping[str, str]):
    """{dn: the value of its last acknowledged modify} of a ModRate job: kept as each
    client's (seed, {entry: seq}) (the clients' entries are disjoint), each value rebuilt
    by modify_value when it is read."""

    def __init__(self, parts: list[tuple[int, dict[int, int]]]) -> None:
        self.parts = parts

    def _entry(self, dn: str) -> int:
        head, _, parent = dn.partition(",")
        if parent.lower() != PEOPLE.lower() or not head.lower().startswith("uid=user."):
            raise KeyError(dn)
        return int(head[len("uid=user.") :])

    def __getitem__(self, dn: str) -> str:
        x = self._entry(dn)
        for seed, last in self.parts:
            if x in last:
                return modify_value(seed, last[x])
        raise KeyError(dn)

    def __iter__(self) -> Iterator[str]:
        for _seed, last in self.parts:
            yield from (entry_dn(x) for x in last)

    def __len__(self) -> int:
        return sum(len(last) for _seed, last in self.parts)


@contextmanager
def reporting(conn: Any, what: str) -> Iterator[None]:
    """The frame of a client process's body: whatever it raises goes to the parent as
    ("error", "what: ...") through conn, which is closed at the end either way."""
    try:
        yield
    except Exception as e:  # reported to the parent, which fails the step
        conn.send(("error", f"{what}: {type(e).__name__}: {e}"))
    finally:
        conn.close()


def _client(
    kind: str,
    port: int,
    n: int,
    depth: int,
    seed: int,
    part: tuple[int, int],
    t0: float,
    tm: Timing,
    rate: float,
    conn: Any,
) -> None:
    """One client process: returns its counts through conn.  A modify client writes the
    entries x with x % parts == part (part = (part, parts)) and returns {entry: seq of its
    last acknowledged modify} (an entry whose last modify went unanswered is left out:
    its value is not decidable)."""
    out = KindResult(kind)
    with reporting(conn, f"{kind} client"):
        c = ldapwire.Connection(port)
        if kind == "modify":
            c.bind(ROOTDN, ROOTPW)
        r = random.Random(seed)
        owned = Owned(range(part[0], n, part[1]), r)
        seq = 0
        win_start, win_end = t0 + tm.warmup, t0 + tm.warmup + tm.duration
        nbuckets = max(1, round((tm.warmup + tm.duration) / tm.interval))
        buckets = [0] * nbuckets
        pending: dict[int, tuple[float, int, int]] = {}  # msgid: sent, entry, seq
        cpu_marks: list[float] = []

        def send() -> None:
            nonlocal seq
            if kind == "search":
                pending[c.send(_search(n, r))] = (time.monotonic(), -1, 0)
                return
            x = owned.pick()
            if x is None:
                return
            seq += 1
            req = ldapwire.modify_replace(entry_dn(x), "description", modify_value(seed, seq))
            pending[c.send(req)] = (time.monotonic(), x, seq)

        # Paced (rate > 0): one request each 1/rate s while fewer than depth are in
        # flight, and no catching up after a late answer: the offered load is the same on
        # every engine, as long as each answers faster than the pace.
        next_at = t0

        def top_up(now: float) -> None:
            nonlocal next_at
            while len(pending) < depth and now < win_end:
                if rate:
                    if now < next_at:
                        return
                    next_at = max(next_at + 1.0 / rate, now)
                before = len(pending)
                send()
                if len(pending) == before:
                    return  # every entry of this client is in flight

        while time.monotonic() < t0:
            time.sleep(min(0.01, max(0.0, t0 - time.monotonic())))
        top_up(time.monotonic())
        end_tag = ldapwire.SEARCH_DONE if kind == "search" else ldapwire.MODIFY_RESPONSE
        hard_stop = win_end + GRACE_S
        while pending or (rate and time.monotonic() < win_end):
            if not pending:
                time.sleep(max(0.0, min(0.01, next_at - time.monotonic())))
                top_up(time.monotonic())
                continue
            now = time.monotonic()
            if len(cpu_marks) == 0 and now >= win_start:
                cpu_marks.append(sum(os.times()[:2]))
            if len(cpu_marks) == 1 and now >= win_end:
                cpu_marks.append(sum(os.times()[:2]))
            if now > hard_stop:
                out.errors += len(pending)
                break
            c.fill()
            done = []
            for mid, tag, start, _end in ldapwire.split_messages(c.buf):
                if tag == end_tag and mid in pending:
                    done.append((mid, ldapwire.result_code(c.buf, start)))
            now = time.monotonic()
            for mid, rc in done:
                sent, x, sq = pending.pop(mid)
                if x >= 0:
                    owned.done(x)
                    if rc == 0:
                        out.acked[x] = sq
                if win_start <= now < win_end:
                    out.ops += 1
                    out.latencies_us.append((now - sent) * 1e6)
                    if rc != 0:
                        out.errors += 1
                elif rc != 0:
                    out.errors += 1
                b = int((now - t0) / tm.interval)
                if 0 <= b < nbuckets:
                    buckets[b] += 1
            top_up(now)
        for _sent, x, _sq in pending.values():
            out.acked.pop(x, None)
        if len(cpu_marks) == 1:
            cpu_marks.append(sum(os.times()[:2]))
        out.client_cpu_s = cpu_marks[1] - cpu_marks[0] if len(cpu_marks) == 2 else 0.0
        out.intervals = buckets
        out.value_seed = seed
        c.close()
        conn.send(("ok", out))


def start_client(ctx: Any, target: Callable[..., None], args: tuple) -> tuple[Any, Any]:
    """Fork a client process running target(*args, conn), conn the sending end of a pipe:
    (the process, the receiving end)."""
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=target, args=(*args, child), daemon=True)
    p.start()
    child.close()
    return p, parent


def client_result(p: Any, pipe: Any, wait_s: float, silent: str) -> tuple[str, Any]:
    """The (status, payload) the client process p sent within wait_s, or ("error", silent);
    p is reaped, killed if it lingers."""
    if pipe.poll(wait_s):
        status, payload = pipe.recv()
    else:
        status, payload = "error", silent
    p.join(5)
    if p.is_alive():
        p.kill()
        p.join(5)
    return status, payload


def _busy_jiffies() -> tuple[int, int]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v[:8]) - idle, sum(v[:8])


def _proc_cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_job(
    port: int, slapd_pid: int, n: int, specs: list[JobSpec], tm: Timing, seed: int = 1
) -> dict[str, Any]:
    """Run the clients of every spec at once; return per-kind results and the CPU split."""
    ctx = mp.get_context("fork")
    t0 = time.monotonic() + 1.0  # time to connect (and bind) before the common start
    procs, pipes = [], []
    k = 0
    for spec in specs:
        for j in range(spec.clients):
            p, parent = start_client(
                ctx,
                _client,
                (
                    spec.kind,
                    port,
                    n,
                    spec.depth,
                    seed * 1000 + k,
                    (j, spec.clients),
                    t0,
                    tm,
                    spec.rate,
                ),
            )
            procs.append(p)
            pipes.append(parent)
            k += 1
    hz = os.sysconf("SC_CLK_TCK")
    cores = os.cpu_count() or 1
    time.sleep(max(0.0, t0 + tm.warmup - time.monotonic()))
    slapd0, busy0 = _proc_cpu_s(slapd_pid), _busy_jiffies()
    time.sleep(max(0.0, t0 + tm.warmup + tm.duration - time.monotonic()))
    slapd1, busy1 = _proc_cpu_s(slapd_pid), _busy_jiffies()
    results: dict[str, KindResult] = {}
    acked: list[tuple[int, dict[int, int]]] = []
    failures = []
    for p, pipe in zip(procs, pipes):
        status, payload = client_result(p, pipe, GRACE_S + 10, "a client sent no result")
        if status != "ok":
            failures.append(payload)
            continue
        if payload.kind == "modify":
            acked.append((payload.value_seed, payload.acked))
        agg = results.setdefault(payload.kind, KindResult(payload.kind))
        agg.ops += payload.ops
        agg.errors += payload.errors
        agg.latencies_us += payload.latencies_us
        agg.client_cpu_s += payload.client_cpu_s
        if not agg.intervals:
            agg.intervals = list(payload.intervals)
        else:
            agg.intervals = [a + b for a, b in zip(agg.intervals, payload.intervals)]
    if failures:
        raise RuntimeError("; ".join(failures[:3]))
    window_total_s = (busy1[1] - busy0[1]) / hz  # all CPUs' seconds in the window
    busy_s = (busy1[0] - busy0[0]) / hz
    slapd_s = slapd1 - slapd0
    client_s = sum(r.client_cpu_s for r in results.values())
    total_ops = sum(r.ops for r in results.values())
    return {
        "kinds": results,
        "slapd_cpu_s": slapd_s,
        "slapd_cpu_us_per_op": slapd_s * 1e6 / total_ops if total_ops else 0.0,
        "client_cpu_share": client_s / (tm.duration * cores),
        "other_cpu_share": max(0.0, (busy_s - slapd_s - client_s) / max(window_total_s, 1e-9)),
        "warmup_buckets": round(tm.warmup / tm.interval),
        "acked": Acked(acked),  # what the modify clients were told (lab/verify.py checks it)
    }


def _scan_client(port: int, digest: bool, conn: Any) -> None:
    with reporting(conn, "scan client"):
        c = ldapwire.Connection(port, timeout=600)
        t = time.monotonic()
        rc, count, dig = c.search(SUFFIX, ldapwire.present("objectClass"), digest=digest)
        conn.send(("ok", (time.monotonic() - t, rc, count, dig)))
        c.close()


def full_scans(port: int, concurrency: int, timeout: float, digest: bool = False) -> list[tuple]:
    """`concurrency` full-tree searches (every entry, every user attribute) started at
    once, each on its own connection in its own process: [(seconds, rc, entries, digest)]."""
    ctx = mp.get_context("fork")
    procs, pipes = [], []
    for _ in range(concurrency):
        p, parent = start_client(ctx, _scan_client, (port, digest))
        procs.append(p)
        pipes.append(parent)
    out, failures = [], []
    deadline = time.monotonic() + timeout
    for p, pipe in zip(procs, pipes):
        wait = max(0.1, deadline - time.monotonic())
        status, payload = client_result(p, pipe, wait, f"a scan did not finish in {timeout:.0f} s")
        (out if status == "ok" else failures).append(payload)
    if failures:
        raise RuntimeError("; ".join(failures[:3]))
    return out
