"""Real process kills: a writer process committing txns is SIGKILLed at random
moments -- after a random number of commits plus a random delay, or exactly inside a commit
(fault seam kill rules: before/after the n-th page write, data sync or meta write) -- while
other processes hold reader slots, some of which are killed too.  The same environment
lives through many such rounds.  After each kill a verifier process must find:
  * the env opens; mdb_reader_check clears exactly the dead processes' slots (the writer's
    own read txn and the killed readers'), and a second reader_check clears none;
  * the content is exactly the model state after txn j, j = the last commit the writer
    reported as returned or the one in flight (a process kill loses no committed txn in
    any durability mode: the page cache survives);
  * the structural checker passes, before and after one more commit -- whose begin must
    get the dead writer's mutex (robust mutex recovery; a hang is a timeout here);
and a surviving reader still sees exactly the snapshot it began with.
"""

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from . import corelib as C
from . import harness as H
from . import killprocs as K
from .workload import DURABILITY_FLAGS

SCRIPT = K.__file__


def spawn(*args, stdin=False, mutation=0):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", MDB_TEST_CORELIB=C.lib_path())
    if mutation:
        env["MDB_KILL_MUTATION"] = str(mutation)
    return subprocess.Popen(
        [sys.executable, SCRIPT, *map(str, args)],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


class Lines:
    """Collects a child's stdout lines in a thread."""

    def __init__(self, p):
        self.p, self.lines, self.cv = p, [], threading.Condition()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        for raw in self.p.stdout:
            with self.cv:
                self.lines.append(raw.decode().strip())
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)
            self.cv.notify_all()

    def wait_for(self, pred, timeout=30):
        end = time.time() + timeout
        with self.cv:
            while True:
                for ln in self.lines:
                    if ln is not None and pred(ln):
                        return ln
                if None in self.lines:
                    return None
                left = end - time.time()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def committed(self):
        with self.cv:
            c = [int(ln.split()[1]) for ln in self.lines if ln and ln.startswith("committed")]
        return c[-1] if c else None


def reader_state_ok(line):
    _, j, dig = line.split()
    return dig == K.digest(K.model_after(int(j))), int(j)


def one_round(d, flags, rng, rnd_no, mutation=0):
    """One kill round; returns a description of what happened (for the failure message).
    mutation: engine mutation bits for the writer process (test_mutations.py)."""
    info = {"round": rnd_no}
    readers = []
    for _ in range(rng.randrange(1, 4)):
        p = spawn("reader", d, stdin=True)
        lines = Lines(p)
        ln = lines.wait_for(lambda s: s.startswith("reader"))
        assert ln, f"reader did not start: {p.stderr.read().decode()[-2000:]}"
        ok, j = reader_state_ok(ln)
        assert ok, f"a reader's snapshot at txn {j} differs from the model"
        readers.append((p, lines, ln))
    how = "timed" if mutation else rng.choice(["timed", "timed", "fault"])
    killspec = ""
    if how == "fault":
        # the calls a commit makes in this mode: page writes (pwritev), the data sync,
        # the meta write (pwrite); WRITEMAP writes through the map and msyncs
        if flags & K.F.WRITEMAP:
            points = [(C.MSYNC, 0), (C.MSYNC, 1)]
        elif flags & K.F.NOSYNC:
            points = [(C.WRITE, 0), (C.WRITE, 1), (C.PWRITE, 0), (C.PWRITE, 1)]
        else:
            points = [
                (C.WRITE, 0),
                (C.WRITE, 1),
                (C.FDATASYNC, 0),
                (C.FDATASYNC, 1),
                (C.PWRITE, 0),
                (C.PWRITE, 1),
                (C.SYNC, 0),
            ]
        kind, after = rng.choice(points)
        killspec = f"{kind}:{rng.randrange(1, 25)}:{after}"
    info["kill"] = killspec or how
    w = spawn("writer", d, flags, killspec, mutation=mutation)
    wl = Lines(w)
    ready = wl.wait_for(lambda s: s.startswith("ready"))
    assert ready, f"writer did not start: {w.stderr.read().decode()[-2000:]}"
    start = int(ready.split()[1])
    if how == "timed":
        target = start + (8 if mutation else rng.randrange(0, 6))
        wl.wait_for(lambda s: s.startswith("committed") and int(s.split()[1]) >= target)
        time.sleep(rng.random() * 0.02)
        w.send_signal(signal.SIGKILL)
    try:
        w.wait(timeout=3)
    except subprocess.TimeoutExpired:  # e.g. a sync kill rule in NOSYNC mode: never fires
        w.send_signal(signal.SIGKILL)
        w.wait()
    wl.t.join(5)
    assert w.returncode == -signal.SIGKILL, (
        f"writer exited with {w.returncode}: {w.stderr.read().decode()[-3000:]}"
    )
    H.count("kills: writer processes SIGKILLed")
    last = wl.committed()
    last = start if last is None else last
    info["start"], info["last_reported"] = start, last
    killed = 0
    survivors = []
    # Usually one reader survives, so the env stays open in some process and the verifier
    # joins the existing lock region: the dead slots are then there for reader_check to
    # clear.  Otherwise every user is dead and the verifier's open re-initialises the lock
    # region (LMDB's rule: the first opener resets the reader table), clearing them all.
    nobody_left = rng.random() < (0 if mutation else 0.2)
    for idx, (p, lines, ln) in enumerate(readers):
        if nobody_left or (idx > 0 and rng.random() < 0.6):
            p.send_signal(signal.SIGKILL)
            p.wait()
            killed += 1
            H.count("kills: reader processes SIGKILLed")
        else:
            survivors.append((p, lines, ln))
    v = spawn("verify", d, flags)
    try:
        so, se = v.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        v.kill()
        so, se = v.communicate()
        pytest.fail(f"verifier hung (writer mutex not recovered?) {info}\n{se.decode()[-2000:]}")
    assert v.returncode == 0, f"verifier failed {info}: {se.decode()[-3000:]}"
    out = json.loads(so.decode().strip().splitlines()[-1])
    info.update({k: out[k] for k in ("txn", "dead_slots", "dead_slots_again")})
    assert out["check"] == 0, f"checker after kill {info}:\n{out['check_text']}"
    assert out["check_after"] == 0, f"checker after the next commit {info}:\n{out['check_text']}"
    assert out["commit_after"]
    assert last <= out["txn"] <= last + 1, (
        f"state after kill is txn {out['txn']}, expected {last} or {last + 1}: {info}"
    )
    assert out["digest"] == K.digest(K.model_after(out["txn"])), (
        f"content after kill is not the model state of txn {out['txn']}: {info}"
    )
    want = 0 if nobody_left else 1 + killed
    assert out["dead_slots"] == want, (
        f"reader_check cleared {out['dead_slots']} slots, expected {want} "
        f"(the writer's + {killed} killed readers', lock region reset: {nobody_left}): {info}"
    )
    assert out["dead_slots_again"] == 0, info
    H.count("kills: stale reader slots reclaimed", out["dead_slots"])
    for p, lines, first in survivors:
        n = len([x for x in lines.lines if x])
        p.stdin.write(b"again\n")
        p.stdin.flush()
        again = lines.wait_for(lambda s, n=n, lines=lines: len([x for x in lines.lines if x]) > n)
        again = [x for x in lines.lines if x][-1] if again else None
        if again is None:  # the reader died re-reading its snapshot
            p.wait(10)
            again = "reader failed: " + p.stderr.read().decode()[-300:].replace("\n", " ")
        assert again == first, f"surviving reader's snapshot changed: {first} -> {again}"
        p.stdin.close()
        p.wait(timeout=10)
    return info


@pytest.mark.parametrize("durability", ["sync", "nometasync", "nosync", "mapasync"])
def test_sigkill_writer_and_readers(tmp_path, durability):
    C.load()
    flags = DURABILITY_FLAGS[durability]
    rng = random.Random(int(os.environ.get("MDB_KILL_SEED", "0")) * 31 + len(durability))
    d = str(tmp_path)
    lib = C.load()
    with K.open_env(lib, d, flags) as env:  # the DBs exist before the first reader starts
        t = env.begin(write=True)
        for db, f in K.DBS.items():
            t.open_db(db.encode(), f | K.F.CREATE)
        t.commit()
    history = []
    for r in range(H.size("kills")):
        history.append(one_round(d, flags, rng, r))
        H.count("kill rounds")
    # the env lived through every round: some commits were made
    assert history[-1]["txn"] >= 1
