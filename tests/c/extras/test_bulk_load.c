/*
 * test_bulk_load.c -- mdbcore_bulk_load (src/mdbcore/tree_load.c), issue 13 part 3.
 *   test_bulk_load [DIR [SEED]]     (DIR defaults to $TMPDIR/bulkload.PID)
 *
 * For several random sorted record sets (keys of 1..511 bytes, values from empty to
 * overflow size), in a plain named DB, MAIN, an INTEGERKEY DB and one under a dirty
 * limit low enough to spill:
 *   - the loaded DB holds exactly the records of a put loop in random order (same
 *     entries, same bytes in the same order, on a cursor scan), before and after commit
 *     and after reopening; the structural checker finds nothing;
 *   - its pages are no more than an MDB_APPEND loop's (leaf and branch counts);
 *   - the tree takes ordinary writes afterwards (deletes and puts, checked again);
 *   - real LMDB's mdb_dump (/usr/bin/mdb_dump, when present) prints the loaded DB and the
 *     put-loop DB identically.
 * Errors: an out-of-order and a repeated key mid-stream give MDB_KEYEXIST and leave the DB
 * empty with the txn usable (a commit then leaves nothing of the load, checker clean); an
 * error from the callback comes back unchanged, same state; a non-empty target gives
 * EINVAL, DUPSORT MDB_INCOMPATIBLE, a read-only txn EACCES; MDB_MAP_FULL poisons the txn
 * and the last snapshot stays; abort after a load leaves the DB empty.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

/* paths are short in practice; snprintf truncation is checked where it matters */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static unsigned long long rng = MDBTEST_XORSHIFT_SEED;
static unsigned rnd(void)
{
    return (unsigned)(mdbtest_xorshift(&rng) >> 11);
}

typedef struct rec {
    unsigned char *k, *v;
    size_t klen, vlen;
} rec;

typedef struct feed {
    rec *r;
    size_t n, i;
    size_t bad_at;   /* index at which to hand out record `bad_with` instead; (size_t)-1 none */
    size_t bad_with;
    size_t fail_at;  /* index at which to return `fail_rc`; (size_t)-1 none */
    int fail_rc;
} feed;

static int next_rec(void *ctx, MDB_val *key, MDB_val *data)
{
    feed *f = ctx;
    if (f->i == f->fail_at)
        return f->fail_rc;
    if (f->i >= f->n)
        return MDB_NOTFOUND;
    rec *r = &f->r[f->i == f->bad_at ? f->bad_with : f->i];
    f->i++;
    key->mv_size = r->klen;
    key->mv_data = r->k;
    data->mv_size = r->vlen;
    data->mv_data = r->v;
    return 0;
}

/* A callback that, at record `at`, uses the txn being loaded: a put, a cursor, a commit
 * (each must answer MDB_BAD_TXN), or an abort of `abort_txn` (honoured when the load
 * returns). */
typedef struct meddler {
    feed f;
    MDB_txn *txn, *abort_txn;
    MDB_dbi dbi;
    size_t at;
    int put_rc, cursor_rc, commit_rc;
} meddler;

static int next_meddling(void *ctx, MDB_val *key, MDB_val *data)
{
    meddler *m = ctx;
    if (m->f.i == m->at) {
        MDB_val k = {3, "zzz"}, v = {1, "v"};
        MDB_cursor *c = NULL;
        m->put_rc = mdb_put(m->txn, m->dbi, &k, &v, 0);
        m->cursor_rc = mdb_cursor_open(m->txn, m->dbi, &c);
        if (c)
            mdb_cursor_close(c);
        if (m->abort_txn)
            mdb_txn_abort(m->abort_txn);
        else
            m->commit_rc = mdb_txn_commit(m->txn);
    }
    return next_rec(&m->f, key, data);
}

static feed feed_of(rec *r, size_t n)
{
    feed f = {r, n, 0, (size_t)-1, 0, (size_t)-1, 0};
    return f;
}

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->k, y->k, n);
    return c ? c : (x->klen < y->klen ? -1 : x->klen > y->klen);
}

static int cmp_int_rec(const void *a, const void *b)
{
    uint64_t x, y;
    memcpy(&x, ((const rec *)a)->k, 8);
    memcpy(&y, ((const rec *)b)->k, 8);
    return x < y ? -1 : x > y;
}

/* n records with unique keys in lexicographic order (or 8-byte native integers). */
static rec *make_set(size_t n, size_t *out_n, int intkeys, int big_share)
{
    rec *r = calloc(n, sizeof(rec));
    for (size_t i = 0; i < n; i++) {
        if (intkeys) {
            uint64_t v = ((uint64_t)rnd() << 32) | rnd();
            r[i].klen = 8;
            r[i].k = malloc(8);
            memcpy(r[i].k, &v, 8);
        } else {
            unsigned kind = rnd() % 10;
            r[i].klen = kind < 6 ? 1 + rnd() % 24 : kind < 9 ? 1 + rnd() % 120 : 1 + rnd() % 511;
            r[i].k = malloc(r[i].klen);
            for (size_t j = 0; j < r[i].klen; j++)
                r[i].k[j] = (unsigned char)(rnd() % 4 ? 'a' + rnd() % 6 : rnd());
        }
        unsigned vk = rnd() % 100;
        r[i].vlen = vk < 5 ? 0 : (int)vk < 100 - big_share ? rnd() % 300 : 2000 + rnd() % 30000;
        r[i].v = malloc(r[i].vlen ? r[i].vlen : 1);
        for (size_t j = 0; j < r[i].vlen; j++)
            r[i].v[j] = (unsigned char)(i * 31 + j * 7 + (j >> 8));
    }
    qsort(r, n, sizeof(rec), intkeys ? cmp_int_rec : cmp_rec);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && (intkeys ? cmp_int_rec : cmp_rec)(&r[w - 1], &r[i]) == 0) {
            free(r[i].k);
            free(r[i].v);
            continue;
        }
        r[w++] = r[i];
    }
    *out_n = w;
    return r;
}

static void free_set(rec *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].k);
        free(r[i].v);
    }
    free(r);
}

static MDB_env *open_env(const char *dir, size_t mapsize, size_t dirty_limit)
{
    MDB_env *env;
    mkdir(dir, 0755);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, mapsize));
    CHECK(mdb_env_set_maxdbs(env, 8));
    if (dirty_limit)
        CHECK(mdbcore_env_set_dirty_limit(env, dirty_limit));
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    return env;
}

static void check_clean(MDB_env *env, const char *what)
{
    mdbcore_check_report rep;
    int rc = mdbcore_check_env(env, &rep);
    if (rc || rep.problems_total || rep.leaked_pages) {
        mdbcore_check_report_print(&rep, NULL, NULL);
        FAIL("%s: checker: rc %d, %llu problems, %llu leaked pages", what, rc,
             (unsigned long long)rep.problems_total, (unsigned long long)rep.leaked_pages);
    }
    mdbcore_check_report_free(&rep);
}

/* The DB holds exactly r[0..n) in order. */
static void expect_content(MDB_txn *txn, MDB_dbi dbi, rec *r, size_t n, const char *what)
{
    size_t i = 0;
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    int rc;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT), i++) {
        if (i >= n)
            FAIL("%s: more than %zu records", what, n);
        if (k.mv_size != r[i].klen || memcmp(k.mv_data, r[i].k, k.mv_size))
            FAIL("%s: key %zu differs", what, i);
        if (v.mv_size != r[i].vlen || (v.mv_size && memcmp(v.mv_data, r[i].v, v.mv_size)))
            FAIL("%s: value %zu differs (%zu vs %zu bytes)", what, i, v.mv_size, r[i].vlen);
    }
    CHECK_RC(rc, MDB_NOTFOUND);
    if (i != n)
        FAIL("%s: %zu records, want %zu", what, i, n);
    /* and point lookups of a sample */
    for (size_t s = 0; s < 200 && n; s++) {
        size_t j = rnd() % n;
        k.mv_size = r[j].klen;
        k.mv_data = r[j].k;
        CHECK(mdb_get(txn, dbi, &k, &v));
        if (v.mv_size != r[j].vlen || (v.mv_size && memcmp(v.mv_data, r[j].v, v.mv_size)))
            FAIL("%s: get %zu differs", what, j);
    }
    MDB_stat st;
    CHECK(mdb_stat(txn, dbi, &st));
    if (st.ms_entries != n)
        FAIL("%s: ms_entries %zu, want %zu", what, st.ms_entries, n);
    mdb_cursor_close(c);
}

static MDB_stat stat_of(MDB_env *env, const char *name, unsigned flags)
{
    MDB_txn *t;
    MDB_dbi d;
    MDB_stat st;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
    CHECK(mdb_dbi_open(t, name, flags, &d));
    CHECK(mdb_stat(t, d, &st));
    mdb_txn_abort(t);
    return st;
}

/* Compare `mdb_dump -s name` of two envs (real LMDB's tool), if it is installed. */
static int dumps_equal(const char *dir_a, const char *dir_b, const char *name)
{
    if (access("/usr/bin/mdb_dump", X_OK) != 0)
        return -1;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/mdb_dump %s%s %s > %s/dump.txt && /usr/bin/mdb_dump %s%s %s > %s/dump.txt"
             " && sed '1,/HEADER=END/d' %s/dump.txt > %s/dump.body"
             " && sed '1,/HEADER=END/d' %s/dump.txt > %s/dump.body"
             " && cmp -s %s/dump.body %s/dump.body && test -s %s/dump.body",
             name ? "-s " : "", name ? name : "", dir_a, dir_a, name ? "-s " : "",
             name ? name : "", dir_b, dir_b, dir_a, dir_a, dir_b, dir_b, dir_a, dir_b, dir_a);
    return system(cmd) == 0;
}

static void rm_rf(const char *dir)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        FAIL("cannot remove %s", dir);
}

/* One full round over a record set: bulk env vs put-loop env vs MDB_APPEND env. */
static void round_trip(const char *base, const char *tag, size_t n, int intkeys, int main_db,
                       size_t dirty_limit, int big_share)
{
    char da[2048], db[2048], dc[2048];
    snprintf(da, sizeof da, "%s/%s-bulk", base, tag);
    snprintf(db, sizeof db, "%s/%s-put", base, tag);
    snprintf(dc, sizeof dc, "%s/%s-app", base, tag);
    size_t cnt;
    rec *r = make_set(n, &cnt, intkeys, big_share);
    const char *name = main_db ? NULL : "data";
    unsigned dflags = (main_db ? 0 : MDB_CREATE) | (intkeys ? MDB_INTEGERKEY : 0);
    size_t map = (size_t)2 << 30;

    /* bulk */
    MDB_env *ea = open_env(da, map, dirty_limit);
    uint64_t spilled0 = mdbcore_env_spilled_pages(ea);
    MDB_txn *t;
    MDB_dbi d;
    CHECK(mdb_txn_begin(ea, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, name, dflags, &d));
    feed f = feed_of(r, cnt);
    CHECK(mdbcore_bulk_load(t, d, next_rec, &f, 0));
    expect_content(t, d, r, cnt, "bulk, in its txn");
    CHECK(mdb_txn_commit(t));
    if (dirty_limit && mdbcore_env_spilled_pages(ea) == spilled0)
        FAIL("%s: a dirty limit of %zu did not make the load spill", tag, dirty_limit);
    check_clean(ea, "bulk after commit");
    mdb_env_close(ea);
    ea = open_env(da, map, 0);
    CHECK(mdb_txn_begin(ea, NULL, MDB_RDONLY, &t));
    CHECK(mdb_dbi_open(t, name, dflags & ~MDB_CREATE, &d));
    expect_content(t, d, r, cnt, "bulk, reopened");
    mdb_txn_abort(t);
    check_clean(ea, "bulk reopened");

    /* put loop in random order */
    MDB_env *eb = open_env(db, map, 0);
    size_t *perm = malloc(cnt * sizeof(size_t));
    for (size_t i = 0; i < cnt; i++)
        perm[i] = i;
    for (size_t i = cnt; i > 1; i--) {
        size_t j = rnd() % i, x = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = x;
    }
    CHECK(mdb_txn_begin(eb, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, name, dflags, &d));
    for (size_t i = 0; i < cnt; i++) {
        MDB_val k = {r[perm[i]].klen, r[perm[i]].k}, v = {r[perm[i]].vlen, r[perm[i]].v};
        CHECK(mdb_put(t, d, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(t));
    free(perm);
    mdb_env_close(eb);
    int same = dumps_equal(da, db, name);
    if (same == 0)
        FAIL("%s: mdb_dump of the bulk-loaded and the put-loop DB differ", tag);

    /* MDB_APPEND loop: our pages must be at least as full */
    MDB_env *ec = open_env(dc, map, 0);
    CHECK(mdb_txn_begin(ec, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, name, dflags, &d));
    for (size_t i = 0; i < cnt; i++) {
        MDB_val k = {r[i].klen, r[i].k}, v = {r[i].vlen, r[i].v};
        CHECK(mdb_put(t, d, &k, &v, MDB_APPEND));
    }
    CHECK(mdb_txn_commit(t));
    MDB_stat sa = stat_of(ea, name, dflags & ~MDB_CREATE);
    MDB_stat sc = stat_of(ec, name, dflags & ~MDB_CREATE);
    mdb_env_close(ec);
    if (sa.ms_leaf_pages > sc.ms_leaf_pages || sa.ms_branch_pages > sc.ms_branch_pages ||
        sa.ms_overflow_pages != sc.ms_overflow_pages || sa.ms_depth > sc.ms_depth)
        FAIL("%s: bulk pages leaf/branch/overflow/depth %zu/%zu/%zu/%u, append %zu/%zu/%zu/%u",
             tag, sa.ms_leaf_pages, sa.ms_branch_pages, sa.ms_overflow_pages, sa.ms_depth,
             sc.ms_leaf_pages, sc.ms_branch_pages, sc.ms_overflow_pages, sc.ms_depth);
    printf("%s: %zu records, bulk leaf %zu branch %zu ovf %zu depth %u | append leaf %zu "
           "branch %zu depth %u | mdb_dump %s\n",
           tag, cnt, sa.ms_leaf_pages, sa.ms_branch_pages, sa.ms_overflow_pages, sa.ms_depth,
           sc.ms_leaf_pages, sc.ms_branch_pages, sc.ms_depth,
           same < 0 ? "not installed" : "identical");

    /* the loaded tree takes ordinary writes: delete every third record, check */
    CHECK(mdb_txn_begin(ea, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, name, dflags & ~MDB_CREATE, &d));
    rec *kept = malloc(cnt * sizeof(rec));
    size_t w = 0;
    for (size_t i = 0; i < cnt; i++) {
        MDB_val k = {r[i].klen, r[i].k};
        if (i % 3 == 1)
            CHECK(mdb_del(t, d, &k, NULL));
        else
            kept[w++] = r[i];
    }
    expect_content(t, d, kept, w, "bulk after deletes");
    CHECK(mdb_txn_commit(t));
    check_clean(ea, "bulk after deletes");
    mdb_env_close(ea);
    free(kept);
    free_set(r, cnt);
    rm_rf(da);
    rm_rf(db);
    rm_rf(dc);
}

static void errors(const char *base)
{
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/errors", base);
    size_t cnt;
    rec *r = make_set(6000, &cnt, 0, 5);
    MDB_env *env = open_env(dir, (size_t)1 << 30, 0);
    MDB_txn *t;
    MDB_dbi d, dd, other;
    MDB_stat st;

    /* out of order mid-stream, and a repeated key: MDB_KEYEXIST, DB empty, txn usable */
    for (int kind = 0; kind < 2; kind++) {
        CHECK(mdb_txn_begin(env, NULL, 0, &t));
        CHECK(mdb_dbi_open(t, "data", MDB_CREATE, &d));
        feed f = feed_of(r, cnt);
        f.bad_at = cnt / 2;
        f.bad_with = kind == 0 ? cnt / 4 : cnt / 2 - 1;
        CHECK_RC(mdbcore_bulk_load(t, d, next_rec, &f, 0), MDB_KEYEXIST);
        if (f.i != cnt / 2 + 1)
            FAIL("the load went on after the bad key (%zu records read)", f.i);
        CHECK(mdb_stat(t, d, &st));
        if (st.ms_entries || st.ms_leaf_pages || st.ms_depth)
            FAIL("kind %d: DB not empty after a refused load", kind);
        MDB_val k = {r[0].klen, r[0].k}, v;
        CHECK_RC(mdb_get(t, d, &k, &v), MDB_NOTFOUND);
        /* the txn still works: a put, then commit */
        MDB_val pk = {4, "zzzz"}, pv = {3, "abc"};
        CHECK(mdb_put(t, d, &pk, &pv, 0));
        CHECK(mdb_txn_commit(t));
        check_clean(env, "after a refused load");
        CHECK(mdb_txn_begin(env, NULL, 0, &t));
        CHECK(mdb_stat(t, d, &st));
        if (st.ms_entries != 1)
            FAIL("kind %d: %zu entries committed, want 1 (the put)", kind, st.ms_entries);
        CHECK(mdb_del(t, d, &pk, NULL));
        CHECK(mdb_txn_commit(t));
    }

    /* the callback's own error: returned as is, DB empty, txn usable */
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    feed f = feed_of(r, cnt);
    f.fail_at = cnt - 10;
    f.fail_rc = -12345;
    CHECK_RC(mdbcore_bulk_load(t, d, next_rec, &f, 0), -12345);
    CHECK(mdb_stat(t, d, &st));
    if (st.ms_entries)
        FAIL("DB not empty after a callback error");
    /* and a second load in the same txn succeeds */
    f = feed_of(r, cnt);
    CHECK(mdbcore_bulk_load(t, d, next_rec, &f, 0));
    expect_content(t, d, r, cnt, "load after a failed one");
    /* non-empty target */
    f = feed_of(r, cnt);
    CHECK_RC(mdbcore_bulk_load(t, d, next_rec, &f, 0), EINVAL);
    if (f.i)
        FAIL("a refused target consumed input");
    CHECK_RC(mdbcore_bulk_load(t, d, next_rec, &f, 1), EINVAL); /* flags */
    CHECK_RC(mdbcore_bulk_load(t, d, NULL, &f, 0), EINVAL);
    /* MAIN holds the named DB's record: not empty either */
    CHECK_RC(mdbcore_bulk_load(t, MAIN_DBI, next_rec, &f, 0), EINVAL);
    CHECK_RC(mdbcore_bulk_load(t, FREE_DBI, next_rec, &f, 0), EINVAL);
    CHECK(mdb_dbi_open(t, "dups", MDB_CREATE | MDB_DUPSORT, &dd));
    CHECK_RC(mdbcore_bulk_load(t, dd, next_rec, &f, 0), MDB_INCOMPATIBLE);
    CHECK(mdb_txn_commit(t));
    check_clean(env, "after load in a txn that had a failed one");

    /* abort after a load: nothing stays */
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, "other", MDB_CREATE, &other));
    CHECK(mdb_txn_commit(t));
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    f = feed_of(r, cnt);
    CHECK(mdbcore_bulk_load(t, other, next_rec, &f, 0));
    mdb_txn_abort(t);
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
    CHECK(mdb_stat(t, other, &st));
    if (st.ms_entries)
        FAIL("abort kept %zu entries", st.ms_entries);
    f = feed_of(r, cnt);
    CHECK_RC(mdbcore_bulk_load(t, other, next_rec, &f, 0), EACCES);
    mdb_txn_abort(t);
    check_clean(env, "after an aborted load");

    /* a nested txn: the child's load joins the parent; the parent commits it */
    MDB_txn *child;
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    CHECK(mdb_txn_begin(env, t, 0, &child));
    f = feed_of(r, cnt);
    CHECK(mdbcore_bulk_load(child, other, next_rec, &f, 0));
    CHECK(mdb_txn_commit(child));
    expect_content(t, other, r, cnt, "nested load, in the parent");
    CHECK(mdb_txn_commit(t));
    check_clean(env, "after a nested load");

    /* the callback may not use the txn being loaded; an abort from it waits for the load */
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    CHECK(mdb_drop(t, other, 0));
    meddler m = {feed_of(r, cnt), t, NULL, other, cnt / 3, 0, 0, 0};
    CHECK(mdbcore_bulk_load(t, other, next_meddling, &m, 0));
    CHECK_RC(m.put_rc, MDB_BAD_TXN);
    CHECK_RC(m.cursor_rc, MDB_BAD_TXN);
    CHECK_RC(m.commit_rc, MDB_BAD_TXN);
    expect_content(t, other, r, cnt, "load whose callback tried to use the txn");
    CHECK(mdb_txn_commit(t));
    check_clean(env, "after a meddling callback");
    for (int nest = 0; nest < 2; nest++) {
        /* abort of the loading txn itself, then of the parent of a loading child */
        CHECK(mdb_txn_begin(env, NULL, 0, &t));
        CHECK(mdb_drop(t, other, 0));
        child = NULL;
        if (nest)
            CHECK(mdb_txn_begin(env, t, 0, &child));
        MDB_txn *loading = nest ? child : t;
        meddler am = {feed_of(r, cnt), loading, t, other, cnt / 2, 0, 0, 0};
        CHECK_RC(mdbcore_bulk_load(loading, other, next_meddling, &am, 0), MDB_BAD_TXN);
        /* both handles are gone now; the last commit is what readers see */
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
        CHECK(mdb_stat(t, other, &st));
        if (st.ms_entries != cnt)
            FAIL("abort from the callback (nest %d): %zu entries, want the committed %zu",
                 nest, st.ms_entries, cnt);
        mdb_txn_abort(t);
        check_clean(env, "after an abort from the callback");
    }
    mdb_env_close(env);

    /* MDB_MAP_FULL: poisons the txn, the last snapshot stays */
    snprintf(dir, sizeof dir, "%s/full", base);
    env = open_env(dir, (size_t)1 << 20, 0);
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, "data", MDB_CREATE, &d));
    CHECK(mdb_txn_commit(t));
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    f = feed_of(r, cnt);
    CHECK_RC(mdbcore_bulk_load(t, d, next_rec, &f, 0), MDB_MAP_FULL);
    MDB_val pk = {4, "zzzz"}, pv = {3, "abc"};
    CHECK_RC(mdb_put(t, d, &pk, &pv, 0), MDB_BAD_TXN);
    mdb_txn_abort(t);
    check_clean(env, "after MDB_MAP_FULL");
    mdb_env_close(env);
    free_set(r, cnt);
    printf("errors: KEYEXIST x2, callback error, EINVAL target/flags, INCOMPATIBLE, EACCES, "
           "abort, nested, callback using the txn, abort from the callback, MAP_FULL: ok\n");
}

int main(int argc, char **argv)
{
    char base[2048];
    if (argc > 1)
        snprintf(base, sizeof base, "%s", argv[1]);
    else
        snprintf(base, sizeof base, "%s/bulkload.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                 (int)getpid());
    if (argc > 2)
        rng = strtoull(argv[2], NULL, 10) * 2654435761ull + 1;
    mkdir(base, 0755);
    round_trip(base, "tiny", 1, 0, 0, 0, 5);
    round_trip(base, "small", 40, 0, 0, 0, 5);
    round_trip(base, "named", 30000, 0, 0, 0, 5);
    round_trip(base, "main", 20000, 0, 1, 0, 2);
    round_trip(base, "intkey", 50000, 1, 0, 0, 0);
    round_trip(base, "nobig", 120000, 0, 0, 0, 0);
    round_trip(base, "spill", 60000, 0, 0, 256, 10);
    errors(base);
    rm_rf(base);
    printf("test_bulk_load: ok\n");
    return 0;
}
