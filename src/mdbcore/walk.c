/*
 * walk.c -- the page walker over raw snapshot bytes (see walk.h for the contract).
 *
 * Trust rule: nothing read from the file is used before it is checked.  Page numbers are
 * checked against [2, next_pgno) and the readable bytes; every slot, node, key, data and
 * sub-page against the page (or sub-page) that holds it; all multi-byte fields are read
 * with memcpy because nodes are only 2-byte aligned and sub-pages not at all.  Recursion is
 * bounded by CURSOR_STACK per tree and by the visitor refusing pages already reached.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mdbcore.h"
#include "walk.h"

#define DB_FLAG_MASK (MDB_REVERSEKEY | MDB_DUPSORT | MDB_INTEGERKEY | MDB_DUPFIXED | \
                      MDB_INTEGERDUP | MDB_REVERSEDUP)

typedef struct walker {
    const walk_input *in;
    const walk_visitor *v;
    int stop; /* <0: stop everything */
} walker;

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ---- reporting ---- */

__attribute__((format(printf, 5, 6))) static void prob(walker *w, const walk_tree *t,
                                                       pgno_t pgno, int code, const char *fmt,
                                                       ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (w->v->problem)
        w->v->problem(w->v->ctx, t, pgno, code, msg);
}

static int visit(walker *w, const walk_tree *t, const walk_page *p)
{
    if (!w->v->page)
        return 0;
    int r = w->v->page(w->v->ctx, t, p);
    if (r < 0)
        w->stop = r;
    return r;
}

/* The bytes of pages [pgno, pgno+npages), or NULL (reported) if not all readable. */
static const uint8_t *page_at(walker *w, const walk_tree *t, pgno_t pgno, uint64_t npages,
                              pgno_t from, const char *what)
{
    const walk_input *in = w->in;
    if (pgno < 2 || pgno >= in->next_pgno) {
        prob(w, t, from, MDBCORE_P_BOUNDS, "%s pgno %llu outside [2, %llu)", what,
             (unsigned long long)pgno, (unsigned long long)in->next_pgno);
        return NULL;
    }
    if (npages == 0 || npages > in->next_pgno - pgno) {
        prob(w, t, pgno, MDBCORE_P_BOUNDS, "%s of %llu pages runs past next_pgno %llu", what,
             (unsigned long long)npages, (unsigned long long)in->next_pgno);
        return NULL;
    }
    uint64_t end;
    if (__builtin_mul_overflow(pgno + npages, (uint64_t)in->psize, &end) || end > in->readable) {
        prob(w, t, pgno, MDBCORE_P_BOUNDS, "%s page %llu (+%llu) beyond the end of the file",
             what, (unsigned long long)pgno, (unsigned long long)(npages - 1));
        return NULL;
    }
    return in->map + pgno * in->psize;
}

static void walk_tree_root(walker *w, walk_tree *t);

/* Check one key against its predecessor and the bounds [lo, hi). */
static void key_order(walker *w, const walk_tree *t, pgno_t pgno, MDB_cmp_func *cmp,
                      const MDB_val *prev, const MDB_val *key, const MDB_val *lo,
                      const MDB_val *hi, unsigned i)
{
    if (!w->in->check_keys || !cmp)
        return;
    if (cmp == cmp_int && key->mv_size != 4 && key->mv_size != 8)
        prob(w, t, pgno, MDBCORE_P_NODE, "key %u: integer key of %zu bytes", i, key->mv_size);
    if (prev && cmp(prev, key) >= 0)
        prob(w, t, pgno, MDBCORE_P_ORDER, "key %u not greater than key %u", i, i - 1);
    if (lo && cmp(key, lo) < 0)
        prob(w, t, pgno, MDBCORE_P_RANGE, "key %u below the parent's separator", i);
    if (hi && cmp(key, hi) >= 0)
        prob(w, t, pgno, MDBCORE_P_RANGE, "key %u not below the next separator", i);
}

/* ---- overflow runs ---- */

/* Resolve F_BIGDATA data: visit the run; returns the data pointer or NULL. */
static const uint8_t *walk_overflow(walker *w, walk_tree *t, pgno_t from, unsigned level,
                                    pgno_t ov, uint32_t dsize)
{
    unsigned psize = w->in->psize;
    uint64_t need = OVERFLOW_PAGES((uint64_t)psize, (uint64_t)dsize);
    const uint8_t *p = page_at(w, t, ov, 1, from, "overflow");
    if (!p)
        return NULL;
    uint16_t flags = rd16(p + 10);
    uint64_t run;
    uint32_t hdr_run;
    memcpy(&hdr_run, p + 12, 4);
    int bad = 0;
    if (flags != P_OVERFLOW) {
        prob(w, t, ov, MDBCORE_P_PAGE, "overflow page has flags 0x%x", flags);
        bad = 1;
    }
    if (rd64(p) != ov) {
        prob(w, t, ov, MDBCORE_P_PAGE, "header pgno %llu", (unsigned long long)rd64(p));
        bad = 1;
    }
    run = hdr_run;
    if (!bad && run < need) {
        prob(w, t, ov, MDBCORE_P_PAGE, "overflow run of %llu pages cannot hold %u bytes",
             (unsigned long long)run, dsize);
        bad = 1;
    }
    if (bad)
        run = need;
    p = page_at(w, t, ov, run, from, "overflow run");
    if (!p)
        return NULL;
    walk_page wp = {ov, (unsigned)run, WALK_OVERFLOW, level, (const page_header *)p,
                    (size_t)PAGEHDRSZ + dsize};
    int r = visit(w, t, &wp);
    if (r)
        return NULL;
    t->overflow += run;
    return bad ? NULL : p + PAGEHDRSZ;
}

/* ---- DUPSORT sub-pages ---- */

/* A LEAF2 page keeps lower - PAGEHDRSZ = 2 per key and upper - lower = the free bytes, both
 * as LMDB maintains them; upper itself is then size + n * (2 - ksize). */
static int leaf2_bounds_ok(unsigned lower, unsigned upper, unsigned ks, uint64_t size)
{
    uint64_t n = (lower - PAGEHDRSZ) / 2, keys = PAGEHDRSZ + n * ks;
    return ks != 0 && keys <= size && upper - lower == size - keys;
}

static void walk_subpage(walker *w, walk_tree *t, pgno_t pgno, const uint8_t *sp, uint32_t size,
                         unsigned i)
{
    if (size < PAGEHDRSZ) {
        prob(w, t, pgno, MDBCORE_P_NODE, "node %u: sub-page of %u bytes", i, size);
        return;
    }
    uint16_t sflags = rd16(sp + 10) & (uint16_t)~P_DIRTY;
    uint16_t lower = rd16(sp + 12), upper = rd16(sp + 14);
    int leaf2 = sflags == (P_LEAF | P_LEAF2 | P_SUBP);
    if (sflags != (P_LEAF | P_SUBP) && !leaf2) {
        prob(w, t, pgno, MDBCORE_P_NODE, "node %u: sub-page flags 0x%x", i, rd16(sp + 10));
        return;
    }
    if (leaf2 && !(t->rec.flags & MDB_DUPFIXED)) {
        prob(w, t, pgno, MDBCORE_P_NODE, "node %u: LEAF2 sub-page in a DB without DUPFIXED", i);
        return;
    }
    /* LEAF2: lower grows 2 bytes per key while the key takes ksize bytes, so with 1-byte
     * keys lower and upper both run past the sub-page's size; only their gap is real space. */
    if (lower < PAGEHDRSZ || (lower & 1) || lower > upper ||
        (leaf2 ? !leaf2_bounds_ok(lower, upper, rd16(sp + 8), size) : upper > size)) {
        prob(w, t, pgno, MDBCORE_P_NODE, "node %u: sub-page lower %u upper %u size %u", i, lower,
             upper, size);
        return;
    }
    unsigned n = (lower - PAGEHDRSZ) / 2;
    if (n == 0) {
        prob(w, t, pgno, MDBCORE_P_NODE, "node %u: empty sub-page", i);
        return;
    }
    MDB_val prev = {0, NULL}, key;
    if (leaf2) {
        unsigned ks = rd16(sp + 8);
        if (ks == 0 || PAGEHDRSZ + (uint64_t)n * ks > size) {
            prob(w, t, pgno, MDBCORE_P_NODE, "node %u: LEAF2 sub-page of %u x %u bytes", i, n, ks);
            return;
        }
        for (unsigned j = 0; j < n; j++) {
            key.mv_size = ks;
            key.mv_data = (void *)(sp + PAGEHDRSZ + (size_t)j * ks);
            key_order(w, t, pgno, t->dcmp, j ? &prev : NULL, &key, NULL, NULL, j);
            prev = key;
        }
    } else {
        uint32_t space = 0;
        for (unsigned j = 0; j < n; j++) {
            unsigned off = rd16(sp + PAGEHDRSZ + 2 * j);
            if (off < upper || (uint64_t)off + NODESIZE > size) {
                prob(w, t, pgno, MDBCORE_P_NODE, "node %u: sub-page node %u at offset %u", i, j,
                     off);
                return;
            }
            const uint8_t *nd = sp + off;
            uint32_t ds = rd16(nd) | (uint32_t)rd16(nd + 2) << 16;
            uint16_t nf = rd16(nd + 4), ks = rd16(nd + 6);
            if ((uint64_t)off + NODESIZE + ks > size) {
                prob(w, t, pgno, MDBCORE_P_NODE, "node %u: sub-page node %u overruns", i, j);
                return;
            }
            if (ds != 0 || nf != 0)
                prob(w, t, pgno, MDBCORE_P_NODE, "node %u: dup %u has data size %u flags 0x%x", i,
                     j, ds, nf);
            key.mv_size = ks;
            key.mv_data = (void *)(nd + NODESIZE);
            key_order(w, t, pgno, t->dcmp, j ? &prev : NULL, &key, NULL, NULL, j);
            prev = key;
            space += (NODESIZE + ks + 1u) & ~1u;
        }
        /* The dups are packed from upper to the end of the sub-page. */
        if (space != size - upper)
            prob(w, t, pgno, MDBCORE_P_NODE, "node %u: sub-page holds %u bytes of dups in %u",
                 i, space, size - upper);
    }
    t->entries += n;
    t->subpages++;
}

/* ---- tree pages ---- */

static void walk_page_rec(walker *w, walk_tree *t, pgno_t pgno, pgno_t from, unsigned level,
                          const MDB_val *lo, const MDB_val *hi);

static void walk_leaf(walker *w, walk_tree *t, pgno_t pgno, const uint8_t *p, unsigned n,
                      unsigned upper, unsigned level, const MDB_val *lo, const MDB_val *hi,
                      size_t *used)
{
    unsigned psize = w->in->psize;
    MDB_val prev = {0, NULL};
    int have_prev = 0;
    int dupsort = (t->kind == WALK_MAIN || t->kind == WALK_NAMED) && (t->rec.flags & MDB_DUPSORT);
    for (unsigned i = 0; i < n && !w->stop; i++) {
        unsigned off = rd16(p + PAGEHDRSZ + 2 * i);
        if (off < upper || off + NODESIZE > psize || (off & 1)) {
            prob(w, t, pgno, MDBCORE_P_NODE, "node %u at offset %u (upper %u)", i, off, upper);
            have_prev = 0;
            continue;
        }
        const uint8_t *nd = p + off;
        uint32_t dsize = rd16(nd) | (uint32_t)rd16(nd + 2) << 16;
        uint16_t nf = rd16(nd + 4), ks = rd16(nd + 6);
        uint64_t dlen = (nf & F_BIGDATA) ? sizeof(pgno_t) : dsize;
        if ((uint64_t)off + NODESIZE + ks + dlen > psize) {
            prob(w, t, pgno, MDBCORE_P_NODE, "node %u (key %u, data %llu bytes) overruns the page",
                 i, ks, (unsigned long long)dlen);
            have_prev = 0;
            continue;
        }
        *used += (NODESIZE + ks + dlen + 1) & ~(uint64_t)1;
        MDB_val key = {ks, (void *)(nd + NODESIZE)};
        const uint8_t *dp = nd + NODESIZE + ks;
        key_order(w, t, pgno, t->cmp, have_prev ? &prev : NULL, &key, lo, hi, i);
        prev = key;
        have_prev = 1;

        if (t->kind == WALK_DUPSUB) {
            if (nf != 0 || dsize != 0)
                prob(w, t, pgno, MDBCORE_P_NODE, "dup %u has data size %u flags 0x%x", i, dsize,
                     nf);
            t->entries++;
            continue;
        }
        if (nf & ~(F_BIGDATA | F_SUBDATA | F_DUPDATA)) {
            prob(w, t, pgno, MDBCORE_P_NODE, "node %u has flags 0x%x", i, nf);
            continue;
        }
        MDB_val data = {dsize, (void *)dp};
        int data_ok = 1;
        switch (nf) {
        case 0:
            t->entries++;
            break;
        case F_BIGDATA: {
            if (dupsort) {
                prob(w, t, pgno, MDBCORE_P_NODE, "node %u: overflow data in a DUPSORT DB", i);
                data_ok = 0;
            }
            const uint8_t *ov = walk_overflow(w, t, pgno, level, rd64(dp), dsize);
            if (!ov)
                data_ok = 0;
            else
                data.mv_data = (void *)ov;
            t->entries++;
            break;
        }
        case F_SUBDATA:
            t->entries++;
            if (t->kind != WALK_MAIN || dupsort) {
                prob(w, t, pgno, MDBCORE_P_NODE, "node %u: DB record outside a plain main DB", i);
                data_ok = 0;
                break;
            }
            if (dsize != sizeof(db_record)) {
                prob(w, t, pgno, MDBCORE_P_NODE, "node %u: DB record of %u bytes", i, dsize);
                data_ok = 0;
                break;
            }
            {
                walk_tree sub;
                memset(&sub, 0, sizeof sub);
                sub.kind = WALK_NAMED;
                sub.name = key.mv_data;
                sub.name_len = key.mv_size;
                memcpy(&sub.rec, dp, sizeof sub.rec);
                if (sub.rec.flags & ~DB_FLAG_MASK)
                    prob(w, t, pgno, MDBCORE_P_NODE, "node %u: named DB flags 0x%x", i,
                         sub.rec.flags);
                if (w->v->leaf && w->v->leaf(w->v->ctx, t, pgno, &key, &data, nf) < 0) {
                    w->stop = -1;
                    return;
                }
                walk_tree_root(w, &sub);
            }
            continue;
        case F_DUPDATA:
            if (!dupsort) {
                prob(w, t, pgno, MDBCORE_P_NODE, "node %u: duplicates in a DB without DUPSORT", i);
                data_ok = 0;
                break;
            }
            walk_subpage(w, t, pgno, dp, dsize, i);
            break;
        case F_DUPDATA | F_SUBDATA:
            if (!dupsort) {
                prob(w, t, pgno, MDBCORE_P_NODE, "node %u: dup sub-DB in a DB without DUPSORT", i);
                data_ok = 0;
                break;
            }
            if (dsize != sizeof(db_record)) {
                prob(w, t, pgno, MDBCORE_P_NODE, "node %u: dup sub-DB record of %u bytes", i,
                     dsize);
                data_ok = 0;
                break;
            }
            {
                walk_tree sub;
                memset(&sub, 0, sizeof sub);
                sub.kind = WALK_DUPSUB;
                sub.name = t->name;
                sub.name_len = t->name_len;
                sub.owner = t;
                memcpy(&sub.rec, dp, sizeof sub.rec);
                unsigned want = t->rec.flags & MDB_DUPFIXED;
                if ((sub.rec.flags & ~(MDB_DUPFIXED | MDB_INTEGERKEY)) ||
                    (sub.rec.flags & MDB_DUPFIXED) != want)
                    prob(w, t, pgno, MDBCORE_P_NODE, "node %u: dup sub-DB flags 0x%x", i,
                         sub.rec.flags);
                sub.cmp = t->dcmp;
                walk_tree_root(w, &sub);
                t->entries += sub.entries;
                t->dup_branch += sub.branch;
                t->dup_leaf += sub.leaf;
                t->dup_overflow += sub.overflow;
                t->subdbs++;
            }
            break;
        default:
            prob(w, t, pgno, MDBCORE_P_NODE, "node %u has flags 0x%x", i, nf);
            data_ok = 0;
            t->entries++;
            break;
        }
        if (w->v->leaf && (t->kind == WALK_FREE || t->kind == WALK_MAIN || t->kind == WALK_NAMED)) {
            if (w->v->leaf(w->v->ctx, t, pgno, &key, data_ok ? &data : NULL, nf) < 0) {
                w->stop = -1;
                return;
            }
        }
    }
}

static void walk_branch(walker *w, walk_tree *t, pgno_t pgno, const uint8_t *p, unsigned n,
                        unsigned upper, unsigned level, const MDB_val *lo, const MDB_val *hi,
                        size_t *used)
{
    unsigned psize = w->in->psize;
    MDB_val *keys = malloc((size_t)n * sizeof *keys);
    pgno_t *kids = malloc((size_t)n * sizeof *kids);
    if (!keys || !kids) {
        free(keys);
        free(kids);
        prob(w, t, pgno, MDBCORE_P_BOUNDS, "out of memory");
        w->stop = -ENOMEM;
        return;
    }
    MDB_val *prev = NULL;
    for (unsigned i = 0; i < n; i++) {
        unsigned off = rd16(p + PAGEHDRSZ + 2 * i);
        kids[i] = P_INVALID;
        keys[i].mv_size = 0;
        keys[i].mv_data = NULL;
        if (off < upper || off + NODESIZE > psize || (off & 1)) {
            prob(w, t, pgno, MDBCORE_P_NODE, "branch node %u at offset %u (upper %u)", i, off,
                 upper);
            prev = NULL;
            continue;
        }
        const uint8_t *nd = p + off;
        uint16_t ks = rd16(nd + 6);
        if ((uint64_t)off + NODESIZE + ks > psize) {
            prob(w, t, pgno, MDBCORE_P_NODE, "branch node %u key of %u bytes overruns", i, ks);
            prev = NULL;
            continue;
        }
        *used += (NODESIZE + ks + 1u) & ~1u;
        kids[i] = (pgno_t)rd16(nd) | (pgno_t)rd16(nd + 2) << 16 | (pgno_t)rd16(nd + 4) << 32;
        if (i == 0)
            continue; /* the first separator is implicit (the parent's lower bound) */
        keys[i].mv_size = ks;
        keys[i].mv_data = (void *)(nd + NODESIZE);
        key_order(w, t, pgno, t->cmp, prev, &keys[i], lo, hi, i);
        prev = &keys[i];
    }
    for (unsigned i = 0; i < n && !w->stop; i++) {
        if (kids[i] == P_INVALID)
            continue;
        const MDB_val *clo = (i == 0 || !keys[i].mv_data) ? lo : &keys[i];
        const MDB_val *chi = (i + 1 < n && keys[i + 1].mv_data) ? &keys[i + 1] : hi;
        if (i + 1 < n && !keys[i + 1].mv_data)
            chi = NULL; /* unknown: do not guess */
        walk_page_rec(w, t, kids[i], pgno, level + 1, clo, chi);
    }
    free(keys);
    free(kids);
}

/* Did every node of the page pass the bounds checks of walk_leaf/walk_branch? */
static int nodes_in_bounds(const uint8_t *p, unsigned n, unsigned upper, unsigned psize,
                           int branch)
{
    for (unsigned i = 0; i < n; i++) {
        unsigned off = rd16(p + PAGEHDRSZ + 2 * i);
        if (off < upper || off + NODESIZE > psize || (off & 1))
            return 0;
        const uint8_t *nd = p + off;
        uint64_t len = NODESIZE + rd16(nd + 6);
        if (!branch)
            len += (rd16(nd + 4) & F_BIGDATA) ? sizeof(pgno_t)
                                              : (rd16(nd) | (uint32_t)rd16(nd + 2) << 16);
        if (off + len > psize)
            return 0;
    }
    return 1;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Nodes are packed: sorted by offset they tile [upper, psize) exactly, with no gap and no
 * overlap (LMDB compacts on every delete).  Only called when every node was in bounds. */
static void check_packing(walker *w, const walk_tree *t, pgno_t pgno, const uint8_t *p,
                          unsigned n, unsigned upper, int branch)
{
    unsigned psize = w->in->psize;
    uint32_t *ext = malloc((size_t)n * 2 * sizeof *ext);
    if (!ext)
        return;
    for (unsigned i = 0; i < n; i++) {
        unsigned off = rd16(p + PAGEHDRSZ + 2 * i);
        const uint8_t *nd = p + off;
        uint32_t ks = rd16(nd + 6), sz = NODESIZE + ks;
        if (!branch) {
            uint32_t ds = rd16(nd) | (uint32_t)rd16(nd + 2) << 16;
            sz += (rd16(nd + 4) & F_BIGDATA) ? (uint32_t)sizeof(pgno_t) : ds;
        }
        ext[2 * i] = off;
        ext[2 * i + 1] = (sz + 1) & ~1u;
    }
    qsort(ext, n, 2 * sizeof *ext, cmp_u32);
    uint32_t pos = upper;
    for (unsigned i = 0; i < n; i++) {
        if (ext[2 * i] != pos) {
            prob(w, t, pgno, MDBCORE_P_PAGE, "node space %s at offset %u",
                 ext[2 * i] < pos ? "overlaps" : "has a gap", pos);
            free(ext);
            return;
        }
        pos += ext[2 * i + 1];
    }
    if (pos != psize)
        prob(w, t, pgno, MDBCORE_P_PAGE, "nodes end at %u, not at the page end", pos);
    free(ext);
}

static void walk_page_rec(walker *w, walk_tree *t, pgno_t pgno, pgno_t from, unsigned level,
                          const MDB_val *lo, const MDB_val *hi)
{
    if (w->stop)
        return;
    unsigned psize = w->in->psize;
    if (level >= CURSOR_STACK) {
        prob(w, t, from, MDBCORE_P_DEPTH, "tree deeper than %d levels", CURSOR_STACK);
        return;
    }
    const uint8_t *p = page_at(w, t, pgno, 1, from, level ? "child" : "root");
    if (!p)
        return;
    uint16_t flags = rd16(p + 10);
    int kind;
    if (flags == P_BRANCH)
        kind = WALK_BRANCH;
    else if (flags == P_LEAF)
        kind = WALK_LEAF;
    else if (flags == (P_LEAF | P_LEAF2))
        kind = WALK_LEAF2;
    else
        kind = -1;
    /* Bytes in use as the header tells (nodes are packed from upper to the page end). */
    size_t hl = rd16(p + 12), hu = rd16(p + 14), fill = psize;
    if (kind == WALK_LEAF2)
        fill = PAGEHDRSZ + ((hl > PAGEHDRSZ ? hl - PAGEHDRSZ : 0) / 2) * rd16(p + 8);
    else if (hl <= hu && hu <= psize)
        fill = hl + (psize - hu);
    walk_page wp = {pgno, 1, kind < 0 ? ((flags & P_BRANCH) ? WALK_BRANCH : WALK_LEAF) : kind,
                    level, (const page_header *)p, fill > psize ? psize : fill};
    if (visit(w, t, &wp))
        return;
    if (kind < 0) {
        prob(w, t, pgno, MDBCORE_P_PAGE, "tree page has flags 0x%x", flags);
        return;
    }
    if (kind == WALK_BRANCH)
        t->branch++;
    else
        t->leaf++;
    if (kind == WALK_LEAF2)
        t->leaf2++;
    if (rd64(p) != pgno)
        prob(w, t, pgno, MDBCORE_P_PAGE, "header pgno %llu", (unsigned long long)rd64(p));
    if (level + 1 > t->depth)
        t->depth = level + 1;
    if (kind != WALK_BRANCH) {
        if (t->leaf_level < 0)
            t->leaf_level = (int)level;
        else if (t->leaf_level != (int)level)
            prob(w, t, pgno, MDBCORE_P_DEPTH, "leaf at level %u, first leaf at level %d", level,
                 t->leaf_level);
    }
    unsigned lower = rd16(p + 12), upper = rd16(p + 14);
    if (lower < PAGEHDRSZ || (lower & 1) || lower > upper ||
        (kind == WALK_LEAF2 ? !leaf2_bounds_ok(lower, upper, rd16(p + 8), psize)
                            : upper > psize)) {
        prob(w, t, pgno, MDBCORE_P_PAGE, "lower %u upper %u", lower, upper);
        return;
    }
    unsigned n = (lower - PAGEHDRSZ) / 2;
    if (n == 0) {
        prob(w, t, pgno, MDBCORE_P_PAGE, "page has no entries");
        return;
    }
    size_t used = lower;
    if (kind == WALK_BRANCH) {
        walk_branch(w, t, pgno, p, n, upper, level, lo, hi, &used);
        if (nodes_in_bounds(p, n, upper, psize, 1))
            check_packing(w, t, pgno, p, n, upper, 1);
    } else if (kind == WALK_LEAF2) {
        unsigned ks = rd16(p + 8);
        if (t->kind != WALK_DUPSUB || !(t->rec.flags & MDB_DUPFIXED)) {
            prob(w, t, pgno, MDBCORE_P_PAGE, "LEAF2 page outside a DUPFIXED dup sub-DB");
            return;
        }
        if (ks == 0 || PAGEHDRSZ + (uint64_t)n * ks > psize) {
            prob(w, t, pgno, MDBCORE_P_PAGE, "LEAF2 page of %u keys of %u bytes", n, ks);
            return;
        }
        if (ks != t->rec.pad)
            prob(w, t, pgno, MDBCORE_P_PAGE, "LEAF2 key size %u, sub-DB item size %u", ks,
                 t->rec.pad);
        MDB_val prev = {0, NULL}, key;
        for (unsigned i = 0; i < n; i++) {
            key.mv_size = ks;
            key.mv_data = (void *)(p + PAGEHDRSZ + (size_t)i * ks);
            key_order(w, t, pgno, t->cmp, i ? &prev : NULL, &key, lo, hi, i);
            prev = key;
        }
        t->entries += n;
        used = PAGEHDRSZ + (size_t)n * ks;
    } else {
        walk_leaf(w, t, pgno, p, n, upper, level, lo, hi, &used);
        if (nodes_in_bounds(p, n, upper, psize, 0))
            check_packing(w, t, pgno, p, n, upper, 0);
    }
}

static void walk_tree_root(walker *w, walk_tree *t)
{
    if (w->stop)
        return;
    t->leaf_level = -1;
    if (t->kind != WALK_DUPSUB) {
        /* LMDB's defaults, chosen by the DB flags, as the engine's */
        t->cmp = t->kind == WALK_FREE ? cmp_int : cmp_for_keys(t->rec.flags);
        t->dcmp = t->kind != WALK_FREE ? cmp_for_dups(t->rec.flags) : NULL;
        t->cmp_flags = t->rec.flags;
        if (w->v->choose_cmp && t->kind != WALK_FREE)
            w->v->choose_cmp(w->v->ctx, t);
    }
    if (t->rec.root != P_INVALID)
        walk_page_rec(w, t, t->rec.root, P_INVALID, 0, NULL, NULL);
    if (w->v->tree_done && w->stop == 0)
        w->v->tree_done(w->v->ctx, t);
}

int walk_snapshot(const walk_input *in, const walk_visitor *v)
{
    walker w = {in, v, 0};
    if (!in->map || in->psize < MIN_PAGESIZE)
        return -EINVAL;
    walk_tree fr, mn;
    memset(&fr, 0, sizeof fr);
    memset(&mn, 0, sizeof mn);
    fr.kind = WALK_FREE;
    fr.rec = in->dbs[FREE_DBI];
    mn.kind = WALK_MAIN;
    mn.rec = in->dbs[MAIN_DBI];
    walk_tree_root(&w, &fr);
    walk_tree_root(&w, &mn);
    return w.stop;
}
