/*
 * walk.h -- one visitor over every page reachable from a snapshot of data.mdb
 * (layer L6 tool, but it reads raw bytes only: no engine object, no I/O).
 *
 * The walker decodes pages defensively -- every pgno, offset and size is bounds-checked
 * against the page, the snapshot and the file -- and reports what it cannot trust through
 * the visitor's `problem` callback instead of following it.  It visits, in order: the free
 * DB, the main DB, and each named DB (F_SUBDATA node of MAIN) when its node is met; inside
 * DUPSORT trees, sub-pages inline and dup sub-DBs as trees of kind WALK_DUPSUB.
 *
 * Checks done here (they need the traversal): page header sanity, node bounds, node flags,
 * key order inside a page and against the parent's separators, leaf depth, measured
 * page/entry counts per tree.  Whole-file accounting (reached once, free list, leaks) is
 * the visitor's business (check.c).
 */
#ifndef MDBCORE_WALK_H
#define MDBCORE_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "lmdb.h"

enum walk_tree_kind { WALK_FREE = 0, WALK_MAIN, WALK_NAMED, WALK_DUPSUB };
enum walk_page_kind { WALK_BRANCH = 0, WALK_LEAF, WALK_LEAF2, WALK_OVERFLOW };

typedef struct walk_tree {
    int kind;                        /* WALK_* */
    const uint8_t *name;             /* named DB (or the DUPSUB's owner) name, else NULL */
    size_t name_len;
    db_record rec;                   /* the record as stored (copied, aligned) */
    uint16_t cmp_flags;              /* DB flags that choose the comparator */
    MDB_cmp_func *cmp;               /* key comparator of this tree */
    MDB_cmp_func *dcmp;              /* DUPSORT trees: the duplicate comparator */
    const struct walk_tree *owner;   /* DUPSUB: the tree holding the F_DUPDATA node */
    /* Measured by the walker (own pages only; dup sub-DB pages are in dup_*): */
    unsigned depth;
    uint64_t branch, leaf, leaf2, overflow, entries;
    uint64_t dup_branch, dup_leaf, dup_overflow; /* pages of this tree's dup sub-DBs */
    uint64_t subpages, subdbs;                    /* DUPSORT: keys by storage form */
    int leaf_level;                               /* level of the first leaf seen, -1 none */
} walk_tree;

typedef struct walk_page {
    pgno_t pgno;
    unsigned npages;          /* 1, or the run length of an overflow run */
    int kind;                 /* WALK_BRANCH/LEAF/LEAF2/OVERFLOW */
    unsigned level;           /* 0 = root (overflow: the level of the leaf pointing at it) */
    const page_header *pg;
    size_t used;              /* bytes in use per the header (header + slots + nodes, capped
                                 at psize; overflow: header + value) -- a fill figure, not
                                 verified when the visitor sees it */
} walk_page;

typedef struct walk_visitor {
    void *ctx;
    /* A page or overflow run is reached.  Return 0 to read it, 1 to skip it (already
     * reached: it is not decoded again), <0 to stop the walk. */
    int (*page)(void *ctx, const walk_tree *t, const walk_page *p);
    /* A leaf item of a FREE/MAIN/NAMED tree (not of dup sub-structures), data resolved:
     * overflow data is checked to lie inside its run.  data is NULL when unreadable. */
    int (*leaf)(void *ctx, const walk_tree *t, pgno_t pgno, const MDB_val *key,
                const MDB_val *data, unsigned node_flags);
    void (*problem)(void *ctx, const walk_tree *t, pgno_t pgno, int code, const char *msg);
    /* A tree was walked: t's measured fields are final.  Called for every tree kind. */
    void (*tree_done)(void *ctx, const walk_tree *t);
    /* Choose comparators for a tree: may set t->cmp / t->dcmp (pre-set to defaults). */
    void (*choose_cmp)(void *ctx, walk_tree *t);
} walk_visitor;

typedef struct walk_input {
    const uint8_t *map;
    size_t readable;          /* bytes that may be read at map (min of map and file) */
    unsigned psize;
    pgno_t next_pgno;
    db_record dbs[CORE_DBS];
    int check_keys;           /* compare keys (order, separators) */
} walk_input;

/* Walk the whole snapshot.  Returns 0, or the negative value a callback stopped with. */
int walk_snapshot(const walk_input *in, const walk_visitor *v);

/* The engine's default comparators (cmp.c; core.h declares them too): key order is
 * checked with the orderings the engine writes with. */
int cmp_int(const MDB_val *a, const MDB_val *b);
MDB_cmp_func *cmp_for_keys(unsigned dbflags);
MDB_cmp_func *cmp_for_dups(unsigned dbflags);

#endif
