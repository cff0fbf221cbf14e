/*
 * fuzz_lockfile.c -- libFuzzer harness: the input is the whole content of a lock.mdb
 * (issue 12, fuzzer 2): its head (magic, format, reader-table mutex, txnid, numreaders,
 * writer mutex) and its reader slots (txnid, pid, tid).
 *
 * The environment directory (one per process, under $MDB_FUZZ_TMP, /dev/shm or /tmp)
 * holds a valid small data.mdb, written once by our library and restored before every
 * input.  For each input, lock.mdb is rewritten with the input bytes, and the harness
 * holds an open-file-description read lock on byte 0 of it, which conflicts with the
 * engine's own fcntl lock even inside this process: the engine then sees another user of
 * the environment and adopts the file as it is, instead of initialising it as the first
 * opener would.  Then: mdb_env_open, a read txn (mdb_get, mdb_reader_list,
 * mdb_reader_check), a write txn (put, del, commit), another read txn, mdb_env_close.
 * Any call may fail with an error code; a crash, a hang (libFuzzer -timeout) or a
 * sanitizer report is a finding.  A mutex whose bytes say "locked" by no live thread must
 * give MDB_PANIC within a few seconds (lockfile.c), not a wait for ever.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lmdb.h"

#include "fuzz_common.h"

static char g_dir[512], g_data_path[600], g_lock_path[600];
static unsigned char *g_data;
static size_t g_data_len;

#define DIE(...)                                                                           \
    do {                                                                                   \
        fprintf(stderr, "fuzz_lockfile: " __VA_ARGS__);                                    \
        exit(2);                                                                           \
    } while (0)

static void make_data_file(void)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    int rc = mdb_env_create(&env);
    if (!rc)
        rc = mdb_env_set_mapsize(env, 1u << 20);
    if (!rc)
        rc = mdb_env_open(env, g_dir, 0, 0600);
    if (!rc)
        rc = mdb_txn_begin(env, NULL, 0, &txn);
    if (!rc)
        rc = mdb_dbi_open(txn, NULL, 0, &dbi);
    for (int i = 0; !rc && i < 20; i++) {
        char kb[16];
        MDB_val k = {(size_t)snprintf(kb, sizeof kb, "key%02d", i), kb};
        MDB_val v = {3, "val"};
        rc = mdb_put(txn, dbi, &k, &v, 0);
    }
    if (!rc)
        rc = mdb_txn_commit(txn);
    if (rc)
        DIE("cannot write the data file: %s\n", mdb_strerror(rc));
    mdb_env_close(env);

    FILE *f = fopen(g_data_path, "rb");
    if (!f)
        DIE("cannot read %s\n", g_data_path);
    fseek(f, 0, SEEK_END);
    g_data_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    g_data = malloc(g_data_len);
    if (!g_data || fread(g_data, 1, g_data_len, f) != g_data_len)
        DIE("cannot read %s\n", g_data_path);
    fclose(f);
    unlink(g_lock_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_work_path(g_dir, sizeof g_dir, "lockfile", "");
    snprintf(g_data_path, sizeof g_data_path, "%s/data.mdb", g_dir);
    snprintf(g_lock_path, sizeof g_lock_path, "%s/lock.mdb", g_dir);
    if (mkdir(g_dir, 0700) != 0 && errno != EEXIST)
        DIE("mkdir %s: %s\n", g_dir, strerror(errno));
    make_data_file();
    return 0;
}

static int reader_msg(const char *msg, void *ctx)
{
    (void)ctx;
    return msg[0] == 0; /* read every byte of the line */
}

static void run_env(void)
{
    MDB_env *env;
    if (mdb_env_create(&env) != 0)
        return;
    if (mdb_env_open(env, g_dir, 0, 0600) != 0) {
        mdb_env_close(env);
        return;
    }
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_val k = {5, "key07"}, v;
    if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
        if (mdb_dbi_open(txn, NULL, 0, &dbi) == 0)
            mdb_get(txn, dbi, &k, &v);
        mdb_reader_list(env, reader_msg, NULL);
        int dead = 0;
        mdb_reader_check(env, &dead);
        mdb_txn_abort(txn);
    }
    if (mdb_txn_begin(env, NULL, 0, &txn) == 0) {
        int rc = mdb_dbi_open(txn, NULL, 0, &dbi);
        static char buf[300];
        for (int i = 0; rc == 0 && i < 30; i++) {
            char kb[16];
            MDB_val pk = {(size_t)snprintf(kb, sizeof kb, "new%02d", i), kb};
            MDB_val pv = {sizeof buf, buf};
            rc = mdb_put(txn, dbi, &pk, &pv, 0);
        }
        if (rc == 0)
            rc = mdb_del(txn, dbi, &k, NULL);
        if (rc == 0)
            mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
    }
    if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
        MDB_val k2 = {5, "new03"};
        if (mdb_dbi_open(txn, NULL, 0, &dbi) == 0)
            mdb_get(txn, dbi, &k2, &v);
        mdb_txn_abort(txn);
    }
    int dead = 0;
    mdb_reader_check(env, &dead);
    mdb_env_close(env);
}

/* A mutex locked by a thread that exists is, to any engine, a writer at work: waiting for it
 * is right, and would read as a hang here.  So a lock word naming a live thread (the fuzzer
 * stumbles on small ids such as 1) is pointed at an id no thread can have (above pid_max);
 * every other lock word is left as the input has it. */
static void retarget_live_owner(uint8_t *buf, size_t size, size_t off)
{
    if (size < off + 4)
        return;
    uint32_t word;
    memcpy(&word, buf + off, 4);
    int tid = (int)(word & 0x3fffffff);
    if (tid > 0 && (kill(tid, 0) == 0 || errno != ESRCH)) {
        word = (word & ~0x3fffffffu) | 0x3ffffff0u;
        memcpy(buf + off, &word, 4);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t lock[1 << 16];
    if (size > sizeof lock)
        size = sizeof lock;
    memcpy(lock, data, size);
    retarget_live_owner(lock, size, 8);  /* reader-table mutex */
    retarget_live_owner(lock, size, 64); /* writer mutex */
    if (fuzz_write_file(g_data_path, g_data, g_data_len) != 0)
        DIE("cannot restore %s\n", g_data_path);
    if (fuzz_write_file(g_lock_path, lock, size) != 0)
        DIE("cannot write %s\n", g_lock_path);
    /* Another "user" of the environment: an OFD read lock on byte 0. */
    int fd = open(g_lock_path, O_RDWR);
    if (fd < 0)
        DIE("cannot open %s\n", g_lock_path);
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_RDLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 0;
    fl.l_len = 1;
    if (fcntl(fd, F_OFD_SETLK, &fl) != 0)
        DIE("F_OFD_SETLK: %s\n", strerror(errno));
    run_env();
    close(fd);
    return 0;
}
