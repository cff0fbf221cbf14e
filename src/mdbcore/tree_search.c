/*
 * tree_search.c -- root-to-leaf descent and the binary search of a leaf (layer L3, the
 * read path: never allocates, never writes).  Pages come from page_get.c.
 *
 * Invariants kept: a descent never goes deeper than CURSOR_STACK and ends on a leaf
 * exactly at the depth recorded for the tree; every node and key looked at lies inside
 * its page (or sub-page).
 */
#include "core.h"

/* Index of the child to follow in branch p for key: the last node whose key <= key. */
static int branch_pick(MDB_cursor *mc, page *p, const MDB_val *key, unsigned *out)
{
    size_t psize = mc->txn->env->psize;
    MDB_cmp_func *cmp = cursor_cmp(mc);
    unsigned lo = 1, hi = PG_NKEYS(p), found = 0;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        int rc = node_check_in(p, mid, psize);
        if (rc)
            return rc;
        MDB_val k;
        node_key(PG_NODE(p, mid), &k);
        if (cmp_keys(cmp, key, &k) >= 0) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *out = found;
    return 0;
}

/* Key i of leaf page p whose nodes must end within `limit` bytes (the page size, or a
 * sub-page's size). */
static inline int key_at(const page *p, unsigned i, size_t limit, MDB_val *k)
{
    if (p->flags & P_LEAF2) {
        /* packed fixed-size keys; the page was bounds-checked when it was fetched */
        k->mv_size = p->leaf2_ksize;
        k->mv_data = (uint8_t *)p + PAGEHDRSZ + (size_t)i * p->leaf2_ksize;
        return 0;
    }
    int rc = node_check_in(p, i, limit);
    if (rc)
        return rc;
    node_key(PG_NODE(p, i), k);
    return 0;
}

static inline size_t leaf_limit(const MDB_cursor *mc, const page *p)
{
    return (p == mc->inline_root) ? mc->inline_size : mc->txn->env->psize;
}

int leaf_key(const MDB_cursor *mc, const page *p, unsigned i, MDB_val *k)
{
    return key_at(p, i, leaf_limit(mc, p), k);
}

/* Trees of more leaves than this get their leaf prefetched in a lookup (below): 1 MiB of
 * 4 KiB pages, an L2 cache's size. */
#define PREFETCH_MIN_LEAVES 256

int tree_descend(MDB_cursor *mc, const MDB_val *key, int mode)
{
    pgno_t pg = mc->db->root;
    mc->snum = 0;
    mc->top = 0;
    if (pg == P_INVALID && !mc->inline_root) {
        /* LMDB answers an empty tree before it touches the cursor's marks: the end mark
         * left by the delete that emptied the tree outlasts lookups, and a put keeps it */
        mc->flags &= ~(C_INITIALIZED | C_DEL);
        return MDB_NOTFOUND;
    }
    mc->flags &= ~(C_INITIALIZED | C_EOF | C_DEL);
    if (mc->inline_root) {
        page *p = mc->inline_root;
        unsigned nk = PG_NKEYS(p);
        mc->pg[0] = p;
        mc->ki[0] = (indx_t)((mode == SRCH_LAST && nk) ? nk - 1 : 0);
        mc->snum = 1;
        mc->flags |= C_INITIALIZED;
        return nk ? 0 : MDB_NOTFOUND;
    }
    if (pg == P_INVALID)
        return MDB_NOTFOUND;
    for (unsigned depth = 0;; depth++) {
        if (depth >= CURSOR_STACK)
            return CORRUPT_AT(pg);
        /* The leaf of a random lookup in a big tree is rarely in cache (branches mostly
         * are): it is asked for whole before its header is read.  Warm random gets, 1M
         * records (123 MB): 760 -> 635 ns a get (LMDB 795); 100k: 320 -> 222 (322).  In a
         * write txn only a leaf still in the map is (a dirty copy was just written):
         * fillrandom, overwrite, deleterandom at 1,000 puts a txn 1.07x, 1.09x, 1.03x.  A
         * tree of a few hundred leaves stays in the CPU's cache, where this only costs
         * (1,000 records: 102 -> 113 ns a get without the size test). */
        page *p;
        int rc = (mode == SRCH_KEY && depth + 1 == mc->db->depth &&
                  mc->db->leaf_pages > PREFETCH_MIN_LEAVES)
                     ? page_get_whole(mc->txn, pg, &p)
                     : page_get(mc->txn, pg, &p);
        if (rc)
            return rc;
        if (p->flags & P_OVERFLOW)
            return CORRUPT_AT(pg);
        mc->pg[depth] = p;
        mc->ki[depth] = 0;
        mc->snum = (uint16_t)(depth + 1);
        mc->top = (uint16_t)depth;
        unsigned nk = PG_NKEYS(p);
        if (IS_LEAF(p)) {
            if (mc->snum != mc->db->depth)
                return CORRUPT_AT(pg);
            if ((p->flags & P_LEAF2) && !(mc->flags & C_SUB))
                return CORRUPT_AT(pg); /* packed leaves only hold DUPFIXED duplicates */
            if (nk == 0 && depth > 0)
                return CORRUPT_AT(pg);
            if (mode == SRCH_LAST && nk)
                mc->ki[depth] = (indx_t)(nk - 1);
            mc->flags |= C_INITIALIZED;
            return 0;
        }
        unsigned i = 0;
        if (mode == SRCH_LAST)
            i = nk - 1;
        else if (mode == SRCH_KEY && (rc = branch_pick(mc, p, key, &i)) != 0)
            return rc;
        if ((rc = node_check(mc->txn->env, p, i)) != 0)
            return rc;
        mc->ki[depth] = (indx_t)i;
        pg = node_child(PG_NODE(p, i));
    }
}

static inline __attribute__((always_inline)) int search_slots(MDB_cursor *mc, const MDB_val *key,
                                                             unsigned lo, unsigned hi, int *exact)
{
    page *p = mc->pg[mc->top];
    MDB_cmp_func *cmp = cursor_cmp(mc);
    size_t limit = leaf_limit(mc, p); /* once per page, not per probe */
    *exact = 0;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        MDB_val k;
        int rc = key_at(p, mid, limit, &k);
        if (rc)
            return rc;
        int c = cmp_keys(cmp, key, &k);
        if (c == 0) {
            *exact = 1;
            lo = mid;
            break;
        }
        if (c > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    mc->ki[mc->top] = (indx_t)lo;
    return 0;
}

int leaf_search(MDB_cursor *mc, const MDB_val *key, int *exact)
{
    return search_slots(mc, key, 0, PG_NKEYS(mc->pg[mc->top]), exact);
}

int leaf_search_in(MDB_cursor *mc, const MDB_val *key, unsigned lo, unsigned hi, int *exact)
{
    return search_slots(mc, key, lo, hi, exact);
}
