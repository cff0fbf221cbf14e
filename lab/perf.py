"""perf.py -- where slapd's CPU goes, by engine, from perf samples; and slapadd's system time.

callgrind (lab/callgrind.py) counts user-space instructions one operation at a time.  This
takes the other view: real slapd under load, sampled by `perf record -e cpu-clock` (a
software event: it works without hardware counters), kernel included.  Every sample stands
for a fixed PERIOD of CPU time (`-c`), so samples x period / operations is CPU time per
operation, whatever else the machine is running.

Per engine (default: mdb, lmdb-src and stock, in interleaved rounds), through the lab's
Instance (same slapd.conf, same preload, same binding check):

- slapadd: `slapadd -q -w` of N and of N/10 entries, each into a fresh directory, perf on
  the slapadd process for its whole run; per entry = the difference / (N - N/10), which
  cancels start-up, shutdown and the binding log (LD_DEBUG writes ~22,000 lines at start).
- search and modify: slapd on the database that slapadd just made, the lab's SearchRate
  and ModRate jobs (load.run_job: the same requests, clients and depth as table4 and
  table5's dbnosync variant); perf attaches to slapd (`-p`) after the warm-up, for a window
  inside the job's measured window.  Operations in perf's window = the job's rate x the
  span of perf's samples.

Samples are split by object: the engine's own library (libmdbcore.so for mdb, liblmdb.so
for lmdb-src; for stock it is inside the stripped back_mdb.so, which is therefore reported
only as back_mdb), back_mdb, slapd, libc, the kernel and the rest; the engine's functions
and the kernel's are listed.  With `sys`, each engine's `slapadd -q` is also run plainly
(its rusage: user, system, minor/major page faults, bytes written, i.e. pages dirtied) and
under `strace -c -f` (system calls by name), and data.mdb's allocated blocks are read.
These two runs go without LD_DEBUG (its log is ~33,000 system calls): `slaptest` in the
same directory, with the same preload, is checked for the bindings first.

`lmdb-src-nordahead` (lmdb-src with `envflags nordahead`, maps data.mdb without read-ahead
as ours does) separates the engine's code from the page cache's state it runs on: the
table adds mdb/lmdb-src-nordahead and lmdb-src-nordahead/lmdb-src.

- refresh (not in the default set): a syncrepl consumer's initial refresh of N entries
  from a syncprov provider, both on the engine; perf on the consumer for the whole refresh
  (refresh_profile says how no entry falls outside the window); per entry = / N.

    python -m lab.perf [--engines mdb,lmdb-src,stock] [--entries 20000] [--rounds 3]
                       [--only slapadd,search,modify,sys,refresh] [--sys-entries 20000,100000]
                       [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from . import ldapwire, load
from .callgrind import _git_commit
from .callgrind import _ldif as ldif_file
from .failures import _syncrepl
from .makeldif import SUFFIX
from .slapd import (
    BACK_MDB,
    BASELINE,
    Engine,
    Instance,
    LabError,
    free_port,
    make_baseline,
    make_engine,
    tool,
    used_bytes,
)

PERIOD_NS = 250_000  # one sample per 250 us of a thread's CPU (4 kHz)
BUCKETS = ("total", "engine", "back_mdb", "slapd", "libc", "kernel", "other")
LEAD_S = 0.5  # perf's window starts this long after the job's, and ends as long before
KERNEL_IP = 0xFFFF800000000000
_SCRIPT_LINE = re.compile(r"^\s*(\d+\.\d+):\s+(\d+)\s*(?:([0-9a-f]+)\s+(.*?)\s+\((.*)\))?\s*$")
_FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")
_SYSCALL_FN = re.compile(r"^(?:__x64_sys|__do_sys|__se_sys)_(\w+?)(?:\.\w+)?(?:\+0x[0-9a-f]+)?$")


class NoEngineSamples(LabError):
    """A profile of a preloaded engine holds no sample in that engine's library."""


@dataclass
class Profile:
    """CPU nanoseconds by bucket, by engine function and by kernel function."""

    by: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    funcs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    kfuncs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    dsos: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    kcause: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: int = 0
    t_first: float = 0.0
    t_last: float = 0.0

    @property
    def span_s(self) -> float:
        return self.t_last - self.t_first


def bucket(dso: str, ip: int, engine_lib: str | None) -> str:
    """The bucket of one sample: engine_lib is the preloaded library (None for stock)."""
    if ip >= KERNEL_IP or dso.startswith("[kernel"):
        return "kernel"
    real = os.path.realpath(dso) if dso.startswith("/") else dso
    if engine_lib and real == engine_lib:
        return "engine"
    if real == os.path.realpath(BACK_MDB):
        return "back_mdb"
    base = os.path.basename(dso)
    if base.startswith("slap"):
        return "slapd"
    if base.startswith(("libc.so", "libc-")):
        return "libc"
    return "other"


def kernel_cause(frames: list[tuple[int, str, str]]) -> str:
    """Why the kernel ran, from a kernel sample's call chain (innermost frame first): the
    system call by name (do_syscall_64's callee), a page fault, an interrupt, the
    reschedule on the way back from a system call, or the outermost kernel function."""
    kernel = [sym for ip, sym, dso in frames if ip >= KERNEL_IP or dso.startswith("[kernel")]
    if not kernel:
        return "?"
    names = [k.split("+0x")[0] for k in kernel]
    for i in range(len(names) - 1, -1, -1):  # outermost first
        n = names[i]
        if n in ("asm_exc_page_fault", "exc_page_fault"):
            return "page fault"
        if n.startswith(("asm_sysvec_", "asm_common_interrupt", "sysvec_")):
            return "interrupt"
        if n == "do_syscall_64":
            if i == 0:
                return "syscall entry/exit"
            callee = names[i - 1]
            m = _SYSCALL_FN.match(callee)
            if m:
                return f"syscall {m.group(1)}"
            if "exit_to_user_mode" in callee:
                return "syscall exit: reschedule"
            for prefix in ("ksys_", "__do_sys_", "do_", "__sys_"):
                if callee.startswith(prefix):
                    return f"syscall {callee[len(prefix) :]}"
            return f"syscall {callee}"
    return names[-1]


def parse_script(text: str, engine_lib: str | None) -> Profile:
    """A Profile from `perf script -F time,period,ip,sym,dso` output, with or without call
    chains (`perf record -g`: the sample's frames follow its header line, innermost
    first); with them, kernel samples are also counted by kernel_cause."""
    prof = Profile()
    head: tuple[float, int] | None = None
    frames: list[tuple[int, str, str]] = []

    def take() -> None:
        if head is None or not frames:
            return
        t, period = head
        ip, sym, dso = frames[0]
        b = bucket(dso, ip, engine_lib)
        prof.by[b] += period
        prof.by["total"] += period
        prof.dsos[os.path.basename(dso)] += period
        if b == "engine":
            prof.funcs[sym] += period
        elif b == "kernel":
            prof.kfuncs[sym] += period
            if len(frames) > 1:
                prof.kcause[kernel_cause(frames)] += period
        if prof.samples == 0 or t < prof.t_first:
            prof.t_first = t
        prof.t_last = max(prof.t_last, t)
        prof.samples += 1

    for line in text.splitlines():
        m = _SCRIPT_LINE.match(line)
        if m:
            take()
            head, frames = (float(m.group(1)), int(m.group(2))), []
            if m.group(3):
                frames.append((int(m.group(3), 16), m.group(4), m.group(5)))
            continue
        f = _FRAME.match(line)
        if f and head is not None:
            frames.append((int(f.group(1), 16), f.group(2), f.group(3)))
    take()
    return prof


def read_profile(data: str, engine_lib: str | None) -> Profile:
    r = subprocess.run(
        ["perf", "script", "-i", data, "-F", "time,period,ip,sym,dso"],
        capture_output=True, text=True,
    )  # fmt: skip
    if r.returncode != 0:
        raise LabError(f"perf script -i {data} failed: {r.stderr.strip()[-300:]}")
    return parse_script(r.stdout, engine_lib)


def require_engine_samples(prof: Profile, eng: Engine, what: str) -> None:
    """A profile of a preloaded engine that holds none of its samples measured something
    else (the library was not loaded, or not called): fail rather than report zeros."""
    if eng.preload and prof.by.get("engine", 0) == 0:
        seen = sorted(prof.dsos, key=lambda k: -prof.dsos[k])[:6]
        raise NoEngineSamples(
            f"{what}: {prof.samples} samples, none in {eng.preload} (objects seen: {seen})"
        )


def perf_record(out: str, period: int, chains: bool = False) -> list[str]:
    # -B -N: no build-id pass at the end (it reads every object; the paths suffice here);
    # -g: call chains, for the kernel's (why the kernel ran: kernel_cause)
    cmd = ["perf", "record", "-q", "-B", "-N", "-e", "cpu-clock", "-c", str(period), "-o", out]
    return [*cmd, "-g"] if chains else cmd


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("LD_PRELOAD", "LD_DEBUG"))}


def _env_args(eng: Engine, prefix: str | None) -> list[str]:
    """The variables eng.env(prefix) adds, as `env NAME=VALUE` arguments: the preload
    reaches slapadd, not perf or strace."""
    base = _clean_env()
    return [f"{k}={v}" for k, v in eng.env(prefix).items() if base.get(k) != v]


def _slapadd_args(inst: Instance, ldif: str) -> list[str]:
    return [tool("slapadd"), "-q", "-w", "-f", inst.conf, "-l", ldif]


def slapadd_record(eng: Engine, inst: Instance, ldif: str, period: int) -> str:
    """slapadd -q of ldif into inst (empty) under perf, its bindings checked; the data file."""
    out = os.path.join(inst.dir, "perf-slapadd.data")
    prefix = os.path.join(inst.dir, "bind-slapadd")
    cmd = [
        *perf_record(out, period, chains=True),
        "--",
        "env",
        *_env_args(eng, prefix),
        *_slapadd_args(inst, ldif),
    ]
    log = os.path.join(inst.dir, "slapadd.log")
    with open(log, "w") as f:
        r = subprocess.run(cmd, env=_clean_env(), stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise LabError(f"slapadd under perf exited {r.returncode} (log: {log})")
    eng.check_bindings(prefix, "slapadd under perf")
    return out


def slapadd_profile(eng: Engine, inst: Instance, ldif: str, period: int) -> Profile:
    """The profile of a whole slapadd run (slapadd_record), which must hold samples in the
    preloaded engine's library."""
    out = slapadd_record(eng, inst, ldif, period)
    prof = read_profile(out, eng.preload)
    require_engine_samples(prof, eng, f"slapadd on {eng.name}")
    os.unlink(out)
    return prof


def server_profile(
    eng: Engine, inst: Instance, kind: str, n: int, spec: load.JobSpec, tm: load.Timing,
    period: int,
) -> tuple[Profile, dict[str, Any]]:  # fmt: skip
    """The profile of slapd under one rate job, and the job's figures: ops_s, the ops in
    perf's window, and slapd's CPU per op from /proc over the job's window."""
    out = os.path.join(inst.dir, f"perf-{kind}.data")
    inst.start()
    try:
        window = tm.duration - 2 * LEAD_S
        start_at = time.monotonic() + 1.0 + tm.warmup + LEAD_S  # run_job starts 1 s ahead
        failed: list[str] = []

        stat_out = os.path.join(inst.dir, f"perf-stat-{kind}.txt")

        def record() -> None:
            time.sleep(max(0.0, start_at - time.monotonic()))
            # the same window counted by perf stat: system calls by name, faults, switches
            stat = subprocess.Popen(
                ["perf", "stat", "-x,", "-o", stat_out, "-e", ",".join(stat_events()),
                 "-p", str(inst.pid), "--", "sleep", f"{window:.3f}"],
                env=_clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            cmd = [*perf_record(out, period), "-p", str(inst.pid), "--", "sleep", f"{window:.3f}"]
            r = subprocess.run(cmd, env=_clean_env(), capture_output=True, text=True)
            stat.wait(60)
            if r.returncode != 0:
                failed.append(r.stderr.strip()[-300:])

        t = threading.Thread(target=record, daemon=True)
        t.start()
        job = load.run_job(inst.port, inst.pid, n, [spec], tm)
        t.join(60)
        if failed or t.is_alive():
            raise LabError(f"perf record -p {inst.pid} failed: {failed[:1]}")
    finally:
        inst.stop()
    res = job["kinds"][kind]
    if res.errors:
        raise LabError(f"{kind} job on {eng.name}: {res.errors} errors")
    prof = read_profile(out, eng.preload)
    require_engine_samples(prof, eng, f"slapd {kind} on {eng.name}")
    os.unlink(out)
    ops_s = res.ops / tm.duration
    counts: dict[str, float] = {}
    if os.path.exists(stat_out):
        with open(stat_out) as f:
            counts = {k: v / (ops_s * window) for k, v in parse_perf_stat(f.read()).items()}
    return prof, {
        "ops_s": ops_s,
        "ops_in_window": ops_s * prof.span_s,
        "per_op_counts": counts,
        "slapd_cpu_us_per_op_proc": job["slapd_cpu_us_per_op"],
        "client_cpu_share": job["client_cpu_share"],
        "other_cpu_share": job["other_cpu_share"],
    }


def per_op(prof: Profile, ops: float, less: Profile | None = None) -> dict[str, Any]:
    """CPU microseconds per operation, by bucket and by function: prof / ops, or
    (prof - less) / ops, which cancels what both runs share (start-up, shutdown)."""
    us = 1e-3 / max(ops, 1e-9)

    def sub(a: dict[str, int], b: dict[str, int] | None) -> dict[str, float]:
        return {k: (a.get(k, 0) - (b or {}).get(k, 0)) * us for k in set(a) | set(b or {})}

    by = sub(prof.by, less.by if less else None)
    by = {b: by.get(b, 0.0) for b in BUCKETS}
    by["engine+back_mdb"] = by["engine"] + by["back_mdb"]
    return {
        "by": by,
        "funcs": sub(prof.funcs, less.funcs if less else None),
        "kfuncs": sub(prof.kfuncs, less.kfuncs if less else None),
        "kcause": sub(prof.kcause, less.kcause if less else None),
        "samples": prof.samples - (less.samples if less else 0),
    }


def refresh_profile(
    eng: Engine, work: str, ldif: str, n: int, period: int, timeout: float = 1800
) -> tuple[Profile, dict[str, Any]]:
    """The profile of a syncrepl consumer's whole initial refresh of n entries, and its
    figures.  The consumer starts first, on an empty database, and retries its provider
    every second; perf attaches to it; only then does the provider (syncprov, loaded by
    slapadd -q -w) start on the port the consumer was given.  So every entry the consumer
    writes falls inside perf's window, which ends when the consumer's contextCSN equals the
    provider's.  Both servers' CPU over the refresh comes from /proc."""
    prov = Instance(os.path.join(work, f"refresh-{eng.name}-provider"), eng,
                    extra_global="moduleload syncprov\n",
                    extra_db="overlay syncprov\nsyncprov-checkpoint 1000 1\n")  # fmt: skip
    prov.slapadd(ldif)
    port = free_port()
    cons = Instance(os.path.join(work, f"refresh-{eng.name}-consumer"), eng,
                    extra_db=_syncrepl(1, port))  # fmt: skip
    out = os.path.join(cons.dir, "perf-refresh.data")
    rec: subprocess.Popen[bytes] | None = None
    try:
        cons.start()
        rec = subprocess.Popen([*perf_record(out, period, chains=True), "-p", str(cons.pid)],
                               env=_clean_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)  # fmt: skip
        time.sleep(0.5)  # perf is attached well before the first retry reaches the provider
        if rec.poll() is not None:
            raise LabError(f"perf record -p {cons.pid} exited {rec.returncode}")
        c0, io0 = sum(cons.cpu()), cons.io()
        prov.start(port=port)
        p0 = sum(prov.cpu())
        t0 = time.monotonic()
        want = sorted(ldapwire.read_attr(ldapwire.Connection(prov.port), SUFFIX, "contextCSN"))
        if not want:
            raise LabError("the provider's suffix has no contextCSN after slapadd -w")
        cc = ldapwire.Connection(cons.port)
        while sorted(ldapwire.read_attr(cc, SUFFIX, "contextCSN")) != want:
            if time.monotonic() - t0 > timeout:
                raise LabError(f"the consumer on {eng.name} did not finish its refresh in time")
            time.sleep(0.05)
        refresh_s = time.monotonic() - t0
        cons_cpu, prov_cpu = sum(cons.cpu()) - c0, sum(prov.cpu()) - p0
        io1 = cons.io()
        rec.send_signal(signal.SIGINT)
        _, err = rec.communicate(timeout=120)
        if rec.returncode not in (0, -signal.SIGINT):
            raise LabError(f"perf record -p {cons.pid} failed: {err.decode()[-300:]}")
        rc, count, _ = cc.search(SUFFIX, ldapwire.present("objectClass"), ["1.1"])
        cc.close()
        if rc != 0 or count != n + 2:
            raise LabError(f"the consumer holds {count} entries after refresh, expected {n + 2}")
    finally:
        if rec is not None and rec.poll() is None:
            rec.kill()
            rec.wait(30)
        cons.stop()
        prov.stop()
    prof = read_profile(out, eng.preload)
    require_engine_samples(prof, eng, f"the consumer's refresh on {eng.name}")
    used = used_bytes(cons.db)
    shutil.rmtree(cons.dir, ignore_errors=True)
    shutil.rmtree(prov.dir, ignore_errors=True)
    return prof, {
        "refresh_s": refresh_s,
        "entries_s": n / refresh_s,
        "consumer_cpu_us_per_entry_proc": cons_cpu * 1e6 / n,
        "provider_cpu_us_per_entry_proc": prov_cpu * 1e6 / n,
        "consumer_used_bytes": used,
        # the consumer's writes per entry: system calls (pwrite, pwritev, writev and the
        # LDAP socket's), the bytes they copied, and the bytes sent to storage
        "per_op_counts": {
            "write calls": (io1["syscw"] - io0["syscw"]) / n,
            "bytes written": (io1["wchar"] - io0["wchar"]) / n,
            "read calls": (io1["syscr"] - io0["syscr"]) / n,
        },
    }


# ---- slapadd's system time: faults, bytes, system calls ----


def parse_strace_c(text: str) -> dict[str, int]:
    """{syscall: calls} from `strace -c` output."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or parts[-1] == "total":
            continue
        try:
            float(parts[0])
            calls = int(parts[3])
        except ValueError:
            continue
        out[parts[-1]] = calls
    return out


STAT_SYSCALLS = ("sched_yield", "futex", "mmap", "munmap", "mremap", "madvise", "msync",
                 "ftruncate", "fallocate", "pwrite64", "pwritev", "pread64", "fdatasync", "fsync",
                 "write", "writev", "read", "sendmsg", "recvfrom", "epoll_wait")  # fmt: skip
STAT_EVENTS = ("page-faults", "major-faults", "context-switches", "cpu-migrations")


def stat_events() -> list[str]:
    """perf stat's events: every system call, those of STAT_SYSCALLS the kernel has a
    tracepoint for (none without tracefs), and STAT_EVENTS."""
    try:
        with open("/sys/kernel/tracing/available_events") as f:
            known = {line.strip() for line in f}
    except OSError:
        known = set()
    events = ["raw_syscalls:sys_enter"] if "raw_syscalls:sys_enter" in known else []
    events += [
        f"syscalls:sys_enter_{c}" for c in STAT_SYSCALLS if f"syscalls:sys_enter_{c}" in known
    ]
    return [*events, *STAT_EVENTS]


def parse_perf_stat(text: str) -> dict[str, int]:
    """{event: count} from `perf stat -x,` output; tracepoints of one system call are
    named by the call ("syscalls:sys_enter_futex" -> "futex"), all calls as "syscalls"."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or not parts[0].strip().isdigit():
            continue
        name = parts[2].strip()
        if name == "raw_syscalls:sys_enter":
            name = "syscalls"
        elif name.startswith("syscalls:sys_enter_"):
            name = name[len("syscalls:sys_enter_") :]
        out[name] = int(parts[0])
    return out


def slapadd_stat(eng: Engine, inst: Instance, ldif: str) -> dict[str, int]:
    """slapadd -q under `perf stat`: every system call, chosen calls by name, faults and
    context switches, counted in the kernel (cheap enough for 1,000,000 entries, which
    strace is not)."""
    out = os.path.join(inst.dir, "perf-stat.txt")
    cmd = ["perf", "stat", "-x,", "-o", out, "-e", ",".join(stat_events()), "--",
           "env", *_env_args(eng, None), *_slapadd_args(inst, ldif)]  # fmt: skip
    with open(os.path.join(inst.dir, "slapadd.log"), "w") as log:
        r = subprocess.run(cmd, env=_clean_env(), stdout=log, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise LabError(f"slapadd under perf stat on {eng.name} failed (log: {inst.dir})")
    with open(out) as f:
        return parse_perf_stat(f.read())


def slapadd_sys(
    eng: Engine, work: str, n: int, strace: bool, tag: str, stat: bool = True
) -> dict[str, Any]:
    """One plain `slapadd -q` of n entries (its rusage and data.mdb's blocks) and, with
    strace, one more under `strace -c -f` (system calls; its times are not used).  Neither
    logs its bindings: slaptest, with the same preload, is checked instead."""
    ldif = ldif_file(work, n)
    d = os.path.join(work, f"sys-{eng.name}-{n}-{tag}")
    shutil.rmtree(d, ignore_errors=True)
    inst = Instance(d, eng)
    inst.slaptest()
    t0 = time.monotonic()
    with open(os.path.join(d, "slapadd.log"), "w") as log:
        p = subprocess.Popen(
            _slapadd_args(inst, ldif), env=eng.env(), stdout=log, stderr=subprocess.STDOUT
        )
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise LabError(f"slapadd on {eng.name} failed (log: {d}/slapadd.log)")
    st = os.stat(os.path.join(inst.db, "data.mdb"))
    row: dict[str, Any] = {
        "wall_s": wall,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "minflt": ru.ru_minflt,
        "majflt": ru.ru_majflt,
        # Linux reports the task's write_bytes (bytes of page cache it dirtied) as 512-byte
        # blocks here; read_bytes likewise in ru_inblock
        "write_bytes": ru.ru_oublock * 512,
        "read_bytes": ru.ru_inblock * 512,
        "nvcsw": ru.ru_nvcsw,
        "nivcsw": ru.ru_nivcsw,
        "file_size": st.st_size,
        "file_alloc": st.st_blocks * 512,
        "used_bytes": used_bytes(inst.db),
    }
    shutil.rmtree(d, ignore_errors=True)
    if strace:
        if shutil.which("strace") is None:
            raise LabError("strace is not installed (apt-get install strace)")
        os.makedirs(d)
        inst = Instance(d, eng)
        out = os.path.join(d, "strace.txt")
        cmd = ["strace", "-c", "-f", "-o", out, "--", "env", *_env_args(eng, None),
               *_slapadd_args(inst, ldif)]  # fmt: skip
        with open(os.path.join(d, "slapadd.log"), "w") as log:
            r = subprocess.run(cmd, env=_clean_env(), stdout=log, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise LabError(f"slapadd under strace on {eng.name} failed (log: {d})")
        with open(out) as f:
            calls = parse_strace_c(f.read())
        # env's own exec and start-up are in the count: a few dozen calls, the same for all
        row["syscalls"] = calls
        shutil.rmtree(d, ignore_errors=True)
    if stat:
        os.makedirs(d, exist_ok=True)
        try:
            row["stat"] = slapadd_stat(eng, Instance(d, eng), ldif)
        except (OSError, LabError) as e:  # no tracefs: the other figures still stand
            row["stat_error"] = str(e)
        shutil.rmtree(d, ignore_errors=True)
    return row


# ---- the run and the tables ----


def _median_spread(values: list[float]) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return _fmt(med)
    return f"{_fmt(med)} ({_fmt(min(values))}..{_fmt(max(values))})"


def _fmt(v: float) -> str:
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


OP_TABLE_BUCKETS = ("total", "engine", "back_mdb", "engine+back_mdb", "slapd", "libc", "kernel",
                    "other")  # fmt: skip


def table(rows: list[dict[str, Any]], engines: list[str], top: int) -> str:
    lines: list[str] = []
    whats = [
        w
        for w in ("slapadd entry", "search", "modify", "refresh entry")
        if any(r["what"] == w for r in rows)
    ]
    for what in whats:
        lines.append(
            f"\n## CPU microseconds per {what} (perf cpu-clock; median (min..max) of rounds)"
        )
        lines.append("| engine | rounds | " + " | ".join(OP_TABLE_BUCKETS) + " | ops/s |")
        lines.append("|---|---:|" + "---:|" * (len(OP_TABLE_BUCKETS) + 1))
        mine = {e: [r for r in rows if r["what"] == what and r["engine"] == e] for e in engines}
        for e in engines:
            rs = mine[e]
            if not rs:
                continue
            cells = [_median_spread([r["by"][b] for r in rs]) for b in OP_TABLE_BUCKETS]
            rate = "entries_s" if what == "refresh entry" else "ops_s"
            ops = (
                _median_spread([r[rate] for r in rs if rate in r])
                if what != "slapadd entry"
                else "-"
            )
            note = " (LMDB inside back_mdb)" if e == "stock" else ""
            lines.append(f"| {e}{note} | {len(rs)} | " + " | ".join(cells) + f" | {ops} |")
        for a, b, cols in (
            ("mdb", "lmdb-src", OP_TABLE_BUCKETS),
            ("mdb", BASELINE, OP_TABLE_BUCKETS),
            ("mdb", "lmdb-src-nordahead", OP_TABLE_BUCKETS),
            ("lmdb-src-nordahead", "lmdb-src", OP_TABLE_BUCKETS),
            ("mdb", "stock", ("total", "engine+back_mdb", "slapd", "libc", "kernel")),
            ("lmdb-src", "stock", ("total", "engine+back_mdb", "kernel")),
        ):
            if not (mine.get(a) and mine.get(b)):
                continue
            pairs = list(zip(sorted(mine[a], key=lambda r: r["round"]),
                             sorted(mine[b], key=lambda r: r["round"])))  # fmt: skip
            cells = []
            for c in OP_TABLE_BUCKETS:
                vals = [x["by"][c] / y["by"][c] for x, y in pairs if y["by"].get(c)]
                cells.append(_median_spread(vals) if c in cols and vals else "")
            lines.append(f"| {a}/{b} (per round) | {len(pairs)} | " + " | ".join(cells) + " | |")
        counted = {e: [r["per_op_counts"] for r in mine[e] if r.get("per_op_counts")]
                   for e in engines}  # fmt: skip
        if any(counted.values()):
            names = sorted({k for e in engines for c in counted[e] for k in c},
                           key=lambda k: (k != "syscalls", k))  # fmt: skip
            names = [k for k in names if any(c.get(k) for e in engines for c in counted[e])]
            src = "/proc/PID/io" if what == "refresh entry" else "perf stat"
            lines.append(f"\nper {what} ({src}, median of rounds): " + ", ".join(names))
            for e in engines:
                if counted[e]:
                    lines.append(f"- {e}: " + ", ".join(
                        _fmt(statistics.median([c.get(k, 0.0) for c in counted[e]]))
                        for k in names
                    ))  # fmt: skip
        for e in engines:
            rs = mine[e]
            if not rs:
                continue
            for key, label in (
                ("funcs", "its own functions"),
                ("kfuncs", "kernel functions"),
                ("kcause", "kernel time by cause"),
            ):
                if (key == "funcs" and e == "stock") or not any(r.get(key) for r in rs):
                    continue
                names: set[str] = set().union(*(r[key] for r in rs))
                med = {k: statistics.median([r[key].get(k, 0.0) for r in rs]) for k in names}
                best = sorted(med.items(), key=lambda kv: -kv[1])[:top]
                lines.append(f"\n{e}, {label} per {what} (us): " + ", ".join(
                    f"{k} {v:.2f}" for k, v in best if v >= 0.005
                ))  # fmt: skip
    sys_rows = [r for r in rows if r["what"] == "slapadd sys"]
    if sys_rows:
        lines.append(
            "\n## slapadd -q: system time, page faults, bytes, system calls (median of rounds)"
        )
        cols = ("wall_s", "user_s", "sys_s", "minflt", "majflt", "write_bytes", "file_alloc",
                "used_bytes", "nivcsw")  # fmt: skip
        lines.append("| engine | entries | rounds | " + " | ".join(cols) + " | syscalls |")
        lines.append("|---|---:|---:|" + "---:|" * (len(cols) + 1))
        for n in sorted({r["entries"] for r in sys_rows}):
            for e in engines:
                rs = [r for r in sys_rows if r["engine"] == e and r["entries"] == n]
                if not rs:
                    continue
                cells = []
                for c in cols:
                    vals = [float(r[c]) for r in rs]
                    if c.endswith("bytes") or c == "file_alloc":
                        vals = [v / 2**20 for v in vals]  # MiB
                    cells.append(_median_spread(vals))
                sc = next((r["syscalls"] for r in rs if "syscalls" in r), None)
                sct = "-"
                if sc:
                    topsc = sorted(sc.items(), key=lambda kv: -kv[1])[:6]
                    sct = f"{sum(sc.values()):,}: " + ", ".join(f"{k} {v:,}" for k, v in topsc)
                lines.append(f"| {e} | {n:,} | {len(rs)} | " + " | ".join(cells) + f" | {sct} |")
        lines.append("(bytes in MiB; write_bytes = page cache dirtied by the process, from rusage)")
        stat_rows = [r for r in sys_rows if "stat" in r]
        if stat_rows:
            lines.append(
                "\n## slapadd -q under perf stat: counts per 1,000 entries (median of rounds)"
            )
            keys = ("syscalls", "sched_yield", "futex", "context-switches", "page-faults",
                    "cpu-migrations")  # fmt: skip
            totals = ("mmap", "munmap", "mremap", "madvise", "msync", "ftruncate", "fallocate",
                      "pwrite64", "pwritev", "pread64", "fdatasync", "major-faults")  # fmt: skip
            lines.append("| engine | entries | rounds | " + " | ".join(keys) + " | "
                         + " | ".join(totals) + " (whole run) |")  # fmt: skip
            lines.append("|---|---:|---:|" + "---:|" * (len(keys) + len(totals)))
            for n in sorted({r["entries"] for r in stat_rows}):
                for e in engines:
                    rs = [r["stat"] for r in stat_rows if r["engine"] == e and r["entries"] == n]
                    if not rs:
                        continue
                    cells = [_median_spread([r.get(k, 0) * 1000 / n for r in rs]) for k in keys]
                    cells += [_fmt(statistics.median([r.get(k, 0) for r in rs])) for k in totals]
                    lines.append(f"| {e} | {n:,} | {len(rs)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.perf", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--engines", default="mdb,lmdb-src,stock")
    ap.add_argument("--entries", type=int, default=20_000, help="slapadd's N, the db searched")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--only", default="slapadd,search,modify,sys", help="and refresh: a syncrepl consumer's"
    )
    ap.add_argument("--sys-entries", default="", help="sizes for sys [--entries]")
    ap.add_argument("--strace-max", type=int, default=300_000, help="no strace above this size")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--duration", type=float, default=10.0, help="each job's measured seconds")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--period-ns", type=int, default=PERIOD_NS)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--work", default="/tmp/mdblab-perf")
    ap.add_argument("--out", default=os.path.join("build", "lab", "perf"))
    ap.add_argument("--mdb-lib", help="profile this build of our engine [build/libmdbcore.so]")
    ap.add_argument(
        "--baseline",
        metavar="LIB",
        help="another build of our engine as engine `baseline`, in the same rounds (A/B)",
    )
    ap.add_argument("--json", action="store_true", help="print the rows as JSON, not the table")
    ap.add_argument("--table", metavar="JSONL", help="only print the table of earlier rows")
    a = ap.parse_args(argv)
    if a.table:
        with open(a.table) as f:
            old = [json.loads(line) for line in f if line.strip()]
        names = [e for e in a.engines.split(",") if any(r["engine"] == e for r in old)]
        print(table(old, names, a.top))
        return 0
    if shutil.which("perf") is None:
        print("perf is not installed (apt-get install linux-perf)", file=sys.stderr)
        return 1
    only = set(a.only.split(","))
    if a.mdb_lib:
        from . import slapd

        slapd.OUR_LIB = os.path.abspath(a.mdb_lib)
    os.makedirs(a.work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    names = a.engines.split(",")
    if a.baseline and BASELINE not in names:
        names.append(BASELINE)
    engines = {
        name: make_baseline(a.baseline) if name == BASELINE else make_engine(name) for name in names
    }
    sys_sizes = [int(x) for x in a.sys_entries.split(",") if x] or [a.entries]
    tm = load.Timing(a.warmup, a.duration, 1.0)
    rows: list[dict[str, Any]] = []
    meta = {"git_commit": _git_commit(), "period_ns": a.period_ns, "cores": os.cpu_count()}
    rows_path = os.path.join(a.out, "perf.jsonl")
    with open(rows_path, "a") as sink:

        def keep(row: dict[str, Any]) -> None:
            rows.append(row)
            load1 = os.getloadavg()[0]
            sink.write(json.dumps({**meta, "loadavg_1m": load1, **row}) + "\n")
            sink.flush()

        for rnd in range(a.rounds):
            for name in names:
                eng = engines[name]
                t0 = time.monotonic()
                base = {"engine": name, "engine_version": eng.version, "round": rnd,
                        "entries": a.entries}  # fmt: skip
                if only & {"slapadd", "search", "modify"}:
                    d = os.path.join(a.work, f"{name}-{rnd}")
                    shutil.rmtree(d, ignore_errors=True)
                    inst = Instance(d, eng)
                    prof = slapadd_profile(eng, inst, ldif_file(a.work, a.entries), a.period_ns)
                    if "slapadd" in only:
                        n1 = a.entries // 10
                        d1 = os.path.join(a.work, f"{name}-{rnd}-small")
                        shutil.rmtree(d1, ignore_errors=True)
                        small = slapadd_profile(
                            eng, Instance(d1, eng), ldif_file(a.work, n1), a.period_ns
                        )
                        shutil.rmtree(d1, ignore_errors=True)
                        fig = per_op(prof, a.entries - n1, small)
                        keep({**base, "what": "slapadd entry", "n1": n1, **fig})
                    for kind in ("search", "modify"):
                        if kind not in only:
                            continue
                        spec = load.JobSpec(kind, a.clients, a.depth)
                        prof, job = server_profile(
                            eng, inst, kind, a.entries, spec, tm, a.period_ns
                        )
                        keep({**base, "what": kind, **per_op(prof, job["ops_in_window"]), **job})
                    shutil.rmtree(d, ignore_errors=True)
                if "refresh" in only:
                    d = os.path.join(a.work, f"{name}-{rnd}-refresh")
                    shutil.rmtree(d, ignore_errors=True)
                    os.makedirs(d)
                    prof, fig = refresh_profile(
                        eng, d, ldif_file(a.work, a.entries), a.entries, a.period_ns
                    )
                    keep({**base, "what": "refresh entry", **per_op(prof, a.entries), **fig})
                    shutil.rmtree(d, ignore_errors=True)
                if "sys" in only:
                    for n in sys_sizes:
                        st = rnd == 0 and n <= a.strace_max
                        row = slapadd_sys(eng, a.work, n, strace=st, tag=str(rnd))
                        keep({**base, "entries": n, "what": "slapadd sys", **row})
                print(f"[perf] round {rnd} {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        print(table(rows, names, a.top))
        print(f"\nrows -> {rows_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
