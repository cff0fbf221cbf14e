#!/usr/bin/env python3
"""worker -- one LMDB implementation in one process, driven from the command line.

    python tests/support/worker.py IMPL COMMAND ARGS...

IMPL is `lib` (the library under test, dlopen()ed from $MDB_TEST_LIB through cffi) or
`wheel` (real LMDB 0.9, embedded in the `lmdb` PyPI wheel).  A process loads exactly one
of them, so no environment is ever opened by two engines inside one process (fcntl locks
are per process; see lmdbffi.py).

Commands (each prints one JSON object on stdout; exit status 0 unless it crashed):
    write-shape DIR SHAPE SEED    apply dataset.plan(SEED, SHAPE) to a new environment
    read-all DIR OUT SHAPE [SEED] write the listing of every database of SHAPE to OUT
                                  (JSON); with SEED also spot-check mdb_get
    conc-init DIR                 create the concurrency environment (constant-sum accounts)
    conc-writer DIR CTRL N COMMITS SEED
                                  wait for N readers to be ready, then commit COMMITS
                                  balance-preserving transactions, the last one setting
                                  "done"; pause at 1/3 and 2/3 until every reader has seen
                                  that generation (CTRL/seen.<id>)
    conc-reader DIR CTRL ID       read snapshots until "done"; check every one of them
    freelist DIR SEED             the free-page reuse scenario (pinned reader, then 20,000
                                  update transactions); reports the file size over time
    churn DIR SEED TXNS OUT       on an existing environment, TXNS write txns of puts
                                  (values 0..70,000 bytes) and deletes in the main DB,
                                  its named-DB records left alone; writes the main DB's
                                  expected listing (without those records) to OUT
"""

import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from support import dataset  # noqa: E402
from support import lmdbffi as F  # noqa: E402

MAPSIZE = 1 << 30


# --------------------------------------------------------------------------------------
# Two backends with one small surface: open / begin / db / put / get / delete / items.


class LibBackend:
    name = "lib"

    def __init__(self, path, nosync=False, notls=False):
        self.lib = F.load()
        flags = (F.NOSYNC if nosync else 0) | (F.NOTLS if notls else 0)
        self.env = F.Env(self.lib, path, mapsize=MAPSIZE, maxdbs=8, flags=flags)

    def begin(self, write=False):
        return LibTxn(self, write)

    def close(self):
        self.env.close()


class LibTxn:
    def __init__(self, be, write):
        self.t = be.env.begin(write)
        self.write = write
        self.dbis = {}

    def db(self, name):
        if name not in self.dbis:
            flags = dataset.DB_FLAGS.get(name, 0) if name in dataset.DB_FLAGS else 0
            if self.write:
                flags |= F.CREATE
            self.dbis[name] = self.t.open_db(None if name is None else name.encode(), flags)
        return self.dbis[name]

    def put(self, name, k, v):
        self.t.put(self.db(name), k, v)

    def get(self, name, k):
        return self.t.get(self.db(name), k)

    def delete(self, name, k):
        return self.t.delete(self.db(name), k)

    def items(self, name):
        return self.t.items(self.db(name))

    def db_flags(self, name):
        return self.t.dbi_flags(self.db(name))

    def commit(self):
        self.t.commit()

    def abort(self):
        self.t.abort()


class WheelBackend:
    name = "wheel"

    def __init__(self, path, nosync=False, notls=False):
        import lmdb  # the wheel: real LMDB, never loaded together with the library under test

        self.lmdb = lmdb
        self.env = lmdb.open(path, map_size=MAPSIZE, max_dbs=8, sync=not nosync, lib_version=0)
        self.handles = {}

    def begin(self, write=False):
        return WheelTxn(self, write)

    def close(self):
        self.env.close()


class WheelTxn:
    def __init__(self, be, write):
        self.be = be
        self.t = be.env.begin(write=write)
        self.write = write
        self.local = {}

    def db(self, name):
        if name is None:
            return None  # the main database
        # A handle opened inside a read txn is not kept by the wheel after that txn ends
        # (LMDB 0.9 drops it unless the txn commits, and the wheel may recycle read txns),
        # so read txns open their handles afresh; handles from write txns are cached.
        cache = self.be.handles if self.write else self.local
        if name not in cache:
            f = dataset.DB_FLAGS.get(name, 0)
            cache[name] = self.be.env.open_db(
                name.encode(),
                txn=self.t,
                create=self.write,
                integerkey=bool(f & F.INTEGERKEY),
                reverse_key=bool(f & F.REVERSEKEY),
                dupsort=bool(f & F.DUPSORT),
            )
        return cache[name]

    def _kw(self, name):
        d = self.db(name)
        return {} if d is None else {"db": d}

    def put(self, name, k, v):
        if not self.t.put(k, v, **self._kw(name)):
            raise RuntimeError(f"wheel put refused {name}:{k!r}")

    def get(self, name, k):
        return self.t.get(k, **self._kw(name))

    def delete(self, name, k):
        return self.t.delete(k, **self._kw(name))

    def items(self, name):
        with self.t.cursor(**self._kw(name)) as c:
            for k, v in c.iternext():
                yield bytes(k), bytes(v)

    def db_flags(self, name):
        d = self.db(name)
        if d is None:
            return 0
        fl = d.flags(self.t)
        return (
            (F.REVERSEKEY if fl.get("reverse_key") else 0)
            | (F.DUPSORT if fl.get("dupsort") else 0)
            | (F.INTEGERKEY if fl.get("integerkey") else 0)
        )

    def commit(self):
        self.t.commit()

    def abort(self):
        self.t.abort()


def backend(impl, path, **kw):
    if impl == "lib":
        return LibBackend(path, **kw)
    if impl == "wheel":
        return WheelBackend(path, **kw)
    raise SystemExit(f"unknown impl {impl!r}")


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------------------
# (a) interop shape


def cmd_write_shape(impl, d, shape, seed):
    os.makedirs(d, exist_ok=True)
    be = backend(impl, d)
    n = 0
    for ops in dataset.plan(int(seed), shape):
        t = be.begin(write=True)
        for op, name, k, v in ops:
            if op == "put":
                t.put(name, k, v)
            else:
                if not t.delete(name, k):
                    raise RuntimeError(f"delete of a key that should exist: {name}:{k!r}")
            n += 1
        t.commit()
    be.close()
    out({"ops": n})


def cmd_read_all(impl, d, outfile, shape, seed=None):
    be = backend(impl, d)
    t = be.begin(write=False)
    listing = {}
    flags = {}
    named_in_main = []
    named = dataset.SHAPES[shape]
    for name in [None] + named:
        pairs = list(t.items(name))
        if name is None:
            named_in_main = [
                k.decode()
                for k, v in pairs
                if k.decode("latin-1") in dataset.ALL_NAMED and len(v) == 48
            ]
            pairs = [(k, v) for k, v in pairs if k.decode("latin-1") not in dataset.ALL_NAMED]
        listing["" if name is None else name] = dataset.fingerprint_pairs(pairs)
        flags["" if name is None else name] = t.db_flags(name)
    # Spot checks through the point-lookup path (mdb_get), not only the cursor.
    get_errors = []
    if seed is not None:
        exp = dataset.expected(int(seed), shape)
        rng = random.Random(7)
        for name in [None, "plain", "intkey", "revkey", "big"]:
            keys = sorted(exp[name])
            for k in rng.sample(keys, min(200, len(keys))):
                got = t.get(name, k)
                if got != exp[name][k]:
                    get_errors.append(
                        f"{name}:{k.hex()}: got "
                        f"{None if got is None else len(got)} bytes, want "
                        f"{len(exp[name][k])}"
                    )
            absent = (
                (2**63 + 12345).to_bytes(8, "little")
                if name == "intkey"
                else b"\x00\x00no-such-key"
            )
            if absent not in exp[name] and t.get(name, absent) is not None:
                get_errors.append(f"{name}: absent key {absent.hex()} found")
    t.abort()
    be.close()
    with open(outfile, "w") as f:
        json.dump(
            {
                "listing": listing,
                "flags": flags,
                "named_in_main": named_in_main,
                "get_errors": get_errors[:20],
            },
            f,
        )
    out({"dbs": len(listing)})


# --------------------------------------------------------------------------------------
# (b) concurrency: a constant sum over accounts, a generation counter, a "done" flag

ACCOUNTS = 256
START = 1000
U64 = 8


def _u64(b):
    return int.from_bytes(b, "little")


def _p64(n):
    return n.to_bytes(U64, "little")


def cmd_conc_init(impl, d):
    os.makedirs(d, exist_ok=True)
    be = backend(impl, d)
    t = be.begin(write=True)
    for i in range(ACCOUNTS):
        t.put("plain", b"acct%04d" % i, _p64(START))
    t.put(None, b"gen", _p64(0))
    t.commit()
    be.close()
    out({"accounts": ACCOUNTS})


def _wait_seen(ctrl, nreaders, g, timeout=60):
    """Wait until every reader reports (seen.<id> files) a generation >= g."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = []
        for f in os.listdir(ctrl):
            if f.startswith("seen."):
                try:
                    with open(os.path.join(ctrl, f)) as fh:
                        seen.append(int(fh.read() or -1))
                except (OSError, ValueError):
                    pass
        if len(seen) >= nreaders and min(seen) >= g:
            return True
        time.sleep(0.005)
    return False


def cmd_conc_writer(impl, d, ctrl, nreaders, commits, seed):
    nreaders, commits = int(nreaders), int(commits)
    # At these generations the writer pauses until every reader has read them, so each
    # reader provably sees commits in the middle of the run, however the OS schedules it.
    checkpoints = {commits // 3, 2 * commits // 3}
    rng = random.Random(int(seed))
    be = backend(impl, d)
    deadline = time.monotonic() + 60
    while len([f for f in os.listdir(ctrl) if f.startswith("ready.")]) < nreaders:
        if time.monotonic() > deadline:
            out({"error": "readers never became ready"})
            return 1
        time.sleep(0.01)
    t0 = time.monotonic()
    for g in range(1, commits + 1):
        t = be.begin(write=True)
        for _ in range(rng.randrange(1, 9)):
            a, b = rng.randrange(ACCOUNTS), rng.randrange(ACCOUNTS)
            ka, kb = b"acct%04d" % a, b"acct%04d" % b
            va = _u64(t.get("plain", ka))
            amt = rng.randrange(0, va + 1)
            t.put("plain", ka, _p64(va - amt))
            t.put("plain", kb, _p64(_u64(t.get("plain", kb)) + amt))
        # Churn: filler keys of varying sizes come and go, so pages split, merge and free.
        t.put("revkey", b"fill.%06d" % g, rng.randbytes(rng.choice([0, 10, 500, 3000, 9000])))
        if g > 40:
            t.delete("revkey", b"fill.%06d" % (g - 40))
        t.put(None, b"gen", _p64(g))
        if g == commits:
            t.put(None, b"done", b"1")
        t.commit()
        if g in checkpoints and not _wait_seen(ctrl, nreaders, g):
            out({"error": f"readers did not all see generation {g} within 60 s"})
            return 1
        time.sleep(rng.random() * 0.003)
    be.close()
    out({"commits": commits, "seconds": round(time.monotonic() - t0, 3)})
    return 0


def cmd_conc_reader(impl, d, ctrl, rid):
    be = backend(impl, d)
    deadline = time.monotonic() + 120
    reads, gens, last_gen, violations, done = 0, set(), -1, [], False
    while not done:
        if time.monotonic() > deadline:
            violations.append("timed out before seeing done")
            break
        t = be.begin(write=False)
        total = count = 0
        for k, v in t.items("plain"):
            if k.startswith(b"acct"):
                total += _u64(v)
                count += 1
        g = _u64(t.get(None, b"gen"))
        done = t.get(None, b"done") is not None
        t.abort()
        reads += 1
        if count != ACCOUNTS or total != ACCOUNTS * START:
            violations.append(f"read {reads} gen {g}: {count} accounts, sum {total}")
        if g < last_gen:
            violations.append(f"read {reads}: generation went back {last_gen} -> {g}")
        if g != last_gen:  # report progress to the writer (atomically: write, rename)
            tmp = os.path.join(ctrl, f".seen.{rid}")
            with open(tmp, "w") as fh:
                fh.write(str(g))
            os.replace(tmp, os.path.join(ctrl, f"seen.{rid}"))
        last_gen = g
        gens.add(g)
        if reads == 1:
            open(os.path.join(ctrl, f"ready.{rid}"), "w").close()
        if len(violations) > 10:
            break
    be.close()
    out(
        {
            "impl": impl,
            "reads": reads,
            "distinct_gens": len(gens),
            "last_gen": last_gen,
            "done": done,
            "violations": violations,
        }
    )


# --------------------------------------------------------------------------------------
# (c) free-page reuse


def cmd_freelist(impl, d, seed, pinned_updates="1000", updates="20000"):
    rng = random.Random(int(seed))
    os.makedirs(d, exist_ok=True)
    be = backend(impl, d, nosync=True, notls=True)
    datafile = os.path.join(d, "data.mdb")
    model = {}
    t = be.begin(write=True)
    for i in range(2000):
        k = b"k%05d" % i
        model[k] = rng.randbytes(rng.randrange(50, 400))
        t.put(None, k, model[k])
    t.commit()
    size_loaded = os.path.getsize(datafile)

    def update_txn():
        t = be.begin(write=True)
        for _ in range(10):
            k = b"k%05d" % rng.randrange(2000)
            model[k] = rng.randbytes(rng.choice([0, 20, 100, 300, 1000, 2500]))
            t.put(None, k, model[k])
        t.commit()

    pinned = be.begin(write=False)
    snap = dict(model)
    for _ in range(int(pinned_updates)):
        update_txn()
    size_pinned = os.path.getsize(datafile)
    snapshot_ok = dict(pinned.items(None)) == snap
    pinned.abort()

    sizes = []
    for i in range(1, int(updates) + 1):
        update_txn()
        if i % 1000 == 0:
            sizes.append(os.path.getsize(datafile))
    t = be.begin(write=False)
    final_ok = dict(t.items(None)) == model
    t.abort()
    be.close()
    out(
        {
            "size_loaded": size_loaded,
            "size_pinned": size_pinned,
            "sizes": sizes,
            "snapshot_ok": snapshot_ok,
            "final_ok": final_ok,
        }
    )


def cmd_churn(impl, d, seed, txns, outfile):
    rng = random.Random(int(seed))
    be = backend(impl, d)

    def plain_items(t):
        # the main DB also holds the named DBs' records: they are not ours to change
        return {k: v for k, v in t.items(None) if k.decode("latin-1") not in dataset.ALL_NAMED}

    t = be.begin(write=False)
    model = plain_items(t)
    t.abort()
    keys = list(model)
    for _ in range(int(txns)):
        t = be.begin(write=True)
        for _ in range(200):
            if keys and rng.random() < 0.3:
                i = rng.randrange(len(keys))
                keys[i], keys[-1] = keys[-1], keys[i]
                k = keys.pop()
                if not t.delete(None, k):
                    raise RuntimeError(f"delete of a key that should exist: {k!r}")
                del model[k]
                continue
            k = b"churn%06d" % rng.randrange(5000)
            if k not in model:
                keys.append(k)
            model[k] = rng.randbytes(rng.choice([0, 10, 500, 3000, 20000, 70000]))
            t.put(None, k, model[k])
        t.commit()
    t = be.begin(write=False)
    final_ok = plain_items(t) == model
    t.abort()
    be.close()
    with open(outfile, "w") as f:
        json.dump(dataset.fingerprint_pairs(sorted(model.items())), f)
    out({"records": len(model), "final_ok": final_ok})


COMMANDS = {
    "write-shape": cmd_write_shape,
    "read-all": cmd_read_all,
    "conc-init": cmd_conc_init,
    "conc-writer": cmd_conc_writer,
    "conc-reader": cmd_conc_reader,
    "freelist": cmd_freelist,
    "churn": cmd_churn,
}


def main(argv):
    if len(argv) < 3 or argv[2] not in COMMANDS:
        raise SystemExit(__doc__)
    return COMMANDS[argv[2]](argv[1], *argv[3:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
