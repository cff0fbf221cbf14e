"""experiments.py -- the seed papers' experiments, each a function measuring one engine in
one round, and the run loop that interleaves the engines round by round.

Every measurement starts from a fresh database: table1 loads one with slapadd; the others
copy the engine's loaded template (made once per run by slapadd on that engine) into a
new instance directory.  Rows are flat (results.Row) and carry their provenance.
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from . import fastclient, ldapwire, load, verify
from .makeldif import PEOPLE, ROOTDN, ROOTPW, SUFFIX
from .makeldif import write as write_ldif
from .results import Recorder
from .slapd import ROOT, Engine, Instance, LabError, proc_cpu, used_bytes


@dataclass(frozen=True)
class Size:
    name: str
    entries: int
    warmup: float  # seconds of each rate job not counted
    duration: float  # seconds measured
    scan_concurrency: tuple[int, ...]
    many_dbs: tuple[int, ...]  # seed001: numbers of named databases
    many_dbs_scale: float  # seed001: x bench/run_many_dbs.py's iteration counts
    key_order_ns: tuple[int, ...]  # seed002: numbers of inserts
    lag_probes: int  # syncrepl: replication-lag probes under ModRate
    step_timeout: float
    # syncrepl's paced lag: modifies a second offered to the provider, below what stock
    # sustains unpaced at 1m (about 1,130 a second, lab/results/2026-11-28-1m)
    lag_paced_rate: float = 500.0


SIZES = {
    "smoke": Size(
        "smoke", 2000, 1.0, 3.0, (2, 4, 8, 16), (10, 100, 1000), 0.02, (1000, 10000), 20, 300
    ),
    "100k": Size(
        "100k",
        100_000,
        2.0,
        10.0,
        (2, 4, 8, 16),
        (10, 100, 1000, 10000),
        0.1,
        (10_000, 100_000, 1_000_000),
        100,
        1200,
    ),
    "1m": Size(
        "1m",
        1_000_000,
        3.0,
        15.0,
        (2, 4, 8, 16),
        (10, 100, 1000, 10000, 100000),
        0.1,
        (10_000, 100_000, 1_000_000, 4_000_000),
        200,
        3600,
    ),
}


class Lab:
    """What one `lab run` shares between experiments: sizes, engines, the LDIF, the loaded
    template database of each engine, the work directory, and the row recorder."""

    def __init__(
        self, size: Size, engines: list[Engine], rounds: int, out: str, work: str, keep: bool
    ) -> None:
        self.size, self.engines, self.rounds = size, engines, rounds
        self.out, self.work, self.keep = out, work, keep
        self.rec = Recorder(os.path.join(out, "results.jsonl"), size.name, size.entries)
        self._templates: dict[str, str] = {}
        self._seq = 0
        self._step_instances: list[Instance] = []
        self._step0 = (load._busy_jiffies(), _self_and_children_cpu())
        self.rec.defaults = self._step_defaults
        os.makedirs(work, exist_ok=True)

    # -- progress and logs
    def say(self, msg: str) -> None:
        print(f"[lab {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    def keep_logs(self, inst_dir: str, tag: str) -> str:
        dest = os.path.join(self.out, "logs", tag)
        os.makedirs(dest, exist_ok=True)
        for fn in os.listdir(inst_dir):
            if fn.endswith((".log", ".conf")) or fn.startswith("bind-"):
                shutil.copy(os.path.join(inst_dir, fn), dest)
        return dest

    # -- data
    def ldif(self) -> str:
        path = os.path.join(self.work, "ldif", f"people-{self.size.entries}-seed1.ldif")
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.say(f"generating {self.size.entries:,} entries -> {path}")
            with open(path + ".tmp", "w") as f:
                write_ldif(f, self.size.entries, seed=1)
            os.rename(path + ".tmp", path)
        return path

    def new_dir(self, tag: str) -> str:
        self._seq += 1
        d = os.path.join(self.work, "inst", f"{self._seq:03d}-{tag}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def template(self, eng: Engine) -> str:
        """A database directory loaded by slapadd on eng (made once per run)."""
        if eng.name not in self._templates:
            d = self.new_dir(f"template-{eng.name}")
            self.say(f"{eng.name}: slapadd of {self.size.entries:,} entries (template)")
            inst = Instance(d, eng, maxsize=self.maxsize)
            inst.slapadd(self.ldif(), timeout=self.size.step_timeout)
            self._templates[eng.name] = inst.db
        return self._templates[eng.name]

    def adopt_template(self, eng: Engine, inst: Instance) -> bool:
        """Keep a fresh slapadd's database as eng's template if it has none yet (saves a
        load of N entries per engine when table1 runs first)."""
        if eng.name in self._templates:
            return False
        self._templates[eng.name] = inst.db
        return True

    @property
    def maxsize(self) -> int:
        return max(1 << 30, self.size.entries * 8192)

    def step_begin(self) -> None:
        """A new measurement step: its CPU accounting and instances start here."""
        self._step_instances = []
        self._step0 = (load._busy_jiffies(), _self_and_children_cpu())

    def _step_defaults(self) -> dict[str, Any]:
        """Provenance for a row that does not measure it itself: the other processes' CPU
        share since the step began (busy CPU less ours: this process, its reaped children,
        and the live slapd servers of the step), the newest live slapd's CPU seconds and
        peak RSS, and the used size of the newest database of the step."""
        (busy0, total0), own0 = self._step0
        busy1, total1 = load._busy_jiffies()
        hz = os.sysconf("SC_CLK_TCK")
        live = [i for i in self._step_instances if i.proc is not None and i.proc.poll() is None]
        slapd_s = 0.0
        for i in live:
            try:
                slapd_s += sum(i.cpu())
            except OSError:
                pass
        own = _self_and_children_cpu() - own0 + slapd_s
        total = max((total1 - total0) / hz, 1e-9)
        out: dict[str, Any] = {
            "other_cpu_share": max(0.0, min(1.0, ((busy1 - busy0) / hz - own) / total))
        }
        if live:
            try:
                u, s = live[-1].cpu()
                out.update(slapd_user_s=u, slapd_sys_s=s, slapd_peak_rss_kb=live[-1].peak_rss_kb())
            except OSError:
                pass
        for inst in reversed(self._step_instances):
            if os.path.exists(os.path.join(inst.db, "data.mdb")):
                try:
                    out["db_used_bytes"] = used_bytes(inst.db)
                except (OSError, LabError):
                    pass
                break
        return out

    def instance(
        self, eng: Engine, tag: str, loaded: bool = True, own_load: bool = False, **opts: Any
    ) -> Instance:
        """A new slapd instance on eng, its database empty (loaded=False), a copy of eng's
        template, or (own_load) loaded by its own slapadd -q.  Experiments whose figures
        are modifies use own_load: the page cache of a copy holds what cp put there
        (large folios, Linux 6.x), a loaded server's holds what the engine put there, and
        the cost of every later single-page write depends on it (docs/performance.md,
        "Page cache folios")."""
        d = self.new_dir(tag)
        inst = Instance(d, eng, maxsize=self.maxsize, **opts)
        self._step_instances.append(inst)
        if loaded and own_load:
            inst.slapadd(self.ldif(), timeout=self.size.step_timeout)
        elif loaded:
            src = self.template(eng)
            for fn in ("data.mdb",):
                subprocess.run(
                    ["cp", "--sparse=always", os.path.join(src, fn), os.path.join(inst.db, fn)],
                    check=True,
                )
        return inst

    @contextmanager
    def measuring(self, inst: Instance, tag: str) -> Iterator[Instance]:
        """inst through one measurement: its logs are kept under tag when it fails, and it
        is discarded at the end either way."""
        try:
            yield inst
        except Exception:
            self.keep_logs(inst.dir, tag)
            raise
        finally:
            self.discard(inst)

    def discard(self, inst: Instance) -> None:
        inst.stop()
        if not self.keep:
            shutil.rmtree(inst.dir, ignore_errors=True)

    def cleanup(self) -> None:
        if not self.keep:
            shutil.rmtree(os.path.join(self.work, "inst"), ignore_errors=True)


# ---------------------------------------------------------------- helpers


class Window:
    """CPU accounting of one measured step: slapd's user/sys and the other processes'
    share of the machine (busy CPU less slapd's and our clients', over wall x cores)."""

    def __init__(self, slapd_pid: int | None) -> None:
        self.pid = slapd_pid

    def __enter__(self) -> Window:
        self.t0 = time.monotonic()
        self.busy0 = load._busy_jiffies()
        self.own0 = _self_and_children_cpu()
        self.slapd0 = proc_cpu(self.pid) if self.pid else (0.0, 0.0)
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.monotonic() - self.t0
        busy1 = load._busy_jiffies()
        slapd1 = proc_cpu(self.pid) if self.pid else (0.0, 0.0)
        self.slapd_user = slapd1[0] - self.slapd0[0]
        self.slapd_sys = slapd1[1] - self.slapd0[1]
        hz = os.sysconf("SC_CLK_TCK")
        busy = (busy1[0] - self.busy0[0]) / hz
        total = max((busy1[1] - self.busy0[1]) / hz, 1e-9)
        own = _self_and_children_cpu() - self.own0
        self.other_share = max(
            0.0, min(1.0, (busy - own - self.slapd_user - self.slapd_sys) / total)
        )


def _self_and_children_cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def read_file_seconds(path: str, nbytes: int) -> float:
    """Time to read the first nbytes of path sequentially, 1 MiB at a time (the floor a
    full scan could reach: the file's used part, from the page cache)."""
    t0 = time.monotonic()
    with open(path, "rb", buffering=0) as f:
        left = nbytes
        buf = bytearray(1 << 20)
        while left > 0:
            got = f.readinto(buf)
            if not got:
                break
            left -= got
    return time.monotonic() - t0


def rate_rows(
    lab: Lab, exp: str, eng: Engine, rnd: int, res: dict, inst: Instance, **extra: Any
) -> None:
    share = res["client_cpu_share"]
    prov = {
        "other_cpu_share": res["other_cpu_share"],
        "slapd_peak_rss_kb": inst.peak_rss_kb(),
        "client": res.get("client", "lab"),
        "client_cpu_share": share,
        "client_bound": share > fastclient.CLIENT_SHARE_MAX,
        **extra,
    }
    many = len(res["kinds"]) > 1
    for kind, kr in sorted(res["kinds"].items()):
        pre = f"{kind}_" if many else ""
        for metric, value in kr.summary(res.get("duration", lab.size.duration)).items():
            unit = {"ops_s": "ops/s", "errors": "count"}.get(metric, "ms")
            lab.rec.row(exp, eng, rnd, pre + metric, value, unit, **prov)
        for i, c in enumerate(kr.intervals):
            lab.rec.row(
                exp,
                eng,
                rnd,
                pre + "interval_ops_s",
                c / 1.0,
                "ops/s",
                interval=i,
                warmup=i < res["warmup_buckets"],
                **prov,
            )
    lab.rec.row(exp, eng, rnd, "slapd_cpu_us_per_op", res["slapd_cpu_us_per_op"], "us", **prov)
    lab.rec.row(exp, eng, rnd, "client_cpu_share", res["client_cpu_share"], "share", **prov)


def timing(lab: Lab) -> load.Timing:
    return load.Timing(lab.size.warmup, lab.size.duration, 1.0)


# ---------------------------------------------------------------- the experiments


def table1(lab: Lab, eng: Engine, rnd: int) -> None:
    """slapadd -q of N entries into an empty database: wall, user, sys; used size."""
    inst = lab.instance(eng, f"table1-{eng.name}-r{rnd}", loaded=False)
    try:
        with Window(None) as w:
            tr = inst.slapadd(lab.ldif(), timeout=lab.size.step_timeout)
        used = inst.used_bytes()
        prov = {
            "other_cpu_share": w.other_share,
            "slapd_user_s": tr.user_s,
            "slapd_sys_s": tr.sys_s,
            "slapd_peak_rss_kb": tr.maxrss_kb,
            "db_used_bytes": used,
        }
        lab.rec.row("table1", eng, rnd, "wall_s", tr.wall_s, "s", **prov)
        lab.rec.row("table1", eng, rnd, "user_s", tr.user_s, "s", **prov)
        lab.rec.row("table1", eng, rnd, "sys_s", tr.sys_s, "s", **prov)
        lab.rec.row("table1", eng, rnd, "db_used_mb", used / 2**20, "MiB", **prov)
    except Exception:
        lab.keep_logs(inst.dir, f"table1-{eng.name}-r{rnd}")
        raise
    else:
        if lab.adopt_template(eng, inst):
            return  # this load is the engine's template from now on: a copy per measurement
    finally:
        inst.stop()
    lab.discard(inst)


def _scan(inst: Instance, timeout: float, digest: bool = False) -> tuple[float, int, str]:
    ((secs, rc, count, dig),) = load.full_scans(inst.port, 1, timeout, digest=digest)
    if rc != 0:
        raise LabError(f"full scan: resultCode {rc}")
    return secs, count, dig


def table2(lab: Lab, eng: Engine, rnd: int) -> None:
    """A full-scan search (every entry), first and second run after slapd starts; slapd's
    RSS; and the time to read the used part of data.mdb (the physical floor)."""
    inst = lab.instance(eng, f"table2-{eng.name}-r{rnd}")
    with lab.measuring(inst, f"table2-{eng.name}-r{rnd}"):
        inst.start()
        expect = lab.size.entries + 2
        for label in ("first", "second"):
            with Window(inst.pid) as w:
                secs, count, _ = _scan(inst, lab.size.step_timeout)
            if count != expect:
                raise LabError(f"full scan returned {count} entries, expected {expect}")
            lab.rec.row(
                "table2",
                eng,
                rnd,
                f"scan_{label}_s",
                secs,
                "s",
                other_cpu_share=w.other_share,
                slapd_user_s=w.slapd_user,
                slapd_sys_s=w.slapd_sys,
                slapd_peak_rss_kb=inst.peak_rss_kb(),
            )
        rss = inst.rss_kb()
        used = used_bytes(inst.db)
        lab.rec.row("table2", eng, rnd, "slapd_rss_mb", rss / 1024, "MiB", db_used_bytes=used)
        lab.rec.row("table2", eng, rnd, "db_used_mb", used / 2**20, "MiB", db_used_bytes=used)
        with Window(None) as w:
            secs = read_file_seconds(os.path.join(inst.db, "data.mdb"), used)
        lab.rec.row(
            "table2",
            eng,
            rnd,
            "file_read_s",
            secs,
            "s",
            other_cpu_share=w.other_share,
            db_used_bytes=used,
        )
        if rnd == 0:
            # what the engines return must be the same: a digest of every entry's encoding
            _, count, dig = _scan(inst, lab.size.step_timeout, digest=True)
            lab.rec.row("table2", eng, rnd, "entries", count, "count", digest=dig)


def table3(lab: Lab, eng: Engine, rnd: int) -> None:
    """2, 4, 8 and 16 concurrent full scans: the average time per scan."""
    inst = lab.instance(eng, f"table3-{eng.name}-r{rnd}")
    with lab.measuring(inst, f"table3-{eng.name}-r{rnd}"):
        inst.start()
        _scan(inst, lab.size.step_timeout)  # map the database in, as table 2's first run
        for conc in lab.size.scan_concurrency:
            with Window(inst.pid) as w:
                res = load.full_scans(inst.port, conc, lab.size.step_timeout)
            bad = [r for r in res if r[1] != 0 or r[2] != lab.size.entries + 2]
            if bad:
                raise LabError(f"{len(bad)} of {conc} concurrent scans failed: {bad[0]}")
            lab.rec.row(
                "table3",
                eng,
                rnd,
                "avg_scan_s",
                statistics.fmean(r[0] for r in res),
                "s",
                concurrency=conc,
                other_cpu_share=w.other_share,
                slapd_user_s=w.slapd_user,
                slapd_sys_s=w.slapd_sys,
                slapd_peak_rss_kb=inst.peak_rss_kb(),
            )


def _rate(
    lab: Lab, exp: str, eng: Engine, rnd: int, specs: list, nosync: bool = True, **extra: Any
) -> None:
    """One server, both clients in turn (lab/fastclient.py): the Python one and ldload."""
    writes = any(j.kind == "modify" for j in specs)
    inst = lab.instance(eng, f"{exp}-{eng.name}-r{rnd}", own_load=writes, nosync=nosync)
    with lab.measuring(inst, f"{exp}-{eng.name}-r{rnd}"):
        inst.start()
        errors = 0
        for client in fastclient.order(rnd):
            n, tm = lab.size.entries, timing(lab)
            acked = None
            if client == "lab":
                res = load.run_job(inst.port, inst.pid, n, specs, tm, seed=rnd + 1)
                res["client_shape"] = ", ".join(f"{j.kind} {j.clients}x{j.depth}" for j in specs)
            else:
                if any(j.kind == "modify" for j in specs):
                    acked = os.path.join(inst.dir, "ldload-acked.tsv")
                tm = fastclient.timing(lab.size.name, tm)
                res = fastclient.run_job(inst.port, inst.pid, n, specs, tm, rnd + 1, acked)
            u, s = inst.cpu()
            rate_rows(
                lab,
                exp,
                eng,
                rnd,
                res,
                inst,
                slapd_user_s=u,
                slapd_sys_s=s,
                client_shape=res["client_shape"],
                **extra,
            )
            errors += sum(k.errors for k in res["kinds"].values())
            if res["client_cpu_share"] > fastclient.CLIENT_SHARE_MAX:
                share = res["client_cpu_share"]
                lab.say(f"WARNING {exp} on {eng.name}: the {client} client used {share:.0%}")
            # after each client's window (before the other client overwrites what it
            # wrote): an ldap3 read-back of the values its modifies were acknowledged with
            if client == "lab" and "modify" in res["kinds"]:
                verify.modified_rows(
                    lab, exp, eng, rnd, inst.port, res["acked"], client="lab", **extra
                )
            if acked:
                fastclient.verify_acked(lab, exp, eng, rnd, inst.port, acked, **extra)
        if errors:
            raise LabError(f"{exp}: {errors} LDAP operations failed")


def table4(lab: Lab, eng: Engine, rnd: int) -> None:
    """SearchRate: (uid=user.[0-N)) equality searches, every user attribute returned."""
    _rate(lab, "table4", eng, rnd, [load.JobSpec("search", 2, 4)])


def table5(lab: Lab, eng: Engine, rnd: int) -> None:
    """ModRate: replace description of uid=user.[0-N) with 80 random characters; with
    dbnosync (the engine's cost) and with durable commits (the disk's).  Afterwards a
    sample of the modified entries is read back (lab/verify.py)."""
    for variant, nosync in (("nosync", True), ("sync", False)):
        _rate(lab, "table5", eng, rnd, [load.JobSpec("modify", 2, 2)], nosync, variant=variant)


def table6(lab: Lab, eng: Engine, rnd: int) -> None:
    """SearchRate and ModRate at once on one server (dbnosync)."""
    _rate(lab, "table6", eng, rnd, [load.JobSpec("search", 2, 4), load.JobSpec("modify", 1, 2)])


def _c_bench(src: str, eng: Engine) -> tuple[str, str]:
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from benchlib import build  # type: ignore[import-not-found]

    exe, loaded = build(src, "ours" if eng.name == "mdb" else "system")
    want = os.path.realpath(eng.preload) if eng.preload else "/usr/lib/x86_64-linux-gnu/liblmdb.so"
    if not os.path.realpath(loaded).startswith(want):
        raise LabError(f"{exe} loads {loaded}, not {want}")
    return exe, loaded


def _parse_kv(line: str) -> dict[str, str]:
    return dict(f.split("=", 1) for f in line.split() if "=" in f)


def seed001(lab: Lab, eng: Engine, rnd: int) -> None:
    """Read-txn cost (begin, cursor open/close, abort; and renew/reset) against the number
    of open named databases: bench/many_dbs.c on our library and on Debian's liblmdb."""
    exe, _ = _c_bench("many_dbs.c", eng)
    base = {10: 1_000_000, 100: 1_000_000, 1000: 1_000_000, 10000: 100_000, 100000: 2_000}
    for ndbs in lab.size.many_dbs:
        iters = max(100, int(base[ndbs] * lab.size.many_dbs_scale))
        d = lab.new_dir(f"seed001-{eng.name}")
        try:
            with Window(None) as w:
                r = subprocess.run(
                    [exe, d, str(ndbs), str(iters), str(iters)],
                    capture_output=True,
                    text=True,
                    timeout=lab.size.step_timeout,
                )
            if r.returncode:
                raise LabError(f"many_dbs {ndbs}: {r.stderr.strip()}")
            kv = _parse_kv(r.stdout)
            prov = {"ndbs": ndbs, "other_cpu_share": w.other_share, "engine_version": kv["version"]}
            for m in ("begin", "renew"):
                us = float(kv[m]) / int(kv[f"{m}_iters"]) * 1e6
                lab.rec.row("seed001", eng, rnd, f"{m}_us", us, "us", **prov)
            for m in ("create_last", "reopen_last"):
                lab.rec.row("seed001", eng, rnd, f"{m}_us", float(kv[m]) * 1e6, "us", **prov)
        finally:
            shutil.rmtree(d, ignore_errors=True)


def seed002(lab: Lab, eng: Engine, rnd: int) -> None:
    """N inserts in natural order: big-endian keys, little-endian integers under memcmp,
    MDB_INTEGERKEY, and MDB_APPEND; time and used file size as N grows."""
    exe, _ = _c_bench("key_order.c", eng)
    for n in lab.size.key_order_ns:
        for mode in ("be", "le", "intkey", "append"):
            d = lab.new_dir(f"seed002-{eng.name}")
            try:
                with Window(None) as w:
                    r = subprocess.run(
                        [exe, d, str(n), mode],
                        capture_output=True,
                        text=True,
                        timeout=lab.size.step_timeout,
                    )
                if r.returncode:
                    raise LabError(f"key_order {n} {mode}: {r.stderr.strip()}")
                kv = _parse_kv(r.stdout.split(" version=")[0])
                used = int(kv["pages_used"]) * int(kv["page_size"])
                prov = {
                    "n": n,
                    "mode": mode,
                    "other_cpu_share": w.other_share,
                    "db_used_bytes": used,
                    "engine_version": r.stdout.split(" version=")[1].strip(),
                }
                lab.rec.row("seed002", eng, rnd, "seconds", float(kv["seconds"]), "s", **prov)
                lab.rec.row("seed002", eng, rnd, "used_mb", used / 2**20, "MiB", **prov)
                lab.rec.row(
                    "seed002", eng, rnd, "leaf_pages", int(kv["leaf_pages"]), "pages", **prov
                )
            finally:
                shutil.rmtree(d, ignore_errors=True)


SETTLE_S = 120.0  # syncrepl: longest wait for the consumer to catch up after the load


def syncrepl(lab: Lab, eng: Engine, rnd: int) -> None:
    """A provider (syncprov) and a consumer (syncrepl refreshAndPersist), both on eng:
    the consumer's initial refresh of N entries, then the replication lag -- a provider
    commit to its visibility on the consumer -- under a ModRate on the provider.  After the
    refresh, and after the load once the consumer caught up, the two trees are compared
    entry by entry, and the ModRate's last acknowledged values are read back on the
    consumer (lab/verify.py, ldap3, outside the timed parts)."""
    prov_name = f"syncrepl-provider-{eng.name}-r{rnd}"
    prov_inst = _syncprov_instance(lab, eng, prov_name, own_load=True)
    with ExitStack() as held:
        held.enter_context(lab.measuring(prov_inst, prov_name))
        prov_inst.start()
        pc = ldapwire.Connection(prov_inst.port)
        csn = ldapwire.read_attr(pc, SUFFIX, "contextCSN")
        if not csn:
            raise LabError("the provider's suffix has no contextCSN after slapadd -w")
        cons_name = f"syncrepl-consumer-{eng.name}-r{rnd}"
        cons_inst = held.enter_context(
            lab.measuring(
                lab.instance(eng, cons_name, loaded=False, extra_db=_syncrepl(1, prov_inst.port)),
                cons_name,
            )
        )
        t0 = time.monotonic()
        cons_inst.start()
        cc = ldapwire.Connection(cons_inst.port)
        deadline = t0 + lab.size.step_timeout
        while sorted(ldapwire.read_attr(cc, SUFFIX, "contextCSN")) != sorted(csn):
            if time.monotonic() > deadline:
                raise LabError("the consumer did not finish its refresh in time")
            time.sleep(0.05)
        refresh = time.monotonic() - t0
        rc, count, _ = cc.search(SUFFIX, ldapwire.present("objectClass"), ["1.1"])
        if rc != 0 or count != lab.size.entries + 2:
            raise LabError(
                f"the consumer holds {count} entries after refresh, expected {lab.size.entries + 2}"
            )
        u, s = cons_inst.cpu()
        lab.rec.row(
            "syncrepl",
            eng,
            rnd,
            "refresh_s",
            refresh,
            "s",
            slapd_user_s=u,
            slapd_sys_s=s,
            slapd_peak_rss_kb=cons_inst.peak_rss_kb(),
        )
        lab.rec.row("syncrepl", eng, rnd, "refresh_entries_s", count / refresh, "entries/s")
        verify.replica_rows(
            lab, "syncrepl", eng, rnd, prov_inst.port, cons_inst.port, phase="refresh"
        )

        # replication lag under load, twice: under an unpaced ModRate (as fast as the
        # provider goes: more modifies on the faster engine) and under a paced one that
        # offers both engines the same modifies a second (like for like)
        pc.bind(ROOTDN, ROOTPW)
        for phase, rate in (("", 0.0), ("_paced", lab.size.lag_paced_rate)):
            _lag_phase(lab, eng, rnd, prov_inst, cons_inst, pc, cc, phase, rate, t0)
        pc.close()
        cc.close()
        verify.replica_rows(lab, "syncrepl", eng, rnd, prov_inst.port, cons_inst.port, phase="lag")


def _lag_phase(
    lab: Lab,
    eng: Engine,
    rnd: int,
    prov_inst: Instance,
    cons_inst: Instance,
    pc: ldapwire.Connection,
    cc: ldapwire.Connection,
    phase: str,
    rate: float,
    t0: float,
) -> None:
    """One lag measurement of syncrepl: a ModRate on the provider (rate modifies a second
    if rate, else unpaced) while a probe writes ou=People's description there and polls
    for it on the consumer.  Rows lag{phase}_p50_ms, _p99_ms, _max_ms and
    provider{phase}_mod_ops_s; then, once the consumer caught up (bounded), the job's
    acknowledged values are read back on the consumer."""
    job: dict[str, Any] = {}
    tm = load.Timing(0.5, lab.size.duration + 2.0, 1.0)
    runner = threading.Thread(
        target=lambda: job.update(
            load.run_job(
                prov_inst.port,
                prov_inst.pid,
                lab.size.entries,
                [load.JobSpec("modify", 1, 2, rate)],
                tm,
                seed=rnd + 7 + (100 if rate else 0),
            )
        ),
        daemon=True,
    )
    runner.start()
    time.sleep(1.0 + tm.warmup)
    lags, timeouts = [], 0
    for i in range(lab.size.lag_probes):
        token = f"probe{phase} {rnd} {i} {time.monotonic_ns()}"
        msgid = pc.send(ldapwire.modify_replace(PEOPLE, "description", token))
        if pc.wait_result(msgid, ldapwire.MODIFY_RESPONSE) != 0:
            raise LabError("the lag probe's modify failed on the provider")
        committed = time.monotonic()
        while token.encode() not in ldapwire.read_attr(cc, PEOPLE, "description"):
            if time.monotonic() - committed > 10:
                timeouts += 1
                break
            time.sleep(0.0005)
        else:
            lags.append((time.monotonic() - committed) * 1000)
        if time.monotonic() > t0 + lab.size.step_timeout:
            break
    runner.join(lab.size.duration + 60)
    if not lags:
        raise LabError("no change reached the consumer within 10 s")
    lags.sort()
    mods = job["kinds"]["modify"] if job else None
    extra: dict[str, Any] = {"probes": len(lags), "probe_timeouts": timeouts}
    if rate:
        extra["offered_ops_s"] = rate
    row = functools.partial(lab.rec.row, "syncrepl", eng, rnd)
    row(f"lag{phase}_p50_ms", lags[len(lags) // 2], "ms", **extra)
    row(f"lag{phase}_p99_ms", lags[min(len(lags) - 1, int(len(lags) * 0.99))], "ms", **extra)
    row(f"lag{phase}_max_ms", lags[-1], "ms", **extra)
    if mods is not None:
        row(f"provider{phase}_mod_ops_s", mods.ops / tm.duration, "ops/s", **extra)
    if timeouts:
        raise LabError(f"{timeouts} lag probes never reached the consumer")
    _converge([prov_inst, cons_inst], time.monotonic() + SETTLE_S)
    if job:
        verify.modified_rows(
            lab,
            "syncrepl",
            eng,
            rnd,
            cons_inst.port,
            job["acked"],
            on="consumer",
            load=phase.strip("_") or "unpaced",
        )


Experiment = Callable[[Lab, Engine, int], None]
EXPERIMENTS: dict[str, Experiment] = {
    "table1": table1,
    "table2": table2,
    "table3": table3,
    "table4": table4,
    "table5": table5,
    "table6": table6,
    "seed001": seed001,
    "seed002": seed002,
    "syncrepl": syncrepl,
}

# the failure and refresh experiments live in their own modules, which build on Lab
from .failures import _converge, _syncprov_instance, _syncrepl, crash, mpr  # noqa: E402
from .refresh import refresh_under_load  # noqa: E402

EXPERIMENTS.update({"crash": crash, "mpr": mpr, "refresh-under-load": refresh_under_load})


def describe(name: str) -> str:
    doc = EXPERIMENTS[name].__doc__ or ""
    return " ".join(doc.split())


def run(lab: Lab, names: list[str]) -> list[str]:
    """Every experiment, rounds interleaved (round r runs the engines in turn, the order
    alternating between rounds).  Returns the failures; a failure stops that experiment
    for that engine and round only."""
    failures = []
    for name in names:
        fn = EXPERIMENTS[name]
        for rnd in range(lab.rounds):
            order = lab.engines if rnd % 2 == 0 else list(reversed(lab.engines))
            for eng in order:
                lab.say(f"{name} round {rnd + 1}/{lab.rounds} on {eng.name}")
                t0 = time.monotonic()
                ticker = _Ticker(lab, f"{name} round {rnd + 1} on {eng.name}")
                lab.step_begin()
                try:
                    fn(lab, eng, rnd)
                except Exception as e:  # recorded, and the run goes on
                    msg = f"{name} round {rnd + 1} on {eng.name}: {type(e).__name__}: {e}"
                    failures.append(msg)
                    lab.say("FAILED " + msg)
                    lab.rec.failure(name, eng, rnd, msg)
                else:
                    took = time.monotonic() - t0
                    lab.say(f"{name} round {rnd + 1}/{lab.rounds} on {eng.name}: {took:.1f} s")
                finally:
                    ticker.stop()
    return failures


class _Ticker:
    """A progress line every TICK_S seconds while a long step runs."""

    TICK_S = 20.0

    def __init__(self, lab: Lab, what: str) -> None:
        self._done = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, args=(lab, what), daemon=True)
        self._thread.start()

    def _run(self, lab: Lab, what: str) -> None:
        while not self._done.wait(self.TICK_S):
            lab.say(f"  ... {what}: {time.monotonic() - self._t0:.0f} s so far")

    def stop(self) -> None:
        self._done.set()
        self._thread.join(1)
