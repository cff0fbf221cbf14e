/*
 * helpers.h -- small C helpers for the cffi backend (mdb._cffi_lib).
 *
 * They take keys and values as (pointer, length) pairs so the Python side can
 * pass bytes or ffi.from_buffer() objects straight through without building
 * MDB_val structs per call.
 */
#ifndef MDB_CFFI_HELPERS_H
#define MDB_CFFI_HELPERS_H
#include <lmdb.h>
#include <stddef.h>

/* An MDB_val with a char pointer: ffi.unpack() takes it without an ffi.cast() per call. */
typedef struct mdbpy_val {
    size_t mv_size;
    char *mv_data;
} mdbpy_val;

/* Returned by mdbpy_put/mdbpy_cursor_put before any write: the key is empty or longer
 * than mdb_env_get_maxkeysize(), or (DUPSORT) the value is longer than that. */
#define MDBPY_BADKEY (-1)
#define MDBPY_BADVAL (-2)
/* *rc of mdbpy_cursor_batch when a record did not fit in the buffer (see there). */
#define MDBPY_BIG (-3)

int mdbpy_get(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, mdbpy_val *out);
int mdbpy_put(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, const char *v,
              size_t vlen, unsigned int flags);
int mdbpy_del(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, const char *v,
              size_t vlen, int with_value);
int mdbpy_cursor_get(MDB_cursor *cur, int op, const char *k, size_t klen, const char *v,
                     size_t vlen, mdbpy_val *ko, mdbpy_val *vo);
int mdbpy_cursor_put(MDB_cursor *cur, const char *k, size_t klen, const char *v, size_t vlen,
                     unsigned int flags);
/*
 * Step cur with op up to max times.  Each record's key and value are copied one after the
 * other into buf (cap bytes), and fmt receives a struct-module format that splits buf back
 * into them ("<16s100s16s100s..."; 1 + 42 * max bytes are enough).  Stops at the first step
 * that fails (*rc = its error, the cursor where the engine left it) or whose record does
 * not fit in what is left of buf (*rc = MDBPY_BIG, the cursor on that record, which is left
 * in big[0] and big[1] and not counted); *rc = 0 if all max steps succeeded.  *n = records
 * copied.  Returns the length of fmt.
 */
size_t mdbpy_cursor_batch(MDB_cursor *cur, int op, int max, char *buf, size_t cap, char *fmt,
                          mdbpy_val *big, int *n, int *rc);
/*
 * The guard of the hot calls (Transaction.get/put/delete, the Cursor moves, reads and
 * puts).  Each Environment, Transaction and Cursor owns a state (ffi.new) whose `gate`
 * says whether calls may start (bit 0, "open") and counts those in flight (the other
 * bits, 2 per call).  The mdbpy_t* and mdbpy_c* helpers count themselves there while
 * they use the engine, instead of the Python-level counters (_active/_busy) that
 * _enter/_leave keep, which cost more than the engine call itself.  The gate is only
 * touched atomically (sequentially consistent): the helpers run with the GIL released.
 * A call adds itself to its cursor's gate (if any), its transaction's and every
 * ancestor's, and then checks the environment's: so whoever ends an object either sees
 * the call in flight (mdbpy_close: refused, or waited for), or the call sees the gate
 * shut and returns MDBPY_STALE without touching the engine (the Python side then takes
 * its slow path, which raises the usual error).  An environment's closer shuts its gate,
 * then ends every transaction (each end waits for its count).
 */
#define MDBPY_STALE (-4)
/* mdbpy_tget/mdbpy_cread: found, but too big to copy (see there). */
#define MDBPY_OUT (-5)
/* mdbpy_tget/mdbpy_cread: an engine error, left in the state's rc. */
#define MDBPY_ERR (-6)
/* Every state begins with its gate (mdbpy_close etc. take any of them). */
typedef struct mdbpy_envst {
    unsigned int gate; /* (nothing is counted here: calls count on their txns) */
} mdbpy_envst;
typedef struct mdbpy_txnst {
    unsigned int gate;
    int rc;
    MDB_dbi dbi; /* the transaction's default database */
    MDB_txn *txn;
    struct mdbpy_txnst *parent;
    mdbpy_envst *env;
    char buf[2048]; /* values up to this size are copied here (bytes from one slice) */
} mdbpy_txnst;
typedef struct mdbpy_curst {
    unsigned int gate;
    int rc;
    MDB_cursor *cur;
    mdbpy_txnst *txn;
    mdbpy_val k;
    mdbpy_val v;
    char buf[2048]; /* key and value, back to back, when they fit */
} mdbpy_curst;
/*
 * Begin a write transaction (a child of parent's if not NULL) into a new state t
 * (allocated unzeroed, never used before), fill t in (t->txn is the engine's txn) and
 * open its gate.  Returns the engine's error, with t's gate left shut.  One call where
 * Transaction.__init__ made three: each cffi call costs ~100 ns of its own.
 */
int mdbpy_tbegin(mdbpy_txnst *t, MDB_env *env, mdbpy_txnst *parent, MDB_dbi dbi,
                 mdbpy_envst *envst);
/* The same for a read txn: renews spare (a reset read txn, or NULL) if it can (one that
 * will not renew is aborted), else begins one.  Keeps the GIL (see keep_gil.h). */
int mdbpy_tbegin_read(mdbpy_txnst *t, MDB_env *env, MDB_txn *spare, MDB_dbi dbi,
                      mdbpy_envst *envst);
/*
 * End a read txn that has no cursors: shut t's gate (with if_idle, only if no call is in
 * flight, else return 1 with nothing done; without, wait for those in flight), then
 * mdb_txn_reset (keep: it becomes the caller's spare) or mdb_txn_abort.  Returns 0 once
 * ended.
 */
int mdbpy_tend_read(mdbpy_txnst *t, int if_idle, int keep);
void mdbpy_cinit(mdbpy_curst *c, MDB_cursor *cur, mdbpy_txnst *txn);
/* Shut the gate of st (any state).  With if_idle, only if no call is in flight: 0 if
 * shut, else nonzero and nothing changed (a commit/abort/close refused).  Without: shut
 * in any case; returns the calls still in flight (the caller waits for 0). */
int mdbpy_close(void *st, int if_idle);
/* Open the gate of st again (set_mapsize's end). */
void mdbpy_open(void *st);
/*
 * mdbpy_get/put/del on t's default database, guarded as above.  tget returns the value's
 * size once copied into t->buf, MDB_NOTFOUND, MDBPY_STALE, MDBPY_ERR (the error in t->rc)
 * or MDBPY_OUT: found but bigger than t->buf (then the caller reads it again its slow
 * way: a pointer into the map is only safe to read while the call is counted, and a
 * count held across Python code could leak).
 */
long long mdbpy_tget(mdbpy_txnst *t, const char *k, size_t klen);
int mdbpy_tput(mdbpy_txnst *t, const char *k, size_t klen, const char *v, size_t vlen);
int mdbpy_tdel(mdbpy_txnst *t, const char *k, size_t klen);
/*
 * The cursor's hot calls, guarded as above (counted on the cursor, then on its txn and
 * the txn's ancestors).  They leave the record in c->k and c->v as mdbpy_cursor_get does.
 * cmove steps with op and returns its rc (or MDBPY_STALE).  cread steps with op
 * (MDB_GET_CURRENT: stays) and cseek positions with op and a key (MDB_SET_KEY,
 * MDB_SET_RANGE); both copy the record into c->buf, key then value, and return r >= 0:
 * the key's length is r & 0xffff and the value ends at r >> 16; else MDB_NOTFOUND,
 * MDBPY_STALE (nothing done), MDBPY_ERR (the error in c->rc) or MDBPY_OUT (positioned,
 * but the record does not fit in c->buf: the caller reads it again its slow way).
 */
int mdbpy_cmove(mdbpy_curst *c, int op);
long long mdbpy_cread(mdbpy_curst *c, int op);
long long mdbpy_cseek(mdbpy_curst *c, int op, const char *k, size_t klen);
/* mdbpy_cursor_put, then MDB_GET_CURRENT as Cursor.put's caller does after a put that
 * wrote or found the key: its rc, or MDBPY_LOST (put succeeded) / MDBPY_LOST_EXIST
 * (MDB_KEYEXIST) when the cursor is not on a record afterwards; MDBPY_STALE. */
#define MDBPY_LOST (-7)
#define MDBPY_LOST_EXIST (-8)
int mdbpy_cput(mdbpy_curst *c, const char *k, size_t klen, const char *v, size_t vlen,
               unsigned int flags);
int mdbpy_have_check(void);
/* 1 if the calling thread holds the GIL during the call: mdbpy_keeps_gil is one of the
 * calls keep_gil.h exempts, mdbpy_gil_held is not (a test checks both). */
int mdbpy_keeps_gil(void);
int mdbpy_gil_held(void);
/* Touch every page of [p, p+n) (cffi calls it with the GIL released). */
void mdbpy_prefault(const char *p, size_t n);

/* Checker glue (only with our core; see build.py --core-check). */
void *mdbpy_check_run(MDB_env *env, int *rc);
int mdbpy_check_num(void *rp, int i, unsigned long long *out);
size_t mdbpy_check_nproblems(void *rp);
void mdbpy_check_problem(void *rp, size_t i, unsigned long long *pgno, int *code,
                         const char **db, const char **msg);
size_t mdbpy_check_ndbs(void *rp);
void mdbpy_check_db(void *rp, size_t i, const char **name, unsigned long long *vals);
int mdbpy_check_text(void *rp, MDB_msg_func *func, void *ctx);
void mdbpy_check_free(void *rp);
/* Environment.freelist() (mdbcore_freelist_env): the list, or NULL when *rc is an error
 * other than MDB_CORRUPTED (then the list holds the first problem: mdbpy_freelist_bad). */
void *mdbpy_freelist_run(MDB_env *env, int *rc);
/* depth, branch_pages, leaf_pages, overflow_pages, entries of the free DB's record */
void mdbpy_freelist_nums(void *fp, unsigned long long *vals);
size_t mdbpy_freelist_nrecords(void *fp);
void mdbpy_freelist_record(void *fp, size_t i, unsigned long long *txnid, size_t *npages,
                           const unsigned long long **pages);
void mdbpy_freelist_bad(void *fp, unsigned long long *pgno, const char **msg);
void mdbpy_freelist_free(void *fp);
/* Extras beyond LMDB's API (our core only: mdbcore.h). */
int mdbpy_reader_info(MDB_env *env, unsigned long long *vals, size_t max, size_t *count,
                      unsigned flags);
/* Transaction.load_sorted: records come in chunks -- `data` holds key and value bytes back
 * to back, `sizes` their lengths (2 per record), `n` records -- so that Python is called
 * once per chunk, not once per record.  refill() fills the next chunk and returns 0, 1 at
 * the end of the input, or -1 when Python raised. */
typedef struct mdbpy_chunk {
    const char *data;
    const size_t *sizes;
    size_t n;
} mdbpy_chunk;
typedef int (*mdbpy_refill_fn)(void *handle, mdbpy_chunk *chunk);
int mdbpy_bulk_load(MDB_txn *txn, MDB_dbi dbi, mdbpy_refill_fn refill, void *handle,
                    size_t *count, int *py_error);
/* info()["meta"] (mdbcore_env_meta_status): flags, used page, used txnid, damaged page
 * (-1: none), damaged txnid into vals[5]; *reason the damaged page's reason or NULL. */
int mdbpy_meta_status(MDB_env *env, long long *vals, const char **reason);
/* A map that grows by itself (mdbcore_env_set_maxsize / get_maxsize); where the map is
 * and the address space reserved from its start (mdbcore_env_get_mapaddr / mapspan). */
int mdbpy_set_maxsize(MDB_env *env, unsigned long long bytes);
unsigned long long mdbpy_get_maxsize(MDB_env *env);
unsigned long long mdbpy_get_mapspan(MDB_env *env);
unsigned long long mdbpy_get_mapaddr(MDB_env *env);
#endif
