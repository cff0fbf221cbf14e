"""engines -- one small interface over two ways of driving the engine, for the snapshot
tests (test_snapshot.py) and their reader processes (snapreader.py):

    "pkg"  the Python package `mdb` (what users run)
    "ffi"  build/libmdbcore-test.so through cffi (tests/crash/corelib.py): the core as
           built now, with the mutation switch (mdbcore_set_mutation)

Interface: Eng(kind, path); .write(ops) commits one txn and returns its txnid; .begin() ->
Reader with .txnid, .read() -> digest of the whole DB, .end(); .close().
One process never opens an environment through both kinds.
"""

import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.dirname(HERE) not in sys.path:
    sys.path.insert(0, os.path.dirname(HERE))

DB = b"snap"
MAPSIZE = 256 << 20
NOTLS = 0x200000


def digest_pairs(pairs):
    h = hashlib.blake2b(digest_size=16)
    n = 0
    for k, v in pairs:
        h.update(b"%d:%s%d:%s" % (len(k), bytes(k), len(v), bytes(v)))
        n += 1
    return f"{n}:{h.hexdigest()}"


def digest_model(d):
    return digest_pairs(sorted(d.items()))


class PkgReader:
    def __init__(self, eng):
        self.t = eng.env.begin(db=eng.db)
        self.txnid = self.t.id()

    def read(self):
        return digest_pairs(self.t.cursor().iternext())

    def end(self):
        self.t.abort()


class FfiReader:
    def __init__(self, eng):
        self.eng = eng
        self.t = eng.env.begin()
        self.txnid = self.t.id()
        self.dbi = self.t.open_db(DB)

    def read(self):
        return digest_pairs(self.t.items(self.dbi))

    def end(self):
        self.t.abort()


class Eng:
    def __init__(self, kind, path):
        self.kind = kind
        if kind == "pkg":
            import mdb

            self.env = mdb.open(path, max_dbs=2, map_size=MAPSIZE, max_readers=64)
            self.db = self.env.open_db(DB)
        else:
            from crash import corelib as C
            from support import lmdbffi as F

            self.lib = C.load()
            self.F = F
            self.env = F.Env(self.lib, path, mapsize=MAPSIZE, maxdbs=2, maxreaders=64, flags=NOTLS)
            t = self.env.begin(write=True)
            t.open_db(DB, F.CREATE)
            t.commit()

    def write(self, ops):
        """ops: [(key, value or None)]; returns the committed txn's id."""
        if self.kind == "pkg":
            with self.env.begin(write=True, db=self.db) as t:
                tid = t.id()
                for k, v in ops:
                    if v is None:
                        t.delete(k)
                    else:
                        t.put(k, v)
            return tid
        t = self.env.begin(write=True)
        tid = t.id()
        dbi = t.open_db(DB)
        for k, v in ops:
            if v is None:
                t.delete(dbi, k)
            else:
                t.put(dbi, k, v)
        t.commit()
        return tid

    def last_txnid(self):
        if self.kind == "pkg":
            return self.env.info()["last_txnid"]
        return self.env.info()["last_txnid"]

    def begin(self):
        return PkgReader(self) if self.kind == "pkg" else FfiReader(self)

    def close(self):
        self.env.close()
