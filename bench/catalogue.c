/*
 * catalogue.c -- db_bench's workloads as one C program written only against lmdb.h, so the
 * same source is linked once to Debian's liblmdb and once to our build/compat/liblmdb.so.
 * bench/catalogue.py runs both in interleaved rounds and reports median ratios.
 *
 *   catalogue DIR WORKLOAD N BATCH VALSIZE [dupsort] [sync] [notls] [warm] [threads=T]
 *             [seed=S]
 *   catalogue --version          (the library's mdb_version string)
 *
 * One workload per process, so the CPU time, page faults and peak RSS it reports belong to
 * that workload alone.  N records of 16-byte keys (a big-endian counter) and VALSIZE-byte
 * values; BATCH writes per txn (0: all in one).  MDB_NOSYNC unless "sync" is given.  With
 * "dupsort" the database is MDB_DUPSORT, 16 values per key, and record i is the pair
 * (key i/16, value starting with i).  Workloads that read, overwrite or delete first fill
 * the database untimed, in key order with MDB_APPEND in one txn.
 *
 *   fillseq fillseqappend fillrandom overwrite deleterandom readrandom readseq readreverse
 *   seekrandom (N/10 seeks: MDB_SET_RANGE then 10 MDB_NEXT) readwhilewriting (T reader
 *   threads share N random gets while one writer overwrites random records, BATCH a txn)
 *   synccommit (N txns of one random put each; use "sync" on a real disk)
 *   readtxn (N read txns of one random get each; "notls" opens the env MDB_NOTLS)
 *
 * "warm" (readseq, readreverse) scans once untimed before the timed scan: the map is then
 * in the process's page tables, as in a server that has run a while, and the timed scan
 * measures the engine rather than the kernel's page faults (a cold scan of 1M records
 * takes ~2,000 faults, each mapping 16 pages).
 *
 * Output: one JSON object on stdout with the timed phase's operations, seconds, user and
 * system CPU, minor and major page faults, the process's peak RSS, the data file's size and
 * the pages in use (high-water mark less the free list).  Any LMDB error, or a read that
 * does not find what was written, exits 2: the figures are of real work.
 */
#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#define KEY_SIZE 16
#define DUPS_PER_KEY 16

#define BENCH_NAME "catalogue"
#define BENCH_EXIT 2
#include "bench.h"

/* The settings of one run, shared by the worker threads (read-only once set). */
static struct {
    MDB_env *env;
    MDB_dbi dbi;
    size_t n, batch, valsize;
    int dupsort;
    uint64_t seed;
} cfg;

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int b = 7; b >= 0; b--, v >>= 8)
        p[b] = (uint8_t)v;
}

/* record i: its key, and its value stamped with i and `gen` so overwrites differ */
static void make_record(size_t i, uint64_t gen, uint8_t *k, uint8_t *v)
{
    memset(k, 0, KEY_SIZE);
    put_be64(k + 8, cfg.dupsort ? i / DUPS_PER_KEY : i);
    memset(v, (int)('a' + (gen + i) % 26), cfg.valsize);
    if (cfg.valsize >= 16) {
        put_be64(v, i);
        put_be64(v + 8, gen);
    }
}

/* a permutation of 0..n-1, the same for both libraries */
static size_t *shuffled(size_t n, uint64_t seed)
{
    size_t *o = malloc(n * sizeof(*o));
    if (!o)
        die("malloc", 0);
    for (size_t i = 0; i < n; i++)
        o[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = splitmix(&seed) % i, t = o[i - 1];
        o[i - 1] = o[j];
        o[j] = t;
    }
    return o;
}

/* writes records order[0..n) (identity if order is NULL), `batch` per txn: puts them with
 * flags, or with del set deletes them (the exact pair on DUPSORT) */
static void write_records(const size_t *order, size_t n, size_t batch, unsigned flags,
                          uint64_t gen, int del)
{
    uint8_t k[KEY_SIZE], *v = malloc(cfg.valsize ? cfg.valsize : 1);
    MDB_txn *txn = NULL;
    if (!batch)
        batch = n ? n : 1;
    for (size_t i = 0; i < n; i++) {
        if (!txn)
            CHECK(mdb_txn_begin(cfg.env, NULL, 0, &txn));
        size_t r = order ? order[i] : i;
        make_record(r, gen, k, v);
        MDB_val key = {KEY_SIZE, k}, val = {cfg.valsize, v};
        if (del)
            CHECK(mdb_del(txn, cfg.dbi, &key, cfg.dupsort ? &val : NULL));
        else
            CHECK(mdb_put(txn, cfg.dbi, &key, &val, flags));
        if ((i + 1) % batch == 0) {
            CHECK(mdb_txn_commit(txn));
            txn = NULL;
        }
    }
    if (txn)
        CHECK(mdb_txn_commit(txn));
    free(v);
}

static void put_records(const size_t *order, size_t n, size_t batch, unsigned flags, uint64_t gen)
{
    write_records(order, n, batch, flags, gen, 0);
}

static void fill_untimed(void)
{
    put_records(NULL, cfg.n, 0, cfg.dupsort ? MDB_APPENDDUP : MDB_APPEND, 0);
}

static void delete_records(const size_t *order, size_t n, size_t batch)
{
    write_records(order, n, batch, 0, 0, 1);
}

/* one random get: a plain lookup, or on DUPSORT the exact pair with MDB_GET_BOTH */
static void get_record(MDB_txn *txn, MDB_cursor *cur, size_t r, uint8_t *k, uint8_t *v)
{
    make_record(r, 0, k, v);
    MDB_val key = {KEY_SIZE, k}, val = {cfg.valsize, v};
    if (cfg.dupsort) {
        CHECK(mdb_cursor_get(cur, &key, &val, MDB_GET_BOTH));
    } else {
        CHECK(mdb_get(txn, cfg.dbi, &key, &val));
        if (val.mv_size != cfg.valsize)
            die("get: wrong value size", 0);
    }
    /* the value is read, as a program would: its stamp must be record r's */
    if (cfg.valsize >= 16 && memcmp(val.mv_data, v, 8))
        die("get: wrong value", 0);
}

/* A cursor on dbi in a new read txn (mdb_cursor_txn gives it back). */
static MDB_cursor *open_reader(MDB_dbi dbi)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    CHECK(mdb_txn_begin(cfg.env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_cursor_open(txn, dbi, &cur));
    return cur;
}

/* `count` random gets starting at position `first` of `order`, a fresh snapshot every 100 */
static size_t read_random(const size_t *order, size_t first, size_t count)
{
    uint8_t k[KEY_SIZE], *v = malloc(cfg.valsize ? cfg.valsize : 1);
    MDB_cursor *cur = open_reader(cfg.dbi);
    MDB_txn *txn = mdb_cursor_txn(cur);
    for (size_t i = 0; i < count; i++) {
        if (i && i % 100 == 0) {
            mdb_txn_reset(txn);
            CHECK(mdb_txn_renew(txn));
            CHECK(mdb_cursor_renew(txn, cur));
        }
        get_record(txn, cur, order[(first + i) % cfg.n], k, v);
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    free(v);
    return count;
}

/* `count` short read txns, as a server answers requests: begin, one random get, end.
 * Under MDB_NOTLS (as py-lmdb and mdb's Python package open every env) each one claims
 * and gives back a reader slot. */
static size_t read_txns(const size_t *order, size_t count)
{
    if (cfg.dupsort)
        die("readtxn has no dupsort variant", EINVAL);
    uint8_t k[KEY_SIZE], *v = malloc(cfg.valsize ? cfg.valsize : 1);
    for (size_t i = 0; i < count; i++) {
        MDB_txn *txn;
        CHECK(mdb_txn_begin(cfg.env, NULL, MDB_RDONLY, &txn));
        get_record(txn, NULL, order[i % cfg.n], k, v);
        mdb_txn_abort(txn);
    }
    free(v);
    return count;
}

static size_t scan(MDB_cursor_op first, MDB_cursor_op next)
{
    MDB_cursor *cur = open_reader(cfg.dbi);
    MDB_txn *txn = mdb_cursor_txn(cur);
    MDB_val key, val;
    size_t count = 0, bytes = 0;
    for (int rc = mdb_cursor_get(cur, &key, &val, first); rc == 0;
         rc = mdb_cursor_get(cur, &key, &val, next)) {
        count++;
        bytes += key.mv_size + val.mv_size;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    if (count != cfg.n || bytes != cfg.n * (KEY_SIZE + cfg.valsize))
        die("scan: wrong record count", 0);
    return count;
}

static size_t seek_random(void)
{
    size_t seeks = cfg.n / 10 ? cfg.n / 10 : 1, *order = shuffled(cfg.n, cfg.seed + 7);
    uint8_t k[KEY_SIZE], *v = malloc(cfg.valsize ? cfg.valsize : 1);
    MDB_cursor *cur = open_reader(cfg.dbi);
    MDB_txn *txn = mdb_cursor_txn(cur);
    for (size_t i = 0; i < seeks; i++) {
        make_record(order[i], 0, k, v);
        MDB_val key = {KEY_SIZE, k}, val;
        CHECK(mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE));
        for (int s = 0; s < 10; s++) {
            int rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT);
            if (rc == MDB_NOTFOUND)
                break;
            if (rc)
                die("seek: MDB_NEXT", rc);
        }
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    free(order);
    free(v);
    return seeks;
}

/* readwhilewriting: the readers split N gets; the writer overwrites until they finish */
static const size_t *rww_order;
static volatile int rww_readers_done;
static size_t rww_writes;

struct reader_arg {
    size_t first, count;
};

static void *reader_main(void *p)
{
    struct reader_arg *a = p;
    read_random(rww_order, a->first, a->count);
    return NULL;
}

static void *writer_main(void *unused)
{
    (void)unused;
    uint64_t s = cfg.seed + 99;
    uint8_t k[KEY_SIZE], *v = malloc(cfg.valsize ? cfg.valsize : 1);
    size_t batch = cfg.batch ? cfg.batch : 1000;
    for (uint64_t gen = 1; !__atomic_load_n(&rww_readers_done, __ATOMIC_ACQUIRE); gen++) {
        MDB_txn *txn;
        CHECK(mdb_txn_begin(cfg.env, NULL, 0, &txn));
        for (size_t i = 0; i < batch; i++) {
            make_record(splitmix(&s) % cfg.n, cfg.dupsort ? 0 : gen, k, v);
            MDB_val key = {KEY_SIZE, k}, val = {cfg.valsize, v};
            /* on DUPSORT the pair exists: the put is refused, the txn still does the search */
            int rc = mdb_put(txn, cfg.dbi, &key, &val, cfg.dupsort ? MDB_NODUPDATA : 0);
            if (rc && rc != MDB_KEYEXIST)
                die("writer: mdb_put", rc);
            rww_writes++;
        }
        CHECK(mdb_txn_commit(txn));
    }
    free(v);
    return NULL;
}

static size_t read_while_writing(int threads)
{
    size_t *order = shuffled(cfg.n, cfg.seed + 3);
    rww_order = order;
    pthread_t w, r[64];
    struct reader_arg a[64];
    if (threads < 1 || threads > 64)
        die("threads must be 1..64", 0);
    if (pthread_create(&w, NULL, writer_main, NULL))
        die("pthread_create", 0);
    for (int t = 0; t < threads; t++) {
        a[t].first = cfg.n / threads * t;
        a[t].count = cfg.n / threads;
        if (pthread_create(&r[t], NULL, reader_main, &a[t]))
            die("pthread_create", 0);
    }
    for (int t = 0; t < threads; t++)
        pthread_join(r[t], NULL);
    __atomic_store_n(&rww_readers_done, 1, __ATOMIC_RELEASE);
    pthread_join(w, NULL);
    free(order);
    return cfg.n / threads * threads;
}

/* pages in use: the high-water mark less the pages the free list holds */
static size_t used_pages(size_t *psize)
{
    MDB_envinfo info;
    MDB_stat st;
    CHECK(mdb_env_info(cfg.env, &info));
    CHECK(mdb_env_stat(cfg.env, &st));
    *psize = st.ms_psize;
    MDB_cursor *cur = open_reader(0); /* dbi 0: the free list */
    MDB_txn *txn = mdb_cursor_txn(cur);
    MDB_val key, val;
    size_t free_pages = 0;
    for (int rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
        if (val.mv_size >= sizeof(size_t))
            free_pages += *(const size_t *)val.mv_data;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return info.me_last_pgno + 1 - free_pages;
}

static double tv_secs(struct timeval t)
{
    return t.tv_sec + t.tv_usec / 1e6;
}

/* valgrind cannot reserve the default 256 GiB: build with -DBENCH_MAP_GIB=4 to count
 * instructions under callgrind. */
#ifndef BENCH_MAP_GIB
#define BENCH_MAP_GIB 256
#endif

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        puts(mdb_version(NULL, NULL, NULL));
        return 0;
    }
    if (argc < 6) {
        fprintf(stderr, "usage: catalogue DIR WORKLOAD N BATCH VALSIZE [dupsort] [sync] "
                        "[notls] [warm] [threads=T] [seed=S]\n");
        return 2;
    }
    const char *dir = argv[1], *work = argv[2];
    cfg.n = strtoull(argv[3], NULL, 10);
    cfg.batch = strtoull(argv[4], NULL, 10);
    cfg.valsize = strtoull(argv[5], NULL, 10);
    cfg.seed = 42;
    int sync = 0, threads = 1, notls = 0, warm = 0;
    for (int i = 6; i < argc; i++) {
        if (!strcmp(argv[i], "dupsort"))
            cfg.dupsort = 1;
        else if (!strcmp(argv[i], "sync"))
            sync = 1;
        else if (!strcmp(argv[i], "notls"))
            notls = MDB_NOTLS;
        else if (!strcmp(argv[i], "warm"))
            warm = 1;
        else if (!strncmp(argv[i], "threads=", 8))
            threads = atoi(argv[i] + 8);
        else if (!strncmp(argv[i], "seed=", 5))
            cfg.seed = strtoull(argv[i] + 5, NULL, 10);
        else
            die(argv[i], EINVAL);
    }
    if (cfg.n == 0)
        die("N must be at least 1", 0);
    if (warm && strcmp(work, "readseq") && strcmp(work, "readreverse"))
        die("warm applies to readseq and readreverse", EINVAL);
    if (cfg.dupsort && cfg.valsize < 16)
        die("dupsort needs values of 16 bytes or more (they are told apart by their start)", 0);

    CHECK(mdb_env_create(&cfg.env));
    CHECK(mdb_env_set_mapsize(cfg.env, (size_t)BENCH_MAP_GIB << 30));
    CHECK(mdb_env_set_maxreaders(cfg.env, 126));
    CHECK(mdb_env_set_maxdbs(cfg.env, 2));
    CHECK(mdb_env_open(cfg.env, dir, (sync ? 0 : MDB_NOSYNC) | notls, 0644));
    {
        MDB_txn *txn;
        CHECK(mdb_txn_begin(cfg.env, NULL, 0, &txn));
        CHECK(mdb_dbi_open(txn, "bench", MDB_CREATE | (cfg.dupsort ? MDB_DUPSORT : 0), &cfg.dbi));
        CHECK(mdb_txn_commit(txn));
    }

    const char *fills[] = {"fillseq", "fillseqappend", "fillrandom", "synccommit"};
    int fills_itself = 0;
    for (size_t i = 0; i < sizeof(fills) / sizeof(*fills); i++)
        fills_itself |= !strcmp(work, fills[i]);
    if (!fills_itself)
        fill_untimed();

    size_t *order = NULL;
    if (!strcmp(work, "fillrandom") || !strcmp(work, "overwrite") || !strcmp(work, "deleterandom") ||
        !strcmp(work, "readrandom") || !strcmp(work, "readtxn") || !strcmp(work, "synccommit"))
        order = shuffled(cfg.n, cfg.seed);

    if (warm && !strcmp(work, "readseq"))
        scan(MDB_FIRST, MDB_NEXT); /* (scan itself checks what it read) */
    else if (warm)
        scan(MDB_LAST, MDB_PREV);

    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = now();
    size_t ops = cfg.n;
    if (!strcmp(work, "fillseq"))
        put_records(NULL, cfg.n, cfg.batch, 0, 0);
    else if (!strcmp(work, "fillseqappend"))
        put_records(NULL, cfg.n, cfg.batch, cfg.dupsort ? MDB_APPENDDUP : MDB_APPEND, 0);
    else if (!strcmp(work, "fillrandom"))
        put_records(order, cfg.n, cfg.batch, 0, 0);
    else if (!strcmp(work, "synccommit"))
        put_records(order, cfg.n, 1, 0, 0);
    else if (!strcmp(work, "overwrite"))
        /* on DUPSORT an overwrite would add a value: the same pairs are put again */
        put_records(order, cfg.n, cfg.batch, 0, cfg.dupsort ? 0 : 1);
    else if (!strcmp(work, "deleterandom"))
        delete_records(order, cfg.n, cfg.batch);
    else if (!strcmp(work, "readrandom"))
        ops = read_random(order, 0, cfg.n);
    else if (!strcmp(work, "readtxn"))
        ops = read_txns(order, cfg.n);
    else if (!strcmp(work, "readseq"))
        ops = scan(MDB_FIRST, MDB_NEXT);
    else if (!strcmp(work, "readreverse"))
        ops = scan(MDB_LAST, MDB_PREV);
    else if (!strcmp(work, "seekrandom"))
        ops = seek_random();
    else if (!strcmp(work, "readwhilewriting"))
        ops = read_while_writing(threads);
    else
        die(work, EINVAL);
    double secs = now() - t0;
    getrusage(RUSAGE_SELF, &r1);

    /* the fill must be all there (the delete workload: all gone) */
    {
        MDB_txn *txn;
        MDB_stat st;
        CHECK(mdb_txn_begin(cfg.env, NULL, MDB_RDONLY, &txn));
        CHECK(mdb_stat(txn, cfg.dbi, &st));
        mdb_txn_abort(txn);
        size_t want = !strcmp(work, "deleterandom") ? 0 : cfg.n;
        if (st.ms_entries != want)
            die("wrong number of records after the workload", 0);
    }
    size_t psize, used = used_pages(&psize);
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/data.mdb", dir);
    if (stat(path, &sb))
        die("stat data.mdb", 0);
    printf("{\"workload\": \"%s\", \"ops\": %zu, \"secs\": %.6f, \"ops_per_s\": %.1f, "
           "\"user_s\": %.6f, \"sys_s\": %.6f, \"minflt\": %ld, \"majflt\": %ld, "
           "\"maxrss_kib\": %ld, \"file_bytes\": %lld, \"used_bytes\": %zu, "
           "\"writes_alongside\": %zu}\n",
           work, ops, secs, ops / secs, tv_secs(r1.ru_utime) - tv_secs(r0.ru_utime),
           tv_secs(r1.ru_stime) - tv_secs(r0.ru_stime), r1.ru_minflt - r0.ru_minflt,
           r1.ru_majflt - r0.ru_majflt, r1.ru_maxrss, (long long)sb.st_size, used * psize,
           rww_writes);
    free(order);
    mdb_env_close(cfg.env);
    return 0;
}
