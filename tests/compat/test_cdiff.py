"""The C differential test (tests/c/diff/rundiff.py) under pytest.

* Self-test on Debian's liblmdb (must pass): the full workload (all DB kinds, nested
  txns) is deterministic and every file it writes passes `mdb_stat -efa` and mdbcheck.
* The harness can fail: with another seed on one side, every seed is reported.
* Ours against Debian's, 50 seeds each: the subset without DUPSORT and nested txns; with
  nested txns; with DUPSORT (all kinds but custdup); everything but custdup; everything,
  custdup (a DUPSORT DB with a dupsort function of ours) included.  A part needing
  DUPSORT or nested transactions is skipped, naming the missing feature, while our
  library reports it lacks it (MDB_INCOMPATIBLE), and runs by itself once it does not.
  A test hitting an open bug listed in compatlib.KNOWN_BUGS is marked xfail there.
* Against upstream 0.9.36 (built from py-lmdb 3.0's sdist): the whole workload; 200
  random cursor walks of 300 calls (MDB_DIFF_WALKS); cursors around a duplicate another
  cursor deletes (--neighbours, 40 seeds); the workload under each environment flag that
  changes behaviour.  The value-lifetime oracle of the workload
  must report 0 changed values.
"""

import os
import subprocess
import sys

import pytest

import compatlib

RUNDIFF = os.path.join(compatlib.ROOT, "tests", "c", "diff", "rundiff.py")
SEEDS = os.environ.get("MDB_DIFF_SEEDS", "50")


def rundiff(*args, timeout=600):
    seeds = [] if "--seeds" in args else ["--seeds", SEEDS]
    r = subprocess.run(
        [sys.executable, RUNDIFF, "-q", *seeds, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(r.stdout[-20000:])
    print(r.stderr[-4000:], file=sys.stderr)
    return r


def need_ours():
    why = compatlib.ours_available()
    if why:
        pytest.skip(why)


def test_selftest_system_full_workload():
    r = rundiff("--test", "system", "--ref", "system")
    assert r.returncode == 0, r.stdout[-3000:]
    assert f"{SEEDS}/{SEEDS} seeds identical" in r.stdout


def test_harness_detects_a_difference():
    """Same library, other seed on the test side: the runner must report every seed."""
    r = subprocess.run(
        [
            sys.executable,
            RUNDIFF,
            "-q",
            "--seeds",
            "3",
            "--perturb",
            "--test",
            "system",
            "--ref",
            "system",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1, r.stdout
    assert r.stdout.count("MISMATCH") == 3 and "0/3 seeds identical" in r.stdout


# Workload subsets, each a run of our library against Debian's liblmdb: what they leave
# out narrows a mismatch down to a feature.
WORKLOADS = {
    "subset": ["--no-dupsort", "--no-nested"],
    "nested": ["--no-dupsort"],
    "dupsort": ["--no-nested", "--no-custdup"],
    # everything except the DUPSORT DB with a dupsort function of ours (next case)
    "full": ["--no-custdup"],
    "custom-dupsort-function": [],
}


@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_ours_matches_debian(workload):
    need_ours()
    r = rundiff("--test", "ours", "--ref", "system", *WORKLOADS[workload])
    assert r.returncode == 0, r.stdout[-5000:]


def lmdb_0936_source() -> str:
    """Upstream LMDB 0.9.36's source folder, fetched from py-lmdb 3.0's sdist at test time."""
    script = os.path.join(compatlib.ROOT, "tests", "c", "ref", "lmdb0936.sh")
    r = subprocess.run(
        ["bash", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHON": sys.executable},
    )
    if r.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("LMDB 0.9.36 reference not available in CI: " + r.stderr)
        pytest.skip("LMDB 0.9.36 reference not available: " + r.stderr.strip())
    return r.stdout.strip()


def ours_against_0936(*args: str) -> subprocess.CompletedProcess:
    """The C workload on our library against upstream 0.9.36 (built from source), without
    the 0.9.24 rules."""
    src = lmdb_0936_source()
    return rundiff("--test", "ours", "--ref", "src:" + src, "--no-0924", *args)


def test_ours_matches_upstream_0936():
    """The behaviour we match is LMDB 0.9.36's: the whole workload without the 0.9.24 avoid
    rules, against upstream 0.9.36 built from source (lmdbdiff.c names the one 0.9.36 bug
    it steers clear of)."""
    need_ours()
    known = [] if compatlib.strict() else ["--known-after", "c-put-multiple"]
    r = ours_against_0936(*known)
    assert r.returncode == 0, r.stdout[-5000:]
    if "known open differences" in r.stdout:
        pytest.xfail("known bug of ours: " + compatlib.KNOWN_BUGS["cursor-after-multiple-put"])


def test_neighbours_of_a_deleted_duplicate_match_upstream_0936():
    """Cursors standing before, on and after a duplicate, on the next key and on the previous
    key's last value, while another cursor deletes that duplicate (sub-pages and sub-trees,
    DUPSORT and DUPFIXED): each one's next moves, and the deleting cursor's, are 0.9.36's
    (lmdbdiff --neighbours)."""
    need_ours()
    r = ours_against_0936("--neighbours", "--seeds", "40")
    assert r.returncode == 0, r.stdout[-5000:]
    assert "40/40 seeds identical" in r.stdout


WALKS = os.environ.get("MDB_DIFF_WALKS", "200")


def test_cursor_walks_match_upstream_0936():
    """Random walks of 300 cursor calls (every op from every state, failed calls, cursor puts
    and deletes) on plain, DUPSORT and DUPFIXED databases, identical to 0.9.36 wherever
    0.9.36 finishes; every value returned is checked by the lifetime oracle."""
    need_ours()
    r = ours_against_0936(
        "--walk",
        "--seeds",
        WALKS,
        "--no-file-checks",
        "--allow-ref-crash",
    )
    assert r.returncode == 0, r.stdout[-5000:]
    assert ", 0 changed" in r.stdout


# Environment flags that change behaviour (lmdb.h values; MDB_NOTLS is the workload's
# default, so each set keeps it unless it is the one left out).
ENV_FLAGS = {
    "writemap": 0x280000,
    "writemap-mapasync": 0x380000,
    "tls": 0x0,
    "nosubdir": 0x204000,
    "nolock": 0x600000,
    "nordahead": 0xA00000,
    "nomeminit": 0x1200000,
    "fixedmap": 0x200001,
    "rdonly-reopen": 0x220000,
}


def test_env_flags_match_upstream_0936():
    """The whole workload under each environment flag, against 0.9.36 (MDB_DIFF_FLAG_SEEDS,
    3 seeds each by default)."""
    need_ours()
    known = [] if compatlib.strict() else ["--known-after", "c-put-multiple"]
    failed, xfailed = [], False
    for name, flags in ENV_FLAGS.items():
        r = ours_against_0936(
            "--seeds",
            os.environ.get("MDB_DIFF_FLAG_SEEDS", "3"),
            "--envflags",
            hex(flags),
            *known,
        )
        if r.returncode != 0:
            failed.append(name + ":\n" + r.stdout[-3000:])
        xfailed = xfailed or "known open differences" in r.stdout
    assert not failed, "\n".join(failed)
    if xfailed:
        pytest.xfail("known bug of ours: " + compatlib.KNOWN_BUGS["cursor-after-multiple-put"])


def test_0936_selftest_is_deterministic():
    """0.9.36 against itself: the workload without the 0.9.24 rules is deterministic."""
    src = lmdb_0936_source()
    r = rundiff("--test", "src:" + src, "--ref", "src:" + src, "--no-0924")
    assert r.returncode == 0, r.stdout[-5000:]
