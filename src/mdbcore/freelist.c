/*
 * freelist.c -- the free-page database FREE_DBI (layer L4): key = txnid T, value = the
 * pages T freed (count, then pgnos descending).  This file reads it (consuming old
 * records for page_alloc); freelist_save.c (L5) writes it at commit.
 *
 * Reuse rule: record K may be consumed only when K < oldest, the oldest snapshot any
 * reader may still hold (and at most our txnid - 1), so no live reader can see its pages.
 * Records are consumed in ascending key order into txn->reclaimed; txn->pglast is the
 * newest consumed key.  Single pages leave the list lowest first, counted in
 * txn->reclaimed_taken rather than shifted out one by one; freelist_settle drops them
 * before anything else reads or changes the list.  At commit (freelist_save) consumed
 * records are deleted, the pages this txn freed are written under key T and unused
 * reclaimed pages are written back under key pglast (reusable by the next writer at
 * once).  Every page below next_pgno is either reachable or listed exactly once.
 */
#include "core.h"
#include "readers.h"

txnid_t freelist_oldest(MDB_txn *txn)
{
    txnid_t oldest = txn->txnid - 1;
    if (txn->env->lock)
        oldest = readers_oldest_heal(txn->env->lock, txn->env->pid, oldest, &txn->env->heal);
    return oldest;
}

void freelist_settle(MDB_txn *txn)
{
    size_t k = txn->reclaimed_taken;
    if (!k)
        return;
    pgno_list l = txn->reclaimed;
    memmove(&l[1], &l[1 + k], (l[0] - k) * sizeof(pgno_t));
    l[0] -= k;
    txn->reclaimed_taken = 0;
}

/* Take n consecutive pages out of the ascending reclaimed list: the lowest run. */
static pgno_t take_run(MDB_txn *txn, unsigned n)
{
    pgno_list l = txn->reclaimed;
    if (n == 1 && !txn->saving_freelist) {
        /* The lowest page, marked taken rather than shifted out: a txn of 1,000 random
         * puts takes ~1,000 pages from a list of ~1,000, and shifting it down for each
         * moved ~5 MB.  (Lowest first: the dirty list, sorted, is appended to cheaply.
         * The commit's save reads the list's count as it goes: it takes the slow way.) */
        size_t k = txn->reclaimed_taken;
        if (k < l[0]) {
            txn->reclaimed_taken = k + 1;
            return l[1 + k];
        }
    }
    freelist_settle(txn);
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

/* Consume the next eligible record into reclaimed: 0, MDB_NOTFOUND (none left) or error.
 * "None left" holds for the rest of the txn (FREE_DBI changes only at commit, and oldest
 * is fixed for the txn), so it is remembered as drained_at = pglast + 1: a txn that used
 * up its record and needs more pages does not search the tree again for each one. */
static int load_next(MDB_txn *txn)
{
    txnid_t want = txn->pglast + 1;
    if (txn->drained_at == want)
        return MDB_NOTFOUND;
    if (txn->oldest == 0)
        txn->oldest = freelist_oldest(txn);
    MDB_cursor mc;
    cursor_init(&mc, txn, FREE_DBI);
    MDB_val key = {sizeof(want), &want}, data;
    /* nothing consumed yet: the first record, found without comparing keys (a key 0,
     * which no writer makes, is passed over as the range search would) */
    int rc = cursor_get(&mc, &key, &data, want == 1 ? MDB_FIRST : MDB_SET_RANGE);
    txnid_t k = 0;
    if (rc == 0 && key.mv_size == sizeof(k))
        memcpy(&k, key.mv_data, sizeof(k));
    if (rc == 0 && k < want) {
        key.mv_size = sizeof(want);
        key.mv_data = &want;
        rc = cursor_get(&mc, &key, &data, MDB_SET_RANGE);
    }
    if (rc == MDB_NOTFOUND)
        txn->drained_at = want;
    if (rc)
        return rc;
    if (key.mv_size != sizeof(txnid_t))
        return CORRUPT_AT(mc.pg[mc.top]->pgno);
    memcpy(&k, key.mv_data, sizeof(k));
    if (k >= txn->oldest) {
        txn->drained_at = want;
        return MDB_NOTFOUND;
    }
    if (data.mv_size < sizeof(pgno_t))
        return CORRUPT_AT(mc.pg[mc.top]->pgno);
    /* The record lists its pages descending; reclaimed is ascending.  Check them all
     * first, then merge from the back of both, which walks the record from its front:
     * no copy of the record is needed.  (memcpy: a node's data is only 2-byte aligned.) */
    const uint8_t *ids = data.mv_data;
    pgno_t cnt;
    memcpy(&cnt, ids, sizeof(cnt));
    if (cnt > data.mv_size / sizeof(pgno_t) - 1)
        return CORRUPT_AT(mc.pg[mc.top]->pgno);
    pgno_t prev = txn->next_pgno;
    for (size_t i = 1; i <= cnt; i++) {
        pgno_t pg;
        memcpy(&pg, ids + i * sizeof(pgno_t), sizeof(pg));
        if (pg < CORE_DBS || pg >= prev)
            return CORRUPT_AT(mc.pg[mc.top]->pgno);
        prev = pg;
    }
    /* (no pages are marked taken here: take_run settled the list before it failed) */
    if ((rc = idl_need(&txn->reclaimed, cnt)) != 0)
        return rc;
    pgno_list d = txn->reclaimed;
    size_t i = d[0], j = 1, w = d[0] + cnt;
    while (j <= cnt) {
        pgno_t pg;
        memcpy(&pg, ids + j * sizeof(pgno_t), sizeof(pg));
        if (i > 0 && d[i] > pg) {
            d[w--] = d[i--];
        } else {
            d[w--] = pg;
            j++;
        }
    }
    d[0] += cnt;
    txn->pglast = k;
    /* The commit deletes this record, copying the leaf that holds it; copy the path now,
     * while the pages just reclaimed can take it.  It then lands on a page some reader
     * of this process has mapped already, instead of on a new page at the end of the
     * file that the next writer, reading the list, faults in (fillseq, 1,000 puts a txn:
     * see docs/performance.md, eighth pass).  Only at a txn's first load, where
     * cursor_early_copy_ok allows it, and with a reclaimed page for each level, so the
     * copy takes no other path than take_run's. */
    if (want == 1 && d[0] >= mc.snum && cursor_early_copy_ok(txn))
        return cursor_touch(&mc);
    return 0;
}

int freelist_take(MDB_txn *txn, unsigned n, pgno_t *out)
{
    for (;;) {
        pgno_t pg = take_run(txn, n);
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
