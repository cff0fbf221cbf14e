/*
 * tree_raw.h -- copying whole nodes between tree pages, as split (tree_split.c) and merge
 * and borrow (tree_del.c) do: no key compares, no cursor fix-ups; the caller has checked
 * that the node fits.
 */
#ifndef MDBCORE_TREE_RAW_H
#define MDBCORE_TREE_RAW_H

#include "core.h"

/* The bytes node n of page p takes in the page's data area (header, key and inline data
 * or the overflow page number), rounded to an even size. */
static inline size_t node_body_size(const page *p, const node_header *n)
{
    size_t sz = NODESIZE + n->ksize;
    if (IS_LEAF(p))
        sz += (n->flags & F_BIGDATA) ? sizeof(pgno_t) : node_dsize(n);
    return EVEN(sz);
}

/* Append the `body` bytes of node n as p's last slot. */
static inline void page_append_raw(page *p, const node_header *n, size_t body)
{
    unsigned i = PG_NKEYS(p);
    p->u.bounds.upper = (indx_t)(p->u.bounds.upper - body);
    memcpy((uint8_t *)p + p->u.bounds.upper, n, body);
    p->slots[i] = p->u.bounds.upper;
    p->u.bounds.lower = (indx_t)(p->u.bounds.lower + sizeof(indx_t));
}

#endif
