"""lmdbffi -- drive any LMDB-0.9-compatible shared library from Python (cffi, ABI mode).

What this file owns
    A hand-written cdef of the LMDB 0.9 C API, the constant values the tests need, and a
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

from cffi import FFI

CDEF = r"""
typedef struct MDB_env MDB_env;
typedef struct MDB_txn MDB_txn;
typedef struct MDB_cursor MDB_cursor;
typedef unsigned int MDB_dbi;
typedef unsigned int mdb_mode_t;
typedef int mdb_filehandle_t;

typedef struct MDB_val { size_t mv_size; void *mv_data; } MDB_val;
typedef struct MDB_stat {
    unsigned int ms_psize; unsigned int ms_depth;
    size_t ms_branch_pages; size_t ms_leaf_pages; size_t ms_overflow_pages; size_t ms_entries;
} MDB_stat;
typedef struct MDB_envinfo {
    void *me_mapaddr; size_t me_mapsize; size_t me_last_pgno; size_t me_last_txnid;
    unsigned int me_maxreaders; unsigned int me_numreaders;
} MDB_envinfo;

typedef int MDB_cursor_op;
typedef int (MDB_msg_func)(const char *msg, void *ctx);

char *mdb_version(int *major, int *minor, int *patch);
char *mdb_strerror(int err);

int  mdb_env_create(MDB_env **env);
int  mdb_env_open(MDB_env *env, const char *path, unsigned int flags, mdb_mode_t mode);
void mdb_env_close(MDB_env *env);
int  mdb_env_copy(MDB_env *env, const char *path);
int  mdb_env_copy2(MDB_env *env, const char *path, unsigned int flags);
int  mdb_env_stat(MDB_env *env, MDB_stat *stat);
int  mdb_env_info(MDB_env *env, MDB_envinfo *stat);
int  mdb_env_sync(MDB_env *env, int force);
int  mdb_env_set_flags(MDB_env *env, unsigned int flags, int onoff);
int  mdb_env_get_flags(MDB_env *env, unsigned int *flags);
int  mdb_env_get_path(MDB_env *env, const char **path);
int  mdb_env_set_mapsize(MDB_env *env, size_t size);
int  mdb_env_set_maxreaders(MDB_env *env, unsigned int readers);
int  mdb_env_get_maxreaders(MDB_env *env, unsigned int *readers);
int  mdb_env_set_maxdbs(MDB_env *env, MDB_dbi dbs);
int  mdb_env_get_maxkeysize(MDB_env *env);

int  mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn);
MDB_env *mdb_txn_env(MDB_txn *txn);
size_t mdb_txn_id(MDB_txn *txn);
int  mdb_txn_commit(MDB_txn *txn);
void mdb_txn_abort(MDB_txn *txn);
void mdb_txn_reset(MDB_txn *txn);
int  mdb_txn_renew(MDB_txn *txn);

int  mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
int  mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat);
int  mdb_dbi_flags(MDB_txn *txn, MDB_dbi dbi, unsigned int *flags);
void mdb_dbi_close(MDB_env *env, MDB_dbi dbi);
int  mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del);

int  mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int  mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags);
int  mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);

int  mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor);
void mdb_cursor_close(MDB_cursor *cursor);
int  mdb_cursor_renew(MDB_txn *txn, MDB_cursor *cursor);
int  mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op);
int  mdb_cursor_put(MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags);
int  mdb_cursor_del(MDB_cursor *cursor, unsigned int flags);
int  mdb_cursor_count(MDB_cursor *cursor, size_t *countp);

int  mdb_reader_list(MDB_env *env, MDB_msg_func *func, void *ctx);
int  mdb_reader_check(MDB_env *env, int *dead);
"""

# Constant values of the LMDB 0.9 ABI (flags: docs/design.md#flag-bits; return codes:
# src/mdbcore/errors.def).  tests/c/api/check_headers.py
# checks the headers themselves; these are only what the Python harness uses.
NOSUBDIR = 0x4000
NOSYNC = 0x10000
RDONLY = 0x20000
NOMETASYNC = 0x40000
WRITEMAP = 0x80000
NOTLS = 0x200000
NOLOCK = 0x400000

REVERSEKEY = 0x02
DUPSORT = 0x04
INTEGERKEY = 0x08
DUPFIXED = 0x10
INTEGERDUP = 0x20
REVERSEDUP = 0x40
CREATE = 0x40000

NOOVERWRITE = 0x10
NODUPDATA = 0x20
APPEND = 0x20000

FIRST, GET_CURRENT, NEXT, SET_RANGE = 0, 4, 8, 17

KEYEXIST = -30799
NOTFOUND = -30798
CORRUPTED = -30796
VERSION_MISMATCH = -30794
INVALID = -30793
MAP_FULL = -30792


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
