/*
 * test_placement.c -- where a commit puts the pages the next writer reads back through the
 * map, and that putting them there early breaks nothing.
 *
 * A write txn on a named database reads two pages the previous commit wrote: MAIN's leaf
 * holding the database's record (the commit rewrites it) and FREE_DBI's first leaf (the
 * free list, read to reuse pages).  Copied late in the commit they would land on new
 * pages at the end of the file, each a page fault for the next writer; the engine copies
 * them at the txn's first change instead, onto pages the free list gave back (freelist.c,
 * cursor_touch.c).  Checked here in a steady load in key order: after the warm-up, neither
 * leaf may sit on a page the commit added to the file.
 * Then the cases where the early copy must not happen or must not hurt: a cursor open on
 * MAIN while a named database changes (it must still read and write its record), a
 * nested txn,
 * several databases changed in one txn; each ends with the structural checker.
 *   test_placement DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

static char dir_root[2048];

/* the address the data file is mapped at for reading in this process (from
 * /proc/self/maps; the writer's write map of the same file is writable, and skipped) */
static const char *map_base(const char *dir)
{
    char want[4096], line[4608];
    PATHF(want, "%s/data.mdb", dir);
    FILE *f = fopen("/proc/self/maps", "r");
    REQUIRE(f != NULL);
    const char *base = NULL;
    while (!base && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        size_t n = strlen(line), w = strlen(want);
        const char *perms = strchr(line, ' ');
        if (n >= w && !strcmp(line + n - w, want) && perms && perms[2] != 'w')
            base = (const char *)(uintptr_t)strtoull(line, NULL, 16);
    }
    fclose(f);
    REQUIRE(base != NULL);
    return base;
}

static void be_key(uint8_t *k, uint64_t i)
{
    memset(k, 0, 8);
    for (int b = 0; b < 8; b++)
        k[15 - b] = (uint8_t)(i >> (8 * b));
}

static void check_structure(MDB_env *env, const char *what)
{
    mdbcore_check_report rep;
    int rc = mdbcore_check_env(env, &rep);
    EXPECT_MSG(rc == 0, "%s: checker: %s", what, mdb_strerror(rc));
    mdbcore_check_report_free(&rep);
}

static void steady_fill(void)
{
    char dir[4096];
    PATHF(dir, "%s/steady", dir_root);
    MDB_env *env = mdbtest_open_dir(dir, 64u << 20, 4, 0);
    MDB_txn *txn;
    MDB_dbi dbi, main_dbi;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "bench", MDB_CREATE, &dbi));
    CHECK(mdb_dbi_open(txn, NULL, 0, &main_dbi));
    CHECK(mdb_txn_commit(txn));
    const char *base = map_base(dir);
    uint8_t k[16], v[100];
    memset(v, 'v', sizeof v);
    unsigned next = 0, checked = 0, record_new = 0, freelist_new = 0;
    for (int t = 0; t < 300; t++) {
        MDB_envinfo info;
        CHECK(mdb_env_info(env, &info));
        size_t first_new = info.me_last_pgno + 1;
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        for (int j = 0; j < 100; j++, next++) {
            be_key(k, next);
            MDB_val key = {sizeof k, k}, val = {sizeof v, v};
            CHECK(mdb_put(txn, dbi, &key, &val, 0));
        }
        CHECK(mdb_txn_commit(txn));
        if (t < 20)
            continue; /* the free list needs a few commits to give pages back */
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        MDB_val name = {5, "bench"}, rec, fk, fv;
        CHECK(mdb_get(txn, main_dbi, &name, &rec));
        MDB_cursor *fc;
        CHECK(mdb_cursor_open(txn, 0, &fc));
        CHECK(mdb_cursor_get(fc, &fk, &fv, MDB_FIRST));
        size_t rec_pg = (size_t)((const char *)rec.mv_data - base) / 4096;
        size_t free_pg = (size_t)((const char *)fv.mv_data - base) / 4096;
        record_new += rec_pg >= first_new;
        freelist_new += free_pg >= first_new;
        checked++;
        mdb_cursor_close(fc);
        mdb_txn_abort(txn);
    }
    EXPECT_EQ(checked, 280);
    EXPECT_MSG(record_new == 0, "MAIN's leaf with the record on a new page after %u of %u commits",
               record_new, checked);
    EXPECT_MSG(freelist_new == 0, "the free list's first leaf on a new page after %u of %u commits",
               freelist_new, checked);
    check_structure(env, "steady fill");
    mdb_env_close(env);
}

/* a cursor open on MAIN while named databases change: the early copy is skipped, the
 * cursor keeps reading its record; nested txns and several databases in one txn */
static void open_cursor_and_nested(void)
{
    char dir[4096];
    PATHF(dir, "%s/cursor", dir_root);
    MDB_env *env = mdbtest_open_dir(dir, 64u << 20, 8, 0);
    const char *names[] = {"a", "b", "c"};
    MDB_dbi dbs[3], main_dbi;
    MDB_txn *txn, *child;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (int i = 0; i < 3; i++)
        CHECK(mdb_dbi_open(txn, names[i], MDB_CREATE, &dbs[i]));
    CHECK(mdb_dbi_open(txn, NULL, 0, &main_dbi));
    MDB_val plain = {7, "b-plain"}, none = {sizeof(int), "\0\0\0"};
    CHECK(mdb_put(txn, main_dbi, &plain, &none, 0));
    CHECK(mdb_txn_commit(txn));
    uint8_t k[16], v[100];
    memset(v, 'w', sizeof v);
    unsigned next = 0;
    for (int t = 0; t < 60; t++) {
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        MDB_cursor *mc = NULL;
        if (t % 3 == 0) { /* a cursor on MAIN, standing on a plain record there */
            CHECK(mdb_cursor_open(txn, main_dbi, &mc));
            MDB_val key = {7, "b-plain"}, data;
            CHECK(mdb_cursor_get(mc, &key, &data, MDB_SET));
        }
        MDB_txn *w = txn;
        if (t % 3 == 1) {
            CHECK(mdb_txn_begin(env, txn, 0, &child));
            w = child;
        }
        for (int j = 0; j < 150; j++, next++) {
            be_key(k, next);
            MDB_val key = {sizeof k, k}, val = {sizeof v, v};
            CHECK(mdb_put(w, dbs[next % 3], &key, &val, 0));
        }
        if (w != txn)
            CHECK(t % 2 ? mdb_txn_commit(child) : (mdb_txn_abort(child), 0));
        if (mc) {
            /* a write in place through it: were it left on MAIN's old leaf, that leaf
             * would be copied a second time (the checker finds the first copy lost) */
            MDB_val key, data, nv = {sizeof t, &t};
            EXPECT_OK(mdb_cursor_get(mc, &key, &data, MDB_GET_CURRENT));
            EXPECT(key.mv_size == 7 && !memcmp(key.mv_data, "b-plain", 7));
            EXPECT_OK(mdb_cursor_put(mc, &key, &nv, MDB_CURRENT));
            EXPECT_OK(mdb_cursor_get(mc, &key, &data, MDB_GET_CURRENT));
            EXPECT(data.mv_size == sizeof t && !memcmp(data.mv_data, &t, sizeof t));
            mdb_cursor_close(mc);
        }
        CHECK(mdb_txn_commit(txn));
    }
    /* every put that was committed is there, in each database */
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    size_t total = 0;
    for (int i = 0; i < 3; i++) {
        MDB_stat st;
        CHECK(mdb_stat(txn, dbs[i], &st));
        total += st.ms_entries;
    }
    MDB_val last;
    CHECK(mdb_get(txn, main_dbi, &plain, &last));
    int want_last = 57;
    EXPECT(last.mv_size == sizeof want_last && !memcmp(last.mv_data, &want_last, sizeof want_last));
    mdb_txn_abort(txn);
    /* 60 txns of 150 puts; the children of t % 3 == 1 with t even were aborted */
    unsigned aborted = 0;
    for (int t = 0; t < 60; t++)
        aborted += (t % 3 == 1 && t % 2 == 0) ? 150 : 0;
    EXPECT_EQ(total, 60 * 150 - aborted);
    check_structure(env, "cursor on MAIN, nested txns");
    mdb_env_close(env);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_placement DIR\n");
        return 2;
    }
    PATHF(dir_root, "%s", argv[1]);
    mkdir(dir_root, 0755);
    TEST_RUN(steady_fill);
    TEST_RUN(open_cursor_and_nested);
    TEST_DONE();
}
