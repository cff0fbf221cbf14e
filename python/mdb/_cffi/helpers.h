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

int mdbpy_get(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, MDB_val *out);
int mdbpy_put(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, const char *v,
              size_t vlen, unsigned int flags);
int mdbpy_del(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, const char *v,
              size_t vlen, int with_value);
int mdbpy_cursor_get(MDB_cursor *cur, int op, const char *k, size_t klen, const char *v,
                     size_t vlen, MDB_val *ko, MDB_val *vo);
int mdbpy_cursor_put(MDB_cursor *cur, const char *k, size_t klen, const char *v, size_t vlen,
                     unsigned int flags);
int mdbpy_have_check(void);
#endif
