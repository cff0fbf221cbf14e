"""workload -- record a workload's writes and syncs through the fault seam, then build and
judge the crash images a power loss at each point of that log could leave.

A workload is a list of steps, each
    ("txn", ops, commit)   a write txn: ops on the named DBs, then commit (or abort)
    ("sync",)              mdb_env_sync(env, 1): an explicit durability point
ops are ("put", db, key#, size) and ("del", db, key#) on
    "plain" (no flags), "intkey" (INTEGERKEY, 8-byte keys), "dups" (DUPSORT, if the engine
    has it), with value sizes from 1 byte to several overflow pages.

The model is a dict per DB; the state after each committed txn is kept (`states[i]`, i = 0
is the state before the workload).  For every log entry we know which commits had returned
by then (`returned_by(k)`) and which explicit syncs had returned (`synced_by(k)`).

Judging an image (`Judge.image`): the raw checker on its bytes (safe on garbage), then,
only if that is clean, open it with the engine, mdbcore_check_env, read every DB and find
which committed state(s) it equals.  Verdicts are cached by the image's hash: many crash
points leave byte-identical images.
"""

import hashlib
import os
import random

from support import lmdbffi as F

from . import corelib as C

DBS = ("plain", "intkey", "dups")
DB_FLAGS = {"plain": 0, "intkey": F.INTEGERKEY, "dups": F.DUPSORT}
NKEYS = 48
MAPSIZE = 8 << 20
SIZES = (0, 1, 7, 100, 700, 1500, 2100, 4000, 4097, 9000, 20000)

DURABILITY_FLAGS = {
    "sync": 0,
    "nometasync": F.NOMETASYNC,
    "nosync": F.NOSYNC,
    "mapasync": F.WRITEMAP | 0x100000,  # MDB_MAPASYNC
}

_DUPSORT = None


def dupsort_ok(lib, tmp):
    """Feature probe: does the engine accept a DUPSORT DB?"""
    global _DUPSORT
    if _DUPSORT is None:
        d = os.path.join(tmp, "probe-dupsort")
        os.makedirs(d, exist_ok=True)
        with F.Env(lib, d, mapsize=1 << 20) as env:
            t = env.begin(write=True)
            try:
                t.open_db(b"d", F.DUPSORT | F.CREATE)
                _DUPSORT = True
            except F.LmdbError as e:
                if e.rc != -30784:  # MDB_INCOMPATIBLE
                    raise
                _DUPSORT = False
            finally:
                t.abort()
    return _DUPSORT


def key_bytes(db, k):
    if db == "intkey":
        return (k * 7919 + 3).to_bytes(8, "little")
    return b"key-%04d" % k


def value_bytes(step, op, size):
    seed = hashlib.blake2b(b"%d/%d" % (step, op), digest_size=8).digest()
    return (seed * (size // 8 + 1))[:size]


class Model:
    def __init__(self, names):
        self.dbs = {n: {} for n in names}

    def apply(self, db, op, key, val):
        d = self.dbs[db]
        if op == "put":
            if db == "dups":
                d.setdefault(key, set()).add(val)
            else:
                d[key] = val
        else:
            d.pop(key, None)

    def canon(self):
        out = {}
        for n, d in self.dbs.items():
            pairs = []
            for k, v in d.items():
                if isinstance(v, set):
                    pairs.extend((k, x) for x in v)
                else:
                    pairs.append((k, v))
            out[n.encode()] = tuple(sorted(pairs))
        return tuple(sorted(out.items()))


def canon_engine(lib, env):
    got = C.read_all(lib, env)
    return tuple(sorted((k, tuple(sorted(v))) for k, v in got.items()))


class Recording:
    """The result of running one workload with the seam recording."""

    def __init__(self):
        self.states = []  # canonical state after commit i (0 = base)
        self.commit_start = []  # log index when commit i began (i >= 1)
        self.commit_end = []  # log index when commit i returned
        self.syncs = []  # (log index when the sync returned, last state index)
        self.nlog = 0
        self.base = b""
        self.dev = self.ino = 0
        self.last_returned = 0
        # WRITEMAP: the engine writes through the map, which the seam's log cannot see; the
        # file's bytes are captured instead after each commit and each env sync:
        self.snaps = []  # (state index, file bytes) after each commit
        self.synced = []  # bytes at the last explicit sync, per entry of snaps


def run_workload(lib, wdir, steps, flags, names, *, skip_sync=False, setup=None, dirty_limit=None):
    """Run `steps` in a fresh env under `wdir`; returns a Recording.  The fault log stays
    in the library (mdbcore_fault_*) until `lib.c.mdbcore_fault_reset()`.  dirty_limit
    lowers the engine's dirty-page limit for the recorded txns (mdbcore.h), so big txns
    write pages out before their commit (spill.c); rec.spilled counts those pages."""
    os.makedirs(wdir, exist_ok=True)
    rec = Recording()
    model = Model(names)
    with F.Env(lib, wdir, mapsize=MAPSIZE, flags=flags) as env:
        t = env.begin(write=True)
        for n in names:
            t.open_db(n.encode(), DB_FLAGS[n] | F.CREATE)
        # a little initial content, so the first txn already frees pages
        dbis = {n: t.open_db(n.encode()) for n in names}
        for i in range(0, NKEYS, 3):
            for n in names:
                k, v = key_bytes(n, i), value_bytes(0, i, 40)
                t.put(dbis[n], k, v)
                model.apply(n, "put", k, v)
        t.commit()
        env.lib.c.mdb_env_sync(env.env, 1)
    data = os.path.join(wdir, "data.mdb")
    with open(data, "rb") as f:
        rec.base = f.read()
    rec.dev, rec.ino = lib.file_id(data)
    rec.states.append(model.canon())
    writemap = bool(flags & F.WRITEMAP)
    synced = rec.base
    rec.commit_start.append(0)
    rec.commit_end.append(0)
    c = lib.c
    c.mdbcore_fault_reset()
    c.mdbcore_fault_record_start()
    if skip_sync:
        lib.check(c.mdbcore_fault_arm_spec(b"fdatasync:1+:skip"), "arm skip")
    try:
        with F.Env(lib, wdir, mapsize=MAPSIZE, flags=flags) as env:
            if dirty_limit:
                lib.check(c.mdbcore_env_set_dirty_limit(env.env, dirty_limit), "dirty limit")
            for si, step in enumerate(steps, start=1):
                if step[0] == "sync":
                    lib.check(c.mdb_env_sync(env.env, 1), "mdb_env_sync")
                    rec.syncs.append((c.mdbcore_fault_log_count(), len(rec.states) - 1))
                    if writemap:
                        with open(data, "rb") as f:
                            synced = f.read()
                    continue
                _, ops, commit = step
                t = env.begin(write=True)
                dbis = {n: t.open_db(n.encode()) for n in names}
                trial = Model(names)
                trial.dbs = {
                    n: {k: (set(v) if isinstance(v, set) else v) for k, v in d.items()}
                    for n, d in model.dbs.items()
                }
                for oi, op in enumerate(ops):
                    db = op[1]
                    if db not in dbis:
                        continue
                    k = key_bytes(db, op[2])
                    if op[0] == "put":
                        if db == "dups":  # a dup item is 1..511 bytes (like a key)
                            v = value_bytes(si, oi, max(1, min(op[3], 400)))
                        else:
                            v = value_bytes(si, oi, op[3])
                        t.put(dbis[db], k, v)
                        trial.apply(db, "put", k, v)
                    else:
                        t.delete(dbis[db], k)
                        trial.apply(db, "del", k, None)
                if not commit:
                    t.abort()
                    continue
                start = c.mdbcore_fault_log_count()
                t.commit()
                model = trial
                rec.commit_start.append(start)
                rec.commit_end.append(c.mdbcore_fault_log_count())
                rec.states.append(model.canon())
                if writemap:
                    with open(data, "rb") as f:
                        rec.snaps.append((len(rec.states) - 1, f.read()))
                    rec.synced.append(synced)
            c.mdbcore_fault_record_stop()
            rec.spilled = c.mdbcore_env_spilled_pages(env.env) if dirty_limit else 0
    finally:
        c.mdbcore_fault_record_stop()
    rec.nlog = c.mdbcore_fault_log_count()
    return rec


class Judge:
    """Builds crash images of one Recording and judges them (with a verdict cache)."""

    def __init__(self, lib, rec, idir):
        self.lib, self.rec = lib, rec
        os.makedirs(idir, exist_ok=True)
        self.img = os.path.join(idir, "img.mdb")
        self.cache = {}
        self.state_index = {}
        for i, s in enumerate(rec.states):
            self.state_index.setdefault(s, set()).add(i)
        self.distinct = 0

    def build(self, upto, mode, seed):
        fd = os.open(self.img, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, self.rec.base)
            rc = self.lib.c.mdbcore_fault_crash_image(
                fd,
                self.rec.dev,
                self.rec.ino,
                upto,
                mode,
                seed,
                4096,
                self.lib.ffi.NULL,
                self.lib.ffi.NULL,
            )
            self.lib.check(rc, "mdbcore_fault_crash_image")
            size = os.fstat(fd).st_size
            return os.pread(fd, size, 0) if size else b""
        finally:
            os.close(fd)

    def image_bytes(self, data):
        """The verdict on an image (see image), judged once per distinct content."""
        h = hashlib.blake2b(data, digest_size=16).digest()
        v = self.cache.get(h)
        if v is None:
            v = self._judge(data)
            self.cache[h] = v
            self.distinct += 1
        return v

    def map_images(self, seeds):
        """WRITEMAP: (state index, crash model, seed, image bytes) after each commit:
        keep = the file as the OS has it; drop = as of the last explicit sync; subset /
        torn = each 4 KiB page changed since that sync reached the disk or not."""
        for (i, now), durable in zip(self.rec.snaps, self.rec.synced):
            yield i, C.KEEP_ALL, 0, now
            yield i, C.DROP_UNSYNCED, 0, durable
            n = max(len(now), len(durable))
            a, b = durable.ljust(n, b"\0"), now.ljust(n, b"\0")
            changed = [p for p in range(0, n, 4096) if a[p : p + 4096] != b[p : p + 4096]]
            for s in range(1, 2 * seeds + 1):
                rng = random.Random(s * 1000 + i)
                img = bytearray(a)
                for p in changed:
                    if rng.random() < 0.5:
                        img[p : p + 4096] = b[p : p + 4096]
                yield i, C.SUBSET, s, bytes(img[: len(now)])

    def image(self, upto, mode, seed):
        """Verdict dict: raw (checker rc on bytes), open (rc or 0), check (rc), states
        (set of committed-state indexes the content equals; empty = none), text."""
        return self.image_bytes(self.build(upto, mode, seed))

    def _judge(self, data):
        lib = self.lib
        raw, txnid, text = lib.check_image(data)
        v = {"raw": raw, "txnid": txnid, "open": None, "check": None, "states": set(), "text": text}
        if raw != 0:
            return v
        for suffix in ("", "-lock"):
            try:
                os.unlink(self.img + suffix)
            except FileNotFoundError:
                pass
        with open(self.img, "wb") as f:
            f.write(data)
        try:
            env = F.Env(lib, self.img, mapsize=MAPSIZE, flags=F.NOSUBDIR)
        except F.LmdbError as e:
            v["open"] = e.rc
            return v
        v["open"] = 0
        try:
            rc, text = lib.check_env(env)
            v["check"] = rc
            v["text"] += text
            try:
                got = canon_engine(lib, env)
                v["states"] = set(self.state_index.get(got, ()))
                # the survivor is usable: one more commit on top of it
                t = env.begin(write=True)
                dbi = t.open_db(b"plain")
                t.put(dbi, b"after-crash", b"x")
                t.commit()
                rc2, text2 = lib.check_env(env)
                if rc2:
                    v["check"] = rc2
                    v["text"] += "after a commit on the survivor:\n" + text2
            except F.LmdbError as e:
                v["read_error"] = str(e)
                v["states"] = set()
        finally:
            env.close()
        return v

    # ---- what the log says about a crash point
    def returned_by(self, k):
        """Index of the newest committed state whose commit had returned by log index k."""
        r = 0
        for i, end in enumerate(self.rec.commit_end):
            if end <= k:
                r = i
        return r

    def synced_by(self, k):
        """Newest state made durable by an explicit env_sync that returned by log index k."""
        s = 0
        for end, st in self.rec.syncs:
            if end <= k:
                s = max(s, st)
        return s

    def crash_points(self, seeds):
        """(upto, mode, seed) for every log prefix and crash model."""
        for k in range(self.rec.nlog + 1):
            yield k, C.DROP_UNSYNCED, 0
            yield k, C.KEEP_ALL, 0
            for s in range(1, seeds + 1):
                yield k, C.SUBSET, s * 7919 + k
                yield k, C.TORN, s * 104729 + k


def consistent(v):
    return (
        v["raw"] == 0
        and v["open"] == 0
        and v["check"] == 0
        and bool(v["states"])
        and "read_error" not in v
    )


def describe(v):
    return (
        f"raw checker rc={v['raw']} (txnid {v['txnid']}), open rc={v['open']}, "
        f"check rc={v['check']}, equals committed states {sorted(v['states'])}"
        f"{', read error ' + v['read_error'] if 'read_error' in v else ''}\n"
        f"{v['text'][:3000]}"
    )


def random_steps(seed, ntxn=6):
    """A deterministic workload (for the tests that do not need hypothesis)."""
    rng = random.Random(seed)
    steps = []
    for _ in range(ntxn):
        ops = []
        for _ in range(rng.randrange(5, 30)):
            db = rng.choice(DBS)
            if rng.random() < 0.7:
                ops.append(("put", db, rng.randrange(NKEYS), rng.choice(SIZES)))
            else:
                ops.append(("del", db, rng.randrange(NKEYS)))
        steps.append(("txn", ops, rng.random() < 0.9))
        if rng.random() < 0.2:
            steps.append(("sync",))
    return steps
