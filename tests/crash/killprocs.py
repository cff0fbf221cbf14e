"""killprocs -- the processes of the SIGKILL tests (tests/crash/test_kills.py).

    python killprocs.py writer DIR FLAGS [KILLSPEC]
        Commits txn 1, 2, 3, ... (contents: `txn_ops(i)`, a pure function of i) forever and
        prints "committed i" after each commit returned.  It holds a reader slot of its own
        (a read txn renewed every few commits), so its death also leaves a stale slot.
        KILLSPEC "kind:n:after" arms mdbcore_fault_kill_nth: SIGKILL at the n-th call of
        that kind (inside a commit), instead of the parent's timed kill.
    python killprocs.py reader DIR
        Begins a read txn, prints "reader TXN DIGEST", then for every line on stdin prints
        "reader TXN DIGEST" again (the same snapshot, re-read).
    python killprocs.py verify DIR FLAGS
        After the kill: opens the env, runs mdb_reader_check (dead slots cleared), reads
        every DB, runs the structural checker, then commits one more txn (the dead writer's
        mutex must be recovered) and checks again; prints one JSON line.
All of them use the mdb core test library (corelib.py; MDB_TEST_CORELIB).
"""

import hashlib
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from crash import corelib as C  # noqa: E402
from support import lmdbffi as F  # noqa: E402

DBS = {"plain": 0, "intkey": F.INTEGERKEY}
MAPSIZE = 64 << 20
MARK = b"__txn__"


def txn_ops(i):
    """The ops of txn i: [(db, op, key, value)]."""
    rng = random.Random(i * 1000003)
    ops = []
    for _ in range(rng.randrange(1, 40)):
        db = rng.choice(("plain", "intkey"))
        k = rng.randrange(300)
        key = k.to_bytes(8, "little") if db == "intkey" else b"k%05d" % k
        if rng.random() < 0.75:
            size = rng.choice((5, 60, 300, 1800, 5000, 13000))
            ops.append((db, "put", key, (b"%d:%d;" % (i, k) * (size // 6 + 1))[:size]))
        else:
            ops.append((db, "del", key, None))
    ops.append(("plain", "put", MARK, b"%d" % i))
    return ops


def model_after(n, cache={}):  # noqa: B006 -- deliberate memo
    """{db: {key: value}} after txns 1..n."""
    best = max((j for j in cache if j <= n), default=0)
    state = {d: dict(v) for d, v in cache[best].items()} if best else {d: {} for d in DBS}
    for i in range(best + 1, n + 1):
        for db, op, k, v in txn_ops(i):
            if op == "put":
                state[db][k] = v
            else:
                state[db].pop(k, None)
    cache[n] = {d: dict(v) for d, v in state.items()}
    return state


def digest(state):
    h = hashlib.blake2b(digest_size=16)
    for db in sorted(state):
        for k in sorted(state[db]):
            h.update(
                b"%s\0%d\0%s\0%d\0%s" % (db.encode(), len(k), k, len(state[db][k]), state[db][k])
            )
    return h.hexdigest()


def read_state(t):
    out = {}
    for db in DBS:
        dbi = t.open_db(db.encode())
        out[db] = dict(t.items(dbi))
    return out


def open_env(lib, d, flags):
    return F.Env(lib, d, mapsize=MAPSIZE, maxdbs=4, flags=flags)


def writer(d, flags, killspec):
    lib = C.load()
    env = open_env(lib, d, flags)
    t = env.begin(write=True)
    for db, f in DBS.items():
        t.open_db(db.encode(), f | F.CREATE)
    t.commit()
    with env.begin() as t:
        start = int(t.get(t.open_db(b"plain"), MARK) or b"0")
    reader = env.begin()
    if os.environ.get("MDB_KILL_MUTATION"):  # test_mutations.py: deliberately broken engine
        lib.set_mutation(int(os.environ["MDB_KILL_MUTATION"]))
    print(f"ready {start}", flush=True)
    if killspec:
        kind, n, after = killspec.split(":")
        lib.check(lib.c.mdbcore_fault_kill_nth(int(kind), int(n), int(after)), "kill_nth")
    i = start
    while True:
        if i - start >= 60:  # a kill rule that has not fired yet: stop, do not grow the
            time.sleep(60)  # file further (live readers pin old pages), wait for the kill
            continue
        i += 1
        t = env.begin(write=True)
        dbis = {db: t.open_db(db.encode()) for db in DBS}
        for db, op, k, v in txn_ops(i):
            if op == "put":
                t.put(dbis[db], k, v)
            else:
                t.delete(dbis[db], k)
        t.commit()
        print(f"committed {i}", flush=True)
        if i % 4 == 0:
            reader.abort()
            reader = env.begin()


def reader(d):
    lib = C.load()
    env = open_env(lib, d, 0)
    t = env.begin()
    while True:
        st = read_state(t)
        print(f"reader {int(st['plain'].get(MARK, b'0'))} {digest(st)}", flush=True)
        if not sys.stdin.readline():
            return


def verify(d, flags):
    lib = C.load()
    out = {}
    env = open_env(lib, d, flags)
    try:
        dead = lib.ffi.new("int *")
        lib.check(lib.c.mdb_reader_check(env.env, dead), "mdb_reader_check")
        out["dead_slots"] = dead[0]
        lib.check(lib.c.mdb_reader_check(env.env, dead), "mdb_reader_check")
        out["dead_slots_again"] = dead[0]
        out["numreaders_info"] = env.info()["numreaders"]
        with env.begin() as t:
            st = read_state(t)
        out["txn"] = int(st["plain"].get(MARK, b"0"))
        out["digest"] = digest(st)
        out["check"], out["check_text"] = lib.check_env(env)
        t = env.begin(write=True)  # recovers the dead writer's mutex (or hangs: timeout)
        t.put(t.open_db(b"verify", F.CREATE), b"after-kill", b"%d" % out["txn"])
        t.commit()
        out["commit_after"] = True
        out["check_after"], text = lib.check_env(env)
        out["check_text"] += text
    finally:
        env.close()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "writer":
        writer(sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "")
    elif cmd == "reader":
        reader(sys.argv[2])
    elif cmd == "verify":
        verify(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(f"unknown command {cmd}")
