"""callgrind.py -- instructions per slapadd entry, per search and per modify, by engine.

Wall-clock figures need a quiet machine; instruction counts (valgrind's callgrind) do
not, and they repeat.  For each engine (default: mdb and lmdb-src, the same upstream
LMDB as stock but with symbols, lab/lmdb_src.py), this runs real OpenLDAP under callgrind
through the lab's Instance (same slapd.conf, same preload, same binding check):

- slapadd: `slapadd -q -w` of N1 and of N2 entries, each into a fresh directory; per
  entry = (I(N2) - I(N1)) / (N2 - N1), which cancels start-up and shutdown.
- search and modify: a database loaded by slapadd (not measured), slapd under callgrind,
  W warm-up operations, then the counters are zeroed (callgrind_control -z), M
  operations are sent one at a time on one connection, and the counters are dumped
  (callgrind_control -d): per op = dump / M.  Searches are the lab's SearchRate request
  ((uid=user.X) under ou=People, all user attributes), modifies its ModRate request
  (replace description with 80 random characters, dbnosync), X from a fixed seed.

Each profile's self cost is split by object (the engine's library, back_mdb.so, slapd,
libc, the rest) and the engine library's own functions are listed.  Rows go to
OUT/callgrind.jsonl; the table is printed.

    python -m lab.callgrind [--engines mdb,lmdb-src] [--n1 2000 --n2 6000] [--ops 300]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from typing import Any

from . import ldapwire, load
from .makeldif import ROOTDN, ROOTPW
from .makeldif import write as write_ldif
from .slapd import BACK_MDB, Engine, Instance, LabError, make_engine, tool

_NAMED = re.compile(r"^(c?ob|c?fn|c?fl|c?fi|fe)=\((\d+)\)(?: (.*))?$")


MISS_EVENTS = (("D1mr", "D1mw"), ("DLmr", "DLmw"))  # --cache-sim=yes: D1 and LL data misses


def parse(
    path: str,
    engine_lib: str | None = None,
    misses: dict[tuple[str, str], list[int]] | None = None,
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], list[int]]]:
    """From a callgrind output file: {(object, function): self Ir}, and the calls from
    back_mdb.so into engine_lib as {(caller, LMDB function): [calls, inclusive Ir]}.  Name
    and position compression are understood; the cost line after `calls=` is the callee's
    inclusive cost, not the caller's own.  Given `misses`, a profile made with
    --cache-sim=yes also fills it with {(object, function): [self D1 data misses, self LL
    data misses]} (reads and writes)."""
    names: dict[tuple[str, str], str] = {}
    out: dict[tuple[str, str], int] = defaultdict(int)
    sites: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    back_mdb = os.path.realpath(BACK_MDB)
    ob = fn = cob = cfn = "?"
    ncalls = -1  # the count of the `calls=` line just read, -1 when none
    miss_at: list[list[int]] = []  # per level (D1, LL): the cost columns that count
    with open(path, errors="replace") as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 else 0
                if ncalls < 0:
                    out[(ob, fn)] += ir
                    if misses is not None and miss_at:
                        m = misses.setdefault((ob, fn), [0, 0])
                        for level, cols in enumerate(miss_at):
                            m[level] += sum(int(parts[i]) for i in cols if i < len(parts))
                    continue
                if (
                    engine_lib
                    and os.path.realpath(cob) == engine_lib
                    and os.path.realpath(ob) == back_mdb
                ):
                    site = sites[(fn, cfn)]
                    site[0] += ncalls
                    site[1] += ir
                ncalls = -1
                cob = ob
                continue
            if line.startswith("calls="):
                ncalls = int(line[6:].split()[0])
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                # a cost line is one position (the line number), then the events in order
                miss_at = [[events.index(e) + 1 for e in lv if e in events] for lv in MISS_EVENTS]
                if not any(miss_at):
                    miss_at = []
                continue
            m = _NAMED.match(line.rstrip("\n"))
            if not m:
                continue
            kind, ident, name = m.group(1), m.group(2), m.group(3)
            key = (kind.lstrip("c").replace("fi", "fl").replace("fe", "fl"), ident)
            if name is not None:
                names[key] = name
            value = names.get(key, f"({ident})")
            if kind == "ob":
                ob = cob = value
            elif kind == "fn":
                fn = value
                cob = ob  # a call names its callee's object only when it differs
            elif kind == "cob":
                cob = value
            elif kind == "cfn":
                cfn = value
    return dict(out), dict(sites)


def _bucket(obj: str, engine_lib: str | None) -> str:
    base = os.path.basename(obj)
    real = os.path.realpath(obj)
    if engine_lib and real == engine_lib:
        return "engine"
    if real == os.path.realpath(BACK_MDB):
        return "back_mdb"
    if base.startswith("slap"):
        return "slapd"
    if base.startswith(("libc.so", "libc-")):
        return "libc"
    return "other"


def split(path: str, eng: Engine) -> dict[str, Any]:
    misses: dict[tuple[str, str], list[int]] = {}
    costs, sites = parse(path, eng.preload, misses)
    by: dict[str, int] = defaultdict(int)
    funcs: dict[str, int] = defaultdict(int)
    for (obj, fn), ir in costs.items():
        b = _bucket(obj, eng.preload)
        by[b] += ir
        if b == "engine":
            funcs[fn] += ir
    by["total"] = sum(costs.values())
    res: dict[str, Any] = {
        "by": dict(by),
        "funcs": dict(funcs),
        "sites": {f"{a} -> {b}": v for (a, b), v in sites.items()},
    }
    if misses:  # --cache-sim: data misses by bucket, and the engine's functions' LL misses
        d1: dict[str, int] = defaultdict(int)
        ll: dict[str, int] = defaultdict(int)
        funcs_ll: dict[str, int] = defaultdict(int)
        for (obj, fn), (m1, ml) in misses.items():
            b = _bucket(obj, eng.preload)
            d1[b] += m1
            ll[b] += ml
            if b == "engine":
                funcs_ll[fn] += ml
        d1["total"] = sum(m[0] for m in misses.values())
        ll["total"] = sum(m[1] for m in misses.values())
        res.update(d1=dict(d1), ll=dict(ll), funcs_ll=dict(funcs_ll))
    return res


CACHE_SIM = False  # --cache-sim: valgrind simulates the caches (D1, LL as the host's)


def _valgrind(out_file: str) -> list[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out_file}",
        "--vgdb=yes",
        *(["--cache-sim=yes"] if CACHE_SIM else []),
    ]


def _ldif(work: str, n: int) -> str:
    path = os.path.join(work, f"people-{n}.ldif")
    if not os.path.exists(path):
        with open(path + ".tmp", "w") as f:
            write_ldif(f, n, seed=1)
        os.rename(path + ".tmp", path)
    return path


def slapadd_profile(eng: Engine, work: str, n: int) -> dict[str, Any]:
    d = os.path.join(work, f"slapadd-{eng.name}-{n}")
    shutil.rmtree(d, ignore_errors=True)
    inst = Instance(d, eng, maxsize=1 << 30)
    out = os.path.join(d, "callgrind.out")
    prefix = os.path.join(d, "bind-slapadd")
    cmd = [*_valgrind(out), tool("slapadd"), "-q", "-w", "-f", inst.conf, "-l", _ldif(work, n)]
    with open(os.path.join(d, "slapadd.log"), "w") as log:
        subprocess.run(cmd, env=eng.env(prefix), stdout=log, stderr=subprocess.STDOUT, check=True)
    eng.check_bindings(prefix, "slapadd under callgrind")
    return split(out, eng)


def _op(kind: str, n: int, r: random.Random) -> tuple[bytes, int]:
    """One request of the lab's SearchRate or ModRate (a random entry's description set
    to 80 characters) and the response tag that ends it."""
    if kind == "search":
        return load._search(n, r), ldapwire.SEARCH_DONE
    value = load.modify_value(r.randrange(1 << 30), 0)
    req = ldapwire.modify_replace(load.entry_dn(r.randrange(n)), "description", value)
    return req, ldapwire.MODIFY_RESPONSE


def server_profile(eng: Engine, work: str, n: int, kind: str, warm: int, ops: int) -> dict:
    d = os.path.join(work, f"{kind}-{eng.name}-{n}")
    shutil.rmtree(d, ignore_errors=True)
    inst = Instance(d, eng, maxsize=1 << 30)
    inst.slapadd(_ldif(work, n))
    out = os.path.join(d, "callgrind.out")
    port = ldapwire_free_port()
    prefix = os.path.join(d, "bind-slapd")
    log = open(os.path.join(d, "slapd.log"), "w")
    cmd = [*_valgrind(out), tool("slapd"), "-f", inst.conf, "-h", f"ldap://127.0.0.1:{port}/"]
    p = subprocess.Popen(
        [*cmd, "-d", "0"], env=eng.env(prefix), stdout=log, stderr=subprocess.STDOUT
    )
    log.close()
    try:
        if not ldapwire.wait_ready(port, 300, alive=lambda: p.poll() is None):
            raise LabError(f"slapd under callgrind did not answer; log: {d}/slapd.log")
        eng.check_bindings(prefix, "slapd under callgrind")
        c = ldapwire.Connection(port, timeout=300)
        if kind == "modify":
            c.bind(ROOTDN, ROOTPW)
        r = random.Random(7)

        def run(count: int) -> None:
            for _ in range(count):
                req, done = _op(kind, n, r)
                rc = c.wait_result(c.send(req), done)
                if rc != 0:
                    raise LabError(f"{kind} answered resultCode {rc}")

        run(warm)
        subprocess.run(["callgrind_control", "-z", str(p.pid)], check=True, capture_output=True)
        run(ops)
        subprocess.run(["callgrind_control", "-d", str(p.pid)], check=True, capture_output=True)
        c.close()
    finally:
        from .slapd import interrupt

        interrupt(p, 120)
    dumps = sorted(
        (f for f in os.listdir(d) if f.startswith("callgrind.out.") and f[-1].isdigit()),
        key=lambda f: int(f.rsplit(".", 1)[1]),
    )
    if not dumps:
        raise LabError(f"callgrind_control -d left no dump in {d}")
    return split(os.path.join(d, dumps[0]), eng)


def ldapwire_free_port() -> int:
    from .slapd import free_port

    return free_port()


def per(a: dict[str, Any], b: dict[str, Any] | None, count: int) -> dict[str, Any]:
    """(b - a) / count for every figure (a alone when b is None)."""

    def sub(x: dict[str, Any], y: dict[str, Any] | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in set(x) | set(y or {}):
            v0 = x.get(k, 0) if y is not None else 0
            v1 = (y or x).get(k, 0)
            if isinstance(v1, list) or isinstance(v0, list):
                v0 = v0 or [0, 0]
                v1 = v1 or [0, 0]
                out[k] = [(v1[i] - v0[i]) / count for i in range(2)]
            else:
                out[k] = (v1 - v0) / count
        return out

    keys = [k for k in ("by", "funcs", "sites", "d1", "ll", "funcs_ll") if k in a]
    return {k: sub(a[k], b[k] if b else None) for k in keys}


BUCKETS = ("total", "engine", "back_mdb", "slapd", "libc", "other")


def table(results: dict[str, dict[str, dict[str, Any]]], top: int) -> str:
    lines = []
    engines = list(results)
    for what in ("slapadd entry", "search", "modify"):
        rows = [e for e in engines if what in results[e]]
        if not rows:
            continue
        lines.append(f"\n## instructions per {what}")
        lines.append("| engine | " + " | ".join(BUCKETS) + " |")
        lines.append("|---|" + "---:|" * len(BUCKETS))
        for e in rows:
            by = results[e][what]["by"]
            lines.append(f"| {e} | " + " | ".join(f"{by.get(b, 0):,.0f}" for b in BUCKETS) + " |")
        if len(rows) == 2:
            a, b = (results[e][what]["by"] for e in rows)
            cells = [f"{a.get(k, 0) / b[k]:.2f}" if b.get(k) else "-" for k in BUCKETS]
            lines.append(f"| {rows[0]}/{rows[1]} | " + " | ".join(cells) + " |")
        sites = sorted(
            {k for e in rows for k in results[e][what]["sites"]},
            key=lambda k: -max(results[e][what]["sites"].get(k, [0, 0])[1] for e in rows),
        )[:top]
        if sites:
            lines.append(f"\nback-mdb's calls into the engine, per {what}: calls, instructions")
            lines.append("| caller -> LMDB function | " + " | ".join(rows) + " |")
            lines.append("|---|" + "---:|" * len(rows))
            for k in sites:
                cells = []
                for e in rows:
                    n, ir = results[e][what]["sites"].get(k, [0, 0])
                    cells.append(f"{n:.2f}, {ir:,.0f}")
                lines.append(f"| {k} | " + " | ".join(cells) + " |")
        for level, title in (("d1", "D1 data misses"), ("ll", "LL data misses")):
            miss_rows = [e for e in rows if level in results[e][what]]
            if not miss_rows:
                continue
            lines.append(f"\n{title} per {what} (valgrind's simulated caches)")
            lines.append("| engine | " + " | ".join(BUCKETS) + " |")
            lines.append("|---|" + "---:|" * len(BUCKETS))
            for e in miss_rows:
                m = results[e][what][level]
                lines.append(
                    f"| {e} | " + " | ".join(f"{m.get(b, 0):,.1f}" for b in BUCKETS) + " |"
                )
        for e in rows:
            if "funcs_ll" in results[e][what]:
                fl = sorted(results[e][what]["funcs_ll"].items(), key=lambda kv: -kv[1])[:top]
                lines.append(f"\n{e}, LL data misses of its own functions per {what}: " + ", ".join(
                    f"{fn} {n:,.2f}" for fn, n in fl if n >= 0.01
                ))  # fmt: skip
        for e in rows:
            funcs = sorted(results[e][what]["funcs"].items(), key=lambda kv: -kv[1])[:top]
            lines.append(f"\n{e}, its own functions per {what}: " + ", ".join(
                f"{fn} {ir:,.0f}" for fn, ir in funcs if ir >= 0.5
            ))  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.callgrind", description=__doc__)
    ap.add_argument("--engines", default="mdb,lmdb-src")
    ap.add_argument("--n1", type=int, default=2000)
    ap.add_argument("--n2", type=int, default=6000)
    ap.add_argument("--db", type=int, default=2000, help="entries loaded for search/modify")
    ap.add_argument("--warm", type=int, default=50)
    ap.add_argument("--ops", type=int, default=300)
    ap.add_argument("--only", default="slapadd,search,modify")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--work", default="/tmp/mdblab-callgrind")
    ap.add_argument("--out", default=os.path.join("build", "lab", "callgrind"))
    ap.add_argument("--mdb-lib", help="profile this build of our engine [build/libmdbcore.so]")
    ap.add_argument(
        "--cache-sim",
        action="store_true",
        help="simulate the caches too: D1 and LL data misses per operation, by object and "
        "by the engine's functions (valgrind sizes them as the host's)",
    )
    a = ap.parse_args(argv)
    global CACHE_SIM
    CACHE_SIM = a.cache_sim
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 1
    os.makedirs(a.work, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    only = set(a.only.split(","))
    if a.mdb_lib:
        from . import slapd

        slapd.OUR_LIB = os.path.abspath(a.mdb_lib)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    rows_path = os.path.join(a.out, "callgrind.jsonl")
    with open(rows_path, "a") as rows:
        for name in a.engines.split(","):
            eng = make_engine(name)
            res: dict[str, dict[str, Any]] = {}
            t0 = time.monotonic()
            if "slapadd" in only:
                p1 = slapadd_profile(eng, a.work, a.n1)
                p2 = slapadd_profile(eng, a.work, a.n2)
                res["slapadd entry"] = per(p1, p2, a.n2 - a.n1)
            for kind in ("search", "modify"):
                if kind in only:
                    prof = server_profile(eng, a.work, a.db, kind, a.warm, a.ops)
                    res[kind] = per(prof, None, a.ops)
            results[name] = res
            for what, fig in res.items():
                rows.write(json.dumps({
                    "engine": name, "engine_version": eng.version, "what": what,
                    "n1": a.n1, "n2": a.n2, "db": a.db, "ops": a.ops,
                    "git_commit": _git_commit(), **{f"ir_{k}": v for k, v in fig["by"].items()},
                    "engine_funcs": {k: v for k, v in fig["funcs"].items() if v >= 0.5},
                    **({"d1_misses": fig["d1"], "ll_misses": fig["ll"],
                        "engine_funcs_ll": {k: v for k, v in fig["funcs_ll"].items() if v >= 0.01}}
                       if "ll" in fig else {}),
                    "call_sites": {k: v for k, v in fig["sites"].items() if v[1] >= 0.5},
                }) + "\n")  # fmt: skip
            print(f"[callgrind] {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr)
    print(table(results, a.top))
    print(f"\nrows -> {rows_path}")
    return 0


def _git_commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
