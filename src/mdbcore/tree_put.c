/*
 * tree_put.c -- insert or replace one item (layer L5): argument rules of the put flags,
 * copy-on-write of the path, in-place replacement when the size allows, overflow values,
 * and the hand-off to tree_split when the leaf is full.
 *
 * Invariant on return (success): the cursor is on the item just written, the tree's
 * entries/page counters are exact, and other cursors on the same database have been put
 * back on their items (cursor_track.c).
 */
#include <stdlib.h>

#include "core.h"

/* Is [ptr, ptr+len) inside page p? */
static int inside(const page *p, unsigned psize, const void *ptr, size_t len)
{
    const uint8_t *a = (const uint8_t *)p, *b = ptr;
    return len && b + len > a && b < a + psize;
}

static int insert_new(MDB_cursor *mc, const MDB_val *key, MDB_val *data, unsigned nflags,
                      int append, void **dst)
{
    MDB_txn *txn = mc->txn;
    MDB_env *env = txn->env;
    page *leaf = mc->pg[mc->top];
    int big, rc;
    size_t need = node_leaf_size(env, key->mv_size, data->mv_size, &big);
    pgno_t ov = 0;
    MDB_val nd = *data;
    if (big) {
        if ((rc = overflow_write(txn, data, &ov, dst)) != 0)
            return rc;
        mc->db->overflow_pages += OVERFLOW_PAGES(env->psize, data->mv_size);
        nflags |= F_BIGDATA;
    }
    if (leaf->flags & P_LEAF2)
        need = leaf->leaf2_ksize;
    if (PG_ROOM(leaf) >= need) {
        node_header *n;
        rc = page_add_node(leaf, mc->ki[mc->top], key, &nd, ov, nflags, &n);
        if (rc)
            return rc;
        if (!big && n)
            *dst = node_data(n);
    } else {
        rc = tree_split(mc, key, &nd, ov, nflags, append);
        if (rc)
            return rc;
        int exact;
        /* a split that could not say where the new node went: find it */
        if (!(mc->flags & C_INITIALIZED)) {
            if ((rc = cursor_seek(mc, key, &exact)) != 0)
                return rc;
            if (!exact)
                return CORRUPT_AT(mc->pg[mc->top]->pgno);
        }
        if (!big && !(mc->pg[mc->top]->flags & P_LEAF2))
            *dst = node_data(PG_NODE(mc->pg[mc->top], mc->ki[mc->top]));
    }
    mc->db->entries++;
    return 0;
}

/* Does the cursor stand on the last item of its tree, with a stack that is the tree's
 * current right edge (root first, every level on its last entry and pointing at the page
 * of the next)?  For a caller's cursor, whose pages a tracked cursor keeps live; a
 * restored saved edge needs no such walk (PUT_AT_EDGE). */
static int on_last_item(const MDB_cursor *mc)
{
    if (!(mc->flags & C_INITIALIZED) || (mc->flags & C_DEL) || mc->inline_root ||
        mc->snum == 0 || mc->snum != mc->db->depth || mc->pg[0]->pgno != mc->db->root)
        return 0;
    for (unsigned i = 0; i < mc->snum; i++) {
        const page *p = mc->pg[i];
        if ((unsigned)mc->ki[i] + 1 != PG_NKEYS(p))
            return 0;
        if (i < mc->top &&
            (!IS_BRANCH(p) || node_child(PG_NODE(p, mc->ki[i])) != mc->pg[i + 1]->pgno))
            return 0;
    }
    return IS_LEAF(mc->pg[mc->top]);
}

/* The saved edge is the stack a put left, checked then to stand on the last entry of
 * every level from the root down (tree_edge_remember).  While txn->shape_gen has not
 * moved since, no tree of this txn changed and no dirty page moved or went back (every
 * put and delete, page alloc and free, spill and child txn moves it), so that stack is
 * still the right edge, parent to child: tree_put need not check it again (PUT_AT_EDGE). */
int tree_edge_restore(MDB_cursor *mc)
{
    const struct right_edge *e = &mc->txn->edge;
    if (e->snum == 0 || e->shape_gen != mc->txn->shape_gen || e->dbi != mc->dbi)
        return 0;
    /* The same tree?  A handle closed mid-txn and its number given to another database
     * moves no page and changes no tree.  (The saved pages are still held while shape_gen
     * holds, so reading the root's number is safe.) */
    if (e->snum != mc->db->depth || e->pg[0]->pgno != mc->db->root)
        return 0;
    for (unsigned i = 0; i < e->snum; i++) {
        mc->pg[i] = e->pg[i];
        mc->ki[i] = e->ki[i];
    }
    mc->snum = e->snum;
    mc->top = (uint16_t)(e->snum - 1);
    mc->flags |= C_INITIALIZED;
    mc->flags &= ~(C_EOF | C_DEL);
    return 1;
}

void tree_edge_remember(const MDB_cursor *mc)
{
    struct right_edge *e = &mc->txn->edge;
    unsigned top = mc->top;
    if (mc->snum == 0 || (unsigned)mc->ki[top] + 1 != PG_NKEYS(mc->pg[top])) {
        e->snum = 0; /* (the leaf first: most puts not at the end stop here) */
        return;
    }
    /* The usual append: no page was allocated or freed since the edge was saved, so no
     * branch page changed (a split or a merge does both), and the put ended on the saved
     * leaf: the saved stack holds but for the leaf's entry, which the put moved on. */
    if (e->snum && e->pages_gen == mc->txn->pages_gen && e->dbi == mc->dbi &&
        e->snum == mc->snum && e->pg[top] == mc->pg[top]) {
        e->ki[top] = mc->ki[top];
        e->shape_gen = mc->txn->shape_gen;
        return;
    }
    e->snum = 0;
    /* a live stack after a put: each page is the child its parent's entry names, so the
     * right edge is the one on the last entry of every level, the root's included */
    if (mc->snum > RIGHT_EDGE_DEPTH || mc->snum != mc->db->depth ||
        mc->pg[0]->pgno != mc->db->root || mc->inline_root || !IS_LEAF(mc->pg[top]))
        return;
    for (unsigned i = 0; i < mc->snum; i++) {
        if ((unsigned)mc->ki[i] + 1 != PG_NKEYS(mc->pg[i]))
            return;
        e->pg[i] = mc->pg[i];
        e->ki[i] = mc->ki[i];
    }
    e->snum = mc->snum;
    e->dbi = mc->dbi;
    e->shape_gen = mc->txn->shape_gen;
    e->pages_gen = mc->txn->pages_gen;
}

/* A key past the last of a tree whose right edge the cursor stands on goes at the end of
 * that leaf, where a search would put it: place the cursor there without one (1).
 * Sequential puts without MDB_APPEND take this path. */
static int past_last_item(MDB_cursor *mc, const MDB_val *key, int at_edge)
{
    if (!at_edge && !on_last_item(mc))
        return 0;
    MDB_val last;
    page *leaf = mc->pg[mc->top];
    if (leaf_key(mc, leaf, mc->ki[mc->top], &last) != 0 || cmp_keys(cursor_cmp(mc), key, &last) <= 0)
        return 0;
    mc->ki[mc->top]++;
    return 1;
}

static int new_root(MDB_cursor *mc)
{
    page *p;
    /* a DUPFIXED duplicate tree keeps its values packed */
    int packed = (mc->flags & C_SUB) && (mc->db->flags & MDB_DUPFIXED);
    int rc = page_alloc(mc->txn, 1, packed ? (P_LEAF | P_LEAF2) : P_LEAF, &p);
    if (rc)
        return rc;
    if (packed)
        p->leaf2_ksize = (uint16_t)mc->db->pad;
    mc->db->root = p->pgno;
    mc->db->depth = 1;
    mc->db->leaf_pages = 1;
    mc->pg[0] = p;
    mc->ki[0] = 0;
    mc->snum = 1;
    mc->top = 0;
    mc->flags |= C_INITIALIZED;
    *mc->dbstate |= DBS_DIRTY;
    return 0;
}

int tree_put(MDB_cursor *mc, const MDB_val *key_in, MDB_val *data, unsigned flags)
{
    MDB_txn *txn = mc->txn;
    MDB_env *env = txn->env;
    unsigned psize = env->psize;
    unsigned nflags = ((flags & PUT_SUBDATA) ? F_SUBDATA : 0) | ((flags & PUT_DUPDATA) ? F_DUPDATA : 0);
    int rc, exact = 0;
    int at_edge = (flags & PUT_AT_EDGE) != 0;

    if (!key_in || !data)
        return EINVAL;
    if (key_in->mv_size == 0 || key_in->mv_size > env->maxkeysize)
        return MDB_BAD_VALSIZE;
    if (data->mv_size > UINT32_MAX)
        return MDB_BAD_VALSIZE;
    /* our own copy: the caller's key may live in a page we are about to rearrange */
    uint8_t kbuf[MDB_MAXKEYSIZE_DEFAULT];
    memcpy(kbuf, key_in->mv_data, key_in->mv_size);
    MDB_val key = {key_in->mv_size, kbuf};

    if (flags & MDB_CURRENT) {
        node_header *n;
        if ((rc = cursor_node(mc, &n)) != 0)
            return rc == MDB_NOTFOUND ? EINVAL : rc;
        /* the item keeps its own key: replacing it must not reorder the page */
        memcpy(kbuf, n->key, n->ksize);
        key.mv_size = n->ksize;
        exact = 1;
    } else if (mc->db->root == P_INVALID || (flags & PUT_PLACED)) {
        exact = 0;
    } else if (flags & MDB_APPEND) {
        /* A loader appends through one cursor, which the last put left on the last item:
         * then that path is the one a descent would find, and re-walking it is wasted. */
        if (!at_edge && !on_last_item(mc) && (rc = tree_descend(mc, NULL, SRCH_LAST)) != 0)
            return rc;
        page *leaf = mc->pg[mc->top];
        if (PG_NKEYS(leaf)) {
            MDB_val last;
            if ((rc = leaf_key(mc, leaf, mc->ki[mc->top], &last)) != 0)
                return rc;
            if (cmp_keys(cursor_cmp(mc), &key, &last) <= 0)
                return MDB_KEYEXIST;
            mc->ki[mc->top]++;
        }
    } else if (!past_last_item(mc, &key, at_edge)) {
        /* a caller's cursor (live stack) may stand on the key already */
        rc = cursor_seek_here(mc, &key, &exact);
        if (rc)
            return rc;
    }
    if (exact && (mc->pg[mc->top]->flags & P_LEAF2))
        return (flags & MDB_NOOVERWRITE) ? MDB_KEYEXIST : 0; /* a present duplicate */
    if (exact) {
        node_header *n;
        if ((rc = cursor_node(mc, &n)) != 0)
            return rc;
        /* LMDB's order: MDB_NOOVERWRITE answers first (with the record's bytes), then a
         * named database's record is refused -- after LMDB has copied the path, so the
         * txn counts as written and its commit makes a new snapshot */
        if (flags & MDB_NOOVERWRITE) {
            MDB_val old;
            if ((rc = node_read(mc, n, &old)) != 0)
                return rc;
            *data = old;
            return MDB_KEYEXIST;
        }
        if ((n->flags & F_SUBDATA) && !(flags & (PUT_SUBDATA | PUT_DUPDATA))) {
            mc->txn->flags |= TXN_DIRTY;
            return MDB_INCOMPATIBLE; /* that key is a named database's record */
        }
        if ((n->flags & F_DUPDATA) && !(flags & PUT_DUPDATA))
            return MDB_INCOMPATIBLE;
    }

    track_before(mc);
    void *dst = NULL;
    MDB_val src = *data;
    void *tmp = NULL;
    if (flags & MDB_RESERVE)
        src.mv_data = NULL;

    if (mc->db->root == P_INVALID) {
        if ((rc = new_root(mc)) != 0)
            goto done;
    } else if ((rc = cursor_touch(mc)) != 0) {
        goto done;
    }
    page *leaf = mc->pg[mc->top];
    if (exact) {
        node_header *n = PG_NODE(leaf, mc->ki[mc->top]);
        int big;
        node_leaf_size(env, key.mv_size, data->mv_size, &big);
        if (n->flags & F_BIGDATA) {
            pgno_t ov;
            memcpy(&ov, node_data(n), sizeof(ov));
            page *op;
            if ((rc = page_get(txn, ov, &op)) != 0)
                goto done;
            size_t need = OVERFLOW_PAGES(psize, data->mv_size);
            if (big && page_writable(txn, op) && op->u.overflow_pages == need) {
                /* a run of this txn of the right length: rewrite it where it is */
                dst = (uint8_t *)op + PAGEHDRSZ;
                if (src.mv_data)
                    memmove(dst, src.mv_data, src.mv_size);
                n->lo = (uint16_t)data->mv_size;
                n->hi = (uint16_t)(data->mv_size >> 16);
                goto placed;
            }
            unsigned freed;
            if ((rc = overflow_free(txn, n, &freed)) != 0)
                goto done;
            mc->db->overflow_pages -= freed;
        } else if (!big && node_dsize(n) == data->mv_size) {
            dst = node_data(n);
            if (src.mv_data)
                memmove(dst, src.mv_data, src.mv_size);
            n->flags = (uint16_t)nflags;
            goto placed;
        }
        if (src.mv_data && inside(leaf, psize, src.mv_data, src.mv_size)) {
            if (!(tmp = malloc(src.mv_size))) {
                rc = ENOMEM;
                goto done;
            }
            memcpy(tmp, src.mv_data, src.mv_size);
            src.mv_data = tmp;
        }
        page_del_node(leaf, mc->ki[mc->top], psize);
        mc->db->entries--;
    }
    if (src.mv_data && !tmp && src.mv_size <= env->node_max &&
        inside(leaf, psize, src.mv_data, src.mv_size)) {
        /* a split rebuilds this page: keep the caller's bytes safe */
        if (!(tmp = malloc(src.mv_size))) {
            rc = ENOMEM;
            goto done;
        }
        memcpy(tmp, src.mv_data, src.mv_size);
        src.mv_data = tmp;
    }
    rc = insert_new(mc, &key, &src, nflags, (flags & MDB_APPEND) != 0, &dst);
    if (rc)
        goto done;
placed:
    *mc->dbstate |= DBS_DIRTY;
    if (mc->xcursor)
        mc->xcursor->mc.flags = C_SUB; /* the node changed: re-enter its duplicates lazily */
    if (flags & MDB_RESERVE)
        data->mv_data = dst;
    mc->flags |= C_INITIALIZED;
    mc->flags &= ~(C_EOF | C_DEL);
done:
    free(tmp);
    if (rc) {
        mc->flags &= ~C_INITIALIZED;
        track_after_put(mc, rc);
        return rc;
    }
    return track_after_put(mc, 0);
}
