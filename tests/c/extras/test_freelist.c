/*
 * test_freelist.c -- mdbcore_freelist_* (src/mdbcore/check.c, mdbcore.h section 2b), issue
 * 14 part 3: the free list of a snapshot read by the checker's walker.
 *  - after commits that overwrite, delete and drop (one drop frees enough pages for an
 *    overflow record), the list equals what a cursor over FREE_DBI reads, record by
 *    record and page by page, and its record equals mdb_stat(FREE_DBI);
 *  - a read txn's snapshot keeps its own list while later commits change the env's;
 *  - an empty environment has no records; a write txn that wrote gets MDB_BAD_TXN;
 *  - a data file image whose free DB is damaged (page header, record count) gives
 *    MDB_CORRUPTED naming the page, and no records.
 *   test_freelist [DIR]   (default $TMPDIR/freelist.PID)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

static char base[2048];

static MDB_env *open_env(const char *dir)
{
    return mdbtest_open_dir(dir, 64u << 20, 4, 0);
}

static void put_keys(MDB_env *env, const char *db, int from, int n, int vlen, char fill)
{
    MDB_txn *txn;
    MDB_dbi dbi;
    char *vb = malloc((size_t)vlen);
    REQUIRE(vb);
    memset(vb, fill, (size_t)vlen);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, db, db ? MDB_CREATE : 0, &dbi));
    for (int i = from; i < from + n; i++) {
        char kb[16];
        snprintf(kb, sizeof kb, "k%06d", i);
        MDB_val k = {strlen(kb), kb}, v = {(size_t)vlen, vb};
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
    free(vb);
}

static void del_keys(MDB_env *env, int from, int n)
{
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (int i = from; i < from + n; i++) {
        char kb[16];
        snprintf(kb, sizeof kb, "k%06d", i);
        MDB_val k = {strlen(kb), kb};
        CHECK(mdb_del(txn, MAIN_DBI, &k, NULL));
    }
    CHECK(mdb_txn_commit(txn));
}

static void drop_db(MDB_env *env, const char *name)
{
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, name, 0, &dbi));
    CHECK(mdb_drop(txn, dbi, 1));
    CHECK(mdb_txn_commit(txn));
}

/* The list against a cursor over FREE_DBI in the same txn; returns the records compared. */
static size_t compare_with_cursor(MDB_txn *txn, const mdbcore_freelist *fl)
{
    MDB_stat st;
    CHECK(mdb_stat(txn, FREE_DBI, &st));
    EXPECT_EQ(fl->rec.depth, st.ms_depth);
    EXPECT_EQ(fl->rec.branch_pages, st.ms_branch_pages);
    EXPECT_EQ(fl->rec.leaf_pages, st.ms_leaf_pages);
    EXPECT_EQ(fl->rec.overflow_pages, st.ms_overflow_pages);
    EXPECT_EQ(fl->rec.entries, st.ms_entries);
    EXPECT_EQ(fl->nrecords, st.ms_entries);
    EXPECT_EQ(fl->txnid, mdb_txn_id(txn));
    MDB_cursor *cur;
    CHECK(mdb_cursor_open(txn, FREE_DBI, &cur));
    MDB_val k, d;
    size_t i = 0;
    uint64_t total = 0;
    int rc;
    for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT), i++) {
        REQUIRE(i < fl->nrecords);
        txnid_t id;
        pgno_t n;
        memcpy(&id, k.mv_data, sizeof id);
        memcpy(&n, d.mv_data, sizeof n);
        const mdbcore_free_record *r = &fl->records[i];
        EXPECT_EQ(r->txnid, id);
        EXPECT_EQ(r->npages, n);
        EXPECT(r->npages == n &&
               memcmp(r->pages, (pgno_t *)d.mv_data + 1, n * sizeof(pgno_t)) == 0);
        for (size_t j = 1; j < r->npages; j++)
            EXPECT(r->pages[j] < r->pages[j - 1]); /* as stored: descending */
        total += n;
    }
    CHECK_RC(rc, MDB_NOTFOUND);
    mdb_cursor_close(cur);
    EXPECT_EQ(i, fl->nrecords);
    EXPECT_EQ(fl->free_pages, total);
    return i;
}

static void t_matches_cursor(void)
{
    char dir[2100];
    PATHF(dir, "%s/churn", base);
    MDB_env *env = open_env(dir);
    mdbcore_freelist fl;
    /* empty: no records */
    CHECK(mdbcore_freelist_env(env, &fl));
    EXPECT_EQ(fl.nrecords, 0);
    EXPECT_EQ(fl.free_pages, 0);
    EXPECT_EQ(fl.rec.root, P_INVALID);
    mdbcore_freelist_free(&fl);

    put_keys(env, NULL, 0, 3000, 100, 'a');
    put_keys(env, "big", 0, 600, 5000, 'b'); /* 600 overflow runs of 2 pages */
    put_keys(env, NULL, 0, 1500, 100, 'c');   /* overwrite */
    del_keys(env, 1000, 1500);
    drop_db(env, "big");                       /* one record of about 1200 pages */

    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdbcore_freelist_txn(txn, &fl));
    size_t n = compare_with_cursor(txn, &fl);
    EXPECT(n >= 2);
    int big = 0;
    for (size_t i = 0; i < fl.nrecords; i++)
        if (fl.records[i].npages > 500)
            big = 1;
    EXPECT_MSG(big, "no free record past 500 pages (none on overflow pages)");
    EXPECT(fl.rec.overflow_pages > 0);
    mdbcore_freelist old = fl;

    /* the env moves on; the read txn's snapshot keeps its list */
    put_keys(env, NULL, 0, 2000, 100, 'd');
    CHECK(mdbcore_freelist_txn(txn, &fl));
    compare_with_cursor(txn, &fl);
    EXPECT_EQ(fl.nrecords, old.nrecords);
    EXPECT_EQ(fl.free_pages, old.free_pages);
    mdbcore_freelist_free(&fl);
    mdbcore_freelist_free(&old);
    mdb_txn_abort(txn);

    mdbcore_freelist now;
    CHECK(mdbcore_freelist_env(env, &now));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    compare_with_cursor(txn, &now);
    mdb_txn_abort(txn);
    EXPECT(now.txnid > old.txnid);
    mdbcore_freelist_free(&now);

    /* a write txn that wrote has no snapshot in the map yet */
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdbcore_freelist_txn(txn, &fl)); /* nothing written yet: fine */
    mdbcore_freelist_free(&fl);
    MDB_val k = {3, "new"}, v = {1, "v"};
    CHECK(mdb_put(txn, MAIN_DBI, &k, &v, 0));
    EXPECT_RC(mdbcore_freelist_txn(txn, &fl), MDB_BAD_TXN);
    EXPECT_EQ(fl.nrecords, 0);
    mdbcore_freelist_free(&fl);
    mdb_txn_abort(txn);
    EXPECT_RC(mdbcore_freelist_env(NULL, &fl), EINVAL);
    EXPECT_RC(mdbcore_freelist_txn(NULL, &fl), EINVAL);
    mdb_env_close(env);
}

/* Read a data file into memory and pick its newest meta. */
static uint8_t *load_image(const char *path, mdbcore_snapshot *in)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    REQUIRE(fd >= 0 && fstat(fd, &st) == 0);
    uint8_t *buf = malloc((size_t)st.st_size);
    REQUIRE(buf && pread(fd, buf, (size_t)st.st_size, 0) == st.st_size);
    close(fd);
    memset(in, 0, sizeof *in);
    in->map = buf;
    in->map_len = (size_t)st.st_size;
    in->file_size = (uint64_t)st.st_size;
    CHECK(mdbcore_snapshot_from_metas(in, -1));
    return buf;
}

static void t_damaged_image(void)
{
    char dir[2100], file[2200];
    PATHF(dir, "%s/damaged", base);
    MDB_env *env = open_env(dir);
    put_keys(env, NULL, 0, 500, 100, 'a');
    put_keys(env, NULL, 0, 500, 100, 'b');
    put_keys(env, NULL, 0, 500, 100, 'c');
    mdb_env_close(env);
    PATHF(file, "%s/data.mdb", dir);

    mdbcore_snapshot in;
    uint8_t *img = load_image(file, &in);
    mdbcore_freelist fl;
    CHECK(mdbcore_freelist_snapshot(&in, &fl));
    EXPECT(fl.nrecords > 0);
    EXPECT_EQ(fl.bad_pgno, P_INVALID);
    EXPECT_EQ(fl.bad_msg[0], 0);
    mdbcore_freelist_free(&fl);

    pgno_t root = in.dbs[FREE_DBI].root;
    REQUIRE(root != P_INVALID);
    page_header *pg = (page_header *)(img + (size_t)root * in.psize);
    REQUIRE(pg->flags & P_LEAF); /* a small free DB: the root is its only leaf */

    /* the first record's count past its room */
    node_header *node = (node_header *)((uint8_t *)pg + pg->slots[0]);
    REQUIRE(node->ksize == sizeof(txnid_t) && !(node->flags & F_BIGDATA));
    uint8_t *data = node->key + node->ksize;
    pgno_t saved, huge = 1u << 20;
    memcpy(&saved, data, sizeof saved);
    memcpy(data, &huge, sizeof huge);
    EXPECT_RC(mdbcore_freelist_snapshot(&in, &fl), MDB_CORRUPTED);
    EXPECT_EQ(fl.bad_pgno, root);
    EXPECT_MSG(strstr(fl.bad_msg, "count") != NULL, "message: %s", fl.bad_msg);
    EXPECT_EQ(fl.nrecords, 0);
    EXPECT(fl.records == NULL);
    mdbcore_freelist_free(&fl);
    memcpy(data, &saved, sizeof saved);

    /* a page header whose lower bound runs past the page */
    uint16_t lower = pg->u.bounds.lower;
    pg->u.bounds.lower = (uint16_t)(in.psize + 2);
    EXPECT_RC(mdbcore_freelist_snapshot(&in, &fl), MDB_CORRUPTED);
    EXPECT_EQ(fl.bad_pgno, root);
    EXPECT(fl.bad_msg[0] != 0);
    mdbcore_freelist_free(&fl);
    pg->u.bounds.lower = lower;

    /* a root past the end of the snapshot */
    mdbcore_snapshot bad = in;
    bad.dbs[FREE_DBI].root = in.next_pgno + 5;
    EXPECT_RC(mdbcore_freelist_snapshot(&bad, &fl), MDB_CORRUPTED);
    mdbcore_freelist_free(&fl);

    /* restored: clean again */
    EXPECT_OK(mdbcore_freelist_snapshot(&in, &fl));
    mdbcore_freelist_free(&fl);
    free(img);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        snprintf(base, sizeof base, "%s", argv[1]);
    else
        snprintf(base, sizeof base, "%s/freelist.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                 (int)getpid());
    mkdir(base, 0755);
    TEST_RUN(t_matches_cursor);
    TEST_RUN(t_damaged_image);
    TEST_DONE();
}
