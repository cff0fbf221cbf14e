/*
 * page_get.c -- from a page number to a validated page (layer L3, the read path: never
 * allocates, never writes).
 *
 * Invariants kept: every page handed out is either the txn's dirty copy (dirty.c, its own
 * or an ancestor's) or a map page whose number is below next_pgno, the map size and the
 * file length, whose header is sane, whose stored pgno matches and which carries no
 * in-memory-only flag.
 */
#include "core.h"

int page_get(MDB_txn *txn, pgno_t pgno, page **out)
{
    MDB_env *env = txn->env;
    if (!(txn->flags & TXN_RDONLY)) {
        int own;
        page *d = dirty_find_chain(txn, pgno, &own);
        if (d) {
            *out = d;
            return 0;
        }
    }
    if (pgno < CORE_DBS || pgno >= txn->next_pgno || pgno >= env->maxpg)
        return CORRUPT_AT(pgno);
    if (pgno >= env->file_pages) {
        /* another process may have grown the file since we last looked */
        datafile_refresh_size(env);
        if (pgno >= env->file_pages)
            return CORRUPT_AT(pgno);
    }
    page *p = (page *)(env->map + (size_t)pgno * env->psize);
    int rc = page_check(env, p, pgno);
    if (rc)
        return rc;
    /* in-memory-only flags on a file page would make us write into the read-only map */
    if (p->flags & (P_DIRTY | P_LOOSE | P_KEEP))
        return CORRUPT_AT(pgno);
    *out = p;
    return 0;
}

void page_prefetch(const MDB_txn *txn, pgno_t pgno)
{
    const MDB_env *env = txn->env;
    if (!(txn->flags & TXN_RDONLY) || pgno >= env->file_pages)
        return;
    /* Every line at once: a binary search then finds the header, the slots and the nodes
     * it probes on their way or arrived, instead of waiting on memory (and the TLB) once
     * per probe in a chain.  A prefetch never faults: an unmapped page is just skipped. */
    const uint8_t *p = env->map + (size_t)pgno * env->psize;
    const uint8_t *end = p + env->psize;
    for (; p + 512 <= end; p += 512) {
        /* unrolled: on a page already in cache the loop's own instructions are the cost */
        __builtin_prefetch(p);
        __builtin_prefetch(p + 64);
        __builtin_prefetch(p + 128);
        __builtin_prefetch(p + 192);
        __builtin_prefetch(p + 256);
        __builtin_prefetch(p + 320);
        __builtin_prefetch(p + 384);
        __builtin_prefetch(p + 448);
    }
    for (; p < end; p += 64) /* pages under 512 bytes */
        __builtin_prefetch(p);
}
