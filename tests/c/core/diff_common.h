/*
 * diff_common.h -- what the differential programs (diff_*.c) share: the seeded generator
 * whose stream both builds (real LMDB and ours) must follow identically, its seed and
 * length from the command line, and the digest printed in place of a value.  Included
 * after <lmdb.h>; each program gets its own copy.
 */
#ifndef DIFF_COMMON_H
#define DIFF_COMMON_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static unsigned long long rng;

/* The next number of the seeded stream (seed: assign rng). */
static inline unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

/* FNV-1a of the value's bytes. */
static inline unsigned digest(const MDB_val *v)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < v->mv_size; i++)
        h = (h ^ ((unsigned char *)v->mv_data)[i]) * 16777619u;
    return h;
}

/* The environment the writing programs work in, DIR made if need be (room for four named
 * DBs, a 1 GiB map, no syncs), with the n named DBs created (MDB_CREATE | flags[i]) in
 * one committed txn, their handles in dbi.  NULL if it does not open. */
static inline MDB_env *open_env(const char *dir, int n, const char *const *names,
                                const unsigned *flags, MDB_dbi *dbi)
{
    MDB_env *env;
    MDB_txn *txn;
    mkdir(dir, 0755);
    mdb_env_create(&env);
    mdb_env_set_maxdbs(env, 4);
    mdb_env_set_mapsize(env, 1u << 30);
    if (mdb_env_open(env, dir, MDB_NOSYNC, 0644))
        return NULL;
    mdb_txn_begin(env, NULL, 0, &txn);
    for (int i = 0; i < n; i++)
        mdb_dbi_open(txn, names[i], MDB_CREATE | flags[i], &dbi[i]);
    mdb_txn_commit(txn);
    return env;
}

/* Seeds the stream from argv[2] (default 1); returns argv[3], the number of operations
 * (default 20000). */
static inline long seed_and_ops(int argc, char **argv)
{
    rng = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
    return argc > 3 ? atol(argv[3]) : 20000;
}

/* The end of a result line: the value's size and digest, when there is a value. */
static inline void show_value(const MDB_val *v)
{
    if (v)
        printf(" v=%zu/%08x", v->mv_size, digest(v));
    printf("\n");
}

/* The last lines of the output: each of the n databases' entry count. */
static inline void show_entries(MDB_env *env, const MDB_dbi *dbi, int n)
{
    MDB_txn *txn;
    MDB_stat st;
    mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    for (int d = 0; d < n; d++) {
        mdb_stat(txn, dbi[d], &st);
        printf("db%d entries %zu\n", d, st.ms_entries);
    }
    mdb_txn_abort(txn);
}

#endif
