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

/* Ask the CPU for every line of a map page at once: a binary search then finds the
 * header, the slots and the nodes it probes on their way or arrived, instead of waiting
 * on memory (and the TLB) once per probe in a chain. */
static inline void prefetch_page(const uint8_t *p, size_t psize)
{
    /* (counted in offsets: written with pointer comparisons, GCC 12 deleted the whole
     * loop once this was inlined) */
    size_t off = 0;
    for (; off + 512 <= psize; off += 512, p += 512) {
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
    for (; off < psize; off += 64, p += 64) /* pages under 512 bytes */
        __builtin_prefetch(p);
}

static inline int get_page(MDB_txn *txn, pgno_t pgno, page **out, int whole)
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
    if (pgno < CORE_DBS || pgno >= txn->next_pgno || pgno >= env_maxpg(env))
        return CORRUPT_AT(pgno);
    if (pgno >= env->file_pages) {
        /* another process may have grown the file since we last looked */
        datafile_refresh_size(env);
        if (pgno >= env->file_pages)
            return CORRUPT_AT(pgno);
    }
    page *p = (page *)(env_map(env) + (size_t)pgno * env->psize);
    if (whole)
        prefetch_page((const uint8_t *)p, env->psize);
    int rc = page_check(env, p, pgno);
    if (rc)
        return rc;
    /* in-memory-only flags on a file page would make us write into the read-only map */
    if (p->flags & (P_DIRTY | P_LOOSE | P_KEEP))
        return CORRUPT_AT(pgno);
    *out = p;
    return 0;
}

int page_get(MDB_txn *txn, pgno_t pgno, page **out)
{
    return get_page(txn, pgno, out, 0);
}

int page_get_whole(MDB_txn *txn, pgno_t pgno, page **out)
{
    return get_page(txn, pgno, out, 1);
}
