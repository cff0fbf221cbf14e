/*
 * tree_split.c -- splitting a full page (layer L5).
 *
 * The page's nodes plus the new one are laid out in key order and cut where the larger half
 * is smallest, which always fits because no node exceeds half a page.  Appending past the
 * last key of the rightmost page instead starts a fresh right page holding only the new
 * node, so sequential loads leave full pages behind (the "append-friendly" split).
 * The separator (first key of the right page) goes into the parent, splitting it in turn,
 * or into a new root.  Branch pages keep an empty key in slot 0.
 * Invariant: the left half keeps the page's pgno, so the parent's existing pointer to it
 * stays right.  The cursor is left unpositioned (the caller searches again), except after
 * an append-friendly split whose parent had room: then it stands on the new node.
 */
#include <stdlib.h>

#include "core.h"
#include "tree_raw.h"

typedef struct split_item {
    const node_header *old; /* NULL: the new node */
    size_t size;            /* body + slot */
} split_item;

typedef struct new_node {
    const MDB_val *key, *data;
    pgno_t pg;
    unsigned nflags;
} new_node;

static int fill(page *dst, const page *src_pg, split_item *it, unsigned from, unsigned to,
                const new_node *nn, int empty_first)
{
    for (unsigned i = from; i < to; i++) {
        int rc;
        if (it[i].old) {
            if (i == from && empty_first) {
                MDB_val none = {0, NULL};
                rc = page_add_node(dst, PG_NKEYS(dst), &none, NULL, node_child(it[i].old), 0,
                                   NULL);
                if (rc)
                    return rc;
            } else {
                page_append_raw(dst, it[i].old, node_body_size(src_pg, it[i].old));
            }
        } else {
            MDB_val none = {0, NULL};
            rc = page_add_node(dst, PG_NKEYS(dst), (i == from && empty_first) ? &none : nn->key,
                               nn->data, nn->pg, nn->nflags, NULL);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Hang the new right page `rpg` (first key `sep`) next to the split page in the parent,
 * or under a new root. */
static int link_right(MDB_cursor *mc, pgno_t keep, const MDB_val *sep, pgno_t rpg, int append)
{
    MDB_txn *txn = mc->txn;
    int rc = 0;
    if (mc->top == 0) {
        page *root;
        if ((rc = page_alloc(txn, 1, P_BRANCH, &root)) != 0)
            return rc;
        MDB_val none = {0, NULL};
        page_add_node(root, 0, &none, NULL, keep, 0, NULL);
        page_add_node(root, 1, sep, NULL, rpg, 0, NULL);
        mc->db->root = root->pgno;
        mc->db->depth++;
        mc->db->branch_pages++;
        return 0;
    }
    page *parent = mc->pg[mc->top - 1];
    unsigned pidx = mc->ki[mc->top - 1] + 1u;
    if (PG_ROOM(parent) >= node_branch_size(sep->mv_size))
        return page_add_node(parent, pidx, sep, NULL, rpg, 0, NULL);
    MDB_cursor up = *mc;
    up.snum = mc->top;
    up.top = (uint16_t)(mc->top - 1);
    up.ki[up.top] = (indx_t)pidx;
    return tree_split(&up, sep, NULL, rpg, 0, append);
}

/* Packed DUPFIXED leaves: fixed-size keys, cut in the middle (or after the last key when
 * appending). */
static int split_leaf2(MDB_cursor *mc, const MDB_val *key, int append)
{
    MDB_txn *txn = mc->txn;
    unsigned psize = txn->env->psize;
    page *p = mc->pg[mc->top];
    unsigned idx = mc->ki[mc->top], nk = PG_NKEYS(p);
    size_t ks = p->leaf2_ksize;
    if (key->mv_size != ks)
        return MDB_BAD_VALSIZE;
    uint8_t *all = malloc((nk + 1) * ks);
    if (!all)
        return ENOMEM;
    uint8_t *base = (uint8_t *)p + PAGEHDRSZ;
    memcpy(all, base, idx * ks);
    memcpy(all + idx * ks, key->mv_data, ks);
    memcpy(all + (idx + 1) * ks, base + idx * ks, (nk - idx) * ks);
    /* LMDB's cut, so GET_MULTIPLE/NEXT_MULTIPLE hand out the same page-sized batches: the
     * first half (rounded up) of the old keys stays, plus the new key if it falls there;
     * only an explicit append leaves the old page whole */
    unsigned half = (nk + 1) / 2;
    unsigned s = (append && idx == nk) ? nk : half + (idx < half ? 1 : 0);
    page *rp;
    int rc = page_alloc(txn, 1, P_LEAF | P_LEAF2, &rp);
    if (rc) {
        free(all);
        return rc;
    }
    rp->leaf2_ksize = (uint16_t)ks;
    pgno_t keep = p->pgno;
    uint16_t flags = p->flags;
    page_init(p, keep, flags, psize);
    p->leaf2_ksize = (uint16_t)ks;
    for (unsigned i = 0; i <= nk; i++) {
        MDB_val k = {ks, all + i * ks};
        page *dst = i < s ? p : rp;
        page_add_node(dst, PG_NKEYS(dst), &k, NULL, 0, 0, NULL);
    }
    mc->db->leaf_pages++;
    uint8_t sepbuf[MDB_MAXKEYSIZE_DEFAULT];
    memcpy(sepbuf, all + s * ks, ks);
    free(all);
    MDB_val sep = {ks, sepbuf};
    rc = link_right(mc, keep, &sep, rp->pgno, append);
    mc->flags &= ~C_INITIALIZED;
    return rc;
}

/* Is the new node going past the last one of the tree's right edge (or of an explicit
 * append)?  Then the page stays whole and the new node starts the right page. */
static int append_friendly(const MDB_cursor *mc, int append)
{
    const page *p = mc->pg[mc->top];
    unsigned nk = PG_NKEYS(p);
    if (mc->ki[mc->top] != nk || nk < 1)
        return 0;
    if (append)
        return 1;
    for (unsigned l = 0; l < mc->top; l++)
        if ((unsigned)mc->ki[l] + 1 != PG_NKEYS(mc->pg[l]))
            return 0;
    return 1;
}

/* The append-friendly split: nothing moves, the new node alone goes to a new right page. */
static int split_at_end(MDB_cursor *mc, const MDB_val *key, const MDB_val *data, pgno_t pg,
                        unsigned nflags, int append)
{
    page *p = mc->pg[mc->top];
    int leaf = IS_LEAF(p);
    page *rp;
    int rc = page_alloc(mc->txn, 1, leaf ? P_LEAF : P_BRANCH, &rp);
    if (rc)
        return rc;
    /* a branch page's first key is empty: the key itself is the separator */
    MDB_val none = {0, NULL};
    if ((rc = page_add_node(rp, 0, leaf ? key : &none, data, pg, nflags, NULL)) != 0)
        return rc;
    if (leaf)
        mc->db->leaf_pages++;
    else
        mc->db->branch_pages++;
    uint8_t sepbuf[MDB_MAXKEYSIZE_DEFAULT];
    memcpy(sepbuf, key->mv_data, key->mv_size);
    MDB_val sep = {key->mv_size, sepbuf};
    /* with room in the parent, the path to the new page is the old one, one further right */
    int stays = mc->top > 0 &&
                PG_ROOM(mc->pg[mc->top - 1]) >= node_branch_size(sep.mv_size);
    if ((rc = link_right(mc, p->pgno, &sep, rp->pgno, append)) != 0)
        return rc;
    if (stays) {
        mc->ki[mc->top - 1]++;
        mc->pg[mc->top] = rp;
        mc->ki[mc->top] = 0;
        mc->flags |= C_INITIALIZED;
    } else {
        mc->flags &= ~C_INITIALIZED;
    }
    return 0;
}

int tree_split(MDB_cursor *mc, const MDB_val *key, const MDB_val *data, pgno_t pg,
               unsigned nflags, int append)
{
    if (mc->pg[mc->top]->flags & P_LEAF2)
        return split_leaf2(mc, key, append);
    if (append_friendly(mc, append))
        return split_at_end(mc, key, data, pg, nflags, append);
    MDB_txn *txn = mc->txn;
    MDB_env *env = txn->env;
    unsigned psize = env->psize;
    page *p = mc->pg[mc->top];
    unsigned idx = mc->ki[mc->top], nk = PG_NKEYS(p);
    int leaf = IS_LEAF(p), rc;
    size_t cap = psize - PAGEHDRSZ;

    uint8_t *scratch = malloc(psize + MDB_MAXKEYSIZE_DEFAULT + (size_t)env->node_max);
    split_item *it = malloc((nk + 1) * sizeof(split_item));
    if (!scratch || !it) {
        free(scratch);
        free(it);
        return ENOMEM;
    }
    memcpy(scratch, p, psize);
    page *sp = (page *)scratch;
    /* keep copies of the new key and small data: the caller's may point into p */
    uint8_t *kcopy = scratch + psize;
    uint8_t *dcopy = kcopy + MDB_MAXKEYSIZE_DEFAULT;
    MDB_val nkey = {key->mv_size, kcopy}, ndata = {0, NULL};
    memcpy(kcopy, key->mv_data, key->mv_size);
    if (leaf) {
        ndata = *data;
        if (!(nflags & F_BIGDATA) && data->mv_data && data->mv_size <= env->node_max) {
            memcpy(dcopy, data->mv_data, data->mv_size);
            ndata.mv_data = dcopy;
        }
    }
    new_node nn = {&nkey, &ndata, pg, nflags};

    size_t total = 0;
    for (unsigned i = 0, j = 0; i <= nk; i++) {
        if (i == idx) {
            int big;
            it[i].old = NULL;
            it[i].size = leaf ? node_leaf_size(env, nkey.mv_size,
                                               (nflags & F_BIGDATA) ? sizeof(pgno_t) : ndata.mv_size, &big)
                              : node_branch_size(nkey.mv_size);
        } else {
            it[i].old = PG_NODE(sp, j);
            it[i].size = node_body_size(sp, it[i].old) + sizeof(indx_t);
            j++;
        }
        total += it[i].size;
    }

    /* choose the cut: items [0, s) stay, [s, nk] move right */
    unsigned s = 0;
    size_t best = SIZE_MAX, left = 0;
    for (unsigned cut = 1; cut <= nk; cut++) {
        left += it[cut - 1].size;
        size_t right = total - left;
        if (!leaf)
            right -= it[cut].size - node_branch_size(0);
        size_t worst = left > right ? left : right;
        if (worst < best) {
            best = worst;
            s = cut;
        }
    }
    if (best > cap) {
        rc = MDB_PAGE_FULL;
        goto out;
    }

    /* the separator: first key of the right half */
    uint8_t sepbuf[MDB_MAXKEYSIZE_DEFAULT];
    MDB_val sep;
    if (it[s].old) {
        sep.mv_size = it[s].old->ksize;
        memcpy(sepbuf, it[s].old->key, sep.mv_size);
    } else {
        sep.mv_size = nkey.mv_size;
        memcpy(sepbuf, nkey.mv_data, sep.mv_size);
    }
    sep.mv_data = sepbuf;

    page *rp;
    if ((rc = page_alloc(txn, 1, leaf ? P_LEAF : P_BRANCH, &rp)) != 0)
        goto out;
    pgno_t keep = p->pgno;
    page_init(p, keep, p->flags, psize);
    if ((rc = fill(p, sp, it, 0, s, &nn, 0)) != 0)
        goto out;
    if ((rc = fill(rp, sp, it, s, nk + 1, &nn, !leaf)) != 0)
        goto out;
    if (leaf)
        mc->db->leaf_pages++;
    else
        mc->db->branch_pages++;

    rc = link_right(mc, keep, &sep, rp->pgno, append);
    mc->flags &= ~C_INITIALIZED;
out:
    free(scratch);
    free(it);
    return rc;
}
