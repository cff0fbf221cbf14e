/*
 * fuzz_datafile.c -- libFuzzer harness: the input is the whole content of a data.mdb
 * (issue 12, fuzzer 1).
 *
 * Each input is written to a private file (one directory per process under $TMPDIR or
 * /dev/shm) and then:
 *  1. the raw bytes go through the structural checker (mdbcore_snapshot_from_metas with
 *     the newest meta and with each meta forced, then mdbcore_check_snapshot);
 *  2. the file is opened read-only (MDB_RDONLY | MDB_NOSUBDIR | MDB_NOLOCK): mdb_env_stat,
 *     mdb_env_info, the main DB and every named DB it lists are read through cursors
 *     (FIRST/NEXT, LAST/PREV; for DUPSORT NEXT_NODUP, FIRST_DUP/NEXT_DUP, LAST_DUP/PREV_DUP,
 *     mdb_cursor_count; for DUPFIXED GET_MULTIPLE/NEXT_MULTIPLE), every key and value byte
 *     is read, keys are looked up again (mdb_get, SET_RANGE, GET_BOTH), mdb_stat, and the
 *     checker runs on the read txn (mdbcore_check_txn);
 *  3. the file is opened for writing (MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC) and one
 *     write txn puts, deletes and commits, which reads the free list and rewrites pages.
 * Every call may fail with an error code; a crash, a hang or a sanitizer report is a
 * finding.  Work per input is bounded (MAX_STEPS cursor calls per walk, MAX_DBS DBs).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbcore.h"

#include "fuzz_common.h"

#define MAX_STEPS 20000
#define MAX_DBS 24
#define MAX_LOOKUPS 64

static char g_path[512];
static volatile uint64_t g_sink; /* keeps the byte reads from being optimised away */

static void touch(const MDB_val *v)
{
    const unsigned char *p = v->mv_data;
    uint64_t h = v->mv_size;
    for (size_t i = 0; i < v->mv_size; i++)
        h = h * 31 + p[i];
    g_sink += h;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_work_path(g_path, sizeof g_path, "datafile", ".mdb");
    return 0;
}

static int write_file(const uint8_t *data, size_t size)
{
    return fuzz_write_file(g_path, data, size);
}

static void check_raw(const uint8_t *data, size_t size)
{
    for (int which = -1; which <= 1; which++) {
        mdbcore_snapshot in;
        memset(&in, 0, sizeof in);
        in.map = data;
        in.map_len = size;
        in.file_size = size;
        in.max_problems = 50;
        if (mdbcore_snapshot_from_metas(&in, which) != 0)
            continue;
        mdbcore_check_report rep;
        memset(&rep, 0, sizeof rep);
        mdbcore_check_snapshot(&in, &rep);
        mdbcore_check_report_free(&rep);
    }
}

static void lookups(MDB_txn *txn, MDB_dbi dbi, MDB_cursor *c, unsigned flags,
                    MDB_val *keys, MDB_val *vals, int n)
{
    for (int i = 0; i < n; i++) {
        MDB_val k = keys[i], v;
        if (mdb_get(txn, dbi, &k, &v) == 0)
            touch(&v);
        k = keys[i];
        if (mdb_cursor_get(c, &k, &v, MDB_SET_RANGE) == 0) {
            touch(&k);
            touch(&v);
        }
        k = keys[i];
        if (mdb_cursor_get(c, &k, &v, MDB_SET_KEY) == 0) {
            touch(&k);
            if (mdb_cursor_get(c, &k, &v, MDB_PREV) == 0)
                touch(&k);
        }
        if (flags & MDB_DUPSORT) {
            k = keys[i];
            v = vals[i];
            if (mdb_cursor_get(c, &k, &v, MDB_GET_BOTH) == 0)
                touch(&v);
            k = keys[i];
            v = vals[i];
            if (mdb_cursor_get(c, &k, &v, MDB_GET_BOTH_RANGE) == 0)
                touch(&v);
        }
    }
}

/* Read one DB every way a reader would. */
static void read_db(MDB_txn *txn, MDB_dbi dbi)
{
    MDB_stat st;
    unsigned flags = 0;
    mdb_stat(txn, dbi, &st);
    if (mdb_dbi_flags(txn, dbi, &flags) != 0)
        return;
    MDB_cursor *c;
    if (mdb_cursor_open(txn, dbi, &c) != 0)
        return;
    MDB_val k, v;
    /* Copies of a few keys/values for the lookups: they point into the map, which stays
     * valid for the txn. */
    MDB_val keys[MAX_LOOKUPS], vals[MAX_LOOKUPS];
    int nkeys = 0;
    int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
    for (int i = 0; rc == 0 && i < MAX_STEPS; i++) {
        touch(&k);
        touch(&v);
        if (nkeys < MAX_LOOKUPS && (i & 7) == 0) {
            keys[nkeys] = k;
            vals[nkeys++] = v;
        }
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
    for (int i = 0; rc == 0 && i < MAX_STEPS; i++) {
        touch(&k);
        touch(&v);
        rc = mdb_cursor_get(c, &k, &v, MDB_PREV);
    }
    if (flags & MDB_DUPSORT) {
        int steps = 0;
        rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
        while (rc == 0 && steps < MAX_STEPS) {
            size_t count = 0;
            mdb_cursor_count(c, &count);
            rc = mdb_cursor_get(c, &k, &v, MDB_FIRST_DUP);
            while (rc == 0 && ++steps < MAX_STEPS) {
                touch(&v);
                rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP);
            }
            rc = mdb_cursor_get(c, &k, &v, MDB_LAST_DUP);
            while (rc == 0 && ++steps < MAX_STEPS) {
                touch(&v);
                rc = mdb_cursor_get(c, &k, &v, MDB_PREV_DUP);
            }
            if (flags & MDB_DUPFIXED) {
                rc = mdb_cursor_get(c, &k, &v, MDB_GET_MULTIPLE);
                while (rc == 0 && ++steps < MAX_STEPS) {
                    touch(&v);
                    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_MULTIPLE);
                }
            }
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_NODUP);
            steps++;
        }
        rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
        for (int i = 0; rc == 0 && i < MAX_STEPS; i++)
            rc = mdb_cursor_get(c, &k, &v, MDB_PREV_NODUP);
    }
    lookups(txn, dbi, c, flags, keys, vals, nkeys);
    mdb_cursor_close(c);
}

static void read_env(void)
{
    MDB_env *env;
    if (mdb_env_create(&env) != 0)
        return;
    mdb_env_set_maxdbs(env, MAX_DBS + 2);
    if (mdb_env_open(env, g_path, MDB_RDONLY | MDB_NOSUBDIR | MDB_NOLOCK, 0600) != 0) {
        mdb_env_close(env);
        return;
    }
    MDB_stat est;
    MDB_envinfo info;
    mdb_env_stat(env, &est);
    mdb_env_info(env, &info);
    MDB_txn *txn;
    if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
        MDB_dbi main;
        if (mdb_dbi_open(txn, NULL, 0, &main) == 0) {
            read_db(txn, main);
            /* Named DBs: every main-DB key that is a plausible name. */
            char names[MAX_DBS][64];
            int nnames = 0;
            MDB_cursor *c;
            if (mdb_cursor_open(txn, main, &c) == 0) {
                MDB_val k, v;
                int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
                for (int i = 0; rc == 0 && i < MAX_STEPS && nnames < MAX_DBS; i++) {
                    if (k.mv_size > 0 && k.mv_size < 64 && !memchr(k.mv_data, 0, k.mv_size)) {
                        memcpy(names[nnames], k.mv_data, k.mv_size);
                        names[nnames++][k.mv_size] = 0;
                    }
                    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_NODUP);
                }
                mdb_cursor_close(c);
            }
            for (int i = 0; i < nnames; i++) {
                MDB_dbi dbi;
                if (mdb_dbi_open(txn, names[i], 0, &dbi) == 0)
                    read_db(txn, dbi);
            }
        }
        mdbcore_check_report rep;
        memset(&rep, 0, sizeof rep);
        mdbcore_check_txn(txn, &rep);
        mdbcore_check_report_free(&rep);
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
}

static void write_env(void)
{
    MDB_env *env;
    if (mdb_env_create(&env) != 0)
        return;
    mdb_env_set_maxdbs(env, 4);
    mdb_env_set_mapsize(env, 1u << 20);
    if (mdb_env_open(env, g_path, MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC, 0600) != 0) {
        mdb_env_close(env);
        return;
    }
    MDB_txn *txn;
    if (mdb_txn_begin(env, NULL, 0, &txn) == 0) {
        MDB_dbi main;
        int rc = mdb_dbi_open(txn, NULL, 0, &main);
        static char buf[5000];
        for (int i = 0; rc == 0 && i < 8; i++) {
            char kb[16];
            int kl = snprintf(kb, sizeof kb, "fz%d", i * 37 % 8);
            MDB_val k = {(size_t)kl, kb};
            MDB_val v = {i == 3 ? sizeof buf : (size_t)(i * 20), buf};
            rc = mdb_put(txn, main, &k, &v, 0);
        }
        if (rc == 0) {
            MDB_val k = {3, "fz2"};
            rc = mdb_del(txn, main, &k, NULL);
            if (rc == MDB_NOTFOUND)
                rc = 0;
        }
        if (rc == 0)
            mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
    }
    mdb_env_close(env);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_raw(data, size);
    if (write_file(data, size) != 0)
        return 0;
    read_env();
    write_env();
    return 0;
}
