/*
 * check.c -- the structural checker (layer L6 tool) built on walk.c.
 *
 * Input: the raw bytes of one snapshot (mdbcore_snapshot).  Output: a report of page
 * accounting, per-DB measurements and problems.  What is verified:
 *  - pages 0 and 1 are metas;
 *  - every page in [2, next_pgno) is reached exactly once from the trees (free DB, main DB,
 *    named DBs, dup sub-DBs, overflow runs) or listed exactly once in the free DB, never
 *    both, never neither (a leak);
 *  - free-DB records are txnid -> [count, pgno...] with valid, descending page numbers;
 *  - per tree: header/node sanity, key order and separator bounds, uniform leaf depth
 *    (walk.c), and depth, page counts and entry counts equal to the stored db_record.
 *    A DUPSORT DB's record counts the pages of its dup sub-DBs too (as LMDB does).
 * The file is never trusted: see walk.c's trust rule.  Page states live in one byte per
 * page, so memory is next_pgno bytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mdbcore.h"
#include "objects.h"
#include "os.h"
#include "walk.h"

#define ST_REACHED 0x1
#define ST_FREE 0x2
#define ST_TWICE 0x4
#define MAX_LEAKED_LIST 1000

typedef struct checker {
    const mdbcore_snapshot *in;
    mdbcore_check_report *rep;
    pgno_t npg;       /* pages tracked: next_pgno, clamped */
    uint8_t *state;
    unsigned max_problems;
    size_t dbcap;
    size_t probcap;
    int oom;
} checker;

static const char *const problem_names[] = {
    "?", "bounds", "page", "node", "order", "range", "depth", "count", "twice", "leak", "free",
    "meta",
};

const char *check_problem_name(int code)
{
    if (code <= 0 || code >= (int)(sizeof problem_names / sizeof problem_names[0]))
        return "?";
    return problem_names[code];
}

/* A printable DB label for problems: "@free", "@main", the name, "+/dup" inside dups. */
static void tree_label(const walk_tree *t, char *out, size_t cap)
{
    const walk_tree *base = t->kind == WALK_DUPSUB && t->owner ? t->owner : t;
    size_t n = 0;
    if (base->kind == WALK_FREE) {
        n = (size_t)snprintf(out, cap, "@free");
    } else if (base->kind == WALK_MAIN || !base->name) {
        n = (size_t)snprintf(out, cap, "@main");
    } else {
        size_t l = base->name_len;
        for (size_t i = 0; i < l && n + 1 < cap; i++) {
            uint8_t c = base->name[i];
            out[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
        }
        out[n < cap ? n : cap - 1] = 0;
    }
    if (n >= cap)
        n = cap - 1;
    if (t->kind == WALK_DUPSUB)
        snprintf(out + n, cap - n, "/dup");
}

/* Doubles a report array's room (first `first` items, never past `max`); on a failed
 * allocation the report is marked incomplete (oom) and the array is left as it was. */
static int grow_array(checker *c, void **arr, size_t *cap, size_t item, size_t first,
                      size_t max)
{
    size_t n = *cap ? *cap * 2 : first;
    if (n > max)
        n = max;
    void *p = realloc(*arr, n * item);
    if (!p) {
        c->oom = 1;
        return 0;
    }
    *arr = p;
    *cap = n;
    return 1;
}

__attribute__((format(printf, 5, 6))) static void add_problem(checker *c, pgno_t pgno,
                                                              const char *db, int code,
                                                              const char *fmt, ...)
{
    mdbcore_check_report *r = c->rep;
    r->problems_total++;
    if (r->nproblems >= c->max_problems || c->oom)
        return;
    if (r->nproblems == c->probcap &&
        !grow_array(c, (void **)&r->problems, &c->probcap, sizeof *r->problems, 16,
                    c->max_problems))
        return;
    mdbcore_check_problem *p = &r->problems[r->nproblems++];
    p->pgno = pgno;
    p->code = code;
    snprintf(p->db, sizeof p->db, "%s", db ? db : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->msg, sizeof p->msg, fmt, ap);
    va_end(ap);
}

/* ---- visitor callbacks ---- */

static void cb_problem(void *ctx, const walk_tree *t, pgno_t pgno, int code, const char *msg)
{
    char label[64];
    tree_label(t, label, sizeof label);
    add_problem(ctx, pgno, label, code, "%s", msg);
}

static int cb_page(void *ctx, const walk_tree *t, const walk_page *p)
{
    checker *c = ctx;
    mdbcore_check_report *r = c->rep;
    int twice = 0;
    for (unsigned i = 0; i < p->npages; i++) {
        pgno_t pg = p->pgno + i;
        if (pg >= c->npg)
            break; /* the walker bounds runs by next_pgno; belt and braces */
        if (c->state[pg] & ST_REACHED) {
            if (!(c->state[pg] & ST_TWICE))
                r->twice_pages++;
            c->state[pg] |= ST_TWICE;
            twice = 1;
        }
        c->state[pg] |= ST_REACHED;
    }
    if (twice) {
        char label[64];
        tree_label(t, label, sizeof label);
        add_problem(c, p->pgno, label, MDBCORE_P_TWICE,
                    p->npages > 1 ? "overflow run of %u pages reached again"
                                  : "page reached a second time%.0u",
                    p->npages);
        return 1;
    }
    switch (p->kind) {
    case WALK_BRANCH:
        r->branch_pages++;
        break;
    case WALK_LEAF2:
        r->leaf2_pages++;
        /* fall through */
    case WALK_LEAF:
        r->leaf_pages++;
        break;
    case WALK_OVERFLOW:
        r->overflow_pages += p->npages;
        r->overflow_runs++;
        break;
    }
    return 0;
}

/* The value of free record id must be [count, pgno...] in whole page numbers, count within
 * the room the value has.  0: it is; 1: its size is not (nothing in it can be used); 2:
 * count is past the room (*count is then the room).  The problem is written to msg. */
static int free_record_bad(txnid_t id, const MDB_val *data, uint64_t *count, char *msg,
                           size_t n)
{
    if (data->mv_size < sizeof(pgno_t) || data->mv_size % sizeof(pgno_t)) {
        snprintf(msg, n, "free record %llu of %zu bytes", (unsigned long long)id,
                 data->mv_size);
        return 1;
    }
    memcpy(count, data->mv_data, 8);
    uint64_t room = data->mv_size / 8 - 1;
    if (*count > room) {
        snprintf(msg, n, "free record %llu: count %llu but room for %llu",
                 (unsigned long long)id, (unsigned long long)*count, (unsigned long long)room);
        *count = room;
        return 2;
    }
    return 0;
}

static int cb_leaf(void *ctx, const walk_tree *t, pgno_t pgno, const MDB_val *key,
                   const MDB_val *data, unsigned node_flags)
{
    checker *c = ctx;
    (void)node_flags;
    if (t->kind != WALK_FREE)
        return 0;
    mdbcore_check_report *r = c->rep;
    r->free_records++;
    if (key->mv_size != sizeof(txnid_t)) {
        add_problem(c, pgno, "@free", MDBCORE_P_FREE, "free record key of %zu bytes",
                    key->mv_size);
        return 0;
    }
    txnid_t id;
    memcpy(&id, key->mv_data, sizeof id);
    if (c->in->txnid && id > c->in->txnid)
        add_problem(c, pgno, "@free", MDBCORE_P_FREE, "free record of txn %llu after snapshot %llu",
                    (unsigned long long)id, (unsigned long long)c->in->txnid);
    if (!data)
        return 0;
    char msg[160];
    uint64_t count;
    int bad = free_record_bad(id, data, &count, msg, sizeof msg);
    if (bad)
        add_problem(c, pgno, "@free", MDBCORE_P_FREE, "%s", msg);
    if (bad == 1)
        return 0;
    const uint8_t *d = data->mv_data;
    pgno_t prev = P_INVALID;
    int order_reported = 0;
    for (uint64_t i = 0; i < count; i++) {
        pgno_t pg;
        memcpy(&pg, d + 8 * (i + 1), 8);
        if (i && pg >= prev && !order_reported) {
            add_problem(c, pgno, "@free", MDBCORE_P_FREE,
                        "free record %llu not sorted descending at item %llu",
                        (unsigned long long)id, (unsigned long long)i);
            order_reported = 1;
        }
        prev = pg;
        if (pg < 2 || pg >= c->in->next_pgno) {
            add_problem(c, pgno, "@free", MDBCORE_P_FREE,
                        "free record %llu lists page %llu outside [2, %llu)",
                        (unsigned long long)id, (unsigned long long)pg,
                        (unsigned long long)c->in->next_pgno);
            continue;
        }
        if (pg >= c->npg)
            continue; /* beyond the tracked range (clamped next_pgno) */
        if (c->state[pg] & ST_FREE) {
            add_problem(c, pg, "@free", MDBCORE_P_FREE, "page listed free twice (record %llu)",
                        (unsigned long long)id);
            continue;
        }
        c->state[pg] |= ST_FREE;
        r->free_pages++;
    }
    return 0;
}

static void cb_choose_cmp(void *ctx, walk_tree *t)
{
    checker *c = ctx;
    for (size_t i = 0; i < c->in->ncmps; i++) {
        const mdbcore_check_cmp *k = &c->in->cmps[i];
        int match;
        if (t->kind == WALK_MAIN) {
            match = k->name == NULL;
        } else {
            size_t l = k->name ? (k->name_len ? k->name_len : strlen(k->name)) : 0;
            match = k->name && l == t->name_len && memcmp(k->name, t->name, l) == 0;
        }
        if (match) {
            if (k->cmp)
                t->cmp = k->cmp;
            if (k->dcmp && t->dcmp)
                t->dcmp = k->dcmp;
            return;
        }
    }
}

static void cb_tree_done(void *ctx, const walk_tree *t)
{
    checker *c = ctx;
    char label[64];
    tree_label(t, label, sizeof label);
    const db_record *rec = &t->rec;
    pgno_t where = rec->root;
    uint64_t br = t->branch + t->dup_branch, lf = t->leaf + t->dup_leaf,
             ov = t->overflow + t->dup_overflow;
    if (rec->depth != t->depth)
        add_problem(c, where, label, MDBCORE_P_DEPTH, "record depth %u, measured %u", rec->depth,
                    t->depth);
    /* Page counts.  A plain tree's record counts exactly its pages.  A DUPSORT tree's record
     * is not kept exact by LMDB itself: 0.9.24 counts only the tree's own pages, later
     * releases also add the pages its dup sub-DBs allocate but never subtract the ones they
     * free.  So by default a DUPSORT record must count at least the tree's own pages;
     * MDBCORE_CHECK_DUP_PAGES_EXACT demands own + dup sub-DB pages exactly. */
    int dupsort = (t->kind == WALK_MAIN || t->kind == WALK_NAMED) && (rec->flags & MDB_DUPSORT);
    int exact = !dupsort || (c->in->flags & MDBCORE_CHECK_DUP_PAGES_EXACT);
    const char *what[3] = {"branch", "leaf", "overflow"};
    uint64_t have[3] = {rec->branch_pages, rec->leaf_pages, rec->overflow_pages};
    uint64_t found[3] = {br, lf, ov};
    uint64_t own[3] = {t->branch, t->leaf, t->overflow};
    for (int k = 0; k < 3; k++) {
        if (exact && have[k] != found[k])
            add_problem(c, where, label, MDBCORE_P_COUNT, "record has %llu %s pages, found %llu",
                        (unsigned long long)have[k], what[k], (unsigned long long)found[k]);
        else if (!exact && have[k] < own[k])
            add_problem(c, where, label, MDBCORE_P_COUNT,
                        "record has %llu %s pages, the tree alone has %llu",
                        (unsigned long long)have[k], what[k], (unsigned long long)own[k]);
    }
    if (rec->entries != t->entries)
        add_problem(c, where, label, MDBCORE_P_COUNT, "record has %llu entries, found %llu",
                    (unsigned long long)rec->entries, (unsigned long long)t->entries);
    if (t->kind == WALK_DUPSUB) {
        if (rec->root == P_INVALID || rec->entries == 0)
            add_problem(c, where, label, MDBCORE_P_NODE, "empty dup sub-DB");
        return;
    }

    mdbcore_check_report *r = c->rep;
    if (r->ndbs == c->dbcap &&
        !grow_array(c, (void **)&r->dbs, &c->dbcap, sizeof *r->dbs, 8, SIZE_MAX))
        return;
    mdbcore_check_db *d = &r->dbs[r->ndbs];
    memset(d, 0, sizeof *d);
    if (t->kind == WALK_NAMED && t->name) {
        d->name = malloc(t->name_len + 1);
        if (!d->name) {
            c->oom = 1;
            return;
        }
        memcpy(d->name, t->name, t->name_len);
        d->name[t->name_len] = 0;
        d->name_len = t->name_len;
    } else {
        d->name = strdup(t->kind == WALK_FREE ? "@free" : "@main");
        if (!d->name) {
            c->oom = 1;
            return;
        }
    }
    d->rec = *rec;
    d->depth = t->depth;
    d->branch_pages = br;
    d->leaf_pages = lf;
    d->overflow_pages = ov;
    d->entries = t->entries;
    d->dup_subpages = t->subpages;
    d->dup_subdbs = t->subdbs;
    d->dup_pages = t->dup_branch + t->dup_leaf + t->dup_overflow;
    r->ndbs++;
}

/* ---- metas ---- */

static void check_metas(checker *c, size_t readable)
{
    const mdbcore_snapshot *in = c->in;
    for (unsigned i = 0; i < 2; i++) {
        if (in->flags & (i ? MDBCORE_CHECK_SKIP_META1 : MDBCORE_CHECK_SKIP_META0))
            continue;
        uint64_t off = (uint64_t)i * in->psize;
        if (off + META_OFFSET + sizeof(meta_record) > readable) {
            add_problem(c, i, "", MDBCORE_P_META, "meta page %u beyond the end of the file", i);
            continue;
        }
        const uint8_t *p = in->map + off;
        page_header h;
        meta_record m;
        memcpy(&h, p, sizeof h);
        memcpy(&m, p + META_OFFSET, sizeof m);
        if (h.pgno != i)
            add_problem(c, i, "", MDBCORE_P_META, "meta %u: header pgno %llu", i,
                        (unsigned long long)h.pgno);
        if (h.flags != P_META)
            add_problem(c, i, "", MDBCORE_P_META, "meta %u: flags 0x%x", i, h.flags);
        if (m.magic != MDB_DATA_MAGIC)
            add_problem(c, i, "", MDBCORE_P_META, "meta %u: magic 0x%x", i, m.magic);
        if (m.version != MDB_DATA_VERSION)
            add_problem(c, i, "", MDBCORE_P_META, "meta %u: version %u", i, m.version);
        if (m.dbs[FREE_DBI].pad != in->psize)
            add_problem(c, i, "", MDBCORE_P_META, "meta %u: page size %u, snapshot uses %u", i,
                        m.dbs[FREE_DBI].pad, in->psize);
    }
}

static int psize_ok(unsigned ps)
{
    return ps >= MIN_PAGESIZE && ps <= 0x10000u && (ps & (ps - 1)) == 0;
}

int mdbcore_check_snapshot(const mdbcore_snapshot *in, mdbcore_check_report *rep)
{
    if (!in || !rep)
        return EINVAL;
    memset(rep, 0, sizeof *rep);
    checker c;
    memset(&c, 0, sizeof c);
    c.in = in;
    c.rep = rep;
    c.max_problems = in->max_problems ? in->max_problems : 1000;
    rep->psize = in->psize;
    rep->next_pgno = in->next_pgno;
    rep->txnid = in->txnid;

    if (!in->map || !psize_ok(in->psize) || in->next_pgno < 2) {
        add_problem(&c, P_INVALID, "", MDBCORE_P_META, "unusable snapshot: page size %u, next_pgno %llu",
                    in->psize, (unsigned long long)in->next_pgno);
        return EINVAL;
    }
    size_t readable = in->map_len;
    if (in->file_size < readable)
        readable = (size_t)in->file_size;
    readable -= readable % in->psize;
    uint64_t file_pages = readable / in->psize;

    /* Pages past the end of the file can only be free.  A last_pg far past it is a
     * corrupt meta: track no more than the file plus 16M pages. */
    c.npg = in->next_pgno;
    uint64_t limit = file_pages + (1u << 24);
    if (c.npg > limit) {
        add_problem(&c, P_INVALID, "", MDBCORE_P_META,
                    "next_pgno %llu far beyond the file's %llu pages",
                    (unsigned long long)in->next_pgno, (unsigned long long)file_pages);
        c.npg = limit;
    }
    c.state = calloc((size_t)c.npg, 1);
    if (!c.state)
        return ENOMEM;
    c.state[0] = c.state[1] = ST_REACHED;
    rep->meta_pages = 2;
    if (!(in->flags & MDBCORE_CHECK_NO_METAS))
        check_metas(&c, readable);

    walk_input wi;
    memset(&wi, 0, sizeof wi);
    wi.map = in->map;
    wi.readable = readable;
    wi.psize = in->psize;
    wi.next_pgno = c.npg;
    wi.dbs[0] = in->dbs[0];
    wi.dbs[1] = in->dbs[1];
    wi.check_keys = !(in->flags & MDBCORE_CHECK_NO_KEYS);
    walk_visitor v = {&c, cb_page, cb_leaf, cb_problem, cb_tree_done, cb_choose_cmp};
    int wr = walk_snapshot(&wi, &v);

    /* Whole-file accounting. */
    pgno_t leak_start = 0;
    for (pgno_t pg = 2; pg <= c.npg; pg++) {
        uint8_t s = pg < c.npg ? c.state[pg] : ST_REACHED; /* sentinel closes a range */
        if ((s & ST_REACHED) && (s & ST_FREE)) {
            rep->free_and_used++;
            add_problem(&c, pg, "@free", MDBCORE_P_FREE, "page is listed free and in use");
        }
        int leaked = pg < c.npg && !(s & (ST_REACHED | ST_FREE));
        if (leaked) {
            if (!leak_start)
                leak_start = pg;
            rep->leaked_pages++;
            if (rep->nleaked < MAX_LEAKED_LIST) {
                if (!rep->leaked)
                    rep->leaked = malloc(MAX_LEAKED_LIST * sizeof *rep->leaked);
                if (rep->leaked)
                    rep->leaked[rep->nleaked++] = pg;
            }
        } else if (leak_start) {
            if (pg - 1 == leak_start)
                add_problem(&c, leak_start, "", MDBCORE_P_LEAK,
                            "page neither reachable nor free");
            else
                add_problem(&c, leak_start, "", MDBCORE_P_LEAK,
                            "pages %llu..%llu neither reachable nor free",
                            (unsigned long long)leak_start, (unsigned long long)(pg - 1));
            leak_start = 0;
        }
    }
    rep->reachable_pages =
        rep->meta_pages + rep->branch_pages + rep->leaf_pages + rep->overflow_pages;
    free(c.state);
    if (c.oom || wr == -ENOMEM)
        return ENOMEM;
    return rep->problems_total ? MDB_CORRUPTED : 0;
}

void mdbcore_check_report_free(mdbcore_check_report *rep)
{
    if (!rep)
        return;
    for (size_t i = 0; i < rep->ndbs; i++)
        free(rep->dbs[i].name);
    free(rep->dbs);
    free(rep->problems);
    free(rep->leaked);
    memset(rep, 0, sizeof *rep);
}

/* Is the page at `off` a usable meta?  Fills *m. */
static int meta_usable(const mdbcore_snapshot *in, size_t readable, uint64_t off, uint64_t pgno,
                       meta_record *m, int *version_seen)
{
    if (off + META_OFFSET + sizeof(meta_record) > readable)
        return 0;
    page_header h;
    memcpy(&h, in->map + off, sizeof h);
    memcpy(m, in->map + off + META_OFFSET, sizeof *m);
    if (m->magic != MDB_DATA_MAGIC || h.flags != P_META || h.pgno != pgno)
        return 0;
    if (m->version != MDB_DATA_VERSION) {
        *version_seen = 1;
        return 0;
    }
    return psize_ok(m->dbs[FREE_DBI].pad);
}

int mdbcore_snapshot_from_metas(mdbcore_snapshot *in, int which)
{
    size_t readable = in->map_len;
    if (in->file_size < readable)
        readable = (size_t)in->file_size;
    meta_record m[2];
    int ok[2] = {0, 0}, seen_version = 0;
    ok[0] = meta_usable(in, readable, 0, 0, &m[0], &seen_version);
    if (ok[0]) {
        unsigned ps = m[0].dbs[FREE_DBI].pad;
        ok[1] = meta_usable(in, readable, ps, 1, &m[1], &seen_version) &&
                m[1].dbs[FREE_DBI].pad == ps;
    } else {
        /* Meta 0 is damaged: look for meta 1 at every possible page size. */
        for (unsigned ps = MIN_PAGESIZE; ps <= 0x10000u && !ok[1]; ps <<= 1)
            ok[1] = meta_usable(in, readable, ps, 1, &m[1], &seen_version) &&
                    m[1].dbs[FREE_DBI].pad == ps;
    }
    if (!ok[0] && !ok[1])
        return seen_version ? MDB_VERSION_MISMATCH : MDB_INVALID;
    int pick;
    if (which == 0 || which == 1)
        pick = which;
    else if (ok[0] && ok[1])
        pick = m[1].txnid > m[0].txnid ? 1 : 0;
    else
        pick = ok[0] ? 0 : 1;
    if (!ok[pick])
        return MDB_INVALID;
    in->psize = m[pick].dbs[FREE_DBI].pad;
    in->next_pgno = m[pick].last_pg + 1;
    in->txnid = m[pick].txnid;
    in->dbs[FREE_DBI] = m[pick].dbs[FREE_DBI];
    in->dbs[MAIN_DBI] = m[pick].dbs[MAIN_DBI];
    return 0;
}

/* ---- engine entry points ---- */

/* The snapshot `txn` sees, as the walker's input: 0, EINVAL, or MDB_BAD_TXN for a write
 * txn that changed pages (its tree is not in the map yet). */
static int snapshot_of_txn(MDB_txn *txn, mdbcore_snapshot *in)
{
    memset(in, 0, sizeof *in);
    if (!txn || !txn->env || !txn->env->map || !txn->dbs)
        return EINVAL;
    if (!(txn->flags & TXN_RDONLY) &&
        ((txn->dirty && txn->dirty[0].pgno) || (txn->flags & TXN_DIRTY)))
        return MDB_BAD_TXN;
    MDB_env *env = txn->env;
    in->map_len = __atomic_load_n(&env->mapsize, __ATOMIC_ACQUIRE);
    in->map = __atomic_load_n(&env->map, __ATOMIC_RELAXED); /* after the size: it covers that */
    off_t fsz = 0;
    if (env->data_fd >= 0 && os_current->fsize(env->data_fd, &fsz) == 0)
        in->file_size = (uint64_t)fsz;
    else
        in->file_size = env->mapsize;
    in->psize = env->psize;
    in->txnid = txn->txnid;
    in->next_pgno = txn->next_pgno;
    if (in->next_pgno < 2 && env->metas[txn->txnid & 1])
        in->next_pgno = env->metas[txn->txnid & 1]->last_pg + 1;
    in->dbs[FREE_DBI] = txn->dbs[FREE_DBI];
    in->dbs[MAIN_DBI] = txn->dbs[MAIN_DBI];
    /* A meta page the open found damaged, and that still holds the bytes judged then, is
     * not part of the snapshot: the env reports it (mdbcore_env_meta_status). */
    int bad = __atomic_load_n(&env->meta_bad_slot, __ATOMIC_ACQUIRE);
    const uint8_t *map = __atomic_load_n(&env->map, __ATOMIC_RELAXED); /* may move */
    if (bad >= 0 && (env->meta_bad_short ||
                     memcmp(map + (size_t)bad * env->psize, env->meta_bad_copy,
                            sizeof env->meta_bad_copy) == 0))
        in->flags |= bad ? MDBCORE_CHECK_SKIP_META1 : MDBCORE_CHECK_SKIP_META0;
    return 0;
}

/* snapshot_of_txn, clearing the caller's result (out, size bytes) when it fails. */
static int snapshot_or_clear(MDB_txn *txn, mdbcore_snapshot *in, void *out, size_t size)
{
    int rc = snapshot_of_txn(txn, in);
    if (rc)
        memset(out, 0, size);
    return rc;
}

int mdbcore_check_txn(MDB_txn *txn, mdbcore_check_report *rep)
{
    if (!rep)
        return EINVAL;
    mdbcore_snapshot in;
    int src = snapshot_or_clear(txn, &in, rep, sizeof *rep);
    if (src)
        return src;

    /* Comparators of the handles open in this txn. */
    mdbcore_check_cmp *cmps = NULL;
    size_t n = 0;
    if (txn->dbinfo && txn->numdbs > MAIN_DBI) {
        cmps = calloc(txn->numdbs, sizeof *cmps);
        if (!cmps)
            return ENOMEM;
        for (MDB_dbi i = MAIN_DBI; i < txn->numdbs; i++) {
            const db_info *di = &txn->dbinfo[i];
            if (i > MAIN_DBI && (!di->name.mv_data || !di->name.mv_size))
                continue;
            if (!di->cmp && !di->dcmp)
                continue;
            cmps[n].name = i == MAIN_DBI ? NULL : di->name.mv_data;
            cmps[n].name_len = i == MAIN_DBI ? 0 : di->name.mv_size;
            cmps[n].cmp = di->cmp;
            cmps[n].dcmp = di->dcmp;
            n++;
        }
    }
    in.cmps = cmps;
    in.ncmps = n;
    int rc = mdbcore_check_snapshot(&in, rep);
    free(cmps);
    return rc;
}

/* ---- the free list (mdbcore.h section 2b): the walker over the free DB only ---- */

#define FL_STOP (-2) /* the walk reached the main DB: the free DB is done */

typedef struct fl_reader {
    mdbcore_freelist *out;
    int bad;             /* a problem was found in the free DB */
    int oom;
    pgno_t *seen;        /* open-addressing set of reached pages (0 = empty slot) */
    size_t seen_cap, seen_n;
    size_t rec_cap, page_cap;
    size_t *offs;        /* per record: index of its first page in out->pages */
} fl_reader;

static void fl_problem_at(fl_reader *f, pgno_t pgno, const char *msg)
{
    if (f->bad++)
        return;
    f->out->bad_pgno = pgno;
    snprintf(f->out->bad_msg, sizeof f->out->bad_msg, "%s", msg);
}

/* Add pgno to the reached set: 1 if it was new, 0 if reached before, -1 out of memory. */
static int fl_seen_add(fl_reader *f, pgno_t pg)
{
    if (2 * (f->seen_n + 1) > f->seen_cap) {
        size_t cap = f->seen_cap ? 2 * f->seen_cap : 64;
        pgno_t *ns = calloc(cap, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t i = 0; i < f->seen_cap; i++) {
            pgno_t v = f->seen[i];
            if (!v)
                continue;
            size_t h = (size_t)(v * 0x9E3779B97F4A7C15ull) & (cap - 1);
            while (ns[h])
                h = (h + 1) & (cap - 1);
            ns[h] = v;
        }
        free(f->seen);
        f->seen = ns;
        f->seen_cap = cap;
    }
    size_t h = (size_t)(pg * 0x9E3779B97F4A7C15ull) & (f->seen_cap - 1);
    while (f->seen[h]) {
        if (f->seen[h] == pg)
            return 0;
        h = (h + 1) & (f->seen_cap - 1);
    }
    f->seen[h] = pg; /* the walker hands out pages >= 2 only, so 0 stays "empty" */
    f->seen_n++;
    return 1;
}

static int fl_page(void *ctx, const walk_tree *t, const walk_page *p)
{
    fl_reader *f = ctx;
    if (t->kind != WALK_FREE)
        return FL_STOP;
    int r = fl_seen_add(f, p->pgno);
    if (r < 0) {
        f->oom = 1;
        return -ENOMEM;
    }
    if (r == 0) {
        fl_problem_at(f, p->pgno, "free DB page reached a second time");
        return 1;
    }
    return 0;
}

static void fl_walk_problem(void *ctx, const walk_tree *t, pgno_t pgno, int code,
                            const char *msg)
{
    (void)code;
    if (t->kind == WALK_FREE)
        fl_problem_at(ctx, pgno, msg);
}

static int fl_leaf(void *ctx, const walk_tree *t, pgno_t pgno, const MDB_val *key,
                   const MDB_val *data, unsigned node_flags)
{
    fl_reader *f = ctx;
    mdbcore_freelist *out = f->out;
    char msg[160];
    (void)node_flags;
    if (t->kind != WALK_FREE)
        return FL_STOP;
    if (key->mv_size != sizeof(txnid_t)) {
        snprintf(msg, sizeof msg, "free record key of %zu bytes", key->mv_size);
        fl_problem_at(f, pgno, msg);
        return 0;
    }
    txnid_t id;
    memcpy(&id, key->mv_data, sizeof id);
    if (!data) {
        snprintf(msg, sizeof msg, "free record %llu cannot be read", (unsigned long long)id);
        fl_problem_at(f, pgno, msg);
        return 0;
    }
    uint64_t count;
    if (free_record_bad(id, data, &count, msg, sizeof msg)) {
        fl_problem_at(f, pgno, msg);
        return 0;
    }
    const uint8_t *d = data->mv_data;
    if (f->bad)
        return 0; /* keep walking for nothing but the first problem's report */
    if (out->nrecords == f->rec_cap) {
        size_t cap = f->rec_cap ? 2 * f->rec_cap : 16;
        mdbcore_free_record *nr = realloc(out->records, cap * sizeof *nr);
        size_t *no = nr ? realloc(f->offs, cap * sizeof *no) : NULL;
        if (nr)
            out->records = nr;
        if (!no) {
            f->oom = 1;
            return -ENOMEM;
        }
        f->offs = no;
        f->rec_cap = cap;
    }
    size_t have = (size_t)out->free_pages;
    if (have + count > f->page_cap) {
        size_t cap = f->page_cap ? f->page_cap : 64;
        while (cap < have + count)
            cap *= 2;
        pgno_t *np = realloc(out->pages, cap * sizeof *np);
        if (!np) {
            f->oom = 1;
            return -ENOMEM;
        }
        out->pages = np;
        f->page_cap = cap;
    }
    if (count)
        memcpy(out->pages + have, d + 8, (size_t)count * sizeof(pgno_t));
    mdbcore_free_record *r = &out->records[out->nrecords];
    r->txnid = id;
    r->npages = (size_t)count;
    r->pages = NULL;
    f->offs[out->nrecords++] = have;
    out->free_pages += count;
    return 0;
}

int mdbcore_freelist_snapshot(const mdbcore_snapshot *in, mdbcore_freelist *out)
{
    if (!out)
        return EINVAL;
    memset(out, 0, sizeof *out);
    out->bad_pgno = P_INVALID;
    if (!in || !in->map || !psize_ok(in->psize) || in->next_pgno < 2)
        return EINVAL;
    out->txnid = in->txnid;
    out->rec = in->dbs[FREE_DBI];
    size_t readable = in->map_len;
    if (in->file_size < readable)
        readable = (size_t)in->file_size;
    readable -= readable % in->psize;

    fl_reader f;
    memset(&f, 0, sizeof f);
    f.out = out;
    walk_input wi;
    memset(&wi, 0, sizeof wi);
    wi.map = in->map;
    wi.readable = readable;
    wi.psize = in->psize;
    wi.next_pgno = in->next_pgno;
    wi.dbs[FREE_DBI] = in->dbs[FREE_DBI];
    /* the main DB is not wanted: an empty record ends the walk after the free DB */
    wi.dbs[MAIN_DBI].root = P_INVALID;
    wi.check_keys = 1;
    walk_visitor v = {&f, fl_page, fl_leaf, fl_walk_problem, NULL, NULL};
    int wr = walk_snapshot(&wi, &v);
    free(f.seen);
    if (!f.oom && wr != -ENOMEM && !f.bad && out->rec.entries != out->nrecords) {
        char msg[160];
        snprintf(msg, sizeof msg, "free DB record has %llu entries, found %zu",
                 (unsigned long long)out->rec.entries, out->nrecords);
        fl_problem_at(&f, out->rec.root, msg);
    }
    int rc = 0;
    if (f.oom || wr == -ENOMEM)
        rc = ENOMEM;
    else if (f.bad)
        rc = MDB_CORRUPTED;
    else if (wr < 0 && wr != FL_STOP)
        rc = EINVAL;
    if (rc) {
        free(f.offs);
        free(out->records);
        free(out->pages);
        out->records = NULL;
        out->pages = NULL;
        out->nrecords = 0;
        out->free_pages = 0;
        return rc;
    }
    for (size_t i = 0; i < out->nrecords; i++)
        out->records[i].pages = out->pages + f.offs[i];
    free(f.offs);
    return 0;
}

int mdbcore_freelist_txn(MDB_txn *txn, mdbcore_freelist *out)
{
    if (!out)
        return EINVAL;
    mdbcore_snapshot in;
    int rc = snapshot_or_clear(txn, &in, out, sizeof *out);
    if (rc) {
        out->bad_pgno = P_INVALID;
        return rc;
    }
    return mdbcore_freelist_snapshot(&in, out);
}

void mdbcore_freelist_free(mdbcore_freelist *fl)
{
    if (!fl)
        return;
    free(fl->records);
    free(fl->pages);
    fl->records = NULL;
    fl->pages = NULL;
    fl->nrecords = 0;
}

/* ---- printing ---- */

__attribute__((format(printf, 3, 4))) static int emit(MDB_msg_func *func, void *ctx,
                                                      const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return func(buf, ctx);
}

int mdbcore_check_report_print(const mdbcore_check_report *r, MDB_msg_func *func, void *ctx)
{
    int rc;
#define EMIT(...)                                                                        \
    do {                                                                                 \
        if ((rc = emit(func, ctx, __VA_ARGS__)) < 0)                                     \
            return rc;                                                                   \
    } while (0)
    EMIT("snapshot: txnid %llu, page size %u, next_pgno %llu\n", (unsigned long long)r->txnid,
         r->psize, (unsigned long long)r->next_pgno);
    EMIT("pages: %llu meta, %llu branch, %llu leaf (%llu leaf2), %llu overflow in %llu runs\n",
         (unsigned long long)r->meta_pages, (unsigned long long)r->branch_pages,
         (unsigned long long)r->leaf_pages, (unsigned long long)r->leaf2_pages,
         (unsigned long long)r->overflow_pages, (unsigned long long)r->overflow_runs);
    EMIT("accounting: %llu reachable + %llu free (%llu records) of %llu; %llu leaked, %llu "
         "reached twice, %llu free and used\n",
         (unsigned long long)r->reachable_pages, (unsigned long long)r->free_pages,
         (unsigned long long)r->free_records, (unsigned long long)r->next_pgno,
         (unsigned long long)r->leaked_pages, (unsigned long long)r->twice_pages,
         (unsigned long long)r->free_and_used);
    EMIT("%-24s %5s %8s %8s %8s %10s %8s %8s\n", "db", "depth", "branch", "leaf", "overflow",
         "entries", "subpages", "subdbs");
    for (size_t i = 0; i < r->ndbs; i++) {
        const mdbcore_check_db *d = &r->dbs[i];
        char name[25];
        size_t k = 0;
        for (; d->name[k] && k < 24; k++)
            name[k] = (d->name[k] >= 0x20 && d->name[k] < 0x7f) ? d->name[k] : '?';
        name[k] = 0;
        EMIT("%-24s %5u %8llu %8llu %8llu %10llu %8llu %8llu\n", name, d->depth,
             (unsigned long long)d->branch_pages, (unsigned long long)d->leaf_pages,
             (unsigned long long)d->overflow_pages, (unsigned long long)d->entries,
             (unsigned long long)d->dup_subpages, (unsigned long long)d->dup_subdbs);
    }
    EMIT("problems: %llu\n", (unsigned long long)r->problems_total);
    for (size_t i = 0; i < r->nproblems; i++) {
        const mdbcore_check_problem *p = &r->problems[i];
        if (p->pgno == P_INVALID)
            EMIT("  problem %s pgno - db %s: %s\n", check_problem_name(p->code),
                 p->db[0] ? p->db : "-", p->msg);
        else
            EMIT("  problem %s pgno %llu db %s: %s\n", check_problem_name(p->code),
                 (unsigned long long)p->pgno, p->db[0] ? p->db : "-", p->msg);
    }
    if (r->problems_total > r->nproblems)
        EMIT("  ... %llu more\n", (unsigned long long)(r->problems_total - r->nproblems));
#undef EMIT
    return 0;
}
