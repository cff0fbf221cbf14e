/*
 * follow_map.c -- what following a grown map costs a process that never sees one grow
 * (docs/beyond.md, "Readers follow a grown map"): written only against lmdb.h, so the
 * same program runs on any liblmdb.so (LD_LIBRARY_PATH picks the library).
 *
 *   follow_map DIR ROUNDS
 *
 * DIR gets an environment of 100,000 records (16-byte keys, 100-byte values).  Each round
 * prints three figures, in microseconds:
 *   open   mdb_env_open + mdb_env_close of DIR, read-only (the reservation is made here)
 *   txn1   one read txn (MDB_NOTLS) with one random mdb_get, one thread
 *   txn2   the same in each of two threads at once (wall time per txn per thread)
 * and two in milliseconds, of the OS alone (a 512 MiB file DIR/refault), for the choice
 * between the two ways to follow a map: a 256 MiB map whose pages were all read grows to
 * 512 MiB, then its first 256 MiB are read again:
 *   inplace  the growth mapped over a reservation after the map (page tables kept)
 *   remap    munmap + mmap of the whole (what remapping when no txn is live costs)
 * Any LMDB error exits 2.  Built against any library, chosen at run time:
 *
 *   cc -O2 bench/follow_map.c -Ibuild/include -Lbuild/compat -llmdb -pthread -o follow_map
 *   LD_LIBRARY_PATH=build/compat ./follow_map /dev/shm/fm 1
 *
 * one round per run, alternating the libraries compared (docs/beyond.md's table).
 */
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BENCH_NAME "follow_map"
#define BENCH_EXIT 2
#include "bench.h"

#define RECORDS 100000
#define OPENS 2000
#define TXNS 200000

static MDB_env *env;
static MDB_dbi dbi;

static void make_key(uint8_t *k, uint64_t i)
{
    memset(k, 0, 16);
    for (int b = 15; b >= 8; b--, i >>= 8)
        k[b] = (uint8_t)i;
}

static void *txns(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    uint8_t kb[16];
    for (int i = 0; i < TXNS; i++) {
        MDB_txn *txn;
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        make_key(kb, splitmix(&seed) % RECORDS);
        MDB_val k = {16, kb}, v;
        CHECK(mdb_get(txn, dbi, &k, &v));
        mdb_txn_abort(txn);
    }
    return NULL;
}

static volatile char sink;

static void touch(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 4096)
        sink ^= p[i];
}

/* Milliseconds to grow a fully read 256 MiB map to 512 MiB and read the first half again:
 * in place over a reservation (*inplace), or by unmapping and mapping the whole (*remap). */
static void refault(const char *dir, double *inplace, double *remap)
{
    const size_t half = (size_t)256 << 20, span = (size_t)64 << 30;
    char path[4200];
    snprintf(path, sizeof path, "%s/refault", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)(2 * half)) != 0)
        die("refault file", 0);
    char *res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED || mmap(res, half, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
        die("mmap", 0);
    touch(res, half);
    double t0 = now();
    if (mmap(res + half, half, PROT_READ, MAP_SHARED | MAP_FIXED, fd, (off_t)half) == MAP_FAILED)
        die("mmap", 0);
    touch(res, half);
    *inplace = (now() - t0) * 1e3;
    munmap(res, span);
    char *p = mmap(NULL, half, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        die("mmap", 0);
    touch(p, half);
    t0 = now();
    munmap(p, half);
    if ((p = mmap(NULL, 2 * half, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
        die("mmap", 0);
    touch(p, half);
    *remap = (now() - t0) * 1e3;
    munmap(p, 2 * half);
    close(fd);
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        die("usage: follow_map DIR ROUNDS", 0);
    const char *dir = argv[1];
    int rounds = atoi(argv[2]);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 64 << 20));
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    uint8_t kb[16], vb[100] = {0};
    for (uint64_t i = 0; i < RECORDS; i++) {
        make_key(kb, i);
        MDB_val k = {16, kb}, v = {100, vb};
        CHECK(mdb_put(txn, dbi, &k, &v, MDB_APPEND));
    }
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (int i = 0; i < OPENS; i++) {
            CHECK(mdb_env_create(&env));
            CHECK(mdb_env_open(env, dir, MDB_RDONLY, 0644));
            mdb_env_close(env);
        }
        double open_us = (now() - t0) / OPENS * 1e6;
        CHECK(mdb_env_create(&env));
        CHECK(mdb_env_open(env, dir, MDB_RDONLY | MDB_NOTLS, 0644));
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
        mdb_txn_abort(txn);
        t0 = now();
        txns((void *)(uintptr_t)(r + 1));
        double txn1_us = (now() - t0) / TXNS * 1e6;
        pthread_t th[2];
        t0 = now();
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, txns, (void *)(uintptr_t)(r * 2 + i + 7));
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        double txn2_us = (now() - t0) / TXNS * 1e6;
        mdb_env_close(env);
        double inplace, remap;
        refault(dir, &inplace, &remap);
        printf("open %.2f txn1 %.3f txn2 %.3f inplace %.2f remap %.2f\n", open_us, txn1_us,
               txn2_us, inplace, remap);
        fflush(stdout);
    }
    return 0;
}
