"""Emit the C source of mdb._cffi_lib (cffi out-of-line API mode).

Run by CMake at build time: ``python build.py OUT.c [--core-check]``
(``--core-check`` when linking our core, whose checker Environment.check()
uses).  The generated module
is compiled and linked against the same engine as mdb._cext (our core, or the
system liblmdb with MDB_SYSTEM_LMDB=ON); CMake supplies the include paths.
The declarations below are checked against the real lmdb.h by the C compiler
(API mode), so a mismatch fails the build instead of corrupting memory.
"""

from __future__ import annotations

import os
import re
import sys

import cffi

CDEF = r"""
typedef struct MDB_env MDB_env;
typedef struct MDB_txn MDB_txn;
typedef struct MDB_cursor MDB_cursor;
typedef unsigned int MDB_dbi;
typedef unsigned int mdb_mode_t;
typedef int mdb_filehandle_t;
typedef struct MDB_val { size_t mv_size; void *mv_data; } MDB_val;
typedef struct MDB_stat {
    unsigned int ms_psize; unsigned int ms_depth; size_t ms_branch_pages;
    size_t ms_leaf_pages; size_t ms_overflow_pages; size_t ms_entries;
} MDB_stat;
typedef struct MDB_envinfo {
    void *me_mapaddr; size_t me_mapsize; size_t me_last_pgno; size_t me_last_txnid;
    unsigned int me_maxreaders; unsigned int me_numreaders;
} MDB_envinfo;
typedef int (MDB_msg_func)(const char *msg, void *ctx);

#define MDB_VERSION_MAJOR ...
#define MDB_VERSION_MINOR ...
#define MDB_VERSION_PATCH ...
#define MDB_NOSUBDIR ...
#define MDB_NOSYNC ...
#define MDB_RDONLY ...
#define MDB_NOMETASYNC ...
#define MDB_WRITEMAP ...
#define MDB_MAPASYNC ...
#define MDB_NOTLS ...
#define MDB_NOLOCK ...
#define MDB_NORDAHEAD ...
#define MDB_NOMEMINIT ...
#define MDB_REVERSEKEY ...
#define MDB_DUPSORT ...
#define MDB_INTEGERKEY ...
#define MDB_DUPFIXED ...
#define MDB_INTEGERDUP ...
#define MDB_CREATE ...
#define MDB_NOOVERWRITE ...
#define MDB_NODUPDATA ...
#define MDB_APPEND ...
#define MDB_APPENDDUP ...
#define MDB_CP_COMPACT ...
#define MDB_NOTFOUND ...
#define MDB_KEYEXIST ...
#define MDB_BAD_VALSIZE ...
#define MDB_INCOMPATIBLE ...

typedef enum MDB_cursor_op {
    MDB_FIRST, MDB_FIRST_DUP, MDB_GET_BOTH, MDB_GET_BOTH_RANGE, MDB_GET_CURRENT,
    MDB_GET_MULTIPLE, MDB_LAST, MDB_LAST_DUP, MDB_NEXT, MDB_NEXT_DUP, MDB_NEXT_MULTIPLE,
    MDB_NEXT_NODUP, MDB_PREV, MDB_PREV_DUP, MDB_PREV_NODUP, MDB_SET, MDB_SET_KEY,
    MDB_SET_RANGE, ...
} MDB_cursor_op;

char *mdb_version(int *major, int *minor, int *patch);
char *mdb_strerror(int err);
int mdb_env_create(MDB_env **env);
int mdb_env_open(MDB_env *env, const char *path, unsigned int flags, mdb_mode_t mode);
int mdb_env_copy2(MDB_env *env, const char *path, unsigned int flags);
int mdb_env_copyfd2(MDB_env *env, mdb_filehandle_t fd, unsigned int flags);
int mdb_env_stat(MDB_env *env, MDB_stat *stat);
int mdb_env_info(MDB_env *env, MDB_envinfo *stat);
int mdb_env_sync(MDB_env *env, int force);
void mdb_env_close(MDB_env *env);
int mdb_env_get_flags(MDB_env *env, unsigned int *flags);
int mdb_env_get_path(MDB_env *env, const char **path);
int mdb_env_get_fd(MDB_env *env, mdb_filehandle_t *fd);
int mdb_env_set_mapsize(MDB_env *env, size_t size);
int mdb_env_set_maxreaders(MDB_env *env, unsigned int readers);
int mdb_env_get_maxreaders(MDB_env *env, unsigned int *readers);
int mdb_env_set_maxdbs(MDB_env *env, MDB_dbi dbs);
int mdb_env_get_maxkeysize(MDB_env *env);
int mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn);
size_t mdb_txn_id(MDB_txn *txn);
int mdb_txn_commit(MDB_txn *txn);
void mdb_txn_abort(MDB_txn *txn);
void mdb_txn_reset(MDB_txn *txn);
int mdb_txn_renew(MDB_txn *txn);
int mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
int mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat);
int mdb_dbi_flags(MDB_txn *txn, MDB_dbi dbi, unsigned int *flags);
int mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del);
int mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor);
void mdb_cursor_close(MDB_cursor *cursor);
int mdb_cursor_del(MDB_cursor *cursor, unsigned int flags);
int mdb_cursor_count(MDB_cursor *cursor, size_t *countp);
int mdb_reader_list(MDB_env *env, MDB_msg_func *func, void *ctx);
int mdb_reader_check(MDB_env *env, int *dead);

extern "Python" int _mdbpy_reader_cb(const char *, void *);
#define MDBPY_BADKEY ...
#define MDBPY_BADVAL ...
#define MDBPY_BIG ...
#define MDBPY_STALE ...
#define MDBPY_OUT ...
#define MDBPY_ERR ...
#define MDBPY_LOST ...
#define MDBPY_LOST_EXIST ...
"""

# bytes_arg.h's helpers: a bytes key or value passed without its length (see there).
BYTES_CDEF = r"""
long long mdbpy_bytes_probe(const char *data, uintptr_t obj, size_t size);
long long mdbpy_bytes_use(long long off);
long long mdbpy_tget_b(mdbpy_txnst *t, const char *k);
int mdbpy_tput_b(mdbpy_txnst *t, const char *k, const char *v);
int mdbpy_tdel_b(mdbpy_txnst *t, const char *k);
int mdbpy_cput_b(mdbpy_curst *c, const char *k, const char *v, unsigned int flags);
"""

CHECK_CDEF = r"""
extern "Python" int _mdbpy_load_refill(void *, mdbpy_chunk *);
"""

HELPERS_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers.h")
_CORE_PART = "/* Checker glue"  # where helpers.h's core-only declarations begin


def helpers_decls() -> tuple[str, str]:
    """helpers.h's declarations, as cdef text: (those of every build, those of our core's
    only).  Comments and preprocessor lines are left out: CDEF declares the MDBPY_
    constants as `...`, which the C compiler fills in."""
    with open(HELPERS_H) as f:
        text = f.read()
    i = text.index(_CORE_PART)
    common, core = text[:i], text[text.index("*/", i) + 2 :]

    def cdef_text(part: str) -> str:
        part = re.sub(r"/\*.*?\*/", "", part, flags=re.S)
        return "\n".join(ln for ln in part.splitlines() if not ln.lstrip().startswith("#"))

    return cdef_text(common), cdef_text(core)


def make_ffi(core_check: bool = False) -> cffi.FFI:
    """The FFI builder of mdb._cffi_lib (with the checker glue if core_check)."""
    ffi = cffi.FFI()
    common, core = helpers_decls()
    ffi.cdef(CDEF + common + BYTES_CDEF + (core + CHECK_CDEF if core_check else ""))
    ffi.set_source(
        "mdb._cffi_lib",
        '#include <lmdb.h>\n#include "helpers.h"\n#include "keep_gil.h"\n#include "bytes_arg.h"\n',
    )
    return ffi


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--core-check"):
        print("usage: build.py OUT.c [--core-check]", file=sys.stderr)
        return 2
    make_ffi(core_check=len(argv) == 3).emit_c_code(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
