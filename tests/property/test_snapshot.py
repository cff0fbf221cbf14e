"""Snapshot isolation (issue 6): readers -- threads and processes -- begin at points chosen
by hypothesis while a writer commits; each must see exactly the model state as of its begin
(txnid = the last commit, content = the model after that commit) at every re-read, however
many commits happen meanwhile, and no reader may block the writer (every commit runs under
a watchdog while readers hold their snapshots).

The writer rewrites and deletes many keys with values from a few bytes to several overflow
pages, so pages freed after a reader's snapshot are plentiful: reusing any of them early
shows up as changed content, which is what the mutation check relies on:

test_mutation_reuse_under_reader_*: the engine's mutation switch MDBCORE_MUT_IGNORE_READERS
(readers_oldest ignores reader slots, so pages freed by txns newer than a live reader's
snapshot are reused) must make these same properties fail -- for a reader thread and for a
reader process.  Those tests pass when the break IS detected.
"""

import os
import queue
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crash import harness as H

from .engines import Eng, digest_model

HERE = os.path.dirname(os.path.abspath(__file__))
NKEYS = 80
SIZES = [3, 40, 300, 1500, 3000, 6000, 20000]


def txn_strategy():
    op = st.tuples(st.integers(0, NKEYS - 1), st.one_of(st.none(), st.sampled_from(SIZES)))
    return st.lists(op, min_size=1, max_size=30)


def make_ops(txn_no, spec):
    out = []
    for k, size in spec:
        key = b"k%04d" % k
        out.append(
            (key, None if size is None else (b"%d/%d|" % (txn_no, k) * (size // 6 + 1))[:size])
        )
    return out


def apply_ops(model, ops):
    """The model after a commit of ops: None deletes the key."""
    for k, v in ops:
        if v is None:
            model.pop(k, None)
        else:
            model[k] = v
    return model


class ThreadReader:
    """A reader in its own thread, driven by commands (begin/read/end)."""

    def __init__(self, eng):
        self.eng, self.cmd, self.ans = eng, queue.Queue(), queue.Queue()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        r = None
        while True:
            c = self.cmd.get()
            try:
                if c == "begin":
                    r = self.eng.begin()
                    self.ans.put((r.txnid, r.read()))
                elif c == "read":
                    self.ans.put(r.read())
                elif c == "end":
                    r.end()
                    r = None
                    self.ans.put("ok")
                elif c == "quit":
                    if r:
                        r.end()
                    return
            except Exception as e:  # the answer tells the test
                self.ans.put(f"ERROR {type(e).__name__}: {e}")

    def ask(self, c):
        self.cmd.put(c)
        return self.ans.get(timeout=60)

    def quit(self):
        self.cmd.put("quit")
        self.t.join(10)


class ProcReader:
    def __init__(self, kind, path):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "snapreader.py"), kind, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert self._line() == "ready", self.p.stderr.read().decode()[-2000:]

    def _line(self):
        return self.p.stdout.readline().decode().strip()

    def ask(self, c):
        self.p.stdin.write(c.encode() + b"\n")
        self.p.stdin.flush()
        ln = self._line()
        if c == "begin" and not ln.startswith("ERROR"):
            t, d = ln.split()
            return int(t), d
        return ln

    def quit(self):
        try:
            self.p.stdin.write(b"quit\n")
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.wait(10)


def commit_watched(eng, ops, timeout=30):
    """Commit in a helper thread: a writer blocked by readers is a failure, not a hang."""
    out = {}

    def run():
        try:
            out["tid"] = eng.write(ops)
        except Exception as e:
            out["err"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "the writer's commit blocked while readers held snapshots"
    if "err" in out:
        raise out["err"]
    return out["tid"]


def run_schedule(eng, readers, schedule):
    """schedule: [("commit", spec) | ("begin", r) | ("read", r) | ("end", r)].
    Returns the list of violations (empty = snapshot isolation held)."""
    model = {}
    states = {}
    last = eng.last_txnid()
    states[last] = digest_model(model)
    active = {}
    bad = []
    commits = 0
    for ev in schedule:
        kind, arg = ev
        if kind == "commit":
            commits += 1
            ops = make_ops(commits, arg)
            trial = apply_ops(dict(model), ops)
            tid = commit_watched(eng, ops)
            model = trial
            last = eng.last_txnid()
            states[last] = digest_model(model)
            H.count("snapshot: writer commits")
            continue
        rd = readers[arg % len(readers)]
        if kind == "begin" and rd not in active:
            ans = rd.ask("begin")
            if isinstance(ans, str):
                bad.append(f"reader {arg} begin: {ans}")
                continue
            tid, dig = ans
            active[rd] = tid
            H.count("snapshot: reader begins")
            if tid != last:
                bad.append(f"reader {arg} began at txn {tid}, last commit is {last}")
            elif dig != states[tid]:
                bad.append(f"reader {arg} at begin (txn {tid}) sees {dig}, model {states[tid]}")
        elif kind == "read" and rd in active:
            dig = rd.ask("read")
            H.count("snapshot: reader re-reads")
            tid = active[rd]
            if dig != states.get(tid):
                bad.append(
                    f"reader {arg} (txn {tid}, {last - tid} commits later) sees "
                    f"{dig}, model {states.get(tid)}"
                )
        elif kind == "end" and rd in active:
            rd.ask("end")
            del active[rd]
    for rd in list(active):
        dig = rd.ask("read")
        if dig != states.get(active[rd]):
            bad.append(
                f"reader (txn {active[rd]}) at the end sees {dig}, model {states.get(active[rd])}"
            )
        rd.ask("end")
    return bad


def schedule_strategy(nreaders, max_len):
    ev = st.one_of(
        st.tuples(st.just("commit"), txn_strategy()),
        st.tuples(st.just("commit"), txn_strategy()),
        st.tuples(st.just("begin"), st.integers(0, nreaders - 1)),
        st.tuples(st.just("read"), st.integers(0, nreaders - 1)),
        st.tuples(st.just("read"), st.integers(0, nreaders - 1)),
        st.tuples(st.just("end"), st.integers(0, nreaders - 1)),
    )
    return st.lists(ev, min_size=5, max_size=max_len)


def with_env(kind, tmp, nthreads, nprocs, schedule, proc_kind=None):
    for f in ("data.mdb", "lock.mdb"):
        try:
            os.unlink(os.path.join(tmp, f))
        except FileNotFoundError:
            pass
    eng = Eng(kind, tmp)
    readers = [ThreadReader(eng) for _ in range(nthreads)]
    readers += [ProcReader(proc_kind or kind, tmp) for _ in range(nprocs)]
    try:
        return run_schedule(eng, readers, schedule)
    finally:
        for r in readers:
            r.quit()
        eng.close()


def have_pkg():
    try:
        import mdb  # noqa: F401

        return True
    except ImportError:
        return False


KINDS = (["pkg"] if have_pkg() else []) + ["ffi"]


def check_schedules(kind, d, size, strategy, threads, procs, what):
    """Every schedule hypothesis draws from strategy, run by with_env with `threads` reader
    threads and `procs` reader processes, keeps every reader on its snapshot."""

    @settings(max_examples=H.size(size))
    @given(schedule=strategy)
    def prop(schedule):
        bad = with_env(kind, d, threads, procs, schedule)
        H.count(f"snapshot: schedules ({what})")
        assert not bad, "\n".join(bad[:5])

    prop()


@pytest.mark.parametrize("kind", KINDS)
def test_reader_threads_see_their_snapshot(kind, tmp_path_factory):
    d = str(tmp_path_factory.mktemp("snap-" + kind))
    strategy = schedule_strategy(4, 60 if H.LONG else 40)
    check_schedules(kind, d, "snapshot", strategy, 4, 0, "threads")


@pytest.mark.parametrize("kind", KINDS)
def test_reader_processes_see_their_snapshot(kind, tmp_path_factory):
    d = str(tmp_path_factory.mktemp("snapp-" + kind))
    check_schedules(kind, d, "snapshot_proc", schedule_strategy(3, 40), 1, 2, "processes")


@pytest.mark.parametrize("kind", KINDS)
def test_free_running_readers(kind, tmp_path):
    """Reader threads begin/read/re-read/end as fast as they can while the writer commits;
    every read must equal the model state of the reader's txnid (kept by the writer)."""
    eng = Eng(kind, str(tmp_path))
    states = {eng.last_txnid(): digest_model({})}
    lock = threading.Lock()
    stop = threading.Event()
    bad = []
    nreads = [0]

    def reader():
        while not stop.is_set():
            r = eng.begin()
            try:
                for _ in range(3):
                    dig = r.read()
                    with lock:
                        want = states.get(r.txnid)
                    nreads[0] += 1
                    if dig != want:
                        bad.append(f"txn {r.txnid}: {dig} != {want}")
            finally:
                r.end()

    import random

    rng = random.Random(7)
    model = {}
    ts = [threading.Thread(target=reader, daemon=True) for _ in range(3)]
    for t in ts:
        t.start()
    try:
        for i in range(1, (400 if H.LONG else 60) + 1):
            spec = [(rng.randrange(NKEYS), rng.choice(SIZES + [None])) for _ in range(20)]
            ops = make_ops(i, spec)
            apply_ops(model, ops)
            # publish the state before the commit: a reader may begin on it at once
            with lock:
                states[eng.last_txnid() + 1] = digest_model(model)
            commit_watched(eng, ops)
            H.count("snapshot: writer commits")
    finally:
        stop.set()
        for t in ts:
            t.join(30)
        eng.close()
    H.count("snapshot: free-running reads", nreads[0])
    assert not bad, "\n".join(bad[:5])
    assert nreads[0] > 0


# ---------------------------------------------------------------- mutation checks
def _mutation_lib():
    from crash import corelib as C

    lib = C.load()
    if not lib.have_mutation():
        pytest.fail(
            "the engine has no mdbcore_set_mutation hook (mutation.c): the "
            "page-reuse mutation check is impossible"
        )
    return lib, C


def long_reader_schedule(nreaders):
    """A reader begins, the writer rewrites most keys many times, the reader re-reads."""
    sched = [("commit", [(k, 1500) for k in range(NKEYS)])]
    for r in range(nreaders):
        sched.append(("begin", r))
    for i in range(12):
        sched.append(
            (
                "commit",
                [(k, SIZES[(i + k) % len(SIZES)]) for k in range(0, NKEYS, 2)]
                + [(k, None) for k in range(1, NKEYS, 7)],
            )
        )
        for r in range(nreaders):
            sched.append(("read", r))
    return sched


@pytest.mark.parametrize("readers", ["thread", "process"])
def test_mutation_reuse_under_reader_is_caught(tmp_path, readers):
    lib, C = _mutation_lib()
    nt, npr = (1, 0) if readers == "thread" else (0, 1)
    reader_kind = "pkg" if readers == "process" and have_pkg() else "ffi"

    def run():
        return with_env("ffi", str(tmp_path), nt, npr, long_reader_schedule(1), reader_kind)

    assert not run()  # sanity: the same schedule is clean without the mutation
    old = lib.set_mutation(C.MUT_IGNORE_READERS)
    try:
        bad = run()
    finally:
        lib.set_mutation(old)
    H.count(f"mutation: snapshot violations found (reuse under reader, {readers})", len(bad))
    assert bad, "pages reused under a live reader, but no reader noticed"
    print(f"reuse-under-reader mutation ({readers}): {len(bad)} violations, first: {bad[0]}")


def test_mutation_reuse_under_reader_hypothesis_finds_it(tmp_path_factory):
    lib, C = _mutation_lib()
    d = str(tmp_path_factory.mktemp("mut"))

    @settings(max_examples=300)
    @given(schedule=schedule_strategy(2, 60))
    def prop_mutated(schedule):
        bad = with_env("ffi", d, 2, 0, schedule)
        assert not bad, bad[0]

    old = lib.set_mutation(C.MUT_IGNORE_READERS)
    try:
        with pytest.raises(AssertionError) as e:
            prop_mutated()
    finally:
        lib.set_mutation(old)
    H.count("mutation: hypothesis counterexamples (reuse under reader)")
    print("hypothesis found (as it must):", str(e.value).splitlines()[0][:300])
