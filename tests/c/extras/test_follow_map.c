/*
 * test_follow_map.c -- readers of ours follow a map that another process grew, with no
 * error and no call, and read consistent snapshots throughout (mdbcore.h 4b, datafile.c).
 *
 * A writer process grows an 8 MiB map to 512 MiB the way LMDB programs do (on
 * MDB_MAP_FULL: mdb_env_set_mapsize with twice the size, follow_data.h's grow_load):
 * first a writer of ours, then the REAL LMDB (lmdb_grower, Debian's -llmdb).  Meanwhile
 * reader processes of ours, opened plainly (no bound), take snapshots and check each one
 * (follow_data.h: record count, hot records, the last batch's hash, sampled older records):
 *   plain   one thread, a reader slot per thread (TLS): must never see MDB_MAP_RESIZED;
 *   threads MDB_NOTLS, two threads taking snapshots, plus a txn begun before the growth
 *           and kept open: the values it read keep their address and bytes throughout,
 *           and a value read in a txn that ended before the growth can still be read;
 *   move    as threads, with the test knob mdbcore_env_set_reserve(1): no address space
 *           past the map, so every growth moves the map while the other thread's txns
 *           and the long txn point into the old one (kept until close);
 *   fixed   MDB_FIXEDMAP with no room past the map, one thread: LMDB's contract (the map
 *           never moves) wins, so it gets MDB_MAP_RESIZED and calls
 *           mdb_env_set_mapsize(env, 0) (which needs no txn live in the process).
 * Every reader's last snapshot, taken after the writer finished, sees the 512 MiB map.
 * Then, in one reader whose mmap fails (the fault seam: no address space), a snapshot that
 * still fits the map it has is read there; one that does not gets ENOMEM, not a crash;
 * and the first txn begin after mmap works again follows.
 *   test_follow_map [PATH-TO-lmdb_grower]   (default build/extras/lmdb_grower)
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mdbtest.h"
#include "lmdb.h"
#include "mdbcore.h"

#include "follow_data.h"

#define TARGET (512 * MIB)
#define LONG_VALS 4

enum { R_PLAIN, R_THREADS, R_MOVE, R_FIXED, NREADERS };
static const char *reader_name[NREADERS] = {"plain", "threads", "move", "fixed"};

/* the knob is ours only: weak, so that this test also builds against a core without it
 * (to show that it fails there) and skips the move reader's knob */
int mdbcore_env_set_reserve(MDB_env *env, size_t bytes) __attribute__((weak));
size_t mdbcore_env_get_mapspan(MDB_env *env) __attribute__((weak));

static char dir[4200], stop[4300];

typedef struct {
    MDB_env *env;
    int kind;
    unsigned long long seed;
    long snaps, resized;
    size_t max_map;
} reader_state;

/* One snapshot, checked; returns 0, or MDB_MAP_RESIZED (fixed reader only). */
static int snapshot(reader_state *rs)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(rs->env, NULL, MDB_RDONLY, &txn);
    if (rc == MDB_MAP_RESIZED && rs->kind == R_FIXED) {
        /* LMDB's answer, with no txn live in the process (this reader has one thread) */
        rs->resized++;
        CHECK(mdb_env_set_mapsize(rs->env, 0));
        return rc;
    }
    if (rc)
        FAIL("%s reader: mdb_txn_begin: %s", reader_name[rs->kind], mdb_strerror(rc));
    MDB_val k = {5, "state"}, v;
    rc = mdb_get(txn, 1, &k, &v);
    if (rc == MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return 0;
    }
    CHECK(rc);
    char buf[96], kb[32];
    unsigned long n, t;
    unsigned long long h;
    snprintf(buf, sizeof buf, "%.*s", (int)v.mv_size, (char *)v.mv_data);
    if (sscanf(buf, "%lu %lu %llu", &n, &t, &h) != 3 || n != (t + 1) * BATCH)
        FAIL("bad state record '%s'", buf);
    MDB_stat st;
    CHECK(mdb_stat(txn, 1, &st));
    if (st.ms_entries != n + HOT + 1)
        FAIL("snapshot of txn %lu: %zu entries, want %lu", t, st.ms_entries, n + HOT + 1);
    for (int j = 0; j < HOT; j++) {
        MDB_val hk = {(size_t)snprintf(kb, sizeof kb, "h%02d", j), kb}, hv;
        CHECK(mdb_get(txn, 1, &hk, &hv));
        int len = snprintf(buf, sizeof buf, "hot %lu", t);
        if (hv.mv_size != (size_t)len || memcmp(hv.mv_data, buf, (size_t)len) != 0)
            FAIL("snapshot of txn %lu: hot record %d is '%.*s'", t, j, (int)hv.mv_size,
                 (char *)hv.mv_data);
    }
    uint64_t got = FNV0;
    for (unsigned long j = 0; j < BATCH; j++) {
        MDB_val rk = {(size_t)snprintf(kb, sizeof kb, "r%08lu", t * BATCH + j), kb}, rv;
        CHECK(mdb_get(txn, 1, &rk, &rv));
        if (rv.mv_size != VLEN)
            FAIL("record %lu: %zu bytes", t * BATCH + j, rv.mv_size);
        got = fnv(got, rv.mv_data, VLEN);
    }
    if (got != h)
        FAIL("snapshot of txn %lu: the last batch does not hash to the state's hash", t);
    static __thread char want[VLEN];
    for (int s = 0; s < 4; s++) {
        unsigned long i = (unsigned long)(mdbtest_xorshift(&rs->seed) % n);
        MDB_val rk = {(size_t)snprintf(kb, sizeof kb, "r%08lu", i), kb}, rv;
        CHECK(mdb_get(txn, 1, &rk, &rv));
        fill(want, i);
        if (rv.mv_size != VLEN || memcmp(rv.mv_data, want, VLEN) != 0)
            FAIL("snapshot of txn %lu: record %lu has the wrong value", t, i);
    }
    mdb_txn_abort(txn);
    MDB_envinfo info;
    CHECK(mdb_env_info(rs->env, &info));
    if (info.me_mapsize > rs->max_map)
        rs->max_map = info.me_mapsize;
    rs->snaps++;
    return 0;
}

static void *reader_thread(void *arg)
{
    reader_state *rs = arg;
    time_t until = time(NULL) + 150;
    while (access(stop, F_OK) != 0 && time(NULL) < until)
        snapshot(rs);
    while (snapshot(rs) == MDB_MAP_RESIZED) /* the last one, after the writer finished */
        ;
    return NULL;
}

/* A reader process; reports "snapshots resized max_map span" on wfd, exits 0 when every
 * snapshot was consistent. */
static void reader(int kind, int wfd)
{
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    if ((kind == R_MOVE || kind == R_FIXED) && mdbcore_env_set_reserve)
        CHECK(mdbcore_env_set_reserve(env, 1));
    int threaded = kind == R_THREADS || kind == R_MOVE;
    unsigned flags = MDB_RDONLY;
    if (threaded)
        flags |= MDB_NOTLS;
    if (kind == R_FIXED)
        flags |= MDB_FIXEDMAP;
    CHECK(mdb_env_open(env, dir, flags, 0644));

    /* values read before the growth: one txn kept open, one ended */
    MDB_txn *longt = NULL;
    const char *held[LONG_VALS];
    static char copies[LONG_VALS][VLEN];
    const volatile char *stale = NULL;
    if (threaded) {
        MDB_txn *t;
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
        MDB_val k = {9, "r00000000"}, v;
        CHECK(mdb_get(t, 1, &k, &v));
        stale = v.mv_data;
        mdb_txn_abort(t);
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &longt));
        for (int i = 0; i < LONG_VALS; i++) {
            char kb[32];
            MDB_val lk = {(size_t)snprintf(kb, sizeof kb, "r%08d", i), kb}, lv;
            CHECK(mdb_get(longt, 1, &lk, &lv));
            held[i] = lv.mv_data;
            memcpy(copies[i], lv.mv_data, VLEN);
        }
    }
    int nthreads = threaded ? 2 : 1;
    reader_state rs[2];
    pthread_t th[2];
    for (int i = 0; i < nthreads; i++) {
        rs[i] = (reader_state){env, kind, MDBTEST_XORSHIFT_SEED + (unsigned)i * 7919 + (unsigned)kind, 0, 0, 0};
        if (pthread_create(&th[i], NULL, reader_thread, &rs[i]) != 0)
            FAIL("pthread_create");
    }
    long snaps = 0, resized = 0;
    size_t max_map = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        snaps += rs[i].snaps;
        resized += rs[i].resized;
        if (rs[i].max_map > max_map)
            max_map = rs[i].max_map;
    }
    if (longt) {
        for (int i = 0; i < LONG_VALS; i++) {
            if (memcmp(held[i], copies[i], VLEN) != 0)
                FAIL("%s reader: a value of the txn kept open changed under it", reader_name[kind]);
        }
        mdb_txn_abort(longt);
        volatile char sink = stale[0]; /* no fault: the memory is still mapped */
        (void)sink;
    }
    size_t span = mdbcore_env_get_mapspan ? mdbcore_env_get_mapspan(env) : 0;
    mdb_env_close(env);
    dprintf(wfd, "%ld %ld %zu %zu\n", snaps, resized, max_map, span);
    exit(0);
}

static int put_ours(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
    return put_in_txn(ctx, k, kl, v, vl);
}

/* One run: a fresh 8 MiB environment with txn 0 in it, the readers, then the writer. */
static void run(const char *writer, const char *grower)
{
    mdbtest_unlink_env(dir);
    mkdir(dir, 0755);
    unlink(stop);
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 8 * MIB));
    /* FIXEDMAP at creation records where the map is: the fixed reader maps there */
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC | MDB_FIXEDMAP, 0644));
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(put_batch(0, put_ours, txn));
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);

    fflush(stdout); /* or the children flush what this process printed once more */
    int pipes[NREADERS][2];
    pid_t kids[NREADERS];
    for (int i = 0; i < NREADERS; i++) {
        if (pipe(pipes[i]) != 0)
            FAIL("pipe");
        if ((kids[i] = fork()) == 0) {
            close(pipes[i][0]);
            reader(i, pipes[i][1]);
        }
        close(pipes[i][1]);
    }
    usleep(200 * 1000); /* let the readers take their first snapshots in the 8 MiB map */
    int out[2];
    if (pipe(out) != 0)
        FAIL("pipe");
    pid_t w = fork();
    if (w == 0) {
        dup2(out[1], 1);
        close(out[0]);
        if (grower) {
            char mib[16];
            snprintf(mib, sizeof mib, "%zu", TARGET / MIB);
            execl(grower, grower, dir, mib, (char *)NULL);
            _exit(127);
        }
        MDB_env *we;
        CHECK(mdb_env_create(&we));
        CHECK(mdb_env_set_mapsize(we, 8 * MIB));
        CHECK(mdb_env_open(we, dir, MDB_NOSYNC, 0644));
        unsigned long txns = 0;
        CHECK(grow_load(we, TARGET, &txns));
        MDB_envinfo info;
        CHECK(mdb_env_info(we, &info));
        printf("%lu %zu\n", txns, info.me_mapsize);
        fflush(stdout);
        mdb_env_close(we);
        _exit(0);
    }
    close(out[1]);
    char wbuf[128] = {0};
    ssize_t got = read(out[0], wbuf, sizeof wbuf - 1);
    close(out[0]);
    int st;
    if (waitpid(w, &st, 0) != w || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAIL("the %s writer failed (status %#x)", writer, st);
    unsigned long txns = 0;
    size_t wmap = 0;
    if (got <= 0 || sscanf(wbuf, "%lu %zu", &txns, &wmap) != 2 || wmap < TARGET)
        FAIL("the %s writer: no report, or a map below 512 MiB ('%s')", writer, wbuf);
    printf("%s writer: %lu txns, map grown from 8 MiB to %zu MiB with mdb_env_set_mapsize\n",
           writer, txns, wmap / MIB);
    FILE *f = fopen(stop, "w");
    if (f)
        fclose(f);
    for (int i = 0; i < NREADERS; i++) {
        char buf[160] = {0};
        ssize_t n = read(pipes[i][0], buf, sizeof buf - 1);
        close(pipes[i][0]);
        if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            FAIL("%s writer: the %s reader failed (status %#x)", writer, reader_name[i], st);
        long snaps = 0, resized = 0;
        size_t max_map = 0, span = 0;
        if (n <= 0 || sscanf(buf, "%ld %ld %zu %zu", &snaps, &resized, &max_map, &span) != 4)
            FAIL("%s reader: no report", reader_name[i]);
        printf("  %-7s reader: %ld consistent snapshots, %ld MAP_RESIZED, map up to %zu MiB, "
               "%zu MiB of address space at the end\n",
               reader_name[i], snaps, resized, max_map / MIB, span / MIB);
        if (snaps < 20)
            FAIL("%s reader: only %ld snapshots", reader_name[i], snaps);
        if (max_map != wmap)
            FAIL("%s reader: its last snapshot saw a %zu byte map, the writer's is %zu",
                 reader_name[i], max_map, wmap);
        if (i == R_FIXED) {
            if (resized == 0)
                FAIL("the FIXEDMAP reader with no room past its map never got MAP_RESIZED");
        } else if (resized) {
            FAIL("%s reader: MDB_MAP_RESIZED", reader_name[i]);
        }
        if (i == R_MOVE && span != wmap)
            FAIL("move reader: %zu bytes reserved, want exactly the map (every growth moved it)",
                 span);
        if ((i == R_PLAIN || i == R_THREADS) && span <= wmap)
            FAIL("%s reader: no address space reserved past the map", reader_name[i]);
    }
}

/* A writer of ours in a child process: txns first..last, the map set to `mapsize` first
 * (0: the size the file says). */
static void write_in_child(unsigned long first, unsigned long last, size_t mapsize)
{
    fflush(stdout);
    pid_t w = fork();
    if (w == 0) {
        mdbcore_fault_reset(); /* the parent's failing mmap is not the writer's */
        MDB_env *we;
        CHECK(mdb_env_create(&we));
        CHECK(mdb_env_open(we, dir, MDB_NOSYNC, 0644));
        if (mapsize)
            CHECK(mdb_env_set_mapsize(we, mapsize));
        for (unsigned long t = first; t <= last; t++) {
            MDB_txn *txn;
            CHECK(mdb_txn_begin(we, NULL, 0, &txn));
            CHECK(put_batch(t, put_ours, txn));
            CHECK(mdb_txn_commit(txn));
        }
        mdb_env_close(we);
        _exit(0);
    }
    int st;
    if (waitpid(w, &st, 0) != w || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAIL("writer child failed (status %#x)", st);
}

static size_t map_size(MDB_env *env)
{
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    return info.me_mapsize;
}

static void cannot_follow(void)
{
    mdbtest_unlink_env(dir);
    mkdir(dir, 0755);
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 8 * MIB));
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    mdb_env_close(env);
    write_in_child(0, 0, 0);
    CHECK(mdb_env_create(&env));
    CHECK(mdbcore_env_set_reserve(env, 1)); /* following needs a new mapping */
    CHECK(mdb_env_open(env, dir, MDB_RDONLY, 0644));
    reader_state rs = {env, R_PLAIN, MDBTEST_XORSHIFT_SEED, 0, 0, 0};
    CHECK(snapshot(&rs));
    write_in_child(1, 1, 32 * MIB); /* the map says 32 MiB, the data still fits 8 */
    CHECK(mdbcore_fault_fail_from(MDBCORE_FAULT_MMAP, 1, ENOMEM));
    CHECK(snapshot(&rs));
    if (map_size(env) != 8 * MIB || rs.snaps != 2)
        FAIL("with mmap failing, a snapshot that fits was not read in the old map");
    write_in_child(2, 21, 0); /* 20 MiB more: past the 8 MiB map */
    MDB_txn *txn;
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc != ENOMEM)
        FAIL("a snapshot past a map that cannot follow: %s, want ENOMEM", mdb_strerror(rc));
    mdbcore_fault_reset();
    CHECK(snapshot(&rs));
    if (map_size(env) != 32 * MIB || rs.snaps != 3)
        FAIL("mmap works again, but the map did not follow (%zu)", map_size(env));
    mdb_env_close(env);
    printf("mmap failing: a snapshot that fits read in the old map, one past it ENOMEM, "
           "then followed to 32 MiB\n");
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    const char *grower = argc > 1 ? argv[1] : "build/extras/lmdb_grower";
    char base[4096];
    snprintf(base, sizeof base, "%s/follow-map", tmp && *tmp ? tmp : "/tmp");
    mkdir(base, 0755);
    snprintf(dir, sizeof dir, "%s/env", base);
    snprintf(stop, sizeof stop, "%s/stop", base);
    run("ours", NULL);
    if (access(grower, X_OK) == 0)
        run("real LMDB", grower);
    else
        FAIL("no %s (make builds it)", grower);
    if (mdbcore_env_set_reserve)
        cannot_follow();
    printf("test_follow_map: ok\n");
    return 0;
}
