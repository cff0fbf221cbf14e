/*
 * overflow.c -- values too big for a leaf (layer L5): a run of contiguous pages whose first
 * page carries a header with P_OVERFLOW and the run length; the value follows the header.
 * Invariant: the tree's overflow_pages counter equals the pages of all its runs.
 */
#include "core.h"

int overflow_write(MDB_txn *txn, const MDB_val *data, pgno_t *pg, void **dst)
{
    MDB_env *env = txn->env;
    size_t n = OVERFLOW_PAGES(env->psize, data->mv_size);
    if (n > UINT32_MAX)
        return MDB_BAD_VALSIZE;
    page *p;
    /* a value given is copied in and only the tail past it zeroed; a reserved run
     * (MDB_RESERVE, no value yet) is zeroed whole by page_alloc */
    int filled = data->mv_data != NULL;
    int rc = page_alloc(txn, (unsigned)n, P_OVERFLOW | (filled ? ALLOC_NOINIT : 0), &p);
    if (rc)
        return rc;
    uint8_t *body = (uint8_t *)p + PAGEHDRSZ;
    if (filled) {
        if (data->mv_size)
            memcpy(body, data->mv_data, data->mv_size);
        if (!(env->flags & MDB_NOMEMINIT))
            memset(body + data->mv_size, 0, n * env->psize - PAGEHDRSZ - data->mv_size);
    }
    *pg = p->pgno;
    *dst = body;
    return 0;
}

int overflow_free(MDB_txn *txn, node_header *n, unsigned *npages_out)
{
    pgno_t pg;
    memcpy(&pg, node_data(n), sizeof(pg));
    page *p;
    int rc = page_get(txn, pg, &p);
    if (rc)
        return rc;
    if (!(p->flags & P_OVERFLOW) || p->u.overflow_pages == 0)
        return CORRUPT_AT(pg);
    *npages_out = p->u.overflow_pages;
    return page_free(txn, pg, p->u.overflow_pages);
}
