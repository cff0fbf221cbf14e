"""Simulated power loss at every point of a workload's write/sync log.

Builds on tests/c/unit/test_check_engine.c (which does one commit, every prefix, as a C
unit test): here hypothesis chooses whole workloads -- several txns over several DBs, big
values on overflow pages, aborted txns, explicit env syncs -- in each durability mode, and
every log prefix is crashed under four crash models (fault seam, mdbcore.h):
    drop    writes since the last sync are lost
    keep    they all reached the disk (also: a file system that keeps write order, since
            the image at log prefix k then holds exactly the first k writes)
    subset  each of them reached the disk or not (reordering)
    torn    each 4 KiB piece of each of them reached the disk or not
What must hold is what docs/durability.md promises for the mode:
    sync        always: opens, checks clean, equals a committed state not older than the
                newest whose commit had returned
    nometasync  always consistent; may lose the newest returned commit (not two)
    nosync      drop/keep: consistent, not older than the last explicit env sync (keep: not
                older than the last returned commit); subset/torn: no promise
    mapasync    (WRITEMAP|MAPASYNC; pages are written through the map, which the seam
                cannot log, so images are built from the file's bytes after each commit)
                keep: exactly the last commit; drop: exactly the last explicit sync;
                subset of the pages changed since that sync: no promise
The mutation check (test_mutation_meta_before_data_is_caught) turns the data fdatasync
into a non-barrier (fault action "skip") and asserts that these tests then fail.
"""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import corelib as C
from . import harness as H
from . import workload as W


@pytest.fixture(scope="module")
def lib():
    return C.load()


def op_strategy(names):
    db = st.sampled_from(names)
    put = st.tuples(st.just("put"), db, st.integers(0, W.NKEYS - 1), st.sampled_from(W.SIZES))
    dele = st.tuples(st.just("del"), db, st.integers(0, W.NKEYS - 1))
    return st.one_of(put, put, dele)


def steps_strategy(names, max_txns):
    txn = st.tuples(
        st.just("txn"),
        st.lists(op_strategy(names), min_size=1, max_size=25),
        st.sampled_from([True, True, True, True, False]),
    )
    sync = st.just(("sync",))
    return st.lists(st.one_of(txn, txn, txn, sync), min_size=1, max_size=max_txns)


def allowed(durability, model, judge, k):
    """(must_be_consistent, oldest allowed state index) for a crash at log prefix k."""
    r = judge.returned_by(k)
    s = judge.synced_by(k)
    if durability == "sync":
        return True, r
    if durability == "nometasync":
        # the meta of the last commit that wrote anything may be lost (it becomes durable
        # with the next commit's data sync; an empty commit syncs nothing)
        wrote = [i for i in range(1, r + 1) if judge.rec.commit_end[i] > judge.rec.commit_start[i]]
        return True, max(wrote[-1] - 1 if wrote else r, s)
    if durability == "nosync":
        if model == C.DROP_UNSYNCED:
            return True, s
        if model == C.KEEP_ALL:
            return True, r
        return False, 0
    if durability == "mapasync":
        if model == C.KEEP_ALL:
            return True, r
        return False, 0
    raise AssertionError(durability)


def crash_map_points(lib, rec, idir, seeds):
    """WRITEMAP|MAPASYNC: the seam cannot see writes through the map, so crash images come
    from the file's bytes after each commit (Judge.map_images).  Promise: keep -> exactly
    the state of that commit; drop -> exactly the state of the last explicit sync;
    subset -> nothing (counted only)."""
    judge = W.Judge(lib, rec, idir)
    failures = []
    stats = {"points": 0, "consistent": 0, "not_consistent": 0}
    for i, model, _seed, data in judge.map_images(seeds):
        v = judge.image_bytes(data)
        stats["points"] += 1
        ok = W.consistent(v)
        stats["consistent" if ok else "not_consistent"] += 1
        if model == C.SUBSET:
            continue
        if model == C.KEEP_ALL:
            want = i
        else:
            want = max((st for end, st in rec.syncs if st < i), default=0)
        if not ok or want not in v["states"]:
            failures.append(
                f"WRITEMAP image after commit {i}, crash model "
                f"{C.MODE_NAMES[model]}: want state {want}: {W.describe(v)}"
            )
    stats["distinct_images"] = judge.distinct
    return failures, stats


def crash_all_points(lib, rec, idir, durability, seeds):
    """Crash every point; returns (failures, stats)."""
    if durability == "mapasync":
        return crash_map_points(lib, rec, idir, seeds)
    judge = W.Judge(lib, rec, idir)
    failures = []
    stats = {"points": 0, "consistent": 0, "not_consistent": 0}
    for k, model, seed in judge.crash_points(seeds):
        v = judge.image(k, model, seed)
        stats["points"] += 1
        must, oldest = allowed(durability, model, judge, k)
        ok = W.consistent(v)
        stats["consistent" if ok else "not_consistent"] += 1
        if not must:
            continue
        newest_possible = len(rec.states) - 1
        for i in range(1, len(rec.states)):
            # commit i had not started by then (nor returned without writing anything):
            # its state cannot be on disk
            if rec.commit_start[i] >= k and rec.commit_end[i] > k:
                newest_possible = i - 1
                break
        if not ok:
            failures.append(
                f"log prefix {k}/{rec.nlog}, crash model "
                f"{C.MODE_NAMES[model]}, seed {seed}: not a consistent "
                f"committed state: {W.describe(v)}"
            )
        elif not any(oldest <= i <= newest_possible for i in v["states"]):
            failures.append(
                f"log prefix {k}/{rec.nlog}, crash model "
                f"{C.MODE_NAMES[model]}, seed {seed}: content equals committed "
                f"state(s) {sorted(v['states'])}, allowed {oldest}.."
                f"{newest_possible} (commits returned by then: {judge.returned_by(k)})"
            )
    stats["distinct_images"] = judge.distinct
    return failures, stats


def run_and_crash(
    lib, tmp_path, steps, durability, names, seeds, skip_sync=False, dirty_limit=None
):
    wdir = os.path.join(tmp_path, "w")
    idir = os.path.join(tmp_path, "i")
    for d in (wdir, idir):
        if os.path.isdir(d):
            for f in os.listdir(d):
                os.unlink(os.path.join(d, f))
    try:
        rec = W.run_workload(
            lib,
            wdir,
            steps,
            W.DURABILITY_FLAGS[durability],
            names,
            skip_sync=skip_sync,
            dirty_limit=dirty_limit,
        )
        failures, stats = crash_all_points(lib, rec, idir, durability, seeds)
        stats["spilled"] = getattr(rec, "spilled", 0)
        return failures, stats
    finally:
        lib.c.mdbcore_fault_reset()


def names_for(lib, tmp_path):
    return list(W.DBS) if W.dupsort_ok(lib, str(tmp_path)) else ["plain", "intkey"]


@pytest.mark.parametrize("durability", ["sync", "nometasync", "nosync", "mapasync"])
def test_power_loss_at_every_log_point(lib, tmp_path_factory, durability):
    names = names_for(lib, tmp_path_factory.mktemp("probe"))
    base = tmp_path_factory.mktemp("crash-" + durability)
    seeds = H.size("crash_seeds")

    @settings(max_examples=H.size("crash_workloads"))
    @given(steps=steps_strategy(names, 8 if H.LONG else 5))
    def prop(steps):
        failures, stats = run_and_crash(lib, str(base), steps, durability, names, seeds)
        H.count("crash workloads")
        H.count("crash points (images built)", stats["points"])
        H.count("crash images (distinct, opened)", stats["distinct_images"])
        H.count(
            f"crash points [{durability}] not consistent (allowed: "
            f"{'no' if durability == 'sync' else 'by mode'})",
            stats["not_consistent"],
        )
        assert not failures, (
            f"{len(failures)} bad crash points in mode {durability}; "
            f"first:\n" + "\n".join(failures[:3])
        )

    prop()


def test_fixed_workloads_every_point(lib, tmp_path):
    """Deterministic workloads (no hypothesis): sync mode, each crash point and model."""
    names = names_for(lib, tmp_path)
    for seed in range(2 if not H.LONG else 20):
        failures, stats = run_and_crash(
            lib, str(tmp_path), W.random_steps(seed), "sync", names, H.size("crash_seeds")
        )
        H.count("crash workloads")
        H.count("crash points (images built)", stats["points"])
        H.count("crash images (distinct, opened)", stats["distinct_images"])
        assert not failures, "\n".join(failures[:3])
        assert stats["points"] > 50


@pytest.mark.parametrize("durability", ["sync", "nometasync"])
def test_spilling_txn_every_point(lib, tmp_path, durability):
    """A txn bigger than the dirty-page limit (lowered to 256 pages) writes pages out
    before its commit (spill.c), and takes some back when it changes them again.  Those
    writes land in pages no meta reaches, so a power loss at any point of the log -- in
    the middle of the spills too -- must leave the previous committed state, as for any
    other txn (docs/durability.md)."""
    big = [("put", "plain", 100 + i, (1500, 2100, 4000)[i % 3]) for i in range(700)]
    again = [("put", "plain", 100 + i, 700) for i in range(0, 700, 3)]
    again += [("del", "plain", 100 + i) for i in range(1, 700, 5)]
    steps = [("txn", big, True), ("txn", big[:400], False), ("txn", again, True)]
    failures, stats = run_and_crash(
        lib, str(tmp_path), steps, durability, ["plain"], H.size("crash_seeds"), dirty_limit=256
    )
    H.count("crash workloads")
    H.count("crash points (images built)", stats["points"])
    H.count("spilled pages in crash workloads", stats["spilled"])
    assert stats["spilled"] > 0, "the workload never spilled: it tests nothing new"
    assert not failures, "\n".join(failures[:3])


def test_nosync_reordering_can_corrupt(lib, tmp_path):
    """docs/durability.md says NOSYNC promises nothing when the disk reorders writes: show
    that this is real (some subset/torn image is not a consistent committed state), so the
    promise is not stated weaker than it needs to be by accident of the workload."""
    names = names_for(lib, tmp_path)
    bad = 0
    for seed in range(6):
        try:
            wdir = os.path.join(str(tmp_path), f"w{seed}")
            rec = W.run_workload(
                lib, wdir, W.random_steps(100 + seed), W.DURABILITY_FLAGS["nosync"], names
            )
            judge = W.Judge(lib, rec, os.path.join(str(tmp_path), f"i{seed}"))
            for k, model, s in judge.crash_points(2):
                if model in (C.SUBSET, C.TORN):
                    H.count("crash points (images built)")
                    if not W.consistent(judge.image(k, model, s)):
                        bad += 1
        finally:
            lib.c.mdbcore_fault_reset()
        if bad:
            break
    assert bad > 0, "no reordered NOSYNC image was inconsistent: the workload is too weak"
