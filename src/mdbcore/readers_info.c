/*
 * readers_info.c -- what each reader slot costs (layer L6): its snapshot's age in txns
 * and how many freed pages it keeps from reuse, for mdbcore_reader_info_list (mdbcore.h
 * section 5), and the writer's healing counters.
 *
 * Invariant: it reads the slots without the table mutex (as the writer's scan does) and
 * the free list in a read txn of its own, so it neither blocks nor is blocked by a writer.
 * A figure may be one txn stale; it never touches the map outside that snapshot.
 */
#include <stdlib.h>

#include "core.h"
#include "lockfile.h"
#include "mdbcore.h"
#include "readers.h"

typedef struct fl_rec {
    txnid_t key;
    uint64_t pages;
} fl_rec;

/* Free-list records (ascending key) of the snapshot seen by txn. */
static int load_records(MDB_txn *txn, fl_rec **out, size_t *n_out)
{
    size_t n = 0, cap = 64;
    fl_rec *v = malloc(cap * sizeof *v);
    if (!v)
        return ENOMEM;
    MDB_cursor mc;
    cursor_init(&mc, txn, FREE_DBI);
    MDB_val key, data;
    int rc = cursor_get(&mc, &key, &data, MDB_FIRST);
    while (rc == 0) {
        if (key.mv_size != sizeof(txnid_t) || data.mv_size < sizeof(pgno_t)) {
            rc = MDB_CORRUPTED;
            break;
        }
        if (n == cap) {
            fl_rec *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) {
                rc = ENOMEM;
                break;
            }
            v = nv;
            cap *= 2;
        }
        pgno_t cnt;
        memcpy(&v[n].key, key.mv_data, sizeof(txnid_t));
        memcpy(&cnt, data.mv_data, sizeof cnt);
        v[n++].pages = cnt;
        rc = cursor_get(&mc, &key, &data, MDB_NEXT);
    }
    if (rc != MDB_NOTFOUND) {
        free(v);
        return rc;
    }
    *out = v;
    *n_out = n;
    return 0;
}

int mdbcore_reader_info_list(MDB_env *env, mdbcore_reader_info *out, size_t max,
                             size_t *count, unsigned flags)
{
    if (!env || !count || (max && !out) || !(env->flags & ENV_ACTIVE))
        return EINVAL;
    *count = 0;
    lock_region *lr = env->lock;
    if (!lr)
        return 0;
    /* copy the slots before our own txn takes one */
    unsigned n = lr->head->numreaders;
    if (n > lr->maxreaders)
        n = lr->maxreaders;
    size_t used = 0;
    for (unsigned i = 0; i < n; i++) {
        uint32_t pid = __atomic_load_n(&lr->slots[i].pid, __ATOMIC_ACQUIRE);
        if (!pid)
            continue;
        if (used < max) {
            mdbcore_reader_info *r = &out[used];
            memset(r, 0, sizeof *r);
            r->pid = pid;
            r->tid = lr->slots[i].tid;
            r->txnid = lr->slots[i].txnid;
        }
        used++;
    }
    *count = used;
    size_t filled = used < max ? used : max;
    if (!filled)
        return 0;

    int unknown = (flags & MDBCORE_RINFO_NO_PAGES) != 0;
    MDB_txn *txn = NULL;
    int rc = 0;
    if (!unknown) {
        if (flags & MDBCORE_RINFO_THREAD_SLOT) {
            rc = txn_begin(env, NULL, MDB_RDONLY, &txn);
            if (rc == MDB_BAD_RSLOT) {
                unknown = 1;
                rc = 0;
            }
        } else {
            rc = txn_begin_own_slot(env, &txn);
        }
        if (rc)
            return rc;
    }
    if (unknown) {
        txnid_t last = env->lock->head->txnid;
        for (size_t i = 0; i < filled; i++) {
            txnid_t t = out[i].txnid;
            if (t != (txnid_t)-1) {
                out[i].age = t < last ? last - t : 0;
                out[i].pages_held = UINT64_MAX;
            }
        }
        return 0;
    }
    txnid_t last = txn->txnid;
    fl_rec *recs = NULL;
    size_t nrec = 0;
    rc = load_records(txn, &recs, &nrec);
    txn_abort(txn);
    if (rc)
        return rc;
    for (size_t i = 0; i < filled; i++) {
        mdbcore_reader_info *r = &out[i];
        txnid_t t = r->txnid;
        if (t == (txnid_t)-1)
            continue;
        r->age = t < last ? last - t : 0;
        for (size_t k = 0; k < nrec; k++)
            if (recs[k].key >= t && recs[k].key < last)
                r->pages_held += recs[k].pages;
    }
    free(recs);
    return 0;
}

uint64_t mdbcore_env_healed_readers(MDB_env *env, uint64_t *checks)
{
    if (checks)
        *checks = env ? env->heal.checks : 0;
    return env ? env->heal.healed : 0;
}
