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
int mdbpy_have_check(void);
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
/* Issue 13 extras (our core only). */
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
/* A map that grows by itself (mdbcore_env_set_maxsize / get_maxsize). */
int mdbpy_set_maxsize(MDB_env *env, unsigned long long bytes);
unsigned long long mdbpy_get_maxsize(MDB_env *env);
#endif
