"""compatlib.py -- shared helpers of the compatibility harnesses (tests/compat, tests/slapd,
tests/c/diff): where the two libraries are, what version they report, and the two file
checkers every harness runs on the files it wrote.

Nothing here imports an LMDB binding: the version query runs in a child process (ctypes),
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

_VERSION = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
ma, mi, pa = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
lib.mdb_version.restype = ctypes.c_char_p
s = lib.mdb_version(ctypes.byref(ma), ctypes.byref(mi), ctypes.byref(pa))
print(json.dumps({"version": [ma.value, mi.value, pa.value], "version_string": s.decode()}))
"""


@functools.cache
def lib_version(lib_path):
    """What mdb_version() of the library at lib_path says: {'version': [0, 9, 29],
    'version_string': ...} (asked in a child process, through ctypes)."""
    r = subprocess.run(
        [sys.executable, "-c", _VERSION, lib_path], capture_output=True, text=True, timeout=60
    )
    if r.returncode != 0:
        raise RuntimeError(f"mdb_version() of {lib_path} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def strict():
    """MDB_COMPAT_STRICT=1 (`make test-compat`): no known bug of ours is excused (no
    xfail, no `ours` exclusion of py-lmdb's suite)."""
    return os.environ.get("MDB_COMPAT_STRICT", "") not in ("", "0")


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
    "cursor-after-multiple-put": (
        "after an mdb_cursor_put(MDB_MULTIPLE) that merges into a key's existing "
        "duplicates, LMDB 0.9.36's next NEXT / NEXT_DUP / NEXT_MULTIPLE starts from another "
        "duplicate than ours (2 of 200 seeds of the full workload; rundiff.py --known-after "
        "c-put-multiple)"
    ),
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
