/*
 * key_order.c -- sequential inserts and the byte order of their keys (seed 002's question).
 *
 *   key_order DIR N MODE
 *
 * Inserts the integers 0..N-1, in that order, as 8-byte keys with 100-byte values, 1,000
 * puts per write txn, MDB_NOSYNC, into a fresh environment in DIR.  MODE says how a key
 * is stored and compared:
 *   be       big-endian bytes, memcmp order = numeric order: every put lands at the end
 *   le       little-endian bytes under memcmp: the order of the low byte first, so
 *            successive keys scatter over the tree and pages split in the middle
 *   intkey   native (little-endian) integers in an MDB_INTEGERKEY database
 *   append   big-endian bytes with MDB_APPEND (no search: the page at the end is filled)
 * Prints one line: mode=M n=N seconds=S pages_used=P page_size=B file_bytes=F
 * leaf_pages=L version=V   (CLOCK_MONOTONIC; pages_used = last page + 1).
 * A failing call exits 1 with its name.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lmdb.h"

#define BATCH 1000
#define VALUE_SIZE 100

#define BENCH_NAME "key_order"
#include "bench.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: key_order DIR N be|le|intkey|append\n");
        return 2;
    }
    const char *dir = argv[1], *mode = argv[3];
    unsigned long n = strtoul(argv[2], NULL, 10);
    int be = !strcmp(mode, "be") || !strcmp(mode, "append");
    unsigned dbflags = MDB_CREATE | (!strcmp(mode, "intkey") ? MDB_INTEGERKEY : 0);
    unsigned putflags = !strcmp(mode, "append") ? MDB_APPEND : 0;
    if (!be && strcmp(mode, "le") && strcmp(mode, "intkey")) {
        fprintf(stderr, "key_order: unknown mode %s\n", mode);
        return 2;
    }

    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)64 << 30));
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));

    char value[VALUE_SIZE];
    memset(value, 'v', sizeof value);
    MDB_dbi dbi;
    MDB_txn *txn;
    double t0 = now();
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, dbflags, &dbi));
    for (unsigned long i = 0; i < n; i++) {
        unsigned char keybuf[8];
        uint64_t k = i;
        if (be) {
            for (int b = 0; b < 8; b++)
                keybuf[b] = (unsigned char)(k >> (56 - 8 * b));
        } else {
            memcpy(keybuf, &k, 8); /* x86-64: little-endian */
        }
        MDB_val key = {8, keybuf}, data = {VALUE_SIZE, value};
        CHECK(mdb_put(txn, dbi, &key, &data, putflags));
        if ((i + 1) % BATCH == 0) {
            CHECK(mdb_txn_commit(txn));
            CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        }
    }
    CHECK(mdb_txn_commit(txn));
    double secs = now() - t0;

    MDB_envinfo info;
    MDB_stat st;
    CHECK(mdb_env_info(env, &info));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_stat(txn, dbi, &st));
    mdb_txn_abort(txn);
    mdb_env_close(env);

    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (stat(path, &sb)) {
        perror(path);
        return 1;
    }
    printf("mode=%s n=%lu seconds=%.6f pages_used=%zu page_size=%u file_bytes=%lld "
           "leaf_pages=%zu version=%s\n",
           mode, n, secs, info.me_last_pgno + 1, st.ms_psize, (long long)sb.st_size,
           st.ms_leaf_pages, mdb_version(NULL, NULL, NULL));
    return 0;
}
