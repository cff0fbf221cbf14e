/*
 * tree_del.c -- deleting items and keeping the tree in shape (layer L5).
 *
 * After a node leaves a page, or a put shrinks one (a key's sub-page became a sub-tree),
 * a page under 25% fill (or a branch with fewer than two children, or an empty leaf) is
 * merged with a sibling when both fit in one page; a leaf
 * that cannot merge borrows one node from its sibling when the parent can hold the new
 * separator.  A root branch with a single child is replaced by that child; an empty root
 * leaf empties the tree.  Branch slot 0 always carries an empty key.
 * Invariants: depth and page counters stay exact; every freed page goes to page_free.
 */
#include <stdlib.h>

#include "core.h"
#include "tree_raw.h"

/* Make the child at parent slot idx writable; parent must already be dirty. */
static int touch_child(MDB_txn *txn, page *parent, unsigned idx, page **out)
{
    node_header *n = PG_NODE(parent, idx);
    page *c;
    int rc = page_get(txn, node_child(n), &c);
    if (rc)
        return rc;
    if (!page_writable(txn, c)) {
        page *np;
        if ((rc = page_make_writable(txn, c, &np)) != 0)
            return rc;
        node_set_child(n, np->pgno);
        c = np;
    }
    *out = c;
    return 0;
}

/* Replace the key of branch node i (child kept).  MDB_PAGE_FULL if it would not fit. */
static int branch_set_key(page *p, unsigned i, const MDB_val *key, unsigned psize)
{
    node_header *n = PG_NODE(p, i);
    size_t oldsz = EVEN(NODESIZE + n->ksize), newsz = EVEN(NODESIZE + key->mv_size);
    if (newsz > oldsz && PG_ROOM(p) < newsz - oldsz)
        return MDB_PAGE_FULL;
    uint8_t kb[MDB_MAXKEYSIZE_DEFAULT];
    if (key->mv_size) /* the empty key of slot 0 has no bytes (and may have no pointer) */
        memcpy(kb, key->mv_data, key->mv_size);
    MDB_val k = {key->mv_size, kb};
    pgno_t child = node_child(n);
    page_del_node(p, i, psize);
    return page_add_node(p, i, &k, NULL, child, 0, NULL);
}

/* Remove parent slot i; keep slot 0's key empty. */
static void branch_remove(page *p, unsigned i, unsigned psize)
{
    page_del_node(p, i, psize);
    if (i == 0 && PG_NKEYS(p) > 0 && PG_NODE(p, 0)->ksize) {
        MDB_val none = {0, NULL};
        branch_set_key(p, 0, &none, psize);
    }
}

/* Append all nodes of src to dst; for branches src's slot 0 takes key `sep`. */
static int merge_into(page *dst, const page *src, const MDB_val *sep)
{
    if (src->flags & P_LEAF2) {
        for (unsigned i = 0; i < PG_NKEYS(src); i++) {
            MDB_val k = {src->leaf2_ksize,
                         (uint8_t *)src + PAGEHDRSZ + (size_t)i * src->leaf2_ksize};
            int rc = page_add_node(dst, PG_NKEYS(dst), &k, NULL, 0, 0, NULL);
            if (rc)
                return rc;
        }
        return 0;
    }
    for (unsigned i = 0; i < PG_NKEYS(src); i++) {
        const node_header *n = PG_NODE(src, i);
        if (i == 0 && IS_BRANCH(src)) {
            int rc = page_add_node(dst, PG_NKEYS(dst), sep, NULL, node_child(n), 0, NULL);
            if (rc)
                return rc;
        } else {
            page_append_raw(dst, n, node_body_size(src, n));
        }
    }
    return 0;
}

static void count_page_gone(db_record *db, const page *p)
{
    if (IS_LEAF(p))
        db->leaf_pages--;
    else
        db->branch_pages--;
}

/* Whether the page at level lvl of the cursor's path is in shape after a node left it, so
 * that rebalance(mc, lvl) would leave the whole tree as it is: a root leaf that still holds
 * an item, or any other page over the fill threshold with enough keys. */
static int page_settled(const MDB_cursor *mc, int lvl)
{
    const page *p = mc->pg[lvl];
    unsigned nk = PG_NKEYS(p);
    if (lvl == 0)
        return IS_LEAF(p) ? nk > 0 : nk > 1;
    size_t cap = mc->txn->env->psize - PAGEHDRSZ;
    return page_used(p, mc->txn->env->psize) * 1000 >= cap * FILL_THRESHOLD_PERMILLE &&
           nk >= (IS_LEAF(p) ? 1u : 2u);
}

/* Rebalance the page at level lvl of the cursor's path (all path pages are dirty). */
static int rebalance(MDB_cursor *mc, int lvl)
{
    MDB_txn *txn = mc->txn;
    MDB_env *env = txn->env;
    unsigned psize = env->psize;
    size_t cap = psize - PAGEHDRSZ;
    int rc;
    for (; lvl >= 0; lvl--) {
        page *p = mc->pg[lvl];
        unsigned nk = PG_NKEYS(p);
        if (lvl == 0) {
            if (nk == 0) {
                count_page_gone(mc->db, p);
                mc->db->root = P_INVALID;
                mc->db->depth = 0;
                return page_free(txn, p->pgno, 1);
            }
            while (IS_BRANCH(p) && PG_NKEYS(p) == 1) {
                pgno_t child = node_child(PG_NODE(p, 0));
                mc->db->root = child;
                mc->db->depth--;
                mc->db->branch_pages--;
                if ((rc = page_free(txn, p->pgno, 1)) != 0)
                    return rc;
                if ((rc = page_get(txn, child, &p)) != 0)
                    return rc;
            }
            return 0;
        }
        if (page_settled(mc, lvl))
            return 0;
        page *parent = mc->pg[lvl - 1];
        unsigned pi = mc->ki[lvl - 1], pnk = PG_NKEYS(parent);
        if (nk == 0) {
            /* An empty page leaves its parent outright, whatever its siblings hold: a
             * merge could fail for want of room in the sibling and leave an empty branch
             * in the tree, which no search can pass through.  The parent may empty too. */
            count_page_gone(mc->db, p);
            if ((rc = page_free(txn, p->pgno, 1)) != 0)
                return rc;
            branch_remove(parent, pi, psize);
            continue;
        }
        if (pnk < 2)
            return 0;
        int left = pi > 0;
        unsigned si = left ? pi - 1 : pi + 1;
        page *sib;
        if ((rc = touch_child(txn, parent, si, &sib)) != 0)
            return rc;
        if (IS_LEAF(sib) != IS_LEAF(p))
            return CORRUPT_AT(sib->pgno);
        /* merge the right page of the pair into the left one */
        page *lp = left ? sib : p, *rp = left ? p : sib;
        unsigned ri = left ? pi : pi + 1;
        MDB_val sep = {0, NULL};
        size_t extra = 0;
        if (IS_BRANCH(rp)) {
            node_key(PG_NODE(parent, ri), &sep);
            extra = EVEN(NODESIZE + sep.mv_size) - EVEN(NODESIZE + PG_NODE(rp, 0)->ksize);
        }
        if (page_used(lp, psize) + page_used(rp, psize) + extra <= cap) {
            if ((rc = merge_into(lp, rp, &sep)) != 0)
                return rc;
            count_page_gone(mc->db, rp);
            if ((rc = page_free(txn, rp->pgno, 1)) != 0)
                return rc;
            branch_remove(parent, ri, psize);
            continue;
        }
        if (!IS_LEAF(p) || nk == 0 || (p->flags & P_LEAF2))
            return 0;
        /* borrow one node from the sibling */
        if (PG_NKEYS(sib) < 2)
            return 0;
        if (left) {
            unsigned last = PG_NKEYS(sib) - 1;
            node_header *n = PG_NODE(sib, last);
            MDB_val k;
            node_key(n, &k);
            size_t body = node_body_size(sib, n);
            if (PG_ROOM(p) < body + sizeof(indx_t))
                return 0;
            /* first make sure the parent can take the new separator */
            if ((rc = branch_set_key(parent, pi, &k, psize)) == MDB_PAGE_FULL)
                return 0;
            if (rc)
                return rc;
            unsigned cnt = PG_NKEYS(p);
            p->u.bounds.upper = (indx_t)(p->u.bounds.upper - body);
            memcpy((uint8_t *)p + p->u.bounds.upper, n, body);
            memmove(&p->slots[1], &p->slots[0], cnt * sizeof(indx_t));
            p->slots[0] = p->u.bounds.upper;
            p->u.bounds.lower = (indx_t)(p->u.bounds.lower + sizeof(indx_t));
            page_del_node(sib, last, psize);
        } else {
            node_header *n = PG_NODE(sib, 0);
            size_t body = node_body_size(sib, n);
            if (PG_ROOM(p) < body + sizeof(indx_t))
                return 0;
            MDB_val k2;
            node_key(PG_NODE(sib, 1), &k2);
            if ((rc = branch_set_key(parent, si, &k2, psize)) == MDB_PAGE_FULL)
                return 0;
            if (rc)
                return rc;
            page_append_raw(p, n, body);
            page_del_node(sib, 0, psize);
        }
        return 0;
    }
    return 0;
}

int tree_del_current(MDB_cursor *mc, int internal)
{
    MDB_txn *txn = mc->txn;
    node_header *n = NULL;
    int rc;
    uint8_t kb[MDB_MAXKEYSIZE_DEFAULT];
    MDB_val key;
    page *lp = mc->pg[mc->top];
    if ((mc->flags & C_INITIALIZED) && mc->snum && (lp->flags & P_LEAF2)) {
        if (mc->ki[mc->top] >= PG_NKEYS(lp))
            return MDB_NOTFOUND;
        if ((rc = leaf_key(mc, lp, mc->ki[mc->top], &key)) != 0)
            return rc;
    } else {
        if ((rc = cursor_node(mc, &n)) != 0)
            return rc;
        if ((n->flags & F_SUBDATA) && !internal)
            return MDB_INCOMPATIBLE;
        node_key(n, &key);
    }
    memcpy(kb, key.mv_data, key.mv_size);
    key.mv_data = kb;
    unsigned eof = mc->flags & C_EOF; /* LMDB keeps a stale end mark across a delete */

    txn_pages_changed(mc->txn); /* a rebalance may move nodes between pages (track_after_put) */
    track_before(mc);
    if ((rc = cursor_touch(mc)) != 0)
        goto fail;
    page *leaf = mc->pg[mc->top];
    n = (leaf->flags & P_LEAF2) ? NULL : PG_NODE(leaf, mc->ki[mc->top]);
    if (n && (n->flags & F_BIGDATA)) {
        unsigned freed;
        if ((rc = overflow_free(txn, n, &freed)) != 0)
            goto fail;
        mc->db->overflow_pages -= freed;
    }
    page_del_node(leaf, mc->ki[mc->top], txn->env->psize);
    mc->db->entries--;
    /* A leaf that stays in shape keeps the tree's pages and separators: the cursor's path
     * is still the one a search for the deleted key takes, and its index in the leaf is
     * where that search would land (LMDB also fixes the cursor up in place). */
    int settled = page_settled(mc, mc->top);
    if (!settled && (rc = rebalance(mc, mc->top)) != 0)
        goto fail;

    /* land on the successor of the deleted key; its duplicates are entered lazily */
    if (mc->xcursor)
        mc->xcursor->mc.flags = C_SUB;
    int exact;
    if (settled) {
        mc->flags &= ~(C_EOF | C_DEL);
        rc = 0;
    } else {
        rc = cursor_seek(mc, &key, &exact);
    }
    if (rc == MDB_NOTFOUND) {
        /* the tree is empty now: LMDB leaves the cursor unset with its end mark, which a
         * put into the empty tree keeps (cursor_put_keeps_eof) */
        mc->flags &= ~(C_INITIALIZED | C_DEL);
        mc->flags |= C_EOF;
        rc = 0;
    } else if (rc == 0) {
        if (mc->ki[mc->top] >= PG_NKEYS(mc->pg[mc->top])) {
            rc = cursor_sibling(mc, 1);
            if (rc == MDB_NOTFOUND) {
                /* we deleted the last item: stay past the end */
                mc->flags |= C_EOF;
                rc = 0;
            }
        }
        mc->flags |= C_DEL | eof;
        /* A successor with duplicates gets its duplicate cursor on the first one, marked
         * too: a NEXT after some other call then still reports it (LMDB 0.9.36) */
        node_header *sn;
        if (rc == 0 && mc->xcursor && !(mc->flags & C_EOF) && cursor_node(mc, &sn) == 0 &&
            (sn->flags & F_DUPDATA) && (rc = cursor_enter(mc, 0)) == 0)
            mc->xcursor->mc.flags |= C_DEL;
    }
    if (rc)
        goto fail;
    return track_after(mc);
fail:
    mc->flags &= ~C_INITIALIZED;
    track_after(mc);
    return rc;
}

/* A put that made the key's node much smaller -- a sub-page that became a sub-tree shrinks
 * from up to node_max bytes to a record -- can leave its leaf nearly empty, and LMDB leaves
 * it so: a DUPSORT index whose few keys outgrew their sub-pages keeps the leaves their
 * growth split off, each holding a node or two, and every txn that adds to those keys
 * dirties them all.  Such a leaf is merged as after a delete (rebalance), and the cursor
 * stands on the key again.  The cursor's path must be dirty (the put touched it). */
int tree_settle_after_shrink(MDB_cursor *mc, const MDB_val *key)
{
    if (page_settled(mc, mc->top))
        return 0;
    uint8_t kb[MDB_MAXKEYSIZE_DEFAULT];
    if (key->mv_size > sizeof(kb))
        return EINVAL;
    memcpy(kb, key->mv_data, key->mv_size);
    MDB_val k = {key->mv_size, kb};
    txn_pages_changed(mc->txn);
    int rc = rebalance(mc, mc->top), exact = 0;
    if (rc == 0 && (rc = cursor_seek(mc, &k, &exact)) == 0 && !exact)
        rc = CORRUPT_AT(mc->pg[mc->top]->pgno);
    if (rc)
        mc->flags &= ~C_INITIALIZED;
    return rc;
}

/* Free the pages of the subtree rooted at pg (depth levels). */
static int free_subtree(MDB_txn *txn, pgno_t pg, unsigned depth)
{
    if (depth > CURSOR_STACK)
        return CORRUPT_AT(pg);
    page *p;
    int rc = page_get(txn, pg, &p);
    if (rc)
        return rc;
    unsigned nk = PG_NKEYS(p);
    if (IS_BRANCH(p)) {
        for (unsigned i = 0; i < nk; i++) {
            if ((rc = node_check(txn->env, p, i)) != 0)
                return rc;
            /* the page pointer may die when a child is freed (dirty pages are heap) */
            pgno_t child = node_child(PG_NODE(p, i));
            if ((rc = free_subtree(txn, child, depth + 1)) != 0)
                return rc;
            if ((rc = page_get(txn, pg, &p)) != 0)
                return rc;
        }
    } else if (IS_LEAF(p) && !(p->flags & P_LEAF2)) {
        for (unsigned i = 0; i < nk; i++) {
            if ((rc = node_check(txn->env, p, i)) != 0)
                return rc;
            node_header *n = PG_NODE(p, i);
            if (n->flags & F_BIGDATA) {
                unsigned freed;
                if ((rc = overflow_free(txn, n, &freed)) != 0)
                    return rc;
            } else if ((n->flags & (F_DUPDATA | F_SUBDATA)) == (F_DUPDATA | F_SUBDATA)) {
                /* a key's duplicates in their own tree */
                db_record sub;
                if (node_dsize(n) != sizeof(sub))
                    return CORRUPT_AT(pg);
                memcpy(&sub, node_data(n), sizeof(sub));
                if (sub.root != P_INVALID && (rc = free_subtree(txn, sub.root, depth + 1)) != 0)
                    return rc;
                if ((rc = page_get(txn, pg, &p)) != 0)
                    return rc;
            }
        }
    } else if (IS_LEAF(p)) {
        /* packed duplicates: nothing hangs off them */
    } else {
        return CORRUPT_AT(pg);
    }
    return page_free(txn, pg, 1);
}

int tree_free_record(MDB_txn *txn, const db_record *rec)
{
    return rec->root == P_INVALID ? 0 : free_subtree(txn, rec->root, 1);
}

int tree_free_all(MDB_txn *txn, MDB_dbi dbi)
{
    db_record *db = &txn->dbs[dbi];
    if (db->root != P_INVALID) {
        int rc = free_subtree(txn, db->root, 1);
        if (rc)
            return rc;
    }
    db->root = P_INVALID;
    db->depth = 0;
    db->branch_pages = db->leaf_pages = db->overflow_pages = 0;
    db->entries = 0;
    txn->dbstate[dbi] |= DBS_DIRTY;
    return 0;
}
