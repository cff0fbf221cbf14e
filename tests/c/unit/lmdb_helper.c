/*
 * lmdb_helper.c -- a tiny program linked with the REAL LMDB (-llmdb), used by the lock-file
 * tests to put a genuine LMDB process on the other side of a shared environment.
 *
 *   lmdb_helper put DIR N        write N keys in one txn, commit, exit
 *   lmdb_helper reader DIR       open a read txn, print "ready <txnid>", wait for stdin EOF
 *   lmdb_helper writer DIR       begin a write txn, print "ready", wait for stdin EOF
 *   lmdb_helper list DIR         print mdb_reader_list's output
 *   lmdb_helper check DIR        print "dead <n>" from mdb_reader_check
 *   lmdb_helper custom DIR       named DBs kept in non-default orders: "desc" (keys sorted by a
 *                                descending comparator) and "ddesc" (DUPSORT, dups descending)
 * Exit status 0 on success; errors go to stderr with mdb_strerror.
 */
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* exit status 2: this helper failed (not the test that runs it) */
#define MDBTEST_FATAL_EXIT 2
#include "mdbtest.h"

#include "cmp_desc.h"

static int print_msg(const char *msg, void *ctx)
{
    (void)ctx;
    fputs(msg, stdout);
    return 0;
}

static void wait_eof(void)
{
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: lmdb_helper put|reader|writer|list|check DIR [N]\n");
        return 2;
    }
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 16 << 20));
    CHECK(mdb_env_set_maxdbs(env, 4));
    CHECK(mdb_env_open(env, argv[2], 0, 0644));
    const char *cmd = argv[1];
    if (!strcmp(cmd, "put")) {
        int n = argc > 3 ? atoi(argv[3]) : 10;
        MDB_txn *txn;
        MDB_dbi dbi;
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
        for (int i = 0; i < n; i++) {
            char k[32], v[32];
            snprintf(k, sizeof k, "key%06d", i);
            snprintf(v, sizeof v, "val%d", i);
            MDB_val key = {strlen(k), k}, val = {strlen(v), v};
            CHECK(mdb_put(txn, dbi, &key, &val, 0));
        }
        CHECK(mdb_txn_commit(txn));
    } else if (!strcmp(cmd, "reader") || !strcmp(cmd, "writer")) {
        /* a txn held open (its reader slot or the writer lock) until stdin ends */
        MDB_txn *txn;
        CHECK(mdb_txn_begin(env, NULL, !strcmp(cmd, "reader") ? MDB_RDONLY : 0, &txn));
        printf("ready %zu\n", mdb_txn_id(txn));
        fflush(stdout);
        wait_eof();
        mdb_txn_abort(txn);
    } else if (!strcmp(cmd, "custom")) {
        MDB_txn *txn;
        MDB_dbi d1, d2;
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        CHECK(mdb_dbi_open(txn, "desc", MDB_CREATE, &d1));
        CHECK(mdb_set_compare(txn, d1, cmp_desc));
        CHECK(mdb_dbi_open(txn, "ddesc", MDB_CREATE | MDB_DUPSORT, &d2));
        CHECK(mdb_set_dupsort(txn, d2, cmp_desc));
        for (int i = 0; i < 2000; i++) {
            char k[32], v[32];
            snprintf(k, sizeof k, "key%06d", (i * 7919) % 2000);
            snprintf(v, sizeof v, "val%d", i);
            MDB_val key = {strlen(k), k}, val = {strlen(v), v};
            CHECK(mdb_put(txn, d1, &key, &val, 0));
            snprintf(k, sizeof k, "g%02d", i % 40);
            MDB_val key2 = {strlen(k), k};
            CHECK(mdb_put(txn, d2, &key2, &val, 0));
        }
        CHECK(mdb_txn_commit(txn));
    } else if (!strcmp(cmd, "list")) {
        CHECK(mdb_reader_list(env, print_msg, NULL) < 0);
    } else if (!strcmp(cmd, "check")) {
        int dead = -1;
        CHECK(mdb_reader_check(env, &dead));
        printf("dead %d\n", dead);
    } else {
        fprintf(stderr, "lmdb_helper: unknown command %s\n", cmd);
        return 2;
    }
    mdb_env_close(env);
    return 0;
}
