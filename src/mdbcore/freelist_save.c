/*
 * freelist_save.c -- writing the free-page database FREE_DBI at commit (layer L5: the free
 * list is a B-tree, written with tree_put and tree_del_current like any other; the reading
 * side, freelist.c, is L4 because page_alloc needs it).
 *
 * Invariants on return: the records this txn consumed (keys up to pglast) are deleted;
 * the pages this txn freed are stored under its own txnid; reclaimed pages it did not use
 * are stored back under pglast, reusable by the next writer at once; every page below
 * next_pgno is either reachable or listed exactly once.  Writing the records may itself
 * free or take pages, so the loop repeats until both counts are stable
 * (txn->saving_freelist stops freelist_take from consuming more records meanwhile).
 */
#include "core.h"

/* Room for a record of count pages under key_id; *data gets its address. */
static int put_reserved(MDB_txn *txn, txnid_t key_id, size_t count, MDB_val *data)
{
    MDB_cursor mc;
    cursor_init(&mc, txn, FREE_DBI);
    mc.flags |= C_UNTRACK;
    MDB_val key = {sizeof(key_id), &key_id};
    data->mv_size = (count + 1) * sizeof(pgno_t);
    data->mv_data = NULL;
    return tree_put(&mc, &key, data, MDB_RESERVE);
}

static int record_ptr(MDB_txn *txn, txnid_t key_id, MDB_val *data)
{
    MDB_cursor mc;
    cursor_init(&mc, txn, FREE_DBI);
    MDB_val key = {sizeof(key_id), &key_id};
    return cursor_get(&mc, &key, data, MDB_SET);
}

int freelist_save(MDB_txn *txn)
{
    int rc;
    txn->saving_freelist = 1;
    freelist_settle(txn);

    /* loose pages were never written: plain free pages from now on */
    for (page *p; (p = dirty_take_loose(txn)) != NULL;) {
        pgno_t pg = p->pgno;
        dirty_drop(txn, pg);
        page_release(txn->env, p);
        if ((rc = idl_merge(&txn->reclaimed, &pg, 1)) != 0)
            return rc;
    }

    /* Delete the records consumed by this txn: they are the first ones (load_next takes
     * them in key order).  tree_del_current leaves the cursor on the successor, so the
     * next key is read there instead of from a fresh descent. */
    if (txn->pglast) {
        MDB_cursor mc;
        cursor_init(&mc, txn, FREE_DBI);
        mc.flags |= C_UNTRACK;
        MDB_val key;
        rc = cursor_get(&mc, &key, NULL, MDB_FIRST); /* the key only: the record goes */
        for (;;) {
            if (rc == MDB_NOTFOUND)
                break;
            if (rc)
                return rc;
            txnid_t k;
            if (key.mv_size != sizeof(k))
                return CORRUPT_AT(mc.pg[mc.top]->pgno);
            memcpy(&k, key.mv_data, sizeof(k));
            if (k > txn->pglast)
                break;
            if ((rc = tree_del_current(&mc, 1)) != 0)
                return rc;
            node_header *n;
            if ((rc = cursor_node(&mc, &n)) == 0)
                node_key(n, &key);
        }
    }

    /* Without a consumed key to file them under, spare pages join this txn's record:
     * that only delays their reuse until our readers are gone.
     * Each put reserves a record's room and hands back where it is; that address holds
     * until the tree changes again, so only the last put's is still good afterwards. */
    size_t n_free, n_back;
    int back_put = 0;
    MDB_val free_rec = {0, NULL}, back_rec = {0, NULL};
    for (;;) {
        if (txn->pglast == 0 && txn->reclaimed[0]) {
            rc = idl_need(&txn->free_pgs, txn->reclaimed[0]);
            if (rc)
                return rc;
            for (size_t i = 1; i <= txn->reclaimed[0]; i++)
                txn->free_pgs[++txn->free_pgs[0]] = txn->reclaimed[i];
            txn->reclaimed[0] = 0;
        }
        n_free = txn->free_pgs[0];
        if (n_free && (rc = put_reserved(txn, txn->txnid, n_free, &free_rec)) != 0)
            return rc;
        if (txn->free_pgs[0] != n_free || (txn->pglast == 0 && txn->reclaimed[0]))
            continue;
        n_back = txn->reclaimed[0];
        /* once put, the record under pglast is rewritten on every round, even emptied
         * (a put may take the last reclaimed page): its room must never be left unfilled */
        if (n_back || back_put) {
            if ((rc = put_reserved(txn, txn->pglast, n_back, &back_rec)) != 0)
                return rc;
            back_put = 1;
            if (txn->free_pgs[0] != n_free || txn->reclaimed[0] > n_back)
                continue;
        }
        break;
    }

    if (n_free) {
        /* the later put under pglast may have moved this record (a split, a resize) */
        if (back_put && (rc = record_ptr(txn, txn->txnid, &free_rec)) != 0)
            return rc;
        idl_sort(txn->free_pgs);
        idl_store(txn->free_pgs, free_rec.mv_data);
    }
    if (back_put) {
        memset(back_rec.mv_data, 0, back_rec.mv_size);
        idl_store(txn->reclaimed, back_rec.mv_data);
    }
    return 0;
}
