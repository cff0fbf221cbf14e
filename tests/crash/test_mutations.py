"""Mutation checks of the crash tests: with the commit order deliberately broken,
the crash-image property MUST fail.  These tests pass when the break IS detected.

Break 1, "meta before data": the fault seam's "skip" action turns every data fdatasync into
a call that returns success but is no durability barrier (mdbcore_fault_arm_spec
"fdatasync:1+:skip"), so the meta page -- written through the O_DSYNC descriptor -- can be
durable while the data pages it points to are not.  That is exactly the bug of an engine
that writes the meta before syncing the data.  The same crash-image checks as in
test_crash_images.py, in sync mode, must then report bad crash points, both on fixed
workloads and when hypothesis searches for one.

Break 2, "reuse a page freed by a txn newer than the oldest reader" (the engine's
mdbcore_set_mutation(MDBCORE_MUT_IGNORE_READERS) in the writer process): it cannot hurt
power-loss safety in sync mode (the pages of the two live metas are never reused), but the
kill test's surviving readers must notice that their snapshot changed under them
(test_mutation_reuse_under_reader_kill_rounds); the snapshot tests catch it too
(tests/property/test_snapshot.py::test_mutation_*).
"""

import random

import pytest
from hypothesis import given, settings

from . import corelib as C
from . import harness as H
from . import workload as W
from .test_crash_images import names_for, run_and_crash, steps_strategy


@pytest.fixture(scope="module")
def lib():
    lib = C.load()
    if not lib.have_skip_action():
        pytest.fail("the fault seam has no 'skip' action (os_fault.c): mutation check impossible")
    return lib


def test_mutation_meta_before_data_fixed_workloads(lib, tmp_path):
    names = names_for(lib, tmp_path)
    found = 0
    for seed in range(4):
        failures, stats = run_and_crash(
            lib, str(tmp_path), W.random_steps(seed), "sync", names, 1, skip_sync=True
        )
        H.count("mutation: crash points tried (meta-before-data)", stats["points"])
        found += len(failures)
        # sanity: without the mutation the very same workload is clean
        clean, _ = run_and_crash(lib, str(tmp_path), W.random_steps(seed), "sync", names, 1)
        assert not clean, "\n".join(clean[:2])
    H.count("mutation: bad crash points found (meta-before-data)", found)
    assert found > 0, "commit order broken (meta before data) but no crash image noticed"
    print(f"meta-before-data mutation: {found} bad crash points found")


def test_mutation_meta_before_data_hypothesis_finds_it(lib, tmp_path_factory):
    names = names_for(lib, tmp_path_factory.mktemp("probe"))
    base = tmp_path_factory.mktemp("mut")

    @settings(max_examples=H.size("mutation_workloads") * 10)
    @given(steps=steps_strategy(names, 5))
    def prop_mutated(steps):
        failures, stats = run_and_crash(lib, str(base), steps, "sync", names, 1, skip_sync=True)
        H.count("mutation: crash points tried (meta-before-data)", stats["points"])
        assert not failures, failures[0]

    with pytest.raises(AssertionError) as e:
        prop_mutated()
    H.count("mutation: hypothesis counterexamples (meta-before-data)")
    print("hypothesis found (as it must):", str(e.value).splitlines()[0][:300])


def test_mapasync_power_loss_can_corrupt(lib, tmp_path):
    """docs/durability.md: WRITEMAP|MAPASYNC promises nothing across a power loss unless the
    last commit was followed by an explicit sync: a meta page can reach the disk before the
    data pages it points to.  Show it."""
    names = names_for(lib, tmp_path)
    bad = 0
    for seed in range(4):
        try:
            steps = [st for st in W.random_steps(200 + seed) if st[0] != "sync"]
            rec = W.run_workload(
                lib, str(tmp_path / f"w{seed}"), steps, W.DURABILITY_FLAGS["mapasync"], names
            )
            judge = W.Judge(lib, rec, str(tmp_path / f"i{seed}"))
            for _i, model, _s, data in judge.map_images(3):
                if model == C.SUBSET:
                    H.count("crash points (images built)")
                    if not W.consistent(judge.image_bytes(data)):
                        bad += 1
        finally:
            lib.c.mdbcore_fault_reset()
        if bad:
            break
    assert bad > 0, "no MAPASYNC power-loss image was inconsistent: doc or seam is wrong"


def test_mutation_reuse_under_reader_kill_rounds(tmp_path):
    """Kill rounds (test_kills.py) with the writer reusing pages under live readers: some
    round must fail (a surviving or starting reader sees content that is not its txn's)."""
    from . import killprocs as K
    from .test_kills import one_round

    lib = C.load()
    if not lib.have_mutation():
        pytest.fail("the engine has no mdbcore_set_mutation hook (mutation.c)")
    d = str(tmp_path)
    with K.open_env(lib, d, 0) as env:
        t = env.begin(write=True)
        for db, f in K.DBS.items():
            t.open_db(db.encode(), f | K.F.CREATE)
        t.commit()
    rng = random.Random(5)
    caught = None
    for r in range(10):
        H.count("mutation: kill rounds (reuse under reader)")
        try:
            one_round(d, 0, rng, r, mutation=C.MUT_IGNORE_READERS)
        except AssertionError as e:
            caught = str(e).splitlines()[0]
            break
    assert caught, "pages reused under live readers for 10 kill rounds, nobody noticed"
    H.count("mutation: kill rounds that caught it (reuse under reader)")
    print("kill round caught (as it must):", caught[:300])
