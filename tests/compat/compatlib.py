"""compatlib.py -- shared helpers of the compatibility harnesses (tests/compat, tests/slapd,
tests/c/diff): where the two libraries are, what our library supports today, and the two
file checkers every harness runs on the files it wrote.

Nothing here imports an LMDB binding: the feature probe runs in a child process (ctypes),
so that loading our library never mixes with the lmdb wheel inside the pytest process.
"""

import functools
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, "build")
OUT = os.path.join(BUILD, "compat-tests")  # everything these harnesses build or download

SYSTEM_LIB = "/usr/lib/x86_64-linux-gnu/liblmdb.so.0"
SYSTEM_HDR = "/usr/include/lmdb.h"
OUR_LIB = os.path.join(BUILD, "libmdbcore.so")
OUR_COMPAT_DIR = os.path.join(BUILD, "compat")  # liblmdb.so{,.0} -> ../libmdbcore.so
OUR_INCLUDE = os.path.join(BUILD, "include")  # our lmdb.h

MDB_INCOMPATIBLE = -30784
EINVAL = 22

_PROBE = r"""
import ctypes, json, sys, tempfile, shutil
lib = ctypes.CDLL(sys.argv[1])
out = {}
ma, mi, pa = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
lib.mdb_version.restype = ctypes.c_char_p
s = lib.mdb_version(ctypes.byref(ma), ctypes.byref(mi), ctypes.byref(pa))
out["version"] = [ma.value, mi.value, pa.value]
out["version_string"] = s.decode()
d = tempfile.mkdtemp(prefix="mdbprobe-")
try:
    env = ctypes.c_void_p()
    assert lib.mdb_env_create(ctypes.byref(env)) == 0
    lib.mdb_env_set_maxdbs(env, 4)
    rc = lib.mdb_env_open(env, d.encode(), 0x10000, 0o644)  # MDB_NOSYNC
    assert rc == 0, rc
    txn = ctypes.c_void_p()
    assert lib.mdb_txn_begin(env, None, 0, ctypes.byref(txn)) == 0
    dbi = ctypes.c_uint()
    rc = lib.mdb_dbi_open(txn, b"probe-dups", 0x04 | 0x40000, ctypes.byref(dbi))
    out["dupsort_step"] = "mdb_dbi_open(MDB_DUPSORT|MDB_CREATE)"
    if rc == 0:
        # opening is not enough: an engine may read DUPSORT DBs before it can write them
        class Val(ctypes.Structure):
            _fields_ = [("mv_size", ctypes.c_size_t), ("mv_data", ctypes.c_void_p)]
        bufs = [ctypes.create_string_buffer(b) for b in (b"key", b"dup-1", b"dup-2")]
        vals = [Val(len(b.value), ctypes.cast(b, ctypes.c_void_p)) for b in bufs]
        for v in vals[1:]:
            rc = lib.mdb_put(txn, dbi, ctypes.byref(vals[0]), ctypes.byref(v), 0)
            if rc:
                out["dupsort_step"] = "mdb_put of a second value under one key"
                break
    out["dupsort_rc"] = rc
    child = ctypes.c_void_p()
    rc = lib.mdb_txn_begin(env, txn, 0, ctypes.byref(child))
    out["nested_rc"] = rc
    if rc == 0:
        lib.mdb_txn_abort(child)
    lib.mdb_txn_abort(txn)
    d2 = tempfile.mkdtemp(prefix="mdbprobe-copy-")
    try:
        out["compact_copy_rc"] = lib.mdb_env_copy2(env, d2.encode(), 1)  # MDB_CP_COMPACT
    finally:
        shutil.rmtree(d2, ignore_errors=True)
    lib.mdb_env_close(env)
finally:
    shutil.rmtree(d, ignore_errors=True)
print(json.dumps(out))
"""


@functools.cache
def probe(lib_path):
    """What the library at lib_path supports: {'version': [0,9,29], 'dupsort': bool,
    'nested': bool, ...}.  A feature counts as missing only when the library says so with
    MDB_INCOMPATIBLE (how our engine reports an unimplemented feature; EINVAL for the
    compacting copy, whose flag it refuses); any other failure raises, so that a broken
    library is not mistaken for an incomplete one."""
    r = subprocess.run(
        [sys.executable, "-c", _PROBE, lib_path], capture_output=True, text=True, timeout=60
    )
    if r.returncode != 0:
        raise RuntimeError(f"feature probe of {lib_path} failed: {r.stderr.strip()}")
    info = json.loads(r.stdout)
    for feat, missing_rc in (
        ("dupsort", MDB_INCOMPATIBLE),
        ("nested", MDB_INCOMPATIBLE),
        ("compact_copy", EINVAL),
    ):
        rc = info[f"{feat}_rc"]
        if rc not in (0, missing_rc):
            raise RuntimeError(f"feature probe of {lib_path}: {feat} gave rc={rc}")
        info[feat] = rc == 0
    return info


def strict():
    """MDB_COMPAT_STRICT=1 (`make test-compat`): nothing is skipped or excused for a
    feature our library lacks -- those tests run, and fail until the feature lands."""
    return os.environ.get("MDB_COMPAT_STRICT", "") not in ("", "0")


def missing_features(lib_path, needed=("dupsort", "nested")):
    """The names (DUPSORT, nested transactions) of the needed features lib_path lacks
    (always none in strict mode)."""
    if strict():
        return []
    info = probe(lib_path)
    names = {
        "dupsort": f"DUPSORT ({info.get('dupsort_step')} in a MDB_DUPSORT database "
        "gives MDB_INCOMPATIBLE)",
        "nested": "nested transactions (mdb_txn_begin with a parent gives MDB_INCOMPATIBLE)",
        "compact_copy": "compacting copy (mdb_env_copy2 with MDB_CP_COMPACT gives EINVAL)",
    }
    return [names[f] for f in needed if not info[f]]


def ours_available():
    """None if our library is built and usable, else the reason it is not."""
    if os.environ.get("MDB_TEST_IMPL") == "system":
        return "LMDB_IMPL=system: our library is not under test in this run"
    for p in (
        OUR_LIB,
        os.path.join(OUR_COMPAT_DIR, "liblmdb.so.0"),
        os.path.join(OUR_INCLUDE, "lmdb.h"),
    ):
        if not os.path.exists(p):
            return f"{p} is missing (run `make lib`)"
    return None


# Known bugs of our library that these harnesses found, still open.  A test that hits one
# is marked xfail (not strict: once fixed it shows as XPASS, and the entry goes) except in
# strict mode, where it fails.  Each text says what LMDB does and what ours does.
KNOWN_BUGS = {
    # "name": "what LMDB does; what ours does (repro)",
    # (empty: "dup-equal-replace" -- MDB_CURRENT / put onto an equal-comparing duplicate
    # kept the old bytes, which broke slapadd -- was fixed in 9449ed7)
}


def xfail_known(bug):
    """pytest.xfail marker for an open bug of ours (none in strict mode)."""
    import pytest

    return pytest.mark.xfail(
        condition=not strict(), reason="known bug of ours: " + KNOWN_BUGS[bug], strict=False
    )


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(cmd, **kw)


@functools.cache
def mdbcheck_path():
    """Build our structural checker (tests/c/unit/tools/mdbcheck.c) from the checker's
    sources alone (check.c calls no engine function), so that it does not depend on
    `make lib`.  Returns the binary's path."""
    os.makedirs(OUT, exist_ok=True)
    exe = os.path.join(OUT, "mdbcheck")
    s = os.path.join(ROOT, "src", "mdbcore")
    srcs = [
        os.path.join(ROOT, "tests", "c", "unit", "tools", "mdbcheck.c"),
        os.path.join(s, "check.c"),
        os.path.join(s, "walk.c"),
        os.path.join(s, "cmp.c"),
        os.path.join(s, "os_posix.c"),
    ]
    newest = max(os.path.getmtime(p) for p in srcs + [os.path.join(s, "mdbcore.h")])
    if not os.path.exists(exe) or os.path.getmtime(exe) < newest:
        r = run(
            [
                os.environ.get("CC", "cc"),
                "-std=gnu11",
                "-O1",
                "-g",
                "-pthread",
                "-D_GNU_SOURCE",
                "-I" + s,
                "-o",
                exe + ".tmp",
            ]
            + srcs
        )
        if r.returncode != 0:
            raise RuntimeError("building mdbcheck failed:\n" + r.stderr)
        os.replace(exe + ".tmp", exe)
    return exe


def check_env_files(path, mdb_stat_extra=()):
    """Run real LMDB's `mdb_stat -efa` (Debian's static 0.9.24 build) and our structural
    checker on an environment directory.  Returns a list of problems (empty: both clean)."""
    problems = []
    mdb_stat = shutil.which("mdb_stat")
    if not mdb_stat:
        problems.append("mdb_stat not found (apt-get install lmdb-utils)")
    else:
        r = run([mdb_stat, "-efa", *mdb_stat_extra, path], timeout=120)
        if r.returncode != 0:
            problems.append(
                f"mdb_stat -efa {path}: exit {r.returncode}: "
                f"{(r.stderr or r.stdout).strip()[-400:]}"
            )
    r = run([mdbcheck_path(), "-q", path], timeout=300)
    if r.returncode != 0:
        problems.append(f"mdbcheck {path}: exit {r.returncode}: {r.stdout.strip()[-600:]}")
    return problems
