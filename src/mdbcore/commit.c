/*
 * commit.c -- the commit pipeline of a write txn (layer L6).  Steps, and what a crash
 * after each leaves on disk:
 *   1. named-DB records into MAIN       (memory only: crash = txn lost)
 *   2. free list into FREE_DBI          (memory only)
 *   3. dirty pages pwritev'd in pgno order (spill.c may have written some earlier in
 *      the txn); none is reachable from either meta, so a crash leaves the previous
 *      snapshot intact
 *   4. fdatasync (unless NOSYNC)        (new pages durable, still unreferenced)
 *   5. meta tail into page T&1 via the O_DSYNC fd: the commit point
 *   6. lock file txnid = T, readers may now start on T; writer mutex released
 * Any failure before 5 aborts the txn; a failed 5 also marks the env fatal (meta.c).
 */
#include <stdlib.h>

#include "core.h"
#include "lockfile.h"
#include "os.h"

static int txn_has_changes(MDB_txn *txn)
{
    if (txn->dirty[0].pgno || txn->free_pgs[0] || (txn->flags & TXN_DIRTY))
        return 1;
    for (MDB_dbi j = 0; j < txn->ntouched; j++)
        if (txn->dbstate[txn->touched[j]] & DBS_DIRTY)
            return 1;
    return 0;
}

int txn_commit(MDB_txn *txn)
{
    MDB_env *env = txn->env;
    int rc;
    if (txn->child && (rc = txn_nested_commit(txn->child)) != 0)
        goto fail;
    if (txn->parent)
        return txn_nested_commit(txn);
    if (txn->flags & TXN_RDONLY) {
        txn_finish_commit(txn);
        return 0;
    }
    if (!txn_has_changes(txn)) {
        txn_finish_commit(txn);
        return 0;
    }
    if ((rc = spill_before_commit(txn)) != 0)
        goto fail;
    if ((rc = dbi_save_all(txn)) != 0)
        goto fail;
    if ((rc = freelist_save(txn)) != 0)
        goto fail;
    if ((rc = pages_write(env, txn->dirty + 1, txn->dirty[0].pgno)) != 0)
        goto fail;
    if (!(env->flags & MDB_NOSYNC) && (rc = datafile_sync(env, 0)) != 0)
        goto fail;
    if ((rc = meta_write(env, txn)) != 0)
        goto fail;
    if (env->lock)
        env->lock->head->txnid = txn->txnid;
    dbi_remember_committed(txn);
    txn_finish_commit(txn);
    return 0;
fail:
    txn_abort(txn);
    return rc;
}
