/*
 * test_seek_in_leaf.c -- lookups and puts through a write txn's cursor that lands near
 * where it stands, in a tree of three levels, checked against a model of the data.
 *
 * A write cursor's lookup may be answered from the leaf the cursor is on: the key under
 * it, a key between the leaf's first and last keys, or a key just past one of the leaf's
 * ends when the branch separators on the cursor's path say that it belongs there.  A put
 * through the cursor starts from the same place (back-mdb's SET that missed, then a put
 * of that key).  Every answer is compared with a sorted model: what SET and SET_RANGE
 * find, where a put leaves the cursor (GET_CURRENT, then NEXT and PREV against the
 * model's neighbours), and, now and then and after the commit, the whole database in
 * order.  Keys are drawn next to the last one looked up, so that most of them fall in or
 * at the edges of the cursor's leaf, and the rest at random, across leaves.
 *
 * A DUPSORT database gets the same treatment for FIRST_DUP, LAST_DUP and count after a
 * SET, a put with MDB_NODUPDATA or MDB_APPENDDUP, and a cursor that moved to another key
 * in between (its duplicate position then belongs to the key it left).  Last, the end
 * mark MDB_LAST leaves, which a cursor put keeps for a new key only (told from the
 * cursor's own page, without a lookup).
 *
 * Compiled against lmdb.h and linked with the library under test: LMDB_IMPL=system runs
 * the same program on Debian's LMDB, which must pass it too.  Deterministic (xorshift).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

#include "mdbtest.h"

static unsigned long long rng = MDBTEST_XORSHIFT_SEED;
static unsigned below(unsigned n) { return (unsigned)(mdbtest_xorshift(&rng) % n); }

#define SPACE 60000u /* key numbers */
#define VALSZ 40
static unsigned char present[SPACE];
static char kbuf[16], vbuf[VALSZ];

static MDB_val key_of(unsigned u)
{
    snprintf(kbuf, sizeof kbuf, "k%07u", u);
    return (MDB_val){8, kbuf};
}

static MDB_val val_of(unsigned u)
{
    memset(vbuf, 'a' + (int)(u % 26), sizeof vbuf);
    memcpy(vbuf, &u, sizeof u);
    return (MDB_val){VALSZ, vbuf};
}

/* The number in a key "kNNNNNNN" or a value "vNNNNN" (the bytes are not terminated). */
static unsigned digits(const MDB_val *x, size_t size)
{
    char b[16];
    if (x->mv_size != size)
        return SPACE;
    memcpy(b, (const char *)x->mv_data + 1, size - 1);
    b[size - 1] = 0;
    return (unsigned)strtoul(b, NULL, 10);
}

static unsigned num_of(const MDB_val *k) { return digits(k, 8); }

/* The first present number >= u (SPACE when none); the last one < u (SPACE when none). */
static unsigned succ(unsigned u)
{
    while (u < SPACE && !present[u])
        u++;
    return u;
}

static unsigned pred(unsigned u)
{
    while (u > 0)
        if (present[--u])
            return u;
    return SPACE;
}

static char dir[4096];

static void check_all(MDB_txn *txn, MDB_dbi dbi, const char *when)
{
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    unsigned want = succ(0), seen = 0, bad = 0;
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        unsigned got = num_of(&k);
        if (got != want || v.mv_size != VALSZ || memcmp(v.mv_data, &got, sizeof got) != 0)
            bad++;
        want = succ(got + 1);
        seen++;
    }
    mdb_cursor_close(c);
    EXPECT_MSG(bad == 0 && want == SPACE, "%s: %u items out of place, %u seen", when, bad, seen);
}

static void t_plain_puts_near_the_cursor(void)
{
    memset(present, 0, sizeof present);
    MDB_env *env = mdbtest_open_dir(dir, (size_t)256 << 20, 4, 0);
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "plain", MDB_CREATE, &dbi));
    for (unsigned i = 0; i < 24000; i++) { /* about 420 leaves, three levels */
        unsigned u = below(SPACE);
        k = key_of(u), v = val_of(u);
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
        present[u] = 1;
    }
    CHECK(mdb_txn_commit(txn));
    MDB_stat st;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_stat(txn, dbi, &st));
    EXPECT_MSG(st.ms_depth >= 3, "depth %u", st.ms_depth);
    CHECK(mdb_cursor_open(txn, dbi, &c));
    unsigned at = below(SPACE), wrong = 0;
    for (unsigned step = 0; step < 30000; step++) {
        /* next to the last key, or anywhere */
        unsigned u = below(4) ? (at + SPACE + below(13) - 6) % SPACE : below(SPACE);
        unsigned r = below(100);
        int rc;
        k = key_of(u);
        if (r < 35) {
            rc = mdb_cursor_get(c, &k, &v, MDB_SET);
            if (rc != (present[u] ? 0 : MDB_NOTFOUND))
                wrong++;
            if (rc == 0 && (mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT) || num_of(&k) != u))
                wrong++;
        } else if (r < 45) {
            rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
            unsigned want = succ(u);
            if (want == SPACE ? rc != MDB_NOTFOUND : rc != 0 || num_of(&k) != want)
                wrong++;
        } else if (r < 90) {
            /* a put through the cursor, after a lookup of the same key half the time */
            if (r < 68)
                mdb_cursor_get(c, &k, &v, MDB_SET);
            k = key_of(u), v = val_of(u);
            unsigned fl = below(2) ? MDB_NOOVERWRITE : 0;
            rc = mdb_cursor_put(c, &k, &v, fl);
            if (rc != (present[u] && fl ? MDB_KEYEXIST : 0))
                wrong++;
            present[u] = 1;
            MDB_val ck, cv;
            if (mdb_cursor_get(c, &ck, &cv, MDB_GET_CURRENT) || num_of(&ck) != u)
                wrong++;
            MDB_cursor_op op = below(2) ? MDB_NEXT : MDB_PREV;
            unsigned want = op == MDB_NEXT ? succ(u + 1) : pred(u);
            rc = mdb_cursor_get(c, &ck, &cv, op);
            if (want == SPACE ? rc != MDB_NOTFOUND : rc != 0 || num_of(&ck) != want)
                wrong++;
        } else {
            /* a change through another path moves pages under the cursor */
            if (present[u]) {
                if (mdb_del(txn, dbi, &k, NULL))
                    wrong++;
                present[u] = 0;
            } else {
                v = val_of(u);
                if (mdb_put(txn, dbi, &k, &v, 0))
                    wrong++;
                present[u] = 1;
            }
        }
        at = u;
        if (step % 5000 == 4999)
            check_all(txn, dbi, "during the txn");
    }
    EXPECT_MSG(wrong == 0, "%u answers differ from the model", wrong);
    mdb_cursor_close(c);
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    check_all(txn, dbi, "after the commit");
    mdb_txn_abort(txn);
    mdb_env_close(env);
    mdbtest_unlink_env(dir);
}

/* DUPSORT: up to 48 values a key (a bit each), some keys with 300 (a sub-tree). */
#define DKEYS 3000u
static uint64_t dvals[DKEYS];
static unsigned dbig[DKEYS]; /* values 0..dbig-1 besides the bits, for the big keys */

static MDB_val dval_of(unsigned j)
{
    snprintf(vbuf, sizeof vbuf, "v%05u", j);
    return (MDB_val){6, vbuf};
}

static int dcount(unsigned i)
{
    return __builtin_popcountll(dvals[i]) + (int)dbig[i];
}

/* The smallest and largest value of key i (values: big ones 0..dbig-1, bits at 1000+b). */
static unsigned dfirst(unsigned i)
{
    return dbig[i] ? 0 : 1000u + (unsigned)__builtin_ctzll(dvals[i]);
}

static unsigned dlast(unsigned i)
{
    return dvals[i] ? 1000u + 63u - (unsigned)__builtin_clzll(dvals[i]) : dbig[i] - 1;
}

static void t_dups_near_the_cursor(void)
{
    memset(dvals, 0, sizeof dvals);
    memset(dbig, 0, sizeof dbig);
    MDB_env *env = mdbtest_open_dir(dir, (size_t)256 << 20, 4, 0);
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &dbi));
    for (unsigned i = 0; i < DKEYS; i += 2) {
        k = key_of(i);
        if (i % 50 == 0) {
            dbig[i] = 300;
            for (unsigned j = 0; j < 300; j++) {
                v = dval_of(j);
                CHECK(mdb_put(txn, dbi, &k, &v, 0));
            }
        }
        unsigned b = 8 + below(40);
        dvals[i] |= 1ull << b;
        v = dval_of(1000 + b);
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_cursor_open(txn, dbi, &c));
    unsigned at = 0, wrong = 0;
    for (unsigned step = 0; step < 20000; step++) {
        unsigned i = below(4) ? (at + DKEYS + below(7) - 3) % DKEYS : below(DKEYS);
        int rc = 0;
        k = key_of(i);
        int has = dcount(i) > 0;
        /* half the time no lookup first: the put starts from the key the cursor is on,
         * whose duplicates its duplicate cursor still reads */
        int looked = below(2);
        if (looked) {
            rc = mdb_cursor_get(c, &k, &v, MDB_SET);
            if (rc != (has ? 0 : MDB_NOTFOUND))
                wrong++;
        }
        if (looked && rc == 0 && has &&
            (num_of(&k) != i || v.mv_size != 6 || digits(&v, 6) != dfirst(i)))
            wrong++;
        if (looked && has && below(3) == 0) {
            size_t n = 0;
            if (mdb_cursor_count(c, &n) || n != (size_t)dcount(i))
                wrong++;
        }
        /* a new value: above the last (APPENDDUP, refused when it is not) or anywhere */
        unsigned b = below(64);
        unsigned fl = MDB_NODUPDATA | (below(2) ? MDB_APPENDDUP : 0);
        int exists = (dvals[i] >> b) & 1;
        int in_order = !has || 1000 + b > dlast(i);
        k = key_of(i), v = dval_of(1000 + b);
        rc = mdb_cursor_put(c, &k, &v, fl);
        int want = exists || ((fl & MDB_APPENDDUP) && has && !in_order) ? MDB_KEYEXIST : 0;
        if (rc != want)
            wrong++;
        if (rc == 0)
            dvals[i] |= 1ull << b;
        /* the ends of this key's values, then of a neighbour's, through the same cursor */
        for (int twice = 0; twice < 2; twice++) {
            unsigned w = twice ? (i + 1) % DKEYS : i;
            k = key_of(w);
            if (twice && mdb_cursor_get(c, &k, &v, MDB_SET) != (dcount(w) ? 0 : MDB_NOTFOUND))
                wrong++;
            if (!dcount(w))
                continue;
            MDB_cursor_op op = below(2) ? MDB_LAST_DUP : MDB_FIRST_DUP;
            unsigned want_v = op == MDB_LAST_DUP ? dlast(w) : dfirst(w);
            rc = mdb_cursor_get(c, &k, &v, op);
            if (rc != 0 || v.mv_size != 6 || digits(&v, 6) != want_v)
                wrong++;
        }
        at = i;
    }
    EXPECT_MSG(wrong == 0, "%u answers differ from the model", wrong);
    mdb_cursor_close(c);
    CHECK(mdb_txn_commit(txn));
    /* every key's values in order, after the commit */
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_cursor_open(txn, dbi, &c));
    unsigned bad = 0;
    for (unsigned i = 0; i < DKEYS; i++) {
        k = key_of(i);
        int rc = mdb_cursor_get(c, &k, &v, MDB_SET);
        if (rc != (dcount(i) ? 0 : MDB_NOTFOUND)) {
            bad++;
            continue;
        }
        if (rc)
            continue;
        int n = 0;
        unsigned prev = 0;
        for (; rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP), n++) {
            unsigned j = digits(&v, 6);
            int ok = j < 1000 ? j < dbig[i] : j - 1000 < 64 && ((dvals[i] >> (j - 1000)) & 1);
            if (!ok || (n && j <= prev))
                bad++;
            prev = j;
        }
        if (n != dcount(i))
            bad++;
    }
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    EXPECT_MSG(bad == 0, "%u keys differ from the model after the commit", bad);
    mdb_env_close(env);
    mdbtest_unlink_env(dir);
}

/* After MDB_LAST the cursor carries LMDB's end mark, which a cursor put keeps only for a
 * new key.  A put of a new value under the last key finds that key: the mark goes, and
 * NEXT steps from the new value to the one after it. */
static void t_end_mark_after_a_put_under_the_last_key(void)
{
    MDB_env *env = mdbtest_open_dir(dir, (size_t)64 << 20, 4, 0);
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &dbi));
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = 0; j < 3; j++) {
            k = key_of(i), v = dval_of(2 * j);
            CHECK(mdb_put(txn, dbi, &k, &v, 0));
        }
    CHECK(mdb_cursor_open(txn, dbi, &c));
    EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_LAST));
    EXPECT(num_of(&k) == 2 && digits(&v, 6) == 4);
    k = key_of(2), v = dval_of(3);
    EXPECT_OK(mdb_cursor_put(c, &k, &v, 0));
    int rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    EXPECT_MSG(rc == 0 && num_of(&k) == 2 && digits(&v, 6) == 4,
               "NEXT after the put: rc %d, value %u (want v00004)", rc, rc ? 0 : digits(&v, 6));
    /* a new key after the last one keeps the mark: NEXT answers the end */
    EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_LAST));
    k = key_of(7), v = dval_of(1);
    EXPECT_OK(mdb_cursor_put(c, &k, &v, 0));
    EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT), MDB_NOTFOUND);
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    mdbtest_unlink_env(dir);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    PATHF(dir, "%s/seek-in-leaf-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        FAIL("mkdtemp %s", dir);
    TEST_RUN(t_plain_puts_near_the_cursor);
    TEST_RUN(t_dups_near_the_cursor);
    TEST_RUN(t_end_mark_after_a_put_under_the_last_key);
    rmdir(dir);
    TEST_DONE();
}
