/*
 * many_dbs.c -- cost of a read transaction as the number of open named databases grows.
 *
 *   many_dbs DIR NDBS BEGIN_ITERS RENEW_ITERS
 *
 * Creates NDBS named databases in a fresh environment in DIR (maxreaders 1, maxdbs NDBS)
 * and keeps every handle open, then times two loops on the first database:
 *   begin:  BEGIN_ITERS x (mdb_txn_begin(RDONLY), mdb_cursor_open, mdb_cursor_close,
 *           mdb_txn_abort)
 *   renew:  RENEW_ITERS x (mdb_txn_renew, mdb_cursor_open, mdb_cursor_close,
 *           mdb_txn_reset) on one read txn begun (and reset) before the loop
 * It also times opening: each create in the setup txn is timed alone, and create_first /
 * create_last are the medians of the first 10 and the last 10 (the 10th database against
 * the NDBS-th); reopen_first / reopen_last are the mean time of mdb_dbi_open of the 10th
 * and of the last name again, by name, in a read txn (REOPEN_ITERS times each).
 * Prints one line:  ndbs=N setup=S begin_iters=I begin=S renew_iters=I renew=S
 * create_first=S create_last=S reopen_first=S reopen_last=S version=V
 * (seconds, CLOCK_MONOTONIC).  Built once per library by bench/run_many_dbs.py, which
 * interleaves the libraries and takes medians.  A failing call exits 1 with its name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lmdb.h"

#define REOPEN_ITERS 20000

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median of v[0..n) (sorts a copy) */
static double median(const double *v, unsigned n)
{
    double t[10];
    memcpy(t, v, n * sizeof(double));
    qsort(t, n, sizeof(double), cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

#define BENCH_NAME "many_dbs"
#include "bench.h"

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: many_dbs DIR NDBS BEGIN_ITERS RENEW_ITERS\n");
        return 2;
    }
    const char *dir = argv[1];
    unsigned ndbs = (unsigned)strtoul(argv[2], NULL, 10);
    unsigned long begin_iters = strtoul(argv[3], NULL, 10);
    unsigned long renew_iters = strtoul(argv[4], NULL, 10);
    if (ndbs < 1) {
        fprintf(stderr, "many_dbs: NDBS must be at least 1\n");
        return 2;
    }

    double t0 = now();
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_maxreaders(env, 1));
    CHECK(mdb_env_set_maxdbs(env, ndbs));
    CHECK(mdb_env_set_mapsize(env, (size_t)1 << 30));
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    MDB_dbi *dbi = calloc(ndbs, sizeof *dbi);
    if (!dbi)
        return 1;
    double *create = calloc(ndbs, sizeof *create);
    if (!create)
        return 1;
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (unsigned i = 0; i < ndbs; i++) {
        char name[16];
        snprintf(name, sizeof name, "db%06x", i);
        double c0 = now();
        CHECK(mdb_dbi_open(txn, name, MDB_CREATE, &dbi[i]));
        create[i] = now() - c0;
    }
    CHECK(mdb_txn_commit(txn));
    double setup = now() - t0;
    unsigned win = ndbs < 10 ? ndbs : 10;
    double create_first = median(create, win), create_last = median(create + ndbs - win, win);

    double reopen[2];
    for (int w = 0; w < 2; w++) {
        char name[16];
        MDB_dbi h;
        snprintf(name, sizeof name, "db%06x", w == 0 ? win - 1 : ndbs - 1);
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        double r0 = now();
        for (unsigned k = 0; k < REOPEN_ITERS; k++)
            CHECK(mdb_dbi_open(txn, name, 0, &h));
        reopen[w] = (now() - r0) / REOPEN_ITERS;
        mdb_txn_abort(txn);
    }
    free(create);

    MDB_cursor *cur;
    t0 = now();
    for (unsigned long i = 0; i < begin_iters; i++) {
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        CHECK(mdb_cursor_open(txn, dbi[0], &cur));
        mdb_cursor_close(cur);
        mdb_txn_abort(txn);
    }
    double t_begin = now() - t0;

    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    mdb_txn_reset(txn);
    t0 = now();
    for (unsigned long i = 0; i < renew_iters; i++) {
        CHECK(mdb_txn_renew(txn));
        CHECK(mdb_cursor_open(txn, dbi[0], &cur));
        mdb_cursor_close(cur);
        mdb_txn_reset(txn);
    }
    double t_renew = now() - t0;
    mdb_txn_abort(txn);

    int ma, mi, pa;
    mdb_version(&ma, &mi, &pa);
    printf("ndbs=%u setup=%.4f begin_iters=%lu begin=%.6f renew_iters=%lu renew=%.6f "
           "create_first=%.9f create_last=%.9f reopen_first=%.9f reopen_last=%.9f "
           "version=%d.%d.%d\n",
           ndbs, setup, begin_iters, t_begin, renew_iters, t_renew, create_first, create_last,
           reopen[0], reopen[1], ma, mi, pa);
    mdb_env_close(env);
    free(dbi);
    return 0;
}
