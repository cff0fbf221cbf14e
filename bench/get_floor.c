/*
 * get_floor.c -- what a random get costs against the memory accesses no get can avoid
 * (issue 11, readrandom), written only against lmdb.h so the same source links to
 * Debian's liblmdb and to our build/compat/liblmdb.so.
 *
 *   get_floor DIR N [ROUNDS]
 *
 * Loads N records (16-byte big-endian keys, 100-byte values) in one txn with MDB_APPEND,
 * notes where each value lies in the map, then in one read txn and a shuffled key order
 * (the same every run) times, ROUNDS times (3 by default):
 *
 *   get           mdb_get of each key (the catalogue's readrandom without its checks)
 *   value line    one read of each value's first 8 bytes, each read waiting for the one
 *                 before: a random cache line of the map, with its TLB miss
 *   header+value  the leaf's header, then the value: two such waits in one page, the
 *                 least any search that starts at the page header must wait
 *
 * The map is warm (every page was read once before the first round), so no round takes
 * page faults.  The last two loops do not depend on the engine: they say how much of a
 * get is memory latency that no engine of this file format avoids.
 *
 *   cc -O2 bench/get_floor.c -Ibuild/include -Lbuild/compat -llmdb \
 *      -Wl,-rpath,$PWD/build/compat -o get_floor-mdb
 *   cc -O2 bench/get_floor.c -llmdb -o get_floor-lmdb
 *   ./get_floor-mdb /dev/shm/d 1000000     (DIR an empty directory on tmpfs)
 *
 * Any LMDB error exits 2.
 */
#include <errno.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_SIZE 16
#define VAL_SIZE 100

#define BENCH_NAME "get_floor"
#define BENCH_EXIT 2
#include "bench.h"

static void key_of(size_t i, uint8_t *k)
{
    memset(k, 0, KEY_SIZE);
    for (int b = 0; b < 8; b++)
        k[KEY_SIZE - 1 - b] = (uint8_t)(i >> (8 * b));
}

/* A zero the compiler cannot see: added to each address, it makes every read wait for
 * the one before without changing where it reads. */
static volatile uint64_t zero_source;

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: get_floor DIR N [ROUNDS]\n");
        return 2;
    }
    size_t n = strtoull(argv[2], NULL, 10);
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    if (n < 2 || rounds < 1) {
        fprintf(stderr, "get_floor: N must be at least 2 and ROUNDS at least 1\n");
        return 2;
    }
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)4 << 30));
    CHECK(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
    unsigned psize;
    {
        MDB_stat st;
        CHECK(mdb_env_stat(env, &st));
        psize = st.ms_psize;
    }
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    uint8_t k[KEY_SIZE], v[VAL_SIZE];
    memset(v, 7, sizeof v);
    for (size_t i = 0; i < n; i++) {
        key_of(i, k);
        MDB_val kv = {KEY_SIZE, k}, vv = {VAL_SIZE, v};
        CHECK(mdb_put(txn, dbi, &kv, &vv, MDB_APPEND));
    }
    CHECK(mdb_txn_commit(txn));

    size_t *order = malloc(n * sizeof *order);
    const uint8_t **where = malloc(n * sizeof *where);
    if (!order || !where)
        die("malloc", ENOMEM);
    uint64_t seed = 42;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(splitmix(&seed) % (i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    for (size_t i = 0; i < n; i++) {
        key_of(order[i], k);
        MDB_val kv = {KEY_SIZE, k}, vv;
        CHECK(mdb_get(txn, dbi, &kv, &vv));
        where[i] = vv.mv_data;
    }

    const uint64_t zero = zero_source;
    uint64_t sink = 0;
    for (int round = 1; round <= rounds; round++) {
        double t0 = now();
        for (size_t i = 0; i < n; i++) {
            key_of(order[i], k);
            MDB_val kv = {KEY_SIZE, k}, vv;
            CHECK(mdb_get(txn, dbi, &kv, &vv));
            sink += ((const uint8_t *)vv.mv_data)[0];
        }
        double t1 = now();
        uint64_t chain = 0;
        for (size_t i = 0; i < n; i++)
            chain += *(volatile const uint64_t *)(where[i] + (chain & zero));
        double t2 = now();
        for (size_t i = 0; i < n; i++) {
            uintptr_t page = (uintptr_t)where[i] & ~(uintptr_t)(psize - 1);
            chain += *(volatile const uint16_t *)(page + 12 + (chain & zero));
            chain += *(volatile const uint64_t *)(where[i] + (chain & zero));
        }
        double t3 = now();
        sink += chain;
        printf("{\"engine\": \"%s\", \"round\": %d, \"records\": %zu, \"get_ns\": %.0f, "
               "\"value_line_ns\": %.0f, \"header_value_ns\": %.0f}\n",
               mdb_version(NULL, NULL, NULL), round, n, (t1 - t0) / (double)n * 1e9,
               (t2 - t1) / (double)n * 1e9, (t3 - t2) / (double)n * 1e9);
    }
    mdb_txn_abort(txn);
    mdb_env_close(env);
    free(order);
    free(where);
    return (int)(sink & 0); /* the sums keep the reads; their value is not the point */
}
