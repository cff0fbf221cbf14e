/*
 * txn_cost.c -- the fixed cost of a small write txn (issue 11), written only against lmdb.h
 * so the same source links to Debian's liblmdb and to our build/compat/liblmdb.so.
 *
 *   txn_cost DIR N M [fill]
 *
 * Without "fill": N records (16-byte big-endian keys, 100-byte values) are loaded in one
 * txn with MDB_APPEND, then M txns each overwrite one random record (the catalogue's
 * overwrite/b1).  With "fill": the database starts empty and each of the M txns puts one
 * new random key (fillrandom/b1).  MDB_NOSYNC; put DIR on tmpfs.  2,000 txns of the same
 * kind run first, so the free list is in its steady state when the measured ones start.
 * All txns run in phase(), so callgrind can count exactly them:
 *
 *   cc -O2 -g bench/txn_cost.c -Ibuild/include -Lbuild/compat -llmdb \
 *      -Wl,-rpath,$PWD/build/compat -o txn_cost-mdb
 *   cc -O2 -g bench/txn_cost.c -llmdb -o txn_cost-lmdb
 *   valgrind --tool=callgrind --toggle-collect=phase ./txn_cost-mdb /dev/shm/d 100000 10000
 *
 * and the total divided by M + 2,000 is the instructions per txn.  With TXN_COST_TIME set
 * in the environment it prints the measured txns' wall, user and system microseconds per
 * txn.  Any LMDB error exits 2.
 */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_NAME "txn_cost"
#define BENCH_EXIT 2
#include "bench.h"

#define KEY_SIZE 16
#define VALUE_SIZE 100
#define WARMUP 2000

static MDB_env *env;
static MDB_dbi dbi;

static void make_key(uint8_t *k, uint64_t i)
{
    memset(k, 0, KEY_SIZE);
    for (int b = KEY_SIZE - 1; b >= KEY_SIZE - 8; b--, i >>= 8)
        k[b] = (uint8_t)i;
}

/* m txns of one put each: an existing record of n, or (fill) a new key from a wider range */
__attribute__((noinline)) void phase(size_t n, size_t m, int fill, uint64_t seed)
{
    uint8_t k[KEY_SIZE], v[VALUE_SIZE];
    for (size_t t = 0; t < m; t++) {
        uint64_t r = splitmix(&seed) % (fill ? (uint64_t)n * 100 : (uint64_t)n);
        make_key(k, r);
        memset(v, 'a' + (int)(t % 26), sizeof v);
        MDB_val key = {KEY_SIZE, k}, val = {VALUE_SIZE, v};
        MDB_txn *txn;
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        CHECK(mdb_put(txn, dbi, &key, &val, 0));
        CHECK(mdb_txn_commit(txn));
    }
}

static double usec(struct timeval tv)
{
    return tv.tv_sec * 1e6 + tv.tv_usec;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s DIR N M [fill]\n", argv[0]);
        return 2;
    }
    size_t n = strtoull(argv[2], NULL, 10), m = strtoull(argv[3], NULL, 10);
    int fill = argc > 4 && !strcmp(argv[4], "fill");
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)1 << 32));
    CHECK(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    uint8_t k[KEY_SIZE], v[VALUE_SIZE];
    memset(v, 'x', sizeof v);
    for (size_t i = 0; !fill && i < n; i++) {
        make_key(k, i);
        MDB_val key = {KEY_SIZE, k}, val = {VALUE_SIZE, v};
        CHECK(mdb_put(txn, dbi, &key, &val, MDB_APPEND));
    }
    CHECK(mdb_txn_commit(txn));
    phase(n, WARMUP, fill, 1);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = now();
    phase(n, m, fill, 42);
    double t1 = now();
    getrusage(RUSAGE_SELF, &r1);
    if (getenv("TXN_COST_TIME") && m)
        printf("wall %.3f user %.3f sys %.3f us/txn\n", (t1 - t0) * 1e6 / m,
               (usec(r1.ru_utime) - usec(r0.ru_utime)) / m,
               (usec(r1.ru_stime) - usec(r0.ru_stime)) / m);
    mdb_env_close(env);
    return 0;
}
