/*
 * test_check_engine.c -- the checker run on environments written by OUR engine, through the
 * public API (mdbcore_check_env / mdbcore_check_txn), plus the fault seam driving the engine:
 *  - after every commit of a randomized workload (plain, INTEGERKEY, big values on overflow
 *    pages replaced and deleted, drop/recreate, DUPSORT when the engine supports it) the
 *    snapshot must check clean;
 *  - a read txn's snapshot stays clean while later commits reuse pages;
 *  - a commit whose page write fails (fail_nth) leaves the previous snapshot clean;
 *  - crash images built from the write/sync log of a commit, for every prefix of the log,
 *    dropping or tearing the unsynced writes, check clean (old or new snapshot);
 *  - a writer process SIGKILLed inside its commit (fault seam kill rules) leaves the
 *    writer mutex to be recovered (EOWNERDEAD) and a clean snapshot.
 * Needs the engine: link with build/libmdbcore.a (make ctest-core, or run.sh --lib).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

static unsigned long long rng = MDBTEST_XORSHIFT_SEED;
static uint64_t rnd(void)
{
    return mdbtest_xorshift(&rng);
}

static int to_stderr(const char *m, void *c)
{
    (void)c;
    fputs(m, stderr);
    return 0;
}

/* Check the env's current snapshot; print the report on problems. */
static int env_clean(MDB_env *env, const char *when)
{
    mdbcore_check_report rep;
    int rc = mdbcore_check_env(env, &rep);
    if (rc) {
        fprintf(stderr, "check after %s: rc %d (%s)\n", when, rc, mdb_strerror(rc));
        mdbcore_check_report_print(&rep, to_stderr, NULL);
    }
    mdbcore_check_report_free(&rep);
    return rc == 0;
}

/* env_clean after round `round` of a workload (`what`: "" or a name and a space), as a
 * counted check; returns whether it was clean. */
static int round_clean(MDB_env *env, const char *what, int round)
{
    char when[48];
    snprintf(when, sizeof when, "%sround %d", what, round);
    int ok = env_clean(env, when);
    EXPECT(ok);
    return ok;
}

/* Check a data file image from its bytes; returns problems (or -1 if not an LMDB file). */
static long long image_problems(const char *path, txnid_t *txnid)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0)
        return -1;
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    mdbcore_snapshot in;
    memset(&in, 0, sizeof in);
    in.map = map;
    in.map_len = (size_t)st.st_size;
    in.file_size = (uint64_t)st.st_size;
    long long n = -1;
    if (mdbcore_snapshot_from_metas(&in, -1) == 0) {
        mdbcore_check_report rep;
        mdbcore_check_snapshot(&in, &rep);
        n = (long long)rep.problems_total;
        if (n)
            mdbcore_check_report_print(&rep, to_stderr, NULL);
        mdbcore_check_report_free(&rep);
        if (txnid)
            *txnid = in.txnid;
    }
    munmap(map, (size_t)st.st_size);
    return n;
}

static char dir[64];
static void fresh_dir(void);

static int open_env_flags(MDB_env **env, unsigned flags)
{
    int rc = mdb_env_create(env);
    if (!rc)
        rc = mdb_env_set_maxdbs(*env, 8);
    if (!rc)
        rc = mdb_env_set_mapsize(*env, 64 << 20);
    if (!rc)
        rc = mdb_env_open(*env, dir, flags, 0644);
    return rc;
}

static int open_env(MDB_env **env)
{
    return open_env_flags(env, 0);
}

static int dupsort_ok = 1;

/* One write txn of the workload. */
static int round_txn(MDB_env *env, int round)
{
    MDB_txn *t;
    MDB_dbi a, b, d, s = 0;
    int rc = mdb_txn_begin(env, NULL, 0, &t);
    if (rc)
        return rc;
    if ((rc = mdb_dbi_open(t, "plain", MDB_CREATE, &a)) ||
        (rc = mdb_dbi_open(t, "big", MDB_CREATE | MDB_INTEGERKEY, &b)) ||
        (rc = mdb_dbi_open(t, "doomed", MDB_CREATE, &d)))
        goto out;
    if (dupsort_ok) {
        rc = mdb_dbi_open(t, "dups", MDB_CREATE | MDB_DUPSORT, &s);
        if (rc == MDB_INCOMPATIBLE) {
            dupsort_ok = 0; /* the engine has no DUPSORT yet */
            printf("  (engine rejects DUPSORT: dup checks skipped)\n");
            rc = 0;
        } else if (rc) {
            goto out;
        }
    }
    static char big[40000];
    memset(big, 'a' + round, sizeof big);
    for (int i = 0; i < 1500 && !rc; i++) {
        char k[32], v[64];
        snprintf(k, sizeof k, "k%06u", (unsigned)(rnd() % 4000));
        snprintf(v, sizeof v, "v%d-%d-%.*s", round, i, (int)(rnd() % 40), big);
        MDB_val K = {strlen(k), k}, V = {strlen(v), v};
        rc = mdb_put(t, a, &K, &V, 0);
        if (!rc && i % 4 == 0) {
            snprintf(k, sizeof k, "k%06u", (unsigned)(rnd() % 4000));
            MDB_val K2 = {strlen(k), k};
            rc = mdb_del(t, a, &K2, NULL);
            if (rc == MDB_NOTFOUND)
                rc = 0;
        }
        if (!rc && i % 40 == 0) {
            uint64_t ik = rnd() % 60;
            MDB_val K3 = {8, &ik}, V3 = {100 + rnd() % 39000, big};
            rc = mdb_put(t, b, &K3, &V3, 0);
        }
        if (!rc && i % 90 == 0) {
            uint64_t ik = rnd() % 60;
            MDB_val K4 = {8, &ik};
            rc = mdb_del(t, b, &K4, NULL);
            if (rc == MDB_NOTFOUND)
                rc = 0;
        }
        if (!rc && i % 10 == 0) {
            MDB_val V5 = {1 + rnd() % 300, big};
            rc = mdb_put(t, d, &K, &V5, 0);
        }
        if (!rc && dupsort_ok && s) {
            snprintf(k, sizeof k, "g%02u", (unsigned)(rnd() % 30));
            MDB_val K6 = {strlen(k), k};
            rc = mdb_put(t, s, &K6, &V, 0);
        }
    }
    if (!rc && round % 3 == 2)
        rc = mdb_drop(t, d, 1); /* delete the DB; it is recreated next round */
out:
    if (rc) {
        mdb_txn_abort(t);
        return rc;
    }
    return mdb_txn_commit(t);
}

static void t_workload_checks_clean(void)
{
    MDB_env *env;
    /* NOTLS: this thread holds a long read txn while mdbcore_check_env begins others. */
    MUST(open_env_flags(&env, MDB_NOTLS));
    EXPECT(env_clean(env, "open"));
    MDB_txn *reader = NULL;
    for (int round = 0; round < 8; round++) {
        int rc = round_txn(env, round);
        EXPECT_EQ(rc, 0);
        if (rc) {
            fprintf(stderr, "round %d: %s\n", round, mdb_strerror(rc));
            break;
        }
        if (!round_clean(env, "", round))
            break;
        if (round == 2)
            MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &reader));
    }
    {
        /* A write txn: checkable before it writes, refused after. */
        MDB_txn *w;
        MDB_dbi a;
        MUST(mdb_txn_begin(env, NULL, 0, &w));
        mdbcore_check_report rep;
        EXPECT_EQ(mdbcore_check_txn(w, &rep), 0);
        mdbcore_check_report_free(&rep);
        MUST(mdb_dbi_open(w, "plain", 0, &a));
        MDB_val k = {3, "zzz"}, v = {3, "val"};
        MUST(mdb_put(w, a, &k, &v, 0));
        EXPECT_EQ(mdbcore_check_txn(w, &rep), MDB_BAD_TXN);
        mdbcore_check_report_free(&rep);
        mdb_txn_abort(w);
    }
    if (reader) {
        /* Five commits later, the reader's snapshot is still whole. */
        mdbcore_check_report rep;
        int rc = mdbcore_check_txn(reader, &rep);
        EXPECT_EQ(rc, 0);
        if (rc)
            mdbcore_check_report_print(&rep, to_stderr, NULL);
        EXPECT_EQ(rep.txnid, mdb_txn_id(reader));
        mdbcore_check_report_free(&rep);
        mdb_txn_abort(reader);
    }
    mdb_env_close(env);
    char path[128];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    EXPECT_EQ(image_problems(path, NULL), 0);
}

/* Big values rewritten with other sizes, round after round: overflow runs are freed and
 * runs of other lengths are allocated, from the free list when it has room. */
static void t_overflow_churn(void)
{
    MDB_env *env;
    MUST(open_env(&env));
    static char big[30000];
    for (int round = 0; round < 8; round++) {
        MDB_txn *t;
        MDB_dbi b;
        MUST(mdb_txn_begin(env, NULL, 0, &t));
        MUST(mdb_dbi_open(t, "big", MDB_CREATE | MDB_INTEGERKEY, &b));
        memset(big, 'A' + round, sizeof big);
        for (int i = 0; i < 40; i++) {
            uint64_t k = rnd() % 100;
            MDB_val K = {8, &k}, V = {1000 + rnd() % 29000, big};
            MUST(mdb_put(t, b, &K, &V, 0));
        }
        MUST(mdb_txn_commit(t));
        if (!round_clean(env, "overflow ", round))
            break;
    }
    mdb_env_close(env);
}

/* Four DBs written together, with big values on 1..8-page runs among many small puts and
 * deletes (so loose and reclaimed pages are plentiful).  Deterministic (rand_r). */
static void t_mixed_rounds(void)
{
    unsigned seed = 1;
    static char bigv[30000];
    MDB_env *env;
    MUST(open_env(&env));
    for (int round = 0; round < 6; round++) {
        MDB_txn *t;
        MDB_dbi a, b, c, d;
        MUST(mdb_txn_begin(env, NULL, 0, &t));
        MUST(mdb_dbi_open(t, "plain", MDB_CREATE, &a));
        MUST(mdb_dbi_open(t, "dup", MDB_CREATE | (dupsort_ok ? MDB_DUPSORT : 0), &b));
        MUST(mdb_dbi_open(t, "dfix", MDB_CREATE | (dupsort_ok ? MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP : 0), &c));
        MUST(mdb_dbi_open(t, "big", MDB_CREATE | MDB_INTEGERKEY, &d));
        memset(bigv, round, sizeof bigv);
        for (int i = 0; i < 2000; i++) {
            char k[32], v[64];
            unsigned long long x = (unsigned long long)(rand_r(&seed) % 5000);
            snprintf(k, sizeof k, "k%06llu", x);
            snprintf(v, sizeof v, "v%d-%d", round, i);
            MDB_val K = {strlen(k), k}, V = {strlen(v), v};
            MUST(mdb_put(t, a, &K, &V, 0));
            snprintf(k, sizeof k, "g%03llu", x % 50);
            MDB_val K2 = {strlen(k), k};
            MUST(mdb_put(t, b, &K2, &V, 0));
            unsigned long long dv = (unsigned long long)rand_r(&seed);
            MDB_val V3 = {8, &dv};
            MUST(mdb_put(t, c, &K2, &V3, 0));
            if (i % 50 == 0) {
                unsigned long long ik = (unsigned long long)(rand_r(&seed) % 100);
                MDB_val K4 = {8, &ik}, V4 = {1000 + (size_t)(rand_r(&seed) % 29000), bigv};
                MUST(mdb_put(t, d, &K4, &V4, 0));
            }
            if (i % 3 == 0) {
                snprintf(k, sizeof k, "k%06d", rand_r(&seed) % 5000);
                MDB_val K5 = {strlen(k), k};
                int r = mdb_del(t, a, &K5, NULL);
                if (r != MDB_NOTFOUND)
                    MUST(r);
            }
        }
        MUST(mdb_txn_commit(t));
        if (!round_clean(env, "mixed ", round))
            break;
    }
    mdb_env_close(env);
}

/* A commit whose data write fails must leave the previous snapshot intact. */
static void t_failed_commit_keeps_snapshot(void)
{
    MDB_env *env;
    MUST(open_env(&env));
    for (unsigned long nth = 1; nth <= 3; nth++) {
        EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_WRITE, nth, EIO), 0);
        int rc = round_txn(env, 10 + (int)nth);
        EXPECT(rc != 0);
        mdbcore_fault_reset();
        EXPECT(env_clean(env, "failed commit"));
        /* and the env still works */
        EXPECT_EQ(round_txn(env, 20 + (int)nth), 0);
        EXPECT(env_clean(env, "commit after a failed one"));
    }
    /* a failed fdatasync too */
    EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_FDATASYNC, 1, EIO), 0);
    int rc = round_txn(env, 30);
    mdbcore_fault_reset();
    if (rc == 0)
        printf("  (note: commit succeeded although fdatasync failed)\n");
    EXPECT(env_clean(env, "failed sync"));
    mdb_env_close(env);
}

static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buf[65536];
    ssize_t n;
    int rc = in >= 0 && out >= 0 ? 0 : -1;
    while (!rc && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            rc = -1;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return rc;
}

/* Power loss during a commit, at every point of its write/sync log. */
static void t_crash_images(void)
{
    MDB_env *env;
    MUST(open_env(&env));
    MUST(round_txn(env, 0));
    MUST(round_txn(env, 1));
    char data[128], base[128], img[128];
    snprintf(data, sizeof data, "%s/data.mdb", dir);
    snprintf(base, sizeof base, "%s/base.img", dir);
    snprintf(img, sizeof img, "%s/crash.img", dir);
    EXPECT_EQ(copy_file(data, base), 0);
    uint64_t dev, ino;
    EXPECT_EQ(mdbcore_fault_file_id(data, &dev, &ino), 0);
    mdbcore_fault_record_start();
    int rc = round_txn(env, 2);
    mdbcore_fault_record_stop();
    EXPECT_EQ(rc, 0);
    size_t n = mdbcore_fault_log_count();
    EXPECT(n >= 2);
    int saw_new = 0, saw_old = 0, bad = 0;
    for (size_t upto = 0; upto <= n; upto++) {
        for (int mode = MDBCORE_CRASH_DROP_UNSYNCED; mode <= MDBCORE_CRASH_TORN; mode++) {
            for (uint64_t seed = 1; seed <= (mode >= MDBCORE_CRASH_SUBSET ? 3u : 1u); seed++) {
                EXPECT_EQ(copy_file(base, img), 0);
                int fd = open(img, O_RDWR);
                EXPECT_EQ(mdbcore_fault_crash_image(fd, dev, ino, upto, mode, seed, 4096, NULL,
                                                   NULL), 0);
                close(fd);
                txnid_t t = 0;
                long long p = image_problems(img, &t);
                if (p != 0) {
                    bad++;
                    fprintf(stderr, "crash image (log prefix %zu/%zu, mode %d, seed %llu): %lld "
                            "problems\n", upto, n, mode, (unsigned long long)seed, p);
                }
                if (t == 3)
                    saw_new = 1;
                if (t == 2)
                    saw_old = 1;
            }
        }
    }
    EXPECT_EQ(bad, 0);
    EXPECT(saw_old);
    EXPECT(saw_new);
    mdbcore_fault_reset();
    mdb_env_close(env);
}

/* A writer process is SIGKILLed inside its commit -- after its first page write, before
 * its data sync, or right after its meta write (the lock file's txnid is then stale) --
 * while we have the env open.  Our next write txn must recover the writer mutex
 * (EOWNERDEAD), the snapshot must check clean, and we must be able to commit on top. */
static void t_killed_writer(void)
{
    static const struct {
        int kind, after;
        const char *what;
    } points[] = {
        {MDBCORE_FAULT_WRITE, 1, "after the first page write"},
        {MDBCORE_FAULT_FDATASYNC, 0, "before the data sync"},
        {MDBCORE_FAULT_PWRITE, 1, "after the meta write"},
    };
    for (unsigned k = 0; k < sizeof points / sizeof points[0]; k++) {
        fresh_dir();
        int go[2], ready[2];
        if (pipe(go) || pipe(ready))
            exit(2);
        pid_t p = fork();
        if (p == 0) {
            MDB_env *e;
            char b;
            if (open_env(&e) || round_txn(e, 0) || round_txn(e, 1))
                _exit(2);
            if (write(ready[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
                _exit(3);
            mdbcore_fault_kill_nth(points[k].kind, 1, points[k].after);
            round_txn(e, 2);
            _exit(4); /* not reached */
        }
        char b;
        EXPECT_EQ(read(ready[0], &b, 1), 1);
        MDB_env *env;
        MUST(open_env(&env));
        EXPECT_EQ(write(go[1], "g", 1), 1);
        int st = 0;
        waitpid(p, &st, 0);
        EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        close(go[0]);
        close(go[1]);
        close(ready[0]);
        close(ready[1]);
        char when[96];
        snprintf(when, sizeof when, "writer killed %s", points[k].what);
        EXPECT(env_clean(env, when));
        int rc = round_txn(env, 3);
        EXPECT_EQ(rc, 0);
        if (rc)
            fprintf(stderr, "%s: next commit: %s\n", when, mdb_strerror(rc));
        EXPECT(env_clean(env, "commit after a killed writer"));
        MDB_envinfo info;
        MUST(mdb_env_info(env, &info));
        /* 2 commits of the child (+1 if its meta landed) + ours */
        EXPECT_EQ(info.me_last_txnid, 3 + (points[k].kind == MDBCORE_FAULT_PWRITE));
        mdb_env_close(env);
    }
}

static void fresh_dir(void)
{
    if (dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd))
            fprintf(stderr, "warning: %s failed\n", cmd);
    }
    strcpy(dir, "/tmp/mdb-ckengXXXXXX");
    if (!mkdtemp(dir))
        exit(2);
}

int main(void)
{
    fresh_dir();
    TEST_RUN(t_workload_checks_clean);
    fresh_dir();
    TEST_RUN(t_overflow_churn);
    fresh_dir();
    TEST_RUN(t_mixed_rounds);
    fresh_dir();
    TEST_RUN(t_failed_commit_keeps_snapshot);
    fresh_dir();
    TEST_RUN(t_crash_images);
    TEST_RUN(t_killed_writer);
    fresh_dir();
    rmdir(dir);
    TEST_DONE();
}
