"""Concurrency across processes and implementations.

One environment; one writer process; three reader processes on the library under test and
one reader process on real LMDB (the `lmdb` wheel), all running at the same time.

The writer moves amounts between 256 accounts (so their sum is constant), churns filler
keys of 0..9,000 bytes (page splits, merges, overflow pages, free-list reuse), bumps a
generation counter, and sets "done" in its last commit.  Every reader checks, in every
read transaction, that all 256 accounts are there and sum to the constant, and that the
generation never goes backwards; it keeps reading until it has seen "done".

The writer pauses at generations 100 and 200 until every reader has read them, so each
reader provably sees commits in the middle of the run, whatever the scheduler does.

Both directions are run: the library under test writes (real LMDB must see its commits),
and the wheel writes (the library under test must see real LMDB's commits).

Bounded: 300 commits, and every process has a deadline (120 s for a reader).
"""

import os
import subprocess

import pytest

from support.procs import finish_worker, start_worker

COMMITS = 300
READERS = [("lib", 1), ("lib", 2), ("lib", 3), ("wheel", 4)]


@pytest.mark.parametrize("writer", ["lib", "wheel"])
def test_readers_see_consistent_snapshots(writer, tmp_path, mdb_test_lib, run_worker):
    _, lib = mdb_test_lib
    env, ctrl = tmp_path / "env", tmp_path / "ctrl"
    ctrl.mkdir()
    run_worker(writer, "conc-init", env)

    procs = [
        (impl, start_worker(lib, impl, "conc-reader", env, ctrl, rid)) for impl, rid in READERS
    ]
    wproc = start_worker(lib, writer, "conc-writer", env, ctrl, len(READERS), COMMITS, 99)
    results = []
    try:
        wso, wse = wproc.communicate(timeout=150)
        wres = finish_worker(wproc, writer, "conc-writer", wso, wse)
        assert wres.get("commits") == COMMITS, wres
        for impl, p in procs:
            so, se = p.communicate(timeout=150)
            results.append(finish_worker(p, impl, "conc-reader", so, se))
    except subprocess.TimeoutExpired:
        pytest.fail("a concurrency worker did not finish in time")
    finally:
        for _, p in procs + [(writer, wproc)]:
            if p.poll() is None:
                p.kill()
                p.wait()

    for r in results:
        who = f"{r['impl']} reader (writer: {writer})"
        assert r["violations"] == [], f"{who}: {r['violations']}"
        assert r["done"], f"{who} never saw the final commit"
        assert r["last_gen"] == COMMITS, f"{who} ended at generation {r['last_gen']}"
        # Each reader became ready before the first commit, read until the last one, and
        # the writer waited for it at generations 100 and 200: it saw commits in between,
        # so the other engine's commits are visible to it.
        assert r["distinct_gens"] >= 4, f"{who} saw only {r['distinct_gens']} generations"
    cross = [r for r in results if r["impl"] != writer]
    assert cross, "no reader of the other implementation ran"
    assert os.path.exists(env / "lock.mdb")
