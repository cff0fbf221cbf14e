/*
 * api_txn.c -- exported transaction functions (layer L7): handle and state checks, then
 * txn.c / commit.c.
 */
#include "core.h"

int mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn)
{
    if (!env || !txn || !(env->flags & ENV_ACTIVE))
        return EINVAL;
    if (parent && (parent->flags & TXN_BLOCKED))
        return MDB_BAD_TXN;
    return txn_begin(env, parent, flags & MDB_RDONLY, txn);
}

MDB_env *mdb_txn_env(MDB_txn *txn)
{
    return txn ? txn->env : NULL;
}

size_t mdb_txn_id(MDB_txn *txn)
{
    return txn ? (size_t)txn->txnid : 0;
}

int mdb_txn_commit(MDB_txn *txn)
{
    if (!txn)
        return EINVAL;
    if (txn->flags & TXN_LOADING)
        return MDB_BAD_TXN; /* from a bulk-load callback: the load is not finished */
    if ((txn->flags & TXN_RDONLY) && (txn->flags & TXN_FINISHED)) {
        txn_abort(txn); /* a reset read txn: ending it is all a commit can do */
        return 0;
    }
    if (txn->flags & (TXN_FINISHED | TXN_ERROR)) {
        /* (a parent with a live child is committed child first, as in LMDB) */
        if (txn->parent) /* a failed child fails its parent too (LMDB) */
            txn->parent->flags |= TXN_ERROR;
        txn_abort(txn);
        return MDB_BAD_TXN;
    }
    return txn_commit(txn);
}

void mdb_txn_abort(MDB_txn *txn)
{
    if (!txn)
        return;
    for (MDB_txn *t = txn; t; t = t->child) {
        if (t->flags & TXN_LOADING) {
            /* From a bulk-load callback, on the loading txn or an ancestor: the loader
             * still uses it, and ends it when it returns (mdbcore_bulk_load). */
            txn->flags |= TXN_ERROR | TXN_END_ASKED;
            return;
        }
    }
    txn_abort(txn);
}

void mdb_txn_reset(MDB_txn *txn)
{
    if (txn && (txn->flags & TXN_RDONLY))
        txn_reset(txn);
}

int mdb_txn_renew(MDB_txn *txn)
{
    if (!txn || !(txn->flags & TXN_RDONLY) || !(txn->flags & TXN_FINISHED))
        return EINVAL;
    return txn_renew(txn);
}
