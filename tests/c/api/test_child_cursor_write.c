/*
 * test_child_cursor_write.c -- a cursor of a nested txn, positioned on a page that the
 * parent txn wrote, then another write of the child to that page (which gives the child
 * its own copy of it), then a write through the cursor: the cursor's write must go to
 * the child's copy, keeping the other write.
 *
 * Found by tests/property's state machine (hypothesis): put "a" in a txn; in a child,
 * a cursor on FIRST, mdb_put "ab", mdb_cursor_del: the child was left with no item ("ab"
 * gone too); LMDB leaves "ab".  Variants: the write through the cursor is a delete or a
 * put of the current item, the other write a put or a delete, on a plain and on a DUPSORT
 * database, with one page or several.
 *
 * Compiled against lmdb.h and linked with the library under test: LMDB_IMPL=system runs
 * the same program on Debian's LMDB, which must pass it too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

#include "mdbtest.h"

static char dir[4096];

static MDB_val kv(const char *s) { return (MDB_val){strlen(s), (void *)s}; }

/* The keys of dbi in order, comma-separated, into out. */
static void keys_of(MDB_txn *txn, MDB_dbi dbi, char *out, size_t cap)
{
    MDB_cursor *c;
    MDB_val k, v;
    size_t n = 0;
    out[0] = 0;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        int w = snprintf(out + n, cap - n, "%s%.*s", n ? "," : "", (int)k.mv_size,
                         (char *)k.mv_data);
        if (w < 0 || (size_t)w >= cap - n)
            break;
        n += (size_t)w;
    }
    mdb_cursor_close(c);
}

/* filler: that many extra keys "z0000".. after the others (several leaves when many) */
static void one_case(unsigned dbflags, int cursor_del, int other_put, unsigned filler)
{
    MDB_env *env = mdbtest_open_dir(dir, (size_t)64 << 20, 4, 0);
    MDB_txn *txn, *child;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v = kv("v");
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "db", MDB_CREATE | dbflags, &dbi));
    k = kv("a");
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    k = kv("b");
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    char zb[16];
    for (unsigned i = 0; i < filler; i++) {
        snprintf(zb, sizeof zb, "z%04u", i);
        k = kv(zb);
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_begin(env, txn, 0, &child));
    CHECK(mdb_cursor_open(child, dbi, &c));
    EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_FIRST)); /* on "a", the parent's page */
    if (other_put) {
        k = kv("ab"), v = kv("v");
        EXPECT_OK(mdb_put(child, dbi, &k, &v, 0));
    } else {
        k = kv("b");
        EXPECT_OK(mdb_del(child, dbi, &k, NULL));
    }
    if (cursor_del) {
        EXPECT_OK(mdb_cursor_del(c, 0));
    } else {
        k = kv("a"), v = kv("w");
        EXPECT_OK(mdb_cursor_put(c, &k, &v, MDB_CURRENT));
    }
    /* "a" goes with the cursor's delete, "ab" comes with the other put, "b" goes with
     * the other delete; the filler keys sort after them */
    char got[4096], want[32] = "";
    if (!cursor_del)
        strcat(want, "a,");
    if (other_put)
        strcat(want, "ab,b,");
    keys_of(child, dbi, got, sizeof got);
    size_t wl = strlen(want);
    int ok = filler ? strncmp(got, want, wl) == 0 && got[wl] == 'z'
                    : (wl ? strncmp(got, want, wl - 1) == 0 && got[wl - 1] == 0 : got[0] == 0);
    EXPECT_MSG(ok, "flags %x, %s after another %s, %u more keys: keys %.40s..., want %s...",
               dbflags, cursor_del ? "cursor_del" : "cursor_put CURRENT",
               other_put ? "put" : "del", filler, got, want);
    MDB_stat st;
    CHECK(mdb_stat(child, dbi, &st));
    EXPECT_EQ(st.ms_entries, (size_t)(2 + filler + (other_put ? 1 : -1) - (cursor_del ? 1 : 0)));
    mdb_cursor_close(c);
    CHECK(mdb_txn_commit(child));
    mdb_txn_abort(txn);
    mdb_env_close(env);
    mdbtest_unlink_env(dir);
}

static void t_cursor_write_after_another_write_in_a_child(void)
{
    static const unsigned flags[2] = {0, MDB_DUPSORT};
    static const unsigned fill[2] = {0, 400};
    for (int f = 0; f < 2; f++)
        for (int d = 0; d < 2; d++)
            for (int o = 0; o < 2; o++)
                for (int z = 0; z < 2; z++)
                    one_case(flags[f], d, o, fill[z]);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    PATHF(dir, "%s/child-cursor-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        FAIL("mkdtemp %s", dir);
    TEST_RUN(t_cursor_write_after_another_write_in_a_child);
    rmdir(dir);
    TEST_DONE();
}
