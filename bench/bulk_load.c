/*
 * bulk_load.c -- load N sorted records (16-byte keys, 100-byte values) into an empty
 * database in one write txn, either with an MDB_APPEND put loop (any LMDB 0.9 library) or
 * with mdbcore_bulk_load (our core, built with -DWITH_BULK against libmdbcore.a).
 * Prints one line: mode, seconds for the load plus commit, and the database's pages.
 *
 *   bulk_load DIR N append|bulk
 *
 * The environment is MDB_NOSYNC: the figure is the engine's work, not the disk's.
 * bench/bulk_load.py builds it for both libraries and runs interleaved rounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>
#ifdef WITH_BULK
#include "mdbcore.h"
#endif

#define KLEN 16
#define VLEN 100

#define BENCH_NAME "bulk_load"
#include "bench.h"

/* Record i: an 8-byte zero prefix then i big-endian, so byte order is numeric order. */
static void make_key(unsigned char *k, uint64_t i)
{
    memset(k, 0, 8);
    for (int b = 0; b < 8; b++)
        k[8 + b] = (unsigned char)(i >> (56 - 8 * b));
}

static void make_value(unsigned char *v, uint64_t i)
{
    memset(v, 'a' + (int)(i % 26), VLEN);
    memcpy(v, &i, sizeof i);
}

#ifdef WITH_BULK
typedef struct source {
    uint64_t i, n;
    unsigned char k[KLEN], v[VLEN];
} source;

static int next_record(void *ctx, MDB_val *key, MDB_val *data)
{
    source *s = ctx;
    if (s->i == s->n)
        return MDB_NOTFOUND;
    make_key(s->k, s->i);
    make_value(s->v, s->i);
    s->i++;
    key->mv_size = KLEN;
    key->mv_data = s->k;
    data->mv_size = VLEN;
    data->mv_data = s->v;
    return 0;
}
#endif


int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR N append|bulk\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    uint64_t n = strtoull(argv[2], NULL, 10);
    int bulk = strcmp(argv[3], "bulk") == 0;
#ifndef WITH_BULK
    if (bulk) {
        fprintf(stderr, "bulk mode needs our core (built with -DWITH_BULK)\n");
        return 2;
    }
#endif
    char path[4096];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/lock.mdb", dir);
    unlink(path);

    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_stat st;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)(n * 300 + (64u << 20))));
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    double t0 = now();
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    if (bulk) {
#ifdef WITH_BULK
        source s = {0, n, {0}, {0}};
        CHECK(mdbcore_bulk_load(txn, dbi, next_record, &s, 0));
#endif
    } else {
        unsigned char k[KLEN], v[VLEN];
        MDB_val key = {KLEN, k}, val = {VLEN, v};
        for (uint64_t i = 0; i < n; i++) {
            make_key(k, i);
            make_value(v, i);
            CHECK(mdb_put(txn, dbi, &key, &val, MDB_APPEND));
        }
    }
    double t_commit = now();
    CHECK(mdb_txn_commit(txn));
    double secs = now() - t0;
    t_commit = now() - t_commit;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_stat(txn, dbi, &st));
    mdb_txn_abort(txn);
    mdb_env_close(env);
    if (st.ms_entries != n) {
        fprintf(stderr, "%zu entries, want %llu\n", st.ms_entries, (unsigned long long)n);
        return 1;
    }
    printf("%s %.3f s, %zu leaf %zu branch %zu overflow pages, depth %u, commit %.3f s\n",
           argv[3], secs, st.ms_leaf_pages, st.ms_branch_pages, st.ms_overflow_pages,
           st.ms_depth, t_commit);
    return 0;
}
