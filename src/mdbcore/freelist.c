/*
 * freelist.c -- the free-page database FREE_DBI (layer L4): key = txnid T, value = the
 * pages T freed (count, then pgnos descending).
 *
 * Reuse rule: record K may be consumed only when K < oldest, the oldest snapshot any
 * reader may still hold (and at most our txnid - 1), so no live reader can see its pages.
 * Records are consumed in ascending key order into txn->reclaimed; txn->pglast is the
 * newest consumed key.  At commit (freelist_save) consumed records are deleted, the pages
 * this txn freed are written under key T and unused reclaimed pages are written back under
 * key pglast (reusable by the next writer at once).  Every page below next_pgno is either
 * reachable or listed exactly once.
 */
#include <stdlib.h>

#include "core.h"
#include "readers.h"

txnid_t freelist_oldest(MDB_txn *txn)
{
    txnid_t oldest = txn->txnid - 1;
    if (txn->env->lock)
        oldest = readers_oldest_heal(txn->env->lock, txn->env->pid, oldest, &txn->env->heal);
    return oldest;
}

/* Take a run of n consecutive pages out of the ascending reclaimed list. */
static pgno_t take_run(pgno_list l, unsigned n)
{
    size_t cnt = l[0];
    if (cnt < n)
        return P_INVALID;
    for (size_t i = 1; i + n - 1 <= cnt; i++) {
        if (l[i + n - 1] - l[i] == n - 1) {
            pgno_t pg = l[i];
            memmove(&l[i], &l[i + n], (cnt - (i + n - 1)) * sizeof(pgno_t));
            l[0] = cnt - n;
            return pg;
        }
    }
    return P_INVALID;
}

/* Consume the next eligible record into reclaimed: 0, MDB_NOTFOUND (none left) or error. */
static int load_next(MDB_txn *txn)
{
    if (txn->oldest == 0)
        txn->oldest = freelist_oldest(txn);
    MDB_cursor mc;
    cursor_init(&mc, txn, FREE_DBI);
    txnid_t want = txn->pglast + 1;
    MDB_val key = {sizeof(want), &want}, data;
    int rc = cursor_get(&mc, &key, &data, MDB_SET_RANGE);
    if (rc)
        return rc;
    if (key.mv_size != sizeof(txnid_t))
        return CORRUPT_AT(mc.pg[mc.top]->pgno);
    txnid_t k;
    memcpy(&k, key.mv_data, sizeof(k));
    if (k >= txn->oldest)
        return MDB_NOTFOUND;
    if (data.mv_size < sizeof(pgno_t))
        return CORRUPT_AT(mc.pg[mc.top]->pgno);
    const pgno_t *ids = data.mv_data;
    pgno_t cnt;
    memcpy(&cnt, ids, sizeof(cnt));
    if (cnt > data.mv_size / sizeof(pgno_t) - 1)
        return CORRUPT_AT(mc.pg[mc.top]->pgno);
    pgno_t *asc = malloc((cnt ? cnt : 1) * sizeof(pgno_t));
    if (!asc)
        return ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        pgno_t pg;
        memcpy(&pg, &ids[cnt - i], sizeof(pg));
        if (pg < CORE_DBS || pg >= txn->next_pgno || (i && pg <= asc[i - 1])) {
            free(asc);
            return CORRUPT_AT(mc.pg[mc.top]->pgno);
        }
        asc[i] = pg;
    }
    rc = idl_merge(&txn->reclaimed, asc, cnt);
    free(asc);
    if (rc)
        return rc;
    txn->pglast = k;
    return 0;
}

int freelist_take(MDB_txn *txn, unsigned n, pgno_t *out)
{
    for (;;) {
        pgno_t pg = take_run(txn->reclaimed, n);
        if (pg != P_INVALID) {
            *out = pg;
            return 0;
        }
        if (txn->saving_freelist)
            break; /* the save loop must not consume records it would then have to delete */
        int rc = load_next(txn);
        if (rc == MDB_NOTFOUND)
            break;
        if (rc)
            return rc;
    }
    *out = P_INVALID;
    return 0;
}

static int put_reserved(MDB_txn *txn, txnid_t key_id, size_t count)
{
    MDB_cursor mc;
    cursor_init(&mc, txn, FREE_DBI);
    mc.flags |= C_UNTRACK;
    MDB_val key = {sizeof(key_id), &key_id};
    MDB_val data = {(count + 1) * sizeof(pgno_t), NULL};
    return tree_put(&mc, &key, &data, MDB_RESERVE);
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

    /* loose pages were never written: plain free pages from now on */
    for (page *p; (p = dirty_take_loose(txn)) != NULL;) {
        pgno_t pg = p->pgno;
        dirty_drop(txn, pg);
        page_release(txn->env, p);
        if ((rc = idl_merge(&txn->reclaimed, &pg, 1)) != 0)
            return rc;
    }

    /* delete the records consumed by this txn */
    while (txn->pglast) {
        MDB_cursor mc;
        cursor_init(&mc, txn, FREE_DBI);
        mc.flags |= C_UNTRACK;
        MDB_val key, data;
        rc = cursor_get(&mc, &key, &data, MDB_FIRST);
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
    }

    /* Without a consumed key to file them under, spare pages join this txn's record:
     * that only delays their reuse until our readers are gone. */
    size_t n_free, n_back;
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
        if (n_free && (rc = put_reserved(txn, txn->txnid, n_free)) != 0)
            return rc;
        if (txn->free_pgs[0] != n_free || (txn->pglast == 0 && txn->reclaimed[0]))
            continue;
        n_back = txn->reclaimed[0];
        if (n_back) {
            if ((rc = put_reserved(txn, txn->pglast, n_back)) != 0)
                return rc;
            if (txn->free_pgs[0] != n_free || txn->reclaimed[0] > n_back)
                continue;
        }
        break;
    }

    MDB_val data;
    if (n_free) {
        if ((rc = record_ptr(txn, txn->txnid, &data)) != 0)
            return rc;
        idl_sort(txn->free_pgs);
        idl_store(txn->free_pgs, data.mv_data);
    }
    if (n_back) {
        if ((rc = record_ptr(txn, txn->pglast, &data)) != 0)
            return rc;
        memset(data.mv_data, 0, data.mv_size);
        idl_store(txn->reclaimed, data.mv_data);
    }
    return 0;
}
