/*
 * test_ioerr.c -- I/O failures through the fault seam (os_fault.c): a failed page write or
 * data sync fails the commit, leaves the last committed state intact and the env usable; a
 * failed meta write makes the env fatal (MDB_PANIC); a custom comparator orders keys.
 *   test_ioerr DIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

static int count(MDB_env *env)
{
    MDB_txn *t;
    MDB_stat st;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
    CHECK(mdb_stat(t, 1, &st));
    mdb_txn_abort(t);
    return (int)st.ms_entries;
}

static int fill(MDB_env *env, int from, int n)
{
    MDB_txn *t;
    char kb[16], vb[3000];
    memset(vb, 'q', sizeof(vb));
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    for (int i = from; i < from + n; i++) {
        snprintf(kb, sizeof(kb), "k%06d", i);
        MDB_val k = {strlen(kb), kb}, v = {(size_t)(i % 3000), vb};
        CHECK(mdb_put(t, 1, &k, &v, 0));
    }
    return mdb_txn_commit(t);
}

static int rev_cmp(const MDB_val *a, const MDB_val *b)
{
    size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
    int c = memcmp(b->mv_data, a->mv_data, n);
    return c ? c : (a->mv_size > b->mv_size) - (a->mv_size < b->mv_size);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    mkdir(argv[1], 0755);
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 64u << 20));
    CHECK(mdb_env_set_maxdbs(env, 2));
    CHECK(mdb_env_open(env, argv[1], 0, 0644));
    CHECK(fill(env, 0, 500));

    /* a failed page write: commit fails, nothing of it is visible, the env still works */
    CHECK(mdbcore_fault_fail_nth(MDBCORE_FAULT_WRITE, 1, EIO));
    CHECK_RC(fill(env, 500, 500), EIO);
    mdbcore_fault_reset();
    if (count(env) != 500)
        return fprintf(stderr, "failed commit left changes\n"), 1;
    /* a failed data sync */
    CHECK(mdbcore_fault_fail_nth(MDBCORE_FAULT_SYNC, 1, EIO));
    CHECK_RC(fill(env, 500, 500), EIO);
    mdbcore_fault_reset();
    if (count(env) != 500)
        return fprintf(stderr, "failed sync left changes\n"), 1;
    CHECK(fill(env, 500, 500));
    if (count(env) != 1000)
        return fprintf(stderr, "commit after failures\n"), 1;

    /* custom comparator: reverse byte order */
    MDB_txn *t;
    MDB_dbi d;
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, "rev", MDB_CREATE, &d));
    CHECK(mdb_set_compare(t, d, rev_cmp));
    for (int i = 0; i < 300; i++) {
        char kb[16];
        snprintf(kb, sizeof(kb), "%04d", i);
        MDB_val k = {4, kb}, v = {4, kb};
        CHECK(mdb_put(t, d, &k, &v, 0));
    }
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_cursor_open(t, d, &c));
    CHECK(mdb_cursor_get(c, &k, &v, MDB_FIRST));
    if (memcmp(k.mv_data, "0299", 4))
        return fprintf(stderr, "custom compare not used\n"), 1;
    MDB_val a = {4, "0001"}, b = {4, "0002"};
    if (mdb_cmp(t, d, &a, &b) <= 0)
        return fprintf(stderr, "mdb_cmp\n"), 1;
    CHECK(mdb_txn_commit(t));

    /* the meta write fails: the env is fatal from then on.  A commit's pages go out with
     * pwritev or into the write map (both counted as pwritev), its meta page with the one
     * pwrite: a commit makes exactly one, checked first */
    mdbcore_fault_install();
    unsigned long pw = mdbcore_fault_calls(MDBCORE_FAULT_PWRITE);
    unsigned long pages = mdbcore_fault_calls(MDBCORE_FAULT_PWRITEV);
    CHECK(fill(env, 2000, 10));
    if (mdbcore_fault_calls(MDBCORE_FAULT_PWRITE) - pw != 1 ||
        mdbcore_fault_calls(MDBCORE_FAULT_PWRITEV) - pages < 1)
        return fprintf(stderr, "a commit made %lu pwrites and %lu page writes\n",
                       mdbcore_fault_calls(MDBCORE_FAULT_PWRITE) - pw,
                       mdbcore_fault_calls(MDBCORE_FAULT_PWRITEV) - pages), 1;
    CHECK(mdbcore_fault_fail_nth(MDBCORE_FAULT_PWRITE, 1, EIO));
    int rc = fill(env, 5000, 10);
    mdbcore_fault_reset();
    if (rc == 0)
        return fprintf(stderr, "meta write failure not reported\n"), 1;
    CHECK_RC(mdb_txn_begin(env, NULL, 0, &t), MDB_PANIC);
    mdb_env_close(env);
    /* reopening recovers the last good state */
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_open(env, argv[1], 0, 0644));
    if (count(env) != 1011) /* 1010 keys + the "rev" record */
        return fprintf(stderr, "after reopen %d entries\n", count(env)), 1;
    mdb_env_close(env);
    printf("ioerr: write/sync/meta failures handled\n");
    return 0;
}
