/*
 * test_put_edge.c -- mdb_put's memory of a tree's right edge (tree_put.c) against everything
 * that can make it stale.
 *   test_put_edge DIR
 *
 * A put past the last key starts from the page stack the previous such put ended on, as
 * long as nothing changed a tree or moved a dirty page since (and a put that ends on the
 * saved leaf with no page moved keeps the saved stack).  Here runs of those puts (with
 * and without MDB_APPEND) alternate with: deletes from the end that merge the last
 * leaves away, puts and deletes in the middle, overflow values, puts into another DB,
 * nested txns that commit or abort, mdb_drop, commits, writes through a caller's cursor,
 * and spills (the dirty-page limit is lowered so that pages are written out and their
 * buffers given back mid-txn; under ASan a given-back buffer is poisoned, so reading one
 * is reported).  After every step the last key is compared with a model; at each commit
 * the whole DB, in key order, and at the end the structural checker.  Last, a handle
 * closed mid-txn whose number goes to another database (reused_handle).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

#define NKEYS 200000
#define STEPS 4000

static unsigned long long rng = MDBTEST_XORSHIFT_SEED;
static unsigned rnd(unsigned n) { return (unsigned)((mdbtest_xorshift(&rng) >> 11) % n); }

/* per key: 0 absent, else the value's length */
static unsigned short present[NKEYS], inner[NKEYS];
static int last_key = -1; /* the model's largest present key, -1 when empty */

static void key_of(char *b, unsigned i) { snprintf(b, 16, "%08u", i); }

static void value_of(unsigned char *b, unsigned i, size_t n)
{
    for (size_t j = 0; j < n; j++)
        b[j] = (unsigned char)(i * 31u + j);
}

static void recompute_last(unsigned short *m)
{
    while (last_key >= 0 && !m[last_key])
        last_key--;
}

static unsigned char vbuf[20000];

static void put(MDB_txn *txn, MDB_dbi dbi, unsigned short *m, unsigned i, size_t len, unsigned flags)
{
    char kb[16];
    key_of(kb, i);
    value_of(vbuf, i, len);
    MDB_val k = {8, kb}, v = {len, vbuf};
    CHECK(mdb_put(txn, dbi, &k, &v, flags));
    m[i] = (unsigned short)len;
    if ((int)i > last_key)
        last_key = (int)i;
}

static void del(MDB_txn *txn, MDB_dbi dbi, unsigned short *m, unsigned i)
{
    char kb[16];
    key_of(kb, i);
    MDB_val k = {8, kb};
    int rc = mdb_del(txn, dbi, &k, NULL);
    if (m[i])
        CHECK(rc);
    else
        CHECK_RC(rc, MDB_NOTFOUND);
    m[i] = 0;
    recompute_last(m);
}

/* Writes through a caller's cursor, which mdb_put's saved edge does not see: small puts
 * at random keys (most fit their leaf: no page moves, so the next put at the end may keep
 * the saved stack), one past the last key, and a delete. */
static void cursor_writes(MDB_txn *txn, MDB_dbi dbi, unsigned short *m)
{
    MDB_cursor *c;
    char kb[16];
    CHECK(mdb_cursor_open(txn, dbi, &c));
    for (unsigned n = 1 + rnd(3); n; n--) {
        unsigned i = last_key > 0 && rnd(4) ? rnd((unsigned)last_key) : (unsigned)(last_key + 1);
        size_t len = 10 + rnd(20);
        key_of(kb, i);
        value_of(vbuf, i, len);
        MDB_val k = {8, kb}, v = {len, vbuf};
        CHECK(mdb_cursor_put(c, &k, &v, 0));
        m[i] = (unsigned short)len;
        if ((int)i > last_key)
            last_key = (int)i;
    }
    if (last_key > 0) {
        unsigned i = rnd((unsigned)last_key);
        key_of(kb, i);
        MDB_val k = {8, kb}, v;
        int rc = mdb_cursor_get(c, &k, &v, MDB_SET);
        if (m[i]) {
            CHECK(rc);
            CHECK(mdb_cursor_del(c, 0));
            m[i] = 0;
            recompute_last(m);
        } else {
            CHECK_RC(rc, MDB_NOTFOUND);
        }
    }
    mdb_cursor_close(c);
}

/* n puts past the model's last key, values of 10..300 bytes */
static void run_of_puts(MDB_txn *txn, MDB_dbi dbi, unsigned short *m, unsigned n, unsigned flags)
{
    for (unsigned j = 0; j < n && last_key + 1 < NKEYS; j++)
        put(txn, dbi, m, (unsigned)(last_key + 1), 10 + rnd(290), flags);
}

static void expect_last(MDB_txn *txn, MDB_dbi dbi, const char *after)
{
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    int rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    if (last_key < 0) {
        EXPECT_MSG(rc == MDB_NOTFOUND, "after %s: the DB should be empty", after);
    } else {
        char kb[16];
        key_of(kb, (unsigned)last_key);
        EXPECT_MSG(rc == 0 && k.mv_size == 8 && !memcmp(k.mv_data, kb, 8) &&
                       v.mv_size == present[last_key],
                   "after %s: last key is not %s", after, kb);
    }
    mdb_cursor_close(c);
}

static void expect_all(MDB_txn *txn, MDB_dbi dbi, const char *when)
{
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    unsigned seen = 0, bad = 0;
    long prev = -1;
    int rc;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        char kb[9] = {0};
        memcpy(kb, k.mv_data, k.mv_size < 8 ? k.mv_size : 8);
        unsigned i = (unsigned)strtoul(kb, NULL, 10);
        value_of(vbuf, i, v.mv_size);
        if (k.mv_size != 8 || i >= NKEYS || (long)i <= prev || present[i] != v.mv_size ||
            memcmp(v.mv_data, vbuf, v.mv_size))
            bad++; /* (out of order too: a put through a stale edge lands in the wrong leaf) */
        prev = (long)i;
        seen++;
    }
    unsigned want = 0;
    for (unsigned i = 0; i < NKEYS; i++)
        want += present[i] != 0;
    EXPECT_MSG(rc == MDB_NOTFOUND && bad == 0 && seen == want,
               "%s: %u records seen, %u wrong, model has %u", when, seen, bad, want);
    mdb_cursor_close(c);
}

static void append_n(MDB_txn *txn, MDB_dbi dbi, unsigned from, unsigned to)
{
    char kb[16];
    memset(vbuf, 'v', 100);
    for (unsigned i = from; i < to; i++) {
        key_of(kb, i);
        MDB_val k = {8, kb}, v = {100, vbuf};
        CHECK(mdb_put(txn, dbi, &k, &v, MDB_APPEND));
    }
}

/* A handle closed inside a write txn and its number given to another database: the edge
 * saved by appends to the first must not be taken for the second's (nothing else moves:
 * opening an existing database writes nothing). */
static void reused_handle(const char *dir)
{
    mkdir(dir, 0755);
    MDB_env *env = mdbtest_env(1UL << 26, 4);
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    MDB_txn *txn;
    MDB_dbi a, b;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "b", MDB_CREATE, &b));
    append_n(txn, b, 0, 50);
    CHECK(mdb_dbi_open(txn, "a", MDB_CREATE, &a));
    CHECK(mdb_txn_commit(txn));
    mdb_dbi_close(env, b);
    mdb_dbi_close(env, a);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "a", 0, &a));
    append_n(txn, a, 0, 2000);
    mdb_dbi_close(env, a); /* (its changes in this txn are dropped, as in LMDB) */
    CHECK(mdb_dbi_open(txn, "b", 0, &b));
    EXPECT_MSG(a == b, "handle %u not reused (got %u): the case is not covered", a, b);
    append_n(txn, b, 5000, 5100);
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_dbi_open(txn, "b", 0, &b));
    MDB_stat st;
    CHECK(mdb_stat(txn, b, &st));
    EXPECT_MSG(st.ms_entries == 150, "b: %zu entries, want 150", st.ms_entries);
    MDB_cursor *c;
    MDB_val k, v;
    unsigned n = 0, wrong = 0;
    char kb[16];
    CHECK(mdb_cursor_open(txn, b, &c));
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        key_of(kb, n < 50 ? n : 5000 + n - 50); /* b: 0..49, then 5000..5099 */
        wrong += k.mv_size != 8 || memcmp(k.mv_data, kb, 8) != 0;
        n++;
    }
    mdb_cursor_close(c);
    EXPECT_MSG(n == 150 && wrong == 0, "b: %u records read (%u not the expected key), want 150", n, wrong);
    /* (no structural check here: the pages "a" took in that txn are leaked, its record
     * change having been dropped with the handle; LMDB 0.9 leaks them alike) */
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    mkdir(argv[1], 0755);
    MDB_env *env = mdbtest_env(1UL << 30, 4);
    CHECK(mdbcore_env_set_dirty_limit(env, 256));
    CHECK(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
    MDB_txn *txn;
    MDB_dbi dbi, other;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "edge", MDB_CREATE, &dbi));
    CHECK(mdb_dbi_open(txn, "other", MDB_CREATE, &other));
    uint64_t spilled0 = mdbcore_env_spilled_pages(env);
    unsigned commits = 0, nested = 0;
    for (unsigned step = 0; step < STEPS; step++) {
        static const char *names[] = {"puts",  "appends", "tail deletes", "middle", "overflow",
                                      "other", "nested",  "drop",         "commit", "cursor"};
        unsigned what = rnd(110);
        unsigned kind = what < 40 ? 0 : what < 55 ? 1 : what < 65 ? 2 : what < 75 ? 3 : what < 80 ? 4
                      : what < 87 ? 5 : what < 94 ? 6 : what < 95 ? 7 : what < 100 ? 8 : 9;
        switch (kind) {
        case 0:
            run_of_puts(txn, dbi, present, 1 + rnd(200), 0);
            break;
        case 1:
            run_of_puts(txn, dbi, present, 1 + rnd(200), MDB_APPEND);
            break;
        case 2: /* enough from the end to empty the last leaves and merge them away */
            for (unsigned n = 1 + rnd(120); n && last_key >= 0; n--)
                del(txn, dbi, present, (unsigned)last_key);
            break;
        case 3:
            if (last_key > 0) {
                unsigned i = rnd((unsigned)last_key);
                if (rnd(2))
                    put(txn, dbi, present, i, 10 + rnd(290), 0);
                else
                    del(txn, dbi, present, i);
            }
            break;
        case 4: /* an overflow value, at the end or anywhere */
            put(txn, dbi, present, rnd(2) || last_key < 1 ? (unsigned)(last_key + 1) : rnd((unsigned)last_key),
                3000 + rnd(12000), 0);
            break;
        case 5: {
            char kb[16];
            key_of(kb, rnd(NKEYS));
            MDB_val k = {8, kb}, v = {8, kb};
            CHECK(mdb_put(txn, other, &k, &v, 0));
            break;
        }
        case 6: { /* the child works on a copy of the model; it joins it on commit */
            MDB_txn *child;
            CHECK(mdb_txn_begin(env, txn, 0, &child));
            memcpy(inner, present, sizeof present);
            int keep_last = last_key;
            run_of_puts(child, dbi, inner, 1 + rnd(150), rnd(2) ? MDB_APPEND : 0);
            if (rnd(3) == 0 && last_key >= 0)
                del(child, dbi, inner, (unsigned)last_key);
            if (rnd(2)) {
                CHECK(mdb_txn_commit(child));
                memcpy(present, inner, sizeof present);
            } else {
                mdb_txn_abort(child);
                last_key = keep_last;
            }
            nested++;
            break;
        }
        case 7:
            CHECK(mdb_drop(txn, dbi, 0));
            memset(present, 0, sizeof present);
            last_key = -1;
            break;
        case 9:
            cursor_writes(txn, dbi, present);
            break;
        case 8:
            expect_all(txn, dbi, "before a commit");
            CHECK(mdb_txn_commit(txn));
            CHECK(mdb_txn_begin(env, NULL, 0, &txn));
            commits++;
            break;
        }
        expect_last(txn, dbi, names[kind]);
        if (mdbtest_failures)
            break;
    }
    expect_all(txn, dbi, "at the end");
    CHECK(mdb_txn_commit(txn));
    mdbcore_check_report rep;
    int rc = mdbcore_check_env(env, &rep);
    EXPECT_MSG(rc == 0, "checker: %s", mdb_strerror(rc));
    mdbcore_check_report_free(&rep);
    uint64_t spilled = mdbcore_env_spilled_pages(env) - spilled0;
    printf("%u steps, %u commits, %u nested txns, %llu pages spilled\n", STEPS, commits, nested,
           (unsigned long long)spilled);
    EXPECT_MSG(spilled > 0, "no page was spilled: the test did not cover spills");
    mdb_env_close(env);
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/reused-handle", argv[1]);
    reused_handle(sub);
    TEST_DONE();
}
