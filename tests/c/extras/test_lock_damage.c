/*
 * test_lock_damage.c -- a damaged lock.mdb gives an error, never a hang (issue 12, found by
 * fuzz_lockfile).  The two shared mutexes of the lock file are rewritten in place while
 * an environment has it open, as a stray write or a bad disk would leave them:
 *   - "locked" by a thread id no thread can have (above pid_max), which no unlock will
 *     ever follow: a write txn (writer mutex) and a first read txn (reader-table mutex);
 *   - bytes of another mutex kind (not robust, not process-shared) "locked" by a live
 *     thread (pid 1), which a plain futex wait would never see released;
 *   - garbage bytes ("0000..." as text) on which glibc's own lock asserts and aborts;
 *   - "locked" by this very thread, which does not hold it: glibc would wait for ever;
 *   - the waiters bit alone, with no owner: glibc waits for ever for a word of 0.
 * Each must give MDB_PANIC within a few seconds (the engine re-checks the owner once a
 * second while it waits).  Then the data must be intact: with lock.mdb removed, the
 * environment opens and reads every record.  A live owner is waited for: a second
 * thread holding a write txn for 2.5 s delays, and does not fail, a writer in this one.
 *   test_lock_damage [DIR]   (default $TMPDIR/lock-damage)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mdbtest.h"
#include "lmdb.h"

#define NKEYS 500
/* byte offsets in lock.mdb (format.h): reader-table mutex at 8, writer mutex at 64; in a
 * glibc mutex the lock word is at +0 and the kind at +16 */
#define RMUTEX 8
#define WMUTEX 64

static char dir[4096], lockpath[4200];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static MDB_env *open_env(void)
{
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 16u << 20));
    CHECK(mdb_env_open(env, dir, MDB_NOTLS, 0644));
    return env;
}

static void fill(void)
{
    MDB_env *env = open_env();
    MDB_txn *txn;
    MDB_dbi dbi = mdbtest_begin_main(env, &txn);
    for (int i = 0; i < NKEYS; i++) {
        char kb[16];
        MDB_val k = {(size_t)snprintf(kb, sizeof kb, "k%05d", i), kb}, v = k;
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);
}

/* Overwrite 4 bytes of lock.mdb at `off` (seen at once by every mapping of it). */
static void poke(long off, uint32_t value)
{
    FILE *f = fopen(lockpath, "r+b");
    if (!f || fseek(f, off, SEEK_SET) != 0 || fwrite(&value, 4, 1, f) != 1)
        FAIL("cannot write %s", lockpath);
    fclose(f);
}

static uint32_t peek(long off)
{
    uint32_t value = 0;
    FILE *f = fopen(lockpath, "rb");
    if (!f || fseek(f, off, SEEK_SET) != 0 || fread(&value, 4, 1, f) != 1)
        FAIL("cannot read %s", lockpath);
    fclose(f);
    return value;
}

static void expect_intact(void)
{
    unlink(lockpath);
    MDB_env *env = open_env();
    MDB_txn *txn;
    MDB_dbi dbi = mdbtest_read_main(env, &txn);
    MDB_stat st;
    CHECK(mdb_stat(txn, dbi, &st));
    if (st.ms_entries != NKEYS)
        FAIL("after the damage: %zu records, want %d", st.ms_entries, NKEYS);
    char kb[16];
    MDB_val k = {(size_t)snprintf(kb, sizeof kb, "k%05d", NKEYS - 1), kb}, v;
    CHECK(mdb_get(txn, dbi, &k, &v));
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

/* Damage one mutex of an open environment, then start the txn that needs it. */
static void damaged(const char *what, long mutex_off, uint32_t word, int wrong_kind,
                    uint32_t kind_bytes, unsigned txn_flags)
{
    MDB_env *env = open_env();
    uint32_t kind = peek(mutex_off + 16);
    if ((kind & 0x90) != 0x90)
        FAIL("%s: the mutex kind read back is %#x, not a robust shared mutex", what, kind);
    poke(mutex_off, word);
    if (wrong_kind)
        poke(mutex_off + 16, kind_bytes);
    MDB_txn *txn;
    double t0 = now();
    int rc = mdb_txn_begin(env, NULL, txn_flags, &txn);
    double waited = now() - t0;
    if (rc == 0)
        FAIL("%s: the txn began on a damaged mutex", what);
    if (rc != MDB_PANIC)
        FAIL("%s: %s, want MDB_PANIC", what, mdb_strerror(rc));
    if (waited > 5.0)
        FAIL("%s: %.1f s before the error", what, waited);
    printf("%s: MDB_PANIC after %.1f s\n", what, waited);
    mdb_env_close(env);
    expect_intact();
}

struct holder {
    MDB_env *env;
    volatile int holding;
};

static void *hold_writer(void *arg)
{
    struct holder *h = arg;
    MDB_txn *txn;
    CHECK(mdb_txn_begin(h->env, NULL, 0, &txn));
    h->holding = 1;
    usleep(2500 * 1000);
    mdb_txn_abort(txn);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    if (argc > 1)
        snprintf(dir, sizeof dir, "%s", argv[1]);
    else
        snprintf(dir, sizeof dir, "%s/lock-damage", tmp && *tmp ? tmp : "/tmp");
    mkdir(dir, 0755);
    snprintf(lockpath, sizeof lockpath, "%s/lock.mdb", dir);
    char datapath[4200];
    snprintf(datapath, sizeof datapath, "%s/data.mdb", dir);
    unlink(datapath);
    unlink(lockpath);
    fill();

    damaged("writer mutex held by no thread", WMUTEX, 0x3ffffff0u, 0, 0, 0);
    damaged("reader-table mutex held by no thread", RMUTEX, 0x3ffffff0u, 0, 0, MDB_RDONLY);
    damaged("writer mutex of the wrong kind", WMUTEX, 1, 1, 0, 0);
    /* bytes glibc itself would abort on (found by fuzz_lockfile): refused before any
     * pthread call */
    damaged("writer mutex of garbage bytes", WMUTEX, 0x30303030u, 1, 0x30303030u, 0);
    damaged("reader-table mutex of garbage bytes", RMUTEX, 0x30303030u, 1, 0x30303030u,
            MDB_RDONLY);
    /* a lock word naming the caller itself (the fuzz_lockfile campaign's inputs reach such
     * words): waiting would be a self-deadlock, never ended by the one-second re-checks */
    uint32_t self = (uint32_t)syscall(SYS_gettid);
    damaged("writer mutex 'held' by the calling thread", WMUTEX, self, 0, 0, 0);
    damaged("reader-table mutex 'held' by the calling thread", RMUTEX, self, 0, 0, MDB_RDONLY);
    damaged("writer mutex with waiters and no owner", WMUTEX, 0x80000000u, 0, 0, 0);
    damaged("reader-table mutex with waiters and no owner", RMUTEX, 0x80000000u, 0, 0,
            MDB_RDONLY);

    /* a live writer in another thread is waited for, past the one-second re-checks */
    MDB_env *env = open_env();
    struct holder h = {env, 0};
    pthread_t th;
    if (pthread_create(&th, NULL, hold_writer, &h) != 0)
        FAIL("pthread_create");
    while (!h.holding)
        usleep(1000);
    MDB_txn *txn;
    double t0 = now();
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    double waited = now() - t0;
    mdb_txn_abort(txn);
    pthread_join(th, NULL);
    mdb_env_close(env);
    if (waited < 2.0)
        FAIL("the writer did not wait for the live one (%.1f s)", waited);
    printf("live writer in another thread: waited %.1f s, then began\n", waited);
    expect_intact();
    printf("test_lock_damage: ok\n");
    return 0;
}
