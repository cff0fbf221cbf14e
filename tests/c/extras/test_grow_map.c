/*
 * test_grow_map.c -- a map that grows by itself (issue 13 part 1, mdbcore_env_set_maxsize).
 *
 *   1. An 8 MiB map with a 1 GiB bound takes 300 MiB of puts (3,100 txns of 100 records of
 *      1 KiB) with no MDB_MAP_FULL, while reader processes read throughout: two of ours
 *      with a bound, one opened plainly; all follow the growth at txn begin with no
 *      MDB_MAP_RESIZED (real LMDB's side: test_follow_map).
 *      Every snapshot a reader takes must be consistent: the "count" record says n, the
 *      database holds n + 1 records and the record n - 1 is there.
 *   2. The size is in the meta: an environment opened afterwards without a bound maps the
 *      whole file, and Debian's real mdb_dump reads every record back.
 *   3. Without a bound the same load fails with MDB_MAP_FULL (so part 1 can fail).
 *   4. WRITEMAP: the file grows with the map; a bound below the data stops with MAP_FULL.
 *   test_grow_map [DIR]   (default $TMPDIR/grow-map)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mdbtest.h"
#include "lmdb.h"
#include "mdbcore.h"

#define TXNS 3100
#define PER_TXN 100
#define VLEN 1024
#define MIB ((size_t)1 << 20)

static char base[4096];

static void rm_env(const char *dir)
{
    mdbtest_unlink_env(dir);
    mkdir(dir, 0755);
}

static MDB_env *open_env(const char *dir, size_t mapsize, size_t maxsize, unsigned flags)
{
    MDB_env *env = mdbtest_env(mapsize, 0);
    if (maxsize)
        CHECK(mdbcore_env_set_maxsize(env, maxsize));
    CHECK(mdb_env_open(env, dir, flags, 0644));
    return env;
}

/* Write txns first..first+txns-1, PER_TXN records each (the count record says how many
 * there are then); return 0 or the first error (MAP_FULL...). */
static int load(MDB_env *env, int first, int txns)
{
    static char vb[VLEN];
    for (int t = first; t < first + txns; t++) {
        MDB_txn *txn;
        int rc = mdb_txn_begin(env, NULL, 0, &txn);
        if (rc)
            return rc;
        for (int i = 0; i < PER_TXN && !rc; i++) {
            char kb[32];
            int n = t * PER_TXN + i;
            memset(vb, 'a' + n % 26, sizeof vb);
            MDB_val k = {(size_t)snprintf(kb, sizeof kb, "k%08d", n), kb}, v = {VLEN, vb};
            rc = mdb_put(txn, 1, &k, &v, 0);
        }
        if (!rc) {
            char cb[32];
            MDB_val k = {5, "count"}, v = {(size_t)snprintf(cb, sizeof cb, "%d", (t + 1) * PER_TXN), cb};
            rc = mdb_put(txn, 1, &k, &v, 0);
        }
        if (rc) {
            mdb_txn_abort(txn);
            return rc;
        }
        if ((rc = mdb_txn_commit(txn)) != 0)
            return rc;
    }
    return 0;
}

/* A reader process: snapshots until the stop file appears; exit 0 when all were
 * consistent.  Prints "snapshots resized max_mapsize". */
static void reader(const char *dir, const char *stop, size_t maxsize, int wfd)
{
    MDB_env *env = open_env(dir, 0, maxsize, MDB_RDONLY);
    long snaps = 0, resized = 0;
    size_t max_map = 0;
    time_t until = time(NULL) + 120;
    while (access(stop, F_OK) != 0 && time(NULL) < until) {
        MDB_txn *txn;
        int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
        if (rc == MDB_MAP_RESIZED) {
            resized++;
            FAIL("a reader (%s) got MDB_MAP_RESIZED", maxsize ? "with a bound" : "opened plainly");
        }
        CHECK(rc);
        MDB_val k = {5, "count"}, v;
        rc = mdb_get(txn, 1, &k, &v);
        if (rc == 0) {
            char cb[32], kb[32];
            snprintf(cb, sizeof cb, "%.*s", (int)v.mv_size, (char *)v.mv_data);
            int n = atoi(cb);
            MDB_stat st;
            CHECK(mdb_stat(txn, 1, &st));
            if (st.ms_entries != (size_t)n + 1)
                FAIL("snapshot: count %d but %zu entries", n, st.ms_entries);
            MDB_val lk = {(size_t)snprintf(kb, sizeof kb, "k%08d", n - 1), kb}, lv;
            CHECK(mdb_get(txn, 1, &lk, &lv));
            if (lv.mv_size != VLEN || ((char *)lv.mv_data)[VLEN - 1] != 'a' + (n - 1) % 26)
                FAIL("snapshot: record %d has the wrong value", n - 1);
        } else if (rc != MDB_NOTFOUND) {
            CHECK(rc);
        }
        mdb_txn_abort(txn);
        MDB_envinfo info;
        CHECK(mdb_env_info(env, &info));
        if (info.me_mapsize > max_map)
            max_map = info.me_mapsize;
        snaps++;
    }
    mdb_env_close(env);
    dprintf(wfd, "%ld %ld %zu\n", snaps, resized, max_map);
    exit(0);
}

static long count_dump_records(const char *dir)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "mdb_dump '%s' 2>/dev/null", dir);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    long lines = 0, header = 1;
    char line[4096];
    while (fgets(line, sizeof line, p)) {
        if (header) {
            header = strcmp(line, "HEADER=END\n") != 0;
            continue;
        }
        if (line[0] == ' ' && strlen(line) < sizeof line - 1)
            lines++;
    }
    int st = pclose(p);
    return st == 0 ? lines / 2 : -1;
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s", argc > 1 ? argv[1] : "");
    if (!*base)
        snprintf(base, sizeof base, "%s/grow-map", tmp && *tmp ? tmp : "/tmp");
    mkdir(base, 0755);
    char dir[4200], stop[4300];
    snprintf(dir, sizeof dir, "%s/env", base);
    snprintf(stop, sizeof stop, "%s/stop", base);
    rm_env(dir);
    unlink(stop);

    /* 1. the load, readers throughout */
    MDB_env *env = open_env(dir, 8 * MIB, 1024 * MIB, MDB_NOSYNC);
    CHECK(load(env, 0, 1)); /* the file exists with a first record set before readers start */
    int pipes[3][2];
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        if (pipe(pipes[i]) != 0)
            FAIL("pipe");
        kids[i] = fork();
        if (kids[i] == 0) {
            close(pipes[i][0]);
            reader(dir, stop, i < 2 ? 1024 * MIB : 0, pipes[i][1]);
        }
        close(pipes[i][1]);
    }
    int rc = load(env, 1, TXNS - 1);
    if (rc)
        FAIL("the load with a 1 GiB bound failed: %s", mdb_strerror(rc));
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    size_t grown = info.me_mapsize;
    FILE *f = fopen(stop, "w");
    if (f)
        fclose(f);
    for (int i = 0; i < 3; i++) {
        int st;
        char buf[128] = {0};
        if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            FAIL("reader %d failed (status %#x)", i, st);
        ssize_t n = read(pipes[i][0], buf, sizeof buf - 1);
        close(pipes[i][0]);
        long snaps = 0, resized = 0;
        size_t max_map = 0;
        if (n <= 0 || sscanf(buf, "%ld %ld %zu", &snaps, &resized, &max_map) != 3)
            FAIL("reader %d: no report", i);
        if (snaps < 20)
            FAIL("reader %d took only %ld snapshots", i, snaps);
        if (max_map <= 8 * MIB)
            FAIL("reader %d never followed the growth (%zu)", i, max_map);
        printf("reader %d (%s): %ld consistent snapshots, %ld MAP_RESIZED, map up to %zu MiB\n",
               i, i < 2 ? "bound 1 GiB" : "no bound", snaps, resized, max_map / MIB);
    }
    mdb_env_close(env);
    printf("load: %d txns, %d MiB of values into an 8 MiB map: no MAP_FULL, map %zu MiB\n",
           TXNS, (int)((size_t)TXNS * PER_TXN * VLEN / MIB), grown / MIB);
    if (grown < 300 * MIB || grown > 1024 * MIB)
        FAIL("map size after the load: %zu", grown);

    /* 2. the meta holds the size; real mdb_dump reads it all */
    env = open_env(dir, 0, 0, MDB_RDONLY);
    CHECK(mdb_env_info(env, &info));
    if (info.me_mapsize != grown)
        FAIL("a later open maps %zu bytes, want the grown %zu", info.me_mapsize, grown);
    mdb_env_close(env);
    if (system("command -v mdb_dump >/dev/null 2>&1") == 0) {
        long n = count_dump_records(dir);
        if (n != (long)TXNS * PER_TXN + 1)
            FAIL("real mdb_dump read %ld records, want %d", n, TXNS * PER_TXN + 1);
        printf("real mdb_dump: %ld records read back\n", n);
    }

    /* 3. without a bound: MAP_FULL */
    rm_env(dir);
    env = open_env(dir, 8 * MIB, 0, MDB_NOSYNC);
    rc = load(env, 0, TXNS);
    if (rc != MDB_MAP_FULL)
        FAIL("without a bound the load gave %s, want MDB_MAP_FULL", mdb_strerror(rc));
    mdb_env_close(env);
    printf("no bound: MDB_MAP_FULL, as before\n");

    /* 4. WRITEMAP: the file follows the map; the bound is a bound */
    rm_env(dir);
    env = open_env(dir, 1 * MIB, 48 * MIB, MDB_NOSYNC | MDB_WRITEMAP);
    rc = load(env, 0, 200); /* 20 MiB of values */
    if (rc)
        FAIL("WRITEMAP growing load: %s", mdb_strerror(rc));
    CHECK(mdb_env_info(env, &info));
    struct stat sb;
    char data[4300];
    snprintf(data, sizeof data, "%s/data.mdb", dir);
    if (stat(data, &sb) != 0 || (size_t)sb.st_size < info.me_mapsize)
        FAIL("WRITEMAP: file %lld bytes, map %zu", (long long)sb.st_size, info.me_mapsize);
    rc = load(env, 200, 400); /* 40 MiB more: past the 48 MiB bound */
    if (rc != MDB_MAP_FULL)
        FAIL("WRITEMAP past the bound gave %s, want MDB_MAP_FULL", mdb_strerror(rc));
    CHECK(mdb_env_info(env, &info));
    if (info.me_mapsize > 48 * MIB)
        FAIL("WRITEMAP map grew past its bound: %zu", info.me_mapsize);
    mdb_env_close(env);
    printf("WRITEMAP: grew to the 48 MiB bound with the file, then MDB_MAP_FULL\n");
    CHECK_RC(mdbcore_env_set_maxsize(NULL, 1), EINVAL);
    env = open_env(dir, 0, 0, 0);
    CHECK_RC(mdbcore_env_set_maxsize(env, 1 << 30), EINVAL); /* after open */
    mdb_env_close(env);
    printf("test_grow_map: ok\n");
    return 0;
}
