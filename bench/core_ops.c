/*
 * core_ops.c -- one process, one workload, timed per operation, written only against
 * lmdb.h so the same source is built twice: once linked to Debian's liblmdb, once to
 * our build/compat/liblmdb.so.  bench/run_core_ops.py drives both in interleaved rounds.
 *
 *   core_ops DIR N [SEED]
 *
 * Workload (as bench/py_bench.py, without Python in the way): N keys of 16 bytes
 * (big-endian counters) with 100-byte values; put sequential in one txn, get random
 * (one read txn), cursor iterate, then put random into a fresh environment.  Prints one
 * line per operation: "<name> <ops per second>".  Exits non-zero on any LMDB error,
 * and when a read does not find what was written (so the figures are of real work).
 */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define VALUE_SIZE 100
#define KEY_SIZE 16

#define BENCH_NAME "core_ops"
#define BENCH_EXIT 2
#include "bench.h"

static void make_key(uint8_t *k, uint64_t i)
{
    memset(k, 0, 8);
    for (int b = 0; b < 8; b++)
        k[15 - b] = (uint8_t)(i >> (8 * b));
}

/* xorshift64*: a fixed, portable shuffle so both libraries see the same order */
static uint64_t rng_state;
static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static MDB_env *open_env(const char *dir)
{
    MDB_env *env;
    mkdir(dir, 0755);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)1 << 31));
    CHECK(mdb_env_open(env, dir, 0, 0644));
    return env;
}

/* The timed phases are separate, never-inlined functions so that callgrind can count the
 * instructions of each one alone (run_core_ops.py --callgrind: --toggle-collect=phase_*). */
#define PHASE __attribute__((noipa)) /* no inlining, cloning or merging */

static double phase_put(MDB_env *env, const uint64_t *order, size_t n)
{
    uint8_t kbuf[KEY_SIZE], vbuf[VALUE_SIZE];
    memset(vbuf, 'v', sizeof vbuf);
    MDB_txn *txn;
    MDB_dbi dbi;
    double t0 = now();
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (size_t i = 0; i < n; i++) {
        make_key(kbuf, order[i]);
        MDB_val k = {KEY_SIZE, kbuf}, v = {VALUE_SIZE, vbuf};
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
    return n / (now() - t0);
}

/* Phases that put: one write txn, commit included.  Two names, so callgrind can tell the
 * sequential load from the random one. */
static PHASE double phase_put_sequential(MDB_env *env, const uint64_t *order, size_t n)
{
    return phase_put(env, order, n);
}

static PHASE double phase_put_random(MDB_env *env, const uint64_t *order, size_t n)
{
    return phase_put(env, order, n);
}

/* Random gets in one read txn; *bytes sums a byte of each value so none is skipped. */
static PHASE double phase_get_random(MDB_env *env, const uint64_t *order, size_t n,
                                     size_t *found, size_t *bytes)
{
    uint8_t kbuf[KEY_SIZE];
    MDB_txn *txn;
    MDB_dbi dbi;
    double t0 = now();
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (size_t i = 0; i < n; i++) {
        make_key(kbuf, order[i]);
        MDB_val k = {KEY_SIZE, kbuf}, v;
        int rc = mdb_get(txn, dbi, &k, &v);
        if (rc)
            die("mdb_get", rc);
        (*found)++;
        *bytes += ((const uint8_t *)v.mv_data)[v.mv_size - 1];
    }
    mdb_txn_abort(txn);
    return n / (now() - t0);
}

static PHASE double phase_cursor_iterate(MDB_env *env, size_t *seen, size_t *bytes)
{
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    double t0 = now();
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    CHECK(mdb_cursor_open(txn, dbi, &cur));
    MDB_val k, v;
    int rc;
    while ((rc = mdb_cursor_get(cur, &k, &v, *seen ? MDB_NEXT : MDB_FIRST)) == 0) {
        (*seen)++;
        *bytes += ((const uint8_t *)v.mv_data)[0];
    }
    if (rc != MDB_NOTFOUND)
        die("mdb_cursor_get", rc);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return *seen / (now() - t0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: core_ops DIR N [SEED]\n");
        return 2;
    }
    const char *dir = argv[1];
    size_t n = strtoul(argv[2], NULL, 10);
    rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) | 1 : 42;
    uint64_t *seq = malloc(n * sizeof *seq), *shuffled = malloc(n * sizeof *shuffled);
    if (!seq || !shuffled || n == 0)
        return 2;
    for (size_t i = 0; i < n; i++)
        seq[i] = shuffled[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = rng_next() % (i + 1);
        uint64_t t = shuffled[i];
        shuffled[i] = shuffled[j];
        shuffled[j] = t;
    }
    char path[4096];
    size_t found = 0, seen = 0, bytes = 0;
    snprintf(path, sizeof path, "%s/seq", dir);
    MDB_env *env = open_env(path);
    printf("put_sequential %.0f\n", phase_put_sequential(env, seq, n));
    printf("get_random %.0f\n", phase_get_random(env, shuffled, n, &found, &bytes));
    printf("cursor_iterate %.0f\n", phase_cursor_iterate(env, &seen, &bytes));
    mdb_env_close(env);

    snprintf(path, sizeof path, "%s/rand", dir);
    env = open_env(path);
    printf("put_random %.0f\n", phase_put_random(env, shuffled, n));
    mdb_env_close(env);
    if (found != n || seen != n || bytes != 2 * n * 'v') {
        fprintf(stderr, "core_ops: read back %zu/%zu gets, %zu/%zu cursor records\n", found, n,
                seen, n);
        return 1;
    }
    free(seq);
    free(shuffled);
    return 0;
}
