/*
 * page.c -- the slotted page (layer L2): node insertion and removal, space accounting and
 * the cheap validity checks applied to every page and node read from the file.
 * Invariants: slots[] is in key order; nodes live in [upper, psize) and each starts on an
 * even offset; lower = 16 + 2 * nkeys <= upper.  Pure byte manipulation, no I/O.
 */
#include "core.h"

void page_init(page *p, pgno_t pgno, unsigned flags, unsigned psize)
{
    p->pgno = pgno;
    p->leaf2_ksize = 0;
    p->flags = (uint16_t)flags;
    p->u.bounds.lower = PAGEHDRSZ;
    p->u.bounds.upper = (indx_t)psize;
}

size_t node_leaf_size(const MDB_env *env, size_t ksize, size_t dsize, int *big)
{
    size_t sz = NODESIZE + ksize + dsize;
    *big = 0;
    if (sz > env->node_max) {
        *big = 1;
        sz = NODESIZE + ksize + sizeof(pgno_t);
    }
    return EVEN(sz) + sizeof(indx_t);
}

size_t node_branch_size(size_t ksize)
{
    return EVEN(NODESIZE + ksize) + sizeof(indx_t);
}

/* Bytes of the node body (without its slot), as stored. */
static size_t node_body(const page *p, const node_header *n)
{
    size_t sz = NODESIZE + n->ksize;
    if (IS_LEAF(p))
        sz += (n->flags & F_BIGDATA) ? sizeof(pgno_t) : node_dsize(n);
    return EVEN(sz);
}

/* LEAF2 (DUPFIXED) pages: packed keys after the header; lower still grows by a slot per
 * key and upper shrinks by the rest, so upper - lower stays the free space. */
static int leaf2_add(page *p, unsigned idx, const MDB_val *key)
{
    size_t ks = p->leaf2_ksize;
    if (key->mv_size != ks)
        return MDB_BAD_VALSIZE;
    if (PG_ROOM(p) < ks)
        return MDB_PAGE_FULL;
    uint8_t *base = (uint8_t *)p + PAGEHDRSZ;
    unsigned nk = PG_NKEYS(p);
    memmove(base + (idx + 1) * ks, base + idx * ks, (nk - idx) * ks);
    memcpy(base + idx * ks, key->mv_data, ks);
    p->u.bounds.lower = (indx_t)(p->u.bounds.lower + sizeof(indx_t));
    p->u.bounds.upper = (indx_t)(p->u.bounds.upper - (ks - sizeof(indx_t)));
    return 0;
}

int page_add_node(page *p, unsigned idx, const MDB_val *key, const MDB_val *data, pgno_t pg,
                  unsigned nflags, node_header **out)
{
    if (p->flags & P_LEAF2) {
        if (out)
            *out = NULL;
        return leaf2_add(p, idx, key);
    }
    size_t ksize = key ? key->mv_size : 0;
    size_t body = NODESIZE + ksize;
    if (IS_LEAF(p))
        body += (nflags & F_BIGDATA) ? sizeof(pgno_t) : data->mv_size;
    body = EVEN(body);
    if (PG_ROOM(p) < body + sizeof(indx_t))
        return MDB_PAGE_FULL;
    unsigned nk = PG_NKEYS(p);
    if (idx < nk) /* (an append, the loaders' case, moves no slot) */
        memmove(&p->slots[idx + 1], &p->slots[idx], (nk - idx) * sizeof(indx_t));
    p->u.bounds.upper = (indx_t)(p->u.bounds.upper - body);
    p->slots[idx] = p->u.bounds.upper;
    p->u.bounds.lower = (indx_t)(p->u.bounds.lower + sizeof(indx_t));
    node_header *n = PG_NODE(p, idx);
    n->ksize = (uint16_t)ksize;
    if (ksize)
        memcpy(n->key, key->mv_data, ksize);
    if (IS_LEAF(p)) {
        size_t ds = data->mv_size;
        n->lo = (uint16_t)ds;
        n->hi = (uint16_t)(ds >> 16);
        n->flags = (uint16_t)nflags;
        if (nflags & F_BIGDATA)
            memcpy(node_data(n), &pg, sizeof(pgno_t));
        else if (data->mv_data && ds)
            memcpy(node_data(n), data->mv_data, ds);
    } else {
        node_set_child(n, pg);
    }
    if (out)
        *out = n;
    return 0;
}

void page_del_node(page *p, unsigned idx, unsigned psize)
{
    (void)psize;
    unsigned nk = PG_NKEYS(p);
    if (p->flags & P_LEAF2) {
        size_t ks = p->leaf2_ksize;
        uint8_t *base = (uint8_t *)p + PAGEHDRSZ;
        memmove(base + idx * ks, base + (idx + 1) * ks, (nk - idx - 1) * ks);
        p->u.bounds.lower = (indx_t)(p->u.bounds.lower - sizeof(indx_t));
        p->u.bounds.upper = (indx_t)(p->u.bounds.upper + (ks - sizeof(indx_t)));
        return;
    }
    indx_t off = p->slots[idx];
    size_t sz = node_body(p, PG_NODE(p, idx));
    indx_t up = p->u.bounds.upper;
    memmove((uint8_t *)p + up + sz, (uint8_t *)p + up, off - up);
    for (unsigned j = 0; j < nk; j++)
        if (p->slots[j] < off)
            p->slots[j] = (indx_t)(p->slots[j] + sz);
    memmove(&p->slots[idx], &p->slots[idx + 1], (nk - idx - 1) * sizeof(indx_t));
    p->u.bounds.upper = (indx_t)(up + sz);
    p->u.bounds.lower = (indx_t)(p->u.bounds.lower - sizeof(indx_t));
}

size_t page_used(const page *p, unsigned psize)
{
    if (p->flags & P_LEAF2) /* upper moves by ksize-2 per key: with 1-byte keys it grows */
        return (size_t)PG_NKEYS(p) * p->leaf2_ksize;
    return (psize - p->u.bounds.upper) + (p->u.bounds.lower - PAGEHDRSZ);
}

int page_check(const MDB_env *env, const page *p, pgno_t pgno)
{
    if (p->pgno != pgno)
        return CORRUPT_AT(pgno);
    unsigned f = p->flags & (P_BRANCH | P_LEAF | P_OVERFLOW | P_LEAF2 | P_META | P_SUBP);
    if (f == P_OVERFLOW)
        return 0;
    if (f != P_BRANCH && f != P_LEAF && f != (P_LEAF | P_LEAF2))
        return CORRUPT_AT(pgno);
    unsigned lo = p->u.bounds.lower, up = p->u.bounds.upper;
    if (lo < PAGEHDRSZ || (lo & 1) || lo > up ||
        ((f & P_LEAF2) ? !leaf2_bounds_ok(p, env->psize) : up > env->psize))
        return CORRUPT_AT(pgno);
    if (f == P_BRANCH && lo == PAGEHDRSZ)
        return CORRUPT_AT(pgno);
    return 0;
}
