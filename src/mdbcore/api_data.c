/*
 * api_data.c -- exported get/put/del and mdbcore_bulk_load (layer L7): checks, one
 * internal call through a temporary untracked cursor, poisoning on failure.
 */
#include "core.h"
#include "mdbcore.h"

static int data_prep(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_cursor *mc,
                     struct xcursor *x, int writing)
{
    int rc = api_txn_dbi_usable(txn);
    if (rc)
        return rc;
    if (!key)
        return EINVAL;
    if ((rc = dbi_use(txn, dbi)) != 0)
        return rc;
    (void)writing;
    cursor_init(mc, txn, dbi);
    mc->flags |= C_UNTRACK;
    if (txn->dbs[dbi].flags & MDB_DUPSORT)
        cursor_attach_x(mc, x);
    return 0;
}

int mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data)
{
    MDB_cursor mc;
    struct xcursor x;
    if (!data)
        return EINVAL;
    int rc = data_prep(txn, dbi, key, &mc, &x, 0);
    if (rc)
        return rc;
    return cursor_get(&mc, key, data, MDB_SET);
}

int mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags)
{
    MDB_cursor mc;
    struct xcursor x;
    if (!data)
        return EINVAL;
    int rc = data_prep(txn, dbi, key, &mc, &x, 1);
    if (rc)
        return rc;
    if (flags & ~(MDB_NOOVERWRITE | MDB_NODUPDATA | MDB_RESERVE | MDB_APPEND | MDB_APPENDDUP))
        return EINVAL;
    if (txn->flags & TXN_RDONLY)
        return EACCES;
    if (dbi == FREE_DBI)
        return EINVAL;
    if ((rc = spill_before_write(&mc, key, data)) != 0)
        return api_poison(txn, rc);
    if (mc.xcursor)
        return api_poison(txn, dup_put(&mc, key, data, flags));
    /* a put after the last key (a sequential fill) starts from where the last one ended */
    unsigned at_edge = tree_edge_restore(&mc) ? PUT_AT_EDGE : 0;
    rc = tree_put(&mc, key, data, (flags & ~MDB_NODUPDATA & ~MDB_APPENDDUP) | at_edge);
    if (rc == 0)
        tree_edge_remember(&mc);
    return api_poison(txn, rc);
}

int mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data)
{
    MDB_cursor mc;
    struct xcursor x; /* data selects one duplicate; ignored without DUPSORT */
    int rc = data_prep(txn, dbi, key, &mc, &x, 1);
    if (rc)
        return rc;
    if (txn->flags & TXN_RDONLY)
        return EACCES;
    if (dbi == FREE_DBI)
        return EINVAL;
    if (key->mv_size == 0)
        return MDB_BAD_VALSIZE;
    if (key->mv_size > txn->env->maxkeysize)
        return MDB_NOTFOUND; /* no stored key is that long: a miss, as in LMDB */
    if ((rc = spill_before_write(&mc, key, data)) != 0)
        return api_poison(txn, rc);
    int exact;
    rc = cursor_seek(&mc, key, &exact);
    if (rc == 0 && !exact)
        rc = MDB_NOTFOUND;
    if (rc)
        return api_poison(txn, rc);
    if (mc.xcursor)
        return api_poison(txn, dup_del(&mc, data, 0));
    rc = tree_del_current(&mc, 0);
    /* deleting a named database's record through the main database: refused, and the
     * txn is failed, as LMDB does (its later calls answer MDB_BAD_TXN) */
    if (rc == MDB_INCOMPATIBLE)
        txn->flags |= TXN_ERROR;
    return api_poison(txn, rc);
}

/* mdbcore.h: the engine work is tree_load's (tree_load.c). */
int mdbcore_bulk_load(MDB_txn *txn, MDB_dbi dbi, mdbcore_next_fn next, void *ctx,
                      unsigned flags)
{
    int rc = api_txn_usable(txn);
    if (rc)
        return rc;
    if (!next || flags)
        return EINVAL;
    if ((rc = dbi_use(txn, dbi)) != 0)
        return rc;
    if (txn->flags & TXN_RDONLY)
        return EACCES;
    if (dbi == FREE_DBI)
        return EINVAL;
    if (txn->dbs[dbi].flags & MDB_DUPSORT)
        return MDB_INCOMPATIBLE;
    if (txn->dbs[dbi].root != P_INVALID)
        return EINVAL;
    MDB_cursor mc;
    cursor_init(&mc, txn, dbi);
    mc.flags |= C_UNTRACK;
    int input_err;
    /* The callback runs in the middle of the build, with the database record not yet
     * written: any call on this txn from it (put, cursor, commit...) gets MDB_BAD_TXN. */
    txn->flags |= TXN_LOADING;
    rc = tree_load(&mc, next, ctx, &input_err);
    txn->flags &= ~TXN_LOADING;
    /* The callback aborted this txn or an ancestor: end the outermost one asked for now
     * (this handle goes with it). */
    MDB_txn *asked = NULL;
    for (MDB_txn *t = txn; t; t = t->parent)
        if (t->flags & TXN_END_ASKED)
            asked = t;
    if (asked) {
        txn_abort(asked);
        return MDB_BAD_TXN;
    }
    return input_err ? rc : api_poison(txn, rc);
}
