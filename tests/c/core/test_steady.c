/*
 * test_steady.c -- a steady update load must stop growing the file: the free list has to
 * be reused.  Loads N keys, then runs many small update txns and checks that last_pgno
 * after the warm-up stays within a small margin until the end.
 *   test_steady DIR [txns] [flags: 0 | nosync]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbtest.h"

int main(int argc, char **argv)
{
    const char *dir = argv[1];
    int txns = argc > 2 ? atoi(argv[2]) : 3000;
    unsigned eflags = (argc > 3 && !strcmp(argv[3], "nosync")) ? MDB_NOSYNC : 0;
    mkdir(dir, 0755);
    MDB_env *env = mdbtest_env(256u << 20, 0);
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_open(env, dir, eflags, 0644));
    char kb[32], vb[3000];
    memset(vb, 'v', sizeof(vb));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (int i = 0; i < 5000; i++) {
        snprintf(kb, sizeof(kb), "key%08d", i);
        MDB_val k = {strlen(kb), kb}, v = {(size_t)(i * 7919u % 2500u), vb};
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
    unsigned long long seed = 99;
    size_t warm = 0, peak = 0;
    for (int t = 0; t < txns; t++) {
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        for (int j = 0; j < 20; j++) {
            seed = seed * 6364136223846793005ULL + 1;
            int i = (int)((seed >> 33) % 5000);
            snprintf(kb, sizeof(kb), "key%08d", i);
            /* each key keeps its size, so the tree keeps its shape and only COW churns pages */
            MDB_val k = {strlen(kb), kb}, v = {(size_t)(i * 7919u % 2500u), vb};
            CHECK(mdb_put(txn, dbi, &k, &v, 0));
        }
        CHECK(mdb_txn_commit(txn));
        MDB_envinfo info;
        CHECK(mdb_env_info(env, &info));
        if (t == txns / 4)
            warm = info.me_last_pgno;
        if (info.me_last_pgno > peak)
            peak = info.me_last_pgno;
    }
    mdb_env_close(env);
    printf("steady: last_pgno after warm-up %zu, peak %zu\n", warm, peak);
    if (peak > warm + warm / 5 + 50) {
        fprintf(stderr, "file keeps growing under a steady load\n");
        return 1;
    }
    return 0;
}
