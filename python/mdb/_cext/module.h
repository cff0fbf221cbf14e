/*
 * module.h -- shared declarations of the mdb._cext CPython extension.
 *
 * Owns: the object structs of every Python type of the extension, the helpers
 * each type file may call (errors.c, buffers.c, lifetime.c, args.c) and the
 * one GIL-release macro.
 *
 * Object graph and lifetimes (see lifetime.c for the passes):
 *
 *   MapKeeper  <-- strong -- Environment --- list --> Transaction --- list --> Cursor
 *       ^                        |                        ^                      ^
 *       |                        +-- dict name -> _Database                      |
 *       +--- strong -- MapBuffer (exporter behind every buffers=True memoryview) |
 *                                                          Iterator -- strong ---+
 *
 * The MapKeeper owns the MDB_env*.  Environment.close() invalidates every
 * transaction and cursor, then drops its reference to the keeper; the real
 * mdb_env_close() runs when the last reference goes, i.e. after the last
 * exported buffer is released.  So a memoryview handed out with buffers=True
 * always points at mapped memory: stale after its transaction ends, never a
 * dangling pointer.  Values that live outside the map (dirty pages of a write
 * transaction are heap memory) are copied instead of exported.
 *
 * Fork safety: every object remembers the pid of the process that opened its
 * environment; an inherited object used in a child raises an error and its
 * deallocation leaks the engine handles rather than touching the parent's
 * reader slots or locks.
 */
#ifndef MDB_CEXT_MODULE_H
#define MDB_CEXT_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <lmdb.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "gil.h"

/* ------------------------------------------------------------------ types */

typedef struct MapKeeper {
    PyObject_HEAD
    MDB_env *env;          /* NULL once really closed */
    pid_t pid;             /* process that opened it */
    Py_ssize_t exports;    /* live MapBuffer objects */
    PyObject *reg_key;     /* key in mdb._registry (duplicate-open guard) */
} MapKeeper;

typedef struct DbObject {
    PyObject_HEAD
    MDB_dbi dbi;
    unsigned int flags;
    int valid;
    void *owner;           /* the EnvObject it belongs to (borrowed, identity only) */
    void *creator;         /* TxnObject that opened it and has not committed yet, or NULL */
} DbObject;

struct TxnObject;
struct CursorObject;

typedef struct EnvObject {
    PyObject_HEAD
    PyObject *weakreflist;
    MapKeeper *keeper;     /* NULL once closed */
    MDB_env *env;          /* keeper->env while open, else NULL */
    pid_t pid;
    int valid;
    int readonly;
    unsigned int env_flags;
    char *map_lo, *map_hi; /* current map range, to tell map pages from heap pages */
    DbObject *main_db;
    PyObject *dbs;         /* dict: bytes name -> DbObject */
    struct TxnObject *txns;/* every live transaction (intrusive list) */
    int write_txns;        /* live top-level write transactions */
    pthread_t writer;      /* thread owning the top-level write txn */
    int active_ops;        /* calls running with the GIL released */
    int max_spare_txns;
    MDB_txn *spare;        /* one reset read txn kept for reuse */
} EnvObject;

typedef struct TxnObject {
    PyObject_HEAD
    PyObject *weakreflist;
    EnvObject *env;        /* strong */
    struct TxnObject *parent; /* strong */
    MDB_txn *txn;          /* NULL once ended */
    DbObject *db;          /* default database, strong */
    int valid;
    int write;
    int buffers;
    int busy;              /* an op runs on it with the GIL released */
    int loading;           /* load_sorted runs: its iterable may not use this txn */
    int created_dbs;       /* databases opened in this txn, not yet committed */
    struct TxnObject *next, *prev;   /* env->txns list */
    struct CursorObject *cursors;    /* cursors of this txn */
} TxnObject;

typedef struct CursorObject {
    PyObject_HEAD
    PyObject *weakreflist;
    TxnObject *txn;        /* strong; NULL once closed */
    DbObject *db;          /* strong */
    MDB_cursor *cur;
    int valid;
    int positioned;
    /* put() or putmulti() placed a cursor that was not positioned: py-lmdb's delete() still
     * sees it unpositioned (its flag follows reads only) until key()/value()/item() or a
     * move reads it again, and so does ours */
    int put_only;
    MDB_val key, val;
    struct CursorObject *next, *prev;
} CursorObject;

typedef struct IterObject {
    PyObject_HEAD
    CursorObject *cursor;  /* strong */
    MDB_cursor_op start_op;/* used by the first step when the cursor is unpositioned */
    MDB_cursor_op op;      /* step */
    int begun;             /* the first __next__ ran (start_op is tried only there) */
    int started;           /* a record was yielded: later steps move with op first */
    int keys, values;
} IterObject;

typedef struct MapBuffer {
    PyObject_HEAD
    MapKeeper *keeper;
    void *data;
    Py_ssize_t len;
} MapBuffer;

extern PyTypeObject MdbKeeper_Type;
extern PyTypeObject MdbEnv_Type;
extern PyTypeObject MdbTxn_Type;
extern PyTypeObject MdbCursor_Type;
extern PyTypeObject MdbDb_Type;
extern PyTypeObject MdbIter_Type;
extern PyTypeObject MdbMapBuffer_Type;

/* ---------------------------------------------------------------- globals */

extern pid_t mdb_cur_pid;            /* updated in forked children */
extern PyObject *mdb_error_factory;  /* mdb.errors._from_code */
extern PyObject *mdb_Error;          /* mdb.errors.Error */
extern PyObject *mdb_registry;       /* mdb._registry module */
extern PyObject *mdb_common;         /* mdb._common module: the cold code both backends share */

/* ---------------------------------------------------------------- errors.c */

/* Raise the exception mapped from an engine return code (one table, in
 * mdb/errors.py).  Always returns NULL. */
PyObject *err_set(const char *what, int rc);
/* Raise mdb.Error with a fixed message and code 0. */
PyObject *err_msg(const char *msg);
PyObject *err_invalid(void);         /* closed/deleted/dropped object */
PyObject *err_forked(pid_t pid);        /* used in a forked child */
PyObject *err_typed(PyObject *cls_name_obj, const char *what, int rc, const char *msg);
PyObject *err_badvalsize(const char *what, Py_ssize_t got, Py_ssize_t limit);

/* ---------------------------------------------------------------- buffers.c */

/* An input buffer: bytes fast path, else any buffer-protocol object. */
typedef struct {
    Py_buffer view;
    int have_view;
} InBuf;

int inbuf_get(PyObject *obj, MDB_val *val, InBuf *buf, const char *argname);
void inbuf_release(InBuf *buf);
/* A record's key and value (argument names "key", "value"): both or neither taken. */
int inbuf_get_kv(PyObject *key, PyObject *value, MDB_val *k, MDB_val *v, InBuf *kb, InBuf *vb);
/* Output value: bytes copy, or a memoryview over the map (buffers=True). */
PyObject *outval(TxnObject *txn, const MDB_val *val);
PyObject *outval_buffers(EnvObject *env, int buffers, const MDB_val *val);

/* ---------------------------------------------------------------- args.c */

/* Fast-call argument parser: names is NULL-terminated; out[i] receives a
 * borrowed reference or stays untouched (caller presets defaults). */
int args_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames, const char *const *names, PyObject **out);
int args_bool(PyObject *obj, int *out);
/* args_parse, then a TypeError "fname() missing required argument WHAT" unless the first
 * nreq outputs were given (what may be NULL: no argument named). */
int args_parse_req(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames, const char *const *names, PyObject **out, int nreq,
                   const char *what);
/* Several args_bool at once: out[i] from objs[i], for i < n. */
int args_bools(PyObject *const *objs, int *out, int n);
/* __enter__: self (a new reference) when check is 0, else NULL (its exception stands). */
PyObject *args_enter(PyObject *self, int check);

/* PyList_Append of a new reference `o`, which is dropped (NULL: the error stands). */
int list_append_new(PyObject *list, PyObject *o);
/* A new empty list stored in dict d under key; borrowed (the dict holds it), NULL on error. */
PyObject *dict_new_list(PyObject *d, const char *key);
/* The strings of list joined into one (new reference). */
PyObject *join_strings(PyObject *list);

/* o with one more reference (Py_NewRef, which Python 3.9 lacks). */
static inline PyObject *new_ref(void *o)
{
    Py_INCREF((PyObject *)o);
    return (PyObject *)o;
}

/* The head of every type object of the module: name, size and deallocator. */
#define MDB_TYPE_HEAD(name, type, dealloc)                                                   \
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = (name), .tp_basicsize = sizeof(type),         \
                                   .tp_dealloc = (destructor)(dealloc)

/* ---------------------------------------------------------------- lifetime.c */

int env_check(EnvObject *env);       /* 0 ok, -1 with exception */
int txn_check(TxnObject *txn);
int cursor_check(CursorObject *cur);
/* Mark txn and its ancestors busy (+1) or not (-1) around a call that runs
 * without the GIL: none of them may end meanwhile. */
void txn_busy(TxnObject *txn, int delta);
void txn_link(EnvObject *env, TxnObject *txn);
void txn_unlink(TxnObject *txn);
void cursor_link(TxnObject *txn, CursorObject *cur);
void cursor_unlink(CursorObject *cur);
/* Close every cursor of txn (engine side too). */
void txn_close_cursors(TxnObject *txn);
/* End txn: commit (commit=1) or abort; also ends its live children first.
 * Returns the engine rc of the commit (0 for abort). */
int txn_end(TxnObject *txn, int commit);
/* Invalidate cursors of every txn of env that use dbi. */
void env_invalidate_db(EnvObject *env, MDB_dbi dbi, int close);
/* The same for the cursors of one txn only. */
void txn_invalidate_db(TxnObject *t, MDB_dbi dbi, int close);
/* Abort every transaction of env (used by close and set_mapsize). */
void env_end_all_txns(EnvObject *env);

/* ---------------------------------------------------------------- helpers */

DbObject *db_new(EnvObject *env, MDB_dbi dbi, unsigned int flags);
PyObject *db_flags_dict(unsigned int flags);
DbObject *txn_resolve_db(TxnObject *txn, PyObject *db);  /* borrowed */
PyObject *txn_new(EnvObject *env, DbObject *db, TxnObject *parent, int write, int buffers);
PyObject *cursor_new(TxnObject *txn, DbObject *db);
PyObject *iter_new(CursorObject *cur, MDB_cursor_op start_op, MDB_cursor_op op,
                   int keys, int values);
PyObject *stat_dict(const MDB_stat *st);
int env_update_map_range(EnvObject *env);
PyObject *cursor_item_tuple(CursorObject *cur, int keys, int values);
int cursor_do(CursorObject *cur, MDB_cursor_op op, MDB_val *k, MDB_val *v);
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_CORE_CHECK)
PyObject *mdb_core_check(EnvObject *self);   /* check.c */
PyObject *mdb_core_freelist(EnvObject *self); /* check.c */
#endif
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_MDBCORE_H)
PyObject *mdb_core_readers_detail(EnvObject *self);         /* extras.c */
int mdb_core_reader_age(EnvObject *self, unsigned long long *age); /* extras.c */
PyObject *mdb_core_meta_status(EnvObject *self);                  /* extras.c */
PyObject *mdb_core_load_sorted(TxnObject *txn, DbObject *db, PyObject *iterable); /* extras.c */
#endif

#endif
