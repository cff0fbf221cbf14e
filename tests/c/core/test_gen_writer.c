/*
 * test_gen_writer.c -- writer half of the two-process test (run_core_tests.sh): every txn
 * rewrites keys g000..g199 with the same generation number (plus filler of varying size,
 * some on overflow pages), so a reader in another process -- real LMDB via py-lmdb --
 * must see one generation across all keys of a snapshot.
 *   test_gen_writer DIR txns
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
    int txns = argc > 2 ? atoi(argv[2]) : 1000;
    mkdir(dir, 0755);
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 512u << 20));
    CHECK(mdb_env_open(env, dir, 0, 0644));
    static char vb[9000];
    for (int g = 1; g <= txns; g++) {
        MDB_txn *txn;
        MDB_dbi dbi;
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
        for (int i = 0; i < 200; i++) {
            char kb[16];
            snprintf(kb, sizeof(kb), "g%03d", i);
            size_t len = 8 + (size_t)((g * 31 + i * 17) % ((i % 10 == 0) ? 8900 : 300));
            memset(vb, 'a' + g % 26, len);
            char gb[16];
            snprintf(gb, sizeof(gb), "%08d", g);
            memcpy(vb, gb, 8);
            MDB_val k = {strlen(kb), kb}, v = {len, vb};
            CHECK(mdb_put(txn, dbi, &k, &v, 0));
        }
        CHECK(mdb_txn_commit(txn));
    }
    mdb_env_close(env);
    printf("writer: %d txns committed\n", txns);
    return 0;
}
