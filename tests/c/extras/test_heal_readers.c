/*
 * test_heal_readers.c -- readers that heal.  A reader process that is
 * SIGKILLed while it holds a snapshot must not make data.mdb grow without bound: the
 * writer itself finds the dead slot and clears it, with no mdb_reader_check call.  The
 * same run with healing switched off (MDBCORE_MUT_NO_HEAL) must grow past 2x, so the
 * figure can fail.  A live long reader keeps its slot and its snapshot, is tested for
 * liveness at most about once a second, and is reported by mdbcore_reader_info_list
 * with its age and the pages it holds back.
 *   test_heal_readers [DIR]   (default $TMPDIR/heal-readers)
 */
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

#define NKEYS 2000
#define VLEN 100

static char base[4096];

static MDB_env *open_env(const char *dir)
{
    return mdbtest_open_dir(dir, 256u << 20, 0, 0);
}

static void put_round(MDB_env *env, int from, int n, int gen)
{
    for (int i = from; i < from + n; i++) {
        MDB_txn *txn;
        char kb[16], vb[VLEN];
        snprintf(kb, sizeof kb, "k%06d", i % NKEYS);
        memset(vb, 'a' + gen % 26, sizeof vb);
        snprintf(vb, sizeof vb, "v%d-%d", gen, i);
        MDB_val k = {strlen(kb), kb}, v = {sizeof vb, vb};
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        CHECK(mdb_put(txn, 1, &k, &v, 0));
        CHECK(mdb_txn_commit(txn));
    }
}

static void fill(MDB_env *env)
{
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (int i = 0; i < NKEYS; i++) {
        char kb[16], vb[VLEN];
        snprintf(kb, sizeof kb, "k%06d", i);
        memset(vb, 'x', sizeof vb);
        MDB_val k = {strlen(kb), kb}, v = {sizeof vb, vb};
        CHECK(mdb_put(txn, 1, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
}

static long long file_size(const char *dir)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/data.mdb", dir);
    if (stat(p, &st))
        FAIL("stat %s", p);
    return (long long)st.st_size;
}

/* A child process that takes a snapshot, says so on `up`, then (live = 1) waits for a
 * byte on `down` and checks every value is still the one of its snapshot. */
static pid_t reader_child(const char *dir, int live, int *up_rd, int *down_wr)
{
    int up[2], down[2];
    if (pipe(up) || pipe(down))
        FAIL("pipe");
    pid_t pid = fork();
    if (pid < 0)
        FAIL("fork");
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        MDB_env *env;
        MDB_txn *txn;
        if (mdb_env_create(&env) || mdb_env_open(env, dir, MDB_RDONLY, 0644) ||
            mdb_txn_begin(env, NULL, MDB_RDONLY, &txn))
            _exit(10);
        if (write(up[1], "r", 1) != 1)
            _exit(11);
        char c;
        if (!live) {
            pause();
            _exit(0);
        }
        if (read(down[0], &c, 1) != 1)
            _exit(12);
        for (int i = 0; i < NKEYS; i++) {
            char kb[16], want[VLEN];
            snprintf(kb, sizeof kb, "k%06d", i);
            memset(want, 'x', sizeof want);
            MDB_val k = {strlen(kb), kb}, v;
            if (mdb_get(txn, 1, &k, &v) || v.mv_size != VLEN || memcmp(v.mv_data, want, VLEN))
                _exit(13);
        }
        mdb_txn_abort(txn);
        mdb_env_close(env);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    char c;
    if (read(up[0], &c, 1) != 1)
        FAIL("reader child did not start");
    *up_rd = up[0];
    *down_wr = down[1];
    return pid;
}

/* The must-show scenario, scaled down: returns size after `total` txns / size after `first`. */
static double killed_reader_growth(const char *dir, int first, int total, uint64_t *healed)
{
    MDB_env *env = open_env(dir);
    fill(env);
    int up, down;
    pid_t pid = reader_child(dir, 0, &up, &down);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(up);
    close(down);
    put_round(env, 0, first, 1);
    long long s1 = file_size(dir);
    put_round(env, first, total - first, 1);
    long long s2 = file_size(dir);
    *healed = mdbcore_env_healed_readers(env, NULL);
    mdb_env_close(env);
    printf("  after %d txns %.1f MiB, after %d txns %.1f MiB (x%.2f), healed slots %llu\n",
           first, s1 / 1048576.0, total, s2 / 1048576.0, (double)s2 / s1,
           (unsigned long long)*healed);
    return (double)s2 / (double)s1;
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s", argc > 1 ? argv[1] : tmp ? tmp : "/tmp");
    mkdir(base, 0755);
    char d1[4200], d2[4200], d3[4200];
    snprintf(d1, sizeof d1, "%s/heal-on", base);
    snprintf(d2, sizeof d2, "%s/heal-off", base);
    snprintf(d3, sizeof d3, "%s/heal-live", base);

    /* 1. killed reader, healing on: stays within 2x */
    uint64_t healed;
    printf("killed reader, healing on:\n");
    double g = killed_reader_growth(d1, 300, 3000, &healed);
    if (g > 2.0)
        FAIL("data.mdb grew x%.2f with a dead reader (healing on): want <= 2", g);
    if (healed != 1)
        FAIL("healed %llu slots, want 1", (unsigned long long)healed);

    /* 2. the same with healing off must grow (the check above can fail) */
    printf("killed reader, healing off (mutation):\n");
    int old = mdbcore_set_mutation(MDBCORE_MUT_NO_HEAL);
    g = killed_reader_growth(d2, 300, 3000, &healed);
    mdbcore_set_mutation(old);
    if (g <= 2.0)
        FAIL("without healing data.mdb grew only x%.2f: the scenario does not pin pages", g);
    if (healed != 0)
        FAIL("healed %llu slots with healing off", (unsigned long long)healed);

    /* 3. a live long reader: kept, its snapshot intact, tested rarely, reported */
    MDB_env *env = open_env(d3);
    fill(env);
    int up, down;
    pid_t pid = reader_child(d3, 1, &up, &down);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    put_round(env, 0, 3000, 2);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    uint64_t checks = 0;
    healed = mdbcore_env_healed_readers(env, &checks);
    printf("live reader: 3000 txns in %.2f s, %llu liveness tests, %llu healed\n", secs,
           (unsigned long long)checks, (unsigned long long)healed);
    if (healed)
        FAIL("a live reader's slot was cleared");
    if (checks < 1 || (double)checks > secs + 2)
        FAIL("%llu liveness tests in %.2f s: want about one a second",
             (unsigned long long)checks, secs);
    mdbcore_reader_info info[8];
    size_t n = 0;
    CHECK(mdbcore_reader_info_list(env, info, 8, &n, 0));
    int found = 0;
    for (size_t i = 0; i < n && i < 8; i++) {
        if (info[i].pid != (uint32_t)pid)
            continue;
        found = 1;
        printf("reader %u: txnid %llu age %llu pages held %llu\n", info[i].pid,
               (unsigned long long)info[i].txnid, (unsigned long long)info[i].age,
               (unsigned long long)info[i].pages_held);
        if (info[i].age != 3000)
            FAIL("age %llu, want 3000", (unsigned long long)info[i].age);
        if (info[i].pages_held < 3000)
            FAIL("pages held %llu, want >= 3000 (one leaf per txn at least)",
                 (unsigned long long)info[i].pages_held);
    }
    if (!found)
        FAIL("the live reader is not listed");
    /* while this thread holds a read txn, the list still works (own slot) */
    MDB_txn *rt;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
    CHECK(mdbcore_reader_info_list(env, info, 8, &n, 0));
    for (size_t i = 0; i < n && i < 8; i++)
        if (info[i].pid == (uint32_t)pid && info[i].pages_held < 3000)
            FAIL("own-slot listing lost the pages held");
    /* ... and in the thread's own slot, which is busy: pages unknown, no error */
    CHECK(mdbcore_reader_info_list(env, info, 8, &n, MDBCORE_RINFO_THREAD_SLOT));
    for (size_t i = 0; i < n && i < 8; i++)
        if (info[i].txnid != (txnid_t)-1 && info[i].pages_held != UINT64_MAX)
            FAIL("busy thread slot: pages_held should be unknown");
    mdb_txn_abort(rt);
    if (write(down, "g", 1) != 1)
        FAIL("pipe");
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        FAIL("live reader's snapshot changed under it (status %d)", st);
    close(up);
    close(down);
    mdb_env_close(env);
    printf("test_heal_readers: ok\n");
    return 0;
}
