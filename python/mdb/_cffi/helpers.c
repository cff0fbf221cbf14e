/*
 * helpers.c -- see helpers.h.  Compiled into mdb._cffi_lib next to the
 * cffi-generated source and linked to the same engine as mdb._cext.
 */
#include "helpers.h"

int mdbpy_get(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, MDB_val *out)
{
    MDB_val key = {klen, (void *)k};
    return mdb_get(txn, dbi, &key, out);
}

int mdbpy_put(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, const char *v,
              size_t vlen, unsigned int flags)
{
    MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
    return mdb_put(txn, dbi, &key, &val, flags);
}

int mdbpy_del(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, const char *v,
              size_t vlen, int with_value)
{
    MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
    return mdb_del(txn, dbi, &key, with_value ? &val : NULL);
}

int mdbpy_cursor_get(MDB_cursor *cur, int op, const char *k, size_t klen, const char *v,
                     size_t vlen, MDB_val *ko, MDB_val *vo)
{
    ko->mv_size = klen;
    ko->mv_data = (void *)k;
    vo->mv_size = vlen;
    vo->mv_data = (void *)v;
    int rc = mdb_cursor_get(cur, ko, vo, (MDB_cursor_op)op);
    if (rc == 0 && (op == MDB_FIRST_DUP || op == MDB_LAST_DUP || op == MDB_GET_BOTH ||
                    op == MDB_GET_BOTH_RANGE || op == MDB_SET))
        rc = mdb_cursor_get(cur, ko, vo, MDB_GET_CURRENT);
    return rc;
}

int mdbpy_cursor_put(MDB_cursor *cur, const char *k, size_t klen, const char *v, size_t vlen,
                     unsigned int flags)
{
    MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
    return mdb_cursor_put(cur, &key, &val, flags);
}

int mdbpy_have_check(void)
{
    return 0;
}
