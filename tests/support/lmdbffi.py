"""lmdbffi -- drive any LMDB-0.9-compatible shared library from Python (cffi, ABI mode).

What this file owns
    The cdef of the LMDB 0.9 C API and its constants, both read from src/mdbcore/lmdb.h, and a
    thin object layer (Env / Txn) that raises LmdbError on a non-zero return code.  It is
    test-harness code: no caching, no cleverness, every engine call is visible.

Which library
    `load(path)` dlopen()s the given file.  The Makefile exports MDB_TEST_LIB: Debian's
    liblmdb.so.0 in bring-up mode (LMDB_IMPL=system) or build/libmdbcore.so (LMDB_IMPL=mdb).

Rule for callers
    Never open one environment from two LMDB implementations in one process: fcntl locks
    are per process, and the `lmdb` wheel embeds its own engine.  Tests that mix engines run
    each engine in its own subprocess (tests/support/worker.py).
"""

import os
import re

from cffi import FFI

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LMDB_H = os.path.join(ROOT, "src", "mdbcore", "lmdb.h")


def _read_header(path):
    """lmdb.h as (cdef text, {MDB_NAME: value} of its integer #defines).

    One source for the declarations and the constants: our lmdb.h, whose values and
    layouts tests/c/api/check_headers.py holds to Debian's.  The cdef is the header without
    comments, preprocessor lines and the C++ guard; mode_t, which cffi does not know, is
    spelled as the x86-64 Linux type.  ABI mode resolves a function only when it is called,
    so a library lacking one of them still loads."""
    text = open(path, encoding="utf-8").read()
    defines = {
        name: int(value, 0)
        for name, value in re.findall(
            r"^#define (MDB_\w+) \(?(-?(?:0x[0-9a-fA-F]+|\d+))\)?", text, re.M
        )
    }
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"#ifdef __cplusplus.*?#endif", "", text, flags=re.S)
    text = re.sub(r"^#(?:[^\n]*\\\n)*[^\n]*$", "", text, flags=re.M)
    return text.replace("typedef mode_t mdb_mode_t;", "typedef unsigned int mdb_mode_t;"), defines


CDEF, _DEFINES = _read_header(LMDB_H)

# Every integer constant of lmdb.h without its MDB_ prefix: NOSUBDIR, CREATE, NOTFOUND, ...
globals().update({name[4:]: value for name, value in _DEFINES.items()})
RDONLY, NOTFOUND = _DEFINES["MDB_RDONLY"], _DEFINES["MDB_NOTFOUND"]  # (used below by name)

FIRST, GET_CURRENT, NEXT, SET_RANGE = 0, 4, 8, 17


class LmdbError(Exception):
    def __init__(self, rc, what, text):
        super().__init__(f"{what}: rc={rc} ({text})")
        self.rc = rc
        self.what = what


class Lib:
    """One dlopen()ed LMDB-compatible library."""

    def __init__(self, path):
        self.path = path
        self.ffi = FFI()
        self.ffi.cdef(CDEF)
        self.c = self.ffi.dlopen(path)

    def strerror(self, rc):
        return self.ffi.string(self.c.mdb_strerror(rc)).decode("utf-8", "replace")

    def check(self, rc, what):
        if rc != 0:
            raise LmdbError(rc, what, self.strerror(rc))

    def version(self):
        a, b, c = (self.ffi.new("int *") for _ in range(3))
        s = self.ffi.string(self.c.mdb_version(a, b, c)).decode()
        return (a[0], b[0], c[0]), s

    def val(self, data):
        """An MDB_val pointing at `data` (bytes); returns (val, keepalive)."""
        v = self.ffi.new("MDB_val *")
        buf = self.ffi.from_buffer(data)
        v.mv_size = len(data)
        v.mv_data = buf
        return v, buf

    def tobytes(self, v):
        if v.mv_size == 0:
            return b""
        return bytes(self.ffi.buffer(v.mv_data, v.mv_size))


def load(path=None):
    path = path or os.environ.get("MDB_TEST_LIB")
    if not path:
        raise RuntimeError("MDB_TEST_LIB is not set (the Makefile sets it; see docs/building.md)")
    return Lib(path)


class Env:
    """An MDB_env.  Close it explicitly (or use `with`)."""

    def __init__(
        self, lib, path, *, mapsize=1 << 28, maxdbs=8, maxreaders=None, flags=0, mode=0o644
    ):
        self.lib = lib
        c = lib.c
        pp = lib.ffi.new("MDB_env **")
        lib.check(c.mdb_env_create(pp), "mdb_env_create")
        self.env = pp[0]
        try:
            lib.check(c.mdb_env_set_mapsize(self.env, mapsize), "mdb_env_set_mapsize")
            lib.check(c.mdb_env_set_maxdbs(self.env, maxdbs), "mdb_env_set_maxdbs")
            if maxreaders:
                lib.check(c.mdb_env_set_maxreaders(self.env, maxreaders), "set_maxreaders")
            lib.check(c.mdb_env_open(self.env, os.fsencode(path), flags, mode), "mdb_env_open")
        except Exception:
            c.mdb_env_close(self.env)
            self.env = None
            raise

    def close(self):
        if self.env is not None:
            self.lib.c.mdb_env_close(self.env)
            self.env = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def begin(self, write=False):
        return Txn(self, write)

    def info(self):
        st = self.lib.ffi.new("MDB_envinfo *")
        self.lib.check(self.lib.c.mdb_env_info(self.env, st), "mdb_env_info")
        return {
            "mapsize": st.me_mapsize,
            "last_pgno": st.me_last_pgno,
            "last_txnid": st.me_last_txnid,
            "maxreaders": st.me_maxreaders,
            "numreaders": st.me_numreaders,
        }


class Txn:
    def __init__(self, env, write):
        self.env = env
        self.lib = env.lib
        pp = self.lib.ffi.new("MDB_txn **")
        self.lib.check(
            self.lib.c.mdb_txn_begin(env.env, self.lib.ffi.NULL, 0 if write else RDONLY, pp),
            "mdb_txn_begin",
        )
        self.txn = pp[0]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *rest):
        if self.txn is None:
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def commit(self):
        t, self.txn = self.txn, None
        self.lib.check(self.lib.c.mdb_txn_commit(t), "mdb_txn_commit")

    def abort(self):
        if self.txn is not None:
            self.lib.c.mdb_txn_abort(self.txn)
            self.txn = None

    def id(self):
        return self.lib.c.mdb_txn_id(self.txn)

    def open_db(self, name=None, flags=0):
        d = self.lib.ffi.new("MDB_dbi *")
        cname = self.lib.ffi.NULL if name is None else self.lib.ffi.new("char[]", name)
        self.lib.check(
            self.lib.c.mdb_dbi_open(self.txn, cname, flags, d), f"mdb_dbi_open({name!r})"
        )
        return d[0]

    def dbi_flags(self, dbi):
        f = self.lib.ffi.new("unsigned int *")
        self.lib.check(self.lib.c.mdb_dbi_flags(self.txn, dbi, f), "mdb_dbi_flags")
        return f[0]

    def stat(self, dbi):
        st = self.lib.ffi.new("MDB_stat *")
        self.lib.check(self.lib.c.mdb_stat(self.txn, dbi, st), "mdb_stat")
        return {
            "psize": st.ms_psize,
            "depth": st.ms_depth,
            "branch": st.ms_branch_pages,
            "leaf": st.ms_leaf_pages,
            "overflow": st.ms_overflow_pages,
            "entries": st.ms_entries,
        }

    def put(self, dbi, key, value, flags=0):
        k, kk = self.lib.val(key)
        v, vk = self.lib.val(value)
        self.lib.check(self.lib.c.mdb_put(self.txn, dbi, k, v, flags), "mdb_put")

    def get(self, dbi, key):
        """The value, or None when the key is absent."""
        k, kk = self.lib.val(key)
        v = self.lib.ffi.new("MDB_val *")
        rc = self.lib.c.mdb_get(self.txn, dbi, k, v)
        if rc == NOTFOUND:
            return None
        self.lib.check(rc, "mdb_get")
        return self.lib.tobytes(v)

    def delete(self, dbi, key, value=None):
        k, kk = self.lib.val(key)
        if value is None:
            rc = self.lib.c.mdb_del(self.txn, dbi, k, self.lib.ffi.NULL)
        else:
            v, vk = self.lib.val(value)
            rc = self.lib.c.mdb_del(self.txn, dbi, k, v)
        if rc == NOTFOUND:
            return False
        self.lib.check(rc, "mdb_del")
        return True

    def items(self, dbi):
        """Every (key, value) pair in cursor order (all duplicates of DUPSORT keys)."""
        lib = self.lib
        cp = lib.ffi.new("MDB_cursor **")
        lib.check(lib.c.mdb_cursor_open(self.txn, dbi, cp), "mdb_cursor_open")
        cur = cp[0]
        k = lib.ffi.new("MDB_val *")
        v = lib.ffi.new("MDB_val *")
        try:
            op = FIRST
            while True:
                rc = lib.c.mdb_cursor_get(cur, k, v, op)
                if rc == NOTFOUND:
                    return
                lib.check(rc, "mdb_cursor_get")
                yield lib.tobytes(k), lib.tobytes(v)
                op = NEXT
        finally:
            lib.c.mdb_cursor_close(cur)
