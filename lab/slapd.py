"""slapd.py -- private OpenLDAP instances on either engine, and the proof of which engine ran.

An Instance is one directory (slapd.conf, db/, logs) and at most one slapd process, started
in the foreground (`-d 0`, so the pid we hold is slapd's own) on a free 127.0.0.1 port and
stopped by that pid: never the system service, never pkill.

Engines: `stock` runs Debian's binaries as they are (back-mdb's bundled LMDB); `mdb`
preloads our build/libmdbcore.so; `lmdb-src` preloads upstream LMDB 0.9.29 built here with
symbols (lab/lmdb_src.py), so that profiles can name stock's engine functions.  back-mdb
calls LMDB through its PLT and the dynamic linker binds every slot when the module loads,
so `LD_DEBUG=bindings` shows where each function went.  Every tool and server run on a
preloaded engine records its bindings and is checked: each LMDB function back-mdb calls
must bind to that library, or the step fails.  A missing export would otherwise fall back
silently to the bundled copy, running on the preloaded engine's handles.
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from . import ldapwire
from .makeldif import ROOTDN, ROOTPW, SUFFIX

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUR_LIB = os.path.join(ROOT, "build", "libmdbcore.so")
DEBIAN_LMDB = "/usr/lib/x86_64-linux-gnu/liblmdb.so.0"
BACK_MDB = "/usr/lib/ldap/back_mdb.so"
SCHEMA = "/etc/ldap/schema"
ENGINES = ("stock", "mdb")  # the pair every experiment compares (`--engine both`)
# stock-nordahead: stock with slapd's `envflags nordahead`, the page-cache effect of ours
# (writable maps without read-ahead, d3b9194) had by configuration; it tells that effect
# apart from the engine's own in the write experiments.
NORDAHEAD = "stock-nordahead"
# lmdb-src-nordahead: the same for lmdb-src, whose functions perf can name (lab.perf's
# engine CPU per search with the page cache in the state ours leaves it)
SRC_NORDAHEAD = "lmdb-src-nordahead"
ALL_ENGINES = (*ENGINES, "lmdb-src", NORDAHEAD, SRC_NORDAHEAD)


def interrupt(p: subprocess.Popen[Any], timeout: float) -> int | None:
    """Stop a running slapd the way it shuts down cleanly (SIGINT), killing it after
    timeout seconds; its exit status (None if it was not running)."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
    return p.returncode


class LabError(Exception):
    """A step failed; the message says which and where its logs are."""


def tool(name: str) -> str:
    for d in ("/usr/sbin", "/usr/bin"):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    found = shutil.which(name)
    if not found:
        raise LabError(f"{name} is not installed (apt-get install slapd ldap-utils)")
    return found


def _nm_defined(path: str) -> set[str]:
    r = subprocess.run(
        ["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True
    )
    return {p[2].split("@")[0] for p in (ln.split() for ln in r.stdout.splitlines()) if len(p) >= 3}


def lmdb_api() -> set[str]:
    """LMDB's public functions: Debian's liblmdb exports, less the internal midl helpers."""
    return {
        n
        for n in _nm_defined(DEBIAN_LMDB)
        if n.startswith("mdb_") and not n.startswith(("mdb_midl", "mdb_mid2l"))
    }


def back_mdb_calls() -> list[str]:
    """The LMDB functions back-mdb calls through its PLT (its JUMP_SLOT relocations)."""
    r = subprocess.run(
        ["readelf", "-rW", os.path.realpath(BACK_MDB)], capture_output=True, text=True, check=True
    )
    api = lmdb_api()
    slots = {ln.split()[4].split("@")[0] for ln in r.stdout.splitlines() if "JUMP_SLOT" in ln}
    return sorted(slots & api)


_BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'")


def read_bindings(prefix: str) -> dict[str, set[str]]:
    """{symbol: {target file}} of back_mdb's bindings, from LD_DEBUG_OUTPUT files prefix.*."""
    out: dict[str, set[str]] = {}
    d, base = os.path.split(prefix)
    for fn in os.listdir(d):
        if not fn.startswith(base + "."):
            continue
        with open(os.path.join(d, fn), errors="replace") as f:
            for line in f:
                m = _BINDING.search(line)
                if m and "back_mdb" in os.path.basename(m.group(1)):
                    out.setdefault(m.group(3).split("@")[0], set()).add(
                        os.path.realpath(m.group(2))
                    )
    return out


@dataclass
class Engine:
    name: str  # one of ALL_ENGINES
    preload: str | None
    version: str
    called: list[str] = field(default_factory=list)
    extra_db: str = ""  # lines added to the database section of every instance's config

    @property
    def expected_target(self) -> str:
        return os.path.realpath(self.preload or BACK_MDB)

    def env(self, debug_prefix: str | None = None) -> dict[str, str]:
        e = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_DEBUG")}
        if self.preload:
            e["LD_PRELOAD"] = self.preload
        if debug_prefix:
            e["LD_DEBUG"] = "bindings"
            e["LD_DEBUG_OUTPUT"] = debug_prefix
        return e

    def check_bindings(self, prefix: str, what: str) -> None:
        """Raise unless every LMDB function back-mdb calls bound to this engine."""
        got = read_bindings(prefix)
        want = self.expected_target
        bad = [
            f"{n} -> {sorted(got.get(n, {'(no binding recorded)'}))}"
            for n in self.called
            if got.get(n) != {want}
        ]
        if bad:
            raise LabError(
                f"{what}: {len(bad)} of {len(self.called)} LMDB functions back-mdb calls did "
                f"not bind to {want}: " + "; ".join(bad[:5])
            )
        for fn in os.listdir(os.path.dirname(prefix)):
            if fn.startswith(os.path.basename(prefix) + "."):
                os.unlink(os.path.join(os.path.dirname(prefix), fn))


def _stock_version() -> str:
    with open(os.path.realpath(BACK_MDB), "rb") as f:
        m = re.search(rb"LMDB \d+\.\d+\.\d+: \([^)]*\)", f.read())
    return (m.group(0).decode() if m else "LMDB (version string not found)") + " in back_mdb"


def _lib_version(path: str) -> str:
    lib = ctypes.CDLL(path)
    lib.mdb_version.restype = ctypes.c_char_p
    lib.mdb_version.argtypes = [ctypes.c_void_p] * 3
    return str(lib.mdb_version(None, None, None).decode())


def _preloaded(name: str, path: str, hint: str) -> Engine:
    if not os.path.exists(path):
        raise LabError(f"{path} is missing: run `{hint}` first")
    exported = _nm_defined(path)
    missing = [n for n in back_mdb_calls() if n not in exported]
    if missing:
        raise LabError(f"{path} does not export {missing}: back-mdb would use its own")
    return Engine(name, os.path.realpath(path), _lib_version(path))


def make_engine(name: str) -> Engine:
    if name == "stock":
        eng = Engine("stock", None, _stock_version())
    elif name == NORDAHEAD:
        eng = Engine(NORDAHEAD, None, _stock_version() + ", envflags nordahead")
        eng.extra_db = "envflags nordahead\n"
    elif name == "mdb":
        eng = _preloaded(name, OUR_LIB, "make lib")
        eng.version = f"mdb {eng.version}"
    elif name in ("lmdb-src", SRC_NORDAHEAD):
        from . import lmdb_src

        eng = _preloaded(name, lmdb_src.LIB, "make lmdb-src")
        eng.version = f"{eng.version} built from py-lmdb {lmdb_src.PYLMDB_VERSION}'s sdist"
        if name == SRC_NORDAHEAD:
            eng.version += ", envflags nordahead"
            eng.extra_db = "envflags nordahead\n"
    else:
        raise LabError(f"unknown engine {name!r} ({', '.join(ALL_ENGINES)})")
    eng.called = back_mdb_calls()
    if not eng.called:
        raise LabError(f"found no LMDB calls in {BACK_MDB}'s PLT: cannot verify the engine")
    return eng


BASELINE = "baseline"  # `run --baseline PATH`: another build of our engine, same rounds


def make_baseline(path: str) -> Engine:
    """An older (or otherwise different) build of our library, run beside `mdb` in the
    same interleaved rounds, so that a change is measured before and after at once."""
    eng = _preloaded(BASELINE, path, "build it, e.g. `make lib` in a checkout of the old commit")
    if eng.expected_target == os.path.realpath(OUR_LIB):
        raise LabError(f"--baseline {path} is the library under test itself")
    eng.version = f"mdb baseline {eng.version} ({eng.expected_target})"
    eng.called = back_mdb_calls()
    return eng


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_cpu(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a live process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    hz = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / hz, int(fields[12]) / hz


def proc_io(pid: int) -> dict[str, int]:
    """A live process's /proc/PID/io counters: syscr/syscw (read and write system calls),
    rchar/wchar (bytes they moved) and read_bytes/write_bytes (storage-level bytes)."""
    with open(f"/proc/{pid}/io") as f:
        return {k: int(v) for k, v in (line.split(":") for line in f if ":" in line)}


def proc_status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


@dataclass
class ToolRun:
    wall_s: float
    user_s: float
    sys_s: float
    maxrss_kb: int


def run_measured(cmd: list[str], env: dict[str, str], log: str, timeout: float) -> ToolRun:
    """Run cmd to completion with its output in log; its own rusage, from wait4."""
    t0 = time.monotonic()
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                raise LabError(f"{os.path.basename(cmd[0])} ran over {timeout:.0f} s; log: {log}")
            time.sleep(0.02)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        with open(log, errors="replace") as f:
            tail = f.read()[-400:].strip().replace("\n", " | ")
        raise LabError(f"{' '.join(cmd[:2])} exited {p.returncode}: {tail} (log: {log})")
    return ToolRun(wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss)


class Instance:
    """One slapd directory: config, database, logs; start/stop one server on it."""

    def __init__(
        self,
        directory: str,
        engine: Engine,
        *,
        maxsize: int = 8 << 30,
        nosync: bool = True,
        extra_global: str = "",
        extra_db: str = "",
    ) -> None:
        self.dir = directory
        self.engine = engine
        self.db = os.path.join(directory, "db")
        self.conf = os.path.join(directory, "slapd.conf")
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        os.makedirs(self.db, exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(
                "# a private lab instance, not the system service\n"
                f"include {SCHEMA}/core.schema\ninclude {SCHEMA}/cosine.schema\n"
                f"include {SCHEMA}/inetorgperson.schema\n"
                f"pidfile {directory}/slapd.pid\nargsfile {directory}/slapd.args\n"
                "modulepath /usr/lib/ldap\nmoduleload back_mdb\n"
                f"{extra_global}"
                "loglevel 0\nsizelimit unlimited\ntimelimit unlimited\n"
                "threads 4\ntool-threads 2\n\n"
                f'database mdb\nmaxsize {maxsize}\nsuffix "{SUFFIX}"\n'
                f'rootdn "{ROOTDN}"\nrootpw {ROOTPW}\ndirectory {self.db}\n'
                + ("dbnosync\n" if nosync else "")
                + "index objectClass eq\nindex uid,cn eq\nindex entryCSN,entryUUID eq\n"
                + engine.extra_db
                + extra_db
            )

    def _debug_prefix(self, what: str) -> str:
        return os.path.join(self.dir, f"bind-{what}")

    def slapadd(self, ldif: str, timeout: float = 3600) -> ToolRun:
        prefix = self._debug_prefix("slapadd")
        run = run_measured(
            [tool("slapadd"), "-q", "-w", "-f", self.conf, "-l", ldif],
            self.engine.env(prefix),
            os.path.join(self.dir, "slapadd.log"),
            timeout,
        )
        self.engine.check_bindings(prefix, "slapadd")
        return run

    def slaptest(self) -> None:
        prefix = self._debug_prefix("slaptest")
        run_measured(
            [tool("slaptest"), "-u", "-f", self.conf],
            self.engine.env(prefix),
            os.path.join(self.dir, "slaptest.log"),
            60,
        )
        self.engine.check_bindings(prefix, "slaptest")

    def start(self, timeout: float = 60, port: int = 0, poll: float = 0.1) -> float:
        """Start slapd (on port, or a free one), wait for its first answer (the RootDSE,
        polled every poll seconds) and check its engine; the seconds from spawning it to
        that first answer.  The log is appended to, so a restart keeps the earlier run's."""
        self.port = port or free_port()
        prefix = self._debug_prefix("slapd")
        log = open(os.path.join(self.dir, "slapd.log"), "a")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [tool("slapd"), "-f", self.conf, "-h", f"ldap://127.0.0.1:{self.port}/", "-d", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.engine.env(prefix),
        )
        log.close()
        proc = self.proc
        ready = ldapwire.wait_ready(
            self.port, timeout, alive=lambda: proc.poll() is None, interval=poll
        )
        answered = time.monotonic() - t0
        if not ready:
            self.stop()
            raise LabError(f"slapd did not answer on port {self.port}; log: {self.dir}/slapd.log")
        self.engine.check_bindings(prefix, "slapd")
        if self.engine.preload:
            with open(f"/proc/{self.proc.pid}/maps") as f:
                if self.engine.preload not in f.read():
                    self.stop()
                    raise LabError(f"slapd {self.proc.pid} has not mapped {self.engine.preload}")
        return answered

    def kill(self) -> None:
        """SIGKILL our slapd (by its pid) and reap it: a crash, no shutdown at all."""
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait(30)

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise LabError("slapd is not running")
        return self.proc.pid

    def cpu(self) -> tuple[float, float]:
        return proc_cpu(self.pid)

    def io(self) -> dict[str, int]:
        return proc_io(self.pid)

    def peak_rss_kb(self) -> int:
        return proc_status_kb(self.pid, "VmHWM")

    def rss_kb(self) -> int:
        return proc_status_kb(self.pid, "VmRSS")

    def stop(self, timeout: float = 20) -> None:
        p, self.proc = self.proc, None
        if p is not None:
            interrupt(p, timeout)

    def used_bytes(self) -> int:
        """Pages in use x page size (the meta's last page + 1), not the sparse file size."""
        return used_bytes(self.db)

    def __enter__(self) -> Instance:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def used_bytes(db_dir: str) -> int:
    """(last page + 1) x page size from the newer of data.mdb's two meta pages: what
    mdb_stat calls pages used, for a file of either engine, without opening it.  Meta
    layout (LMDB's): after the 16-byte page header, magic u32 at 0, the free DB's md_pad
    (the page size) at 24, last_pg u64 at 120, txnid u64 at 128."""
    path = os.path.join(db_dir, "data.mdb")
    best = (-1, 0, 0)
    with open(path, "rb") as f:
        head = f.read(16 + 136)
        if len(head) < 152 or struct.unpack_from("<I", head, 16)[0] != 0xBEEFC0DE:
            raise LabError(f"{path} does not start with an LMDB meta page")
        psize = struct.unpack_from("<I", head, 16 + 24)[0]
        for page in range(2):
            f.seek(page * psize)
            meta = f.read(16 + 136)
            if len(meta) == 152 and struct.unpack_from("<I", meta, 16)[0] == 0xBEEFC0DE:
                last_pg, txnid = struct.unpack_from("<QQ", meta, 16 + 120)
                best = max(best, (txnid, last_pg, psize))
    return (best[1] + 1) * best[2]


def child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime
