/*
 * diff_read.c -- read-only differential test for sorted-duplicate databases: a seeded
 * stream of cursor operations over every named DB of an existing environment (written by
 * real LMDB), printing each result.  Built against real liblmdb and against mdb, the
 * outputs must be identical.
 *   diff_read DIR [seed] [ops]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "diff_common.h"

int main(int argc, char **argv)
{
    long ops = seed_and_ops(argc, argv);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi main_dbi, dbis[16];
    int ndb = 0;
    mdb_env_create(&env);
    mdb_env_set_maxdbs(env, 16);
    if (mdb_env_open(env, argv[1], MDB_RDONLY, 0644))
        return 2;
    mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    mdb_dbi_open(txn, NULL, 0, &main_dbi);
    MDB_cursor *c;
    MDB_val k, v;
    mdb_cursor_open(txn, main_dbi, &c);
    /* sample keys of every DB to aim SET/GET_BOTH at */
    static MDB_val samples[16][64];
    while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0 && ndb < 16) {
        char name[256];
        if (k.mv_size >= sizeof(name))
            continue;
        memcpy(name, k.mv_data, k.mv_size);
        name[k.mv_size] = 0;
        if (mdb_dbi_open(txn, name, 0, &dbis[ndb]) == 0)
            ndb++;
    }
    mdb_cursor_close(c);
    MDB_cursor *cur[16];
    for (int d = 0; d < ndb; d++) {
        mdb_cursor_open(txn, dbis[d], &cur[d]);
        int n = 0;
        while (n < 64 && mdb_cursor_get(cur[d], &k, &v, MDB_NEXT) == 0)
            if (rnd() % 8 == 0) {
                samples[d][n].mv_size = k.mv_size;
                samples[d][n].mv_data = malloc(k.mv_size + v.mv_size + 1);
                memcpy(samples[d][n].mv_data, k.mv_data, k.mv_size);
                memcpy((char *)samples[d][n].mv_data + k.mv_size, v.mv_data, v.mv_size);
                /* stash the value length after the key */
                samples[d][n].mv_size |= v.mv_size << 16;
                n++;
            }
        while (n < 64) {
            samples[d][n] = samples[d][n ? rnd() % n : 0];
            n++;
        }
        mdb_cursor_get(cur[d], &k, &v, MDB_FIRST);
    }
    for (long i = 0; i < ops; i++) {
        int d = rnd() % ndb;
        MDB_val s = samples[d][rnd() % 64];
        size_t kl = s.mv_size & 0xffff, vl = s.mv_size >> 16;
        k.mv_size = kl;
        k.mv_data = s.mv_data;
        v.mv_size = vl;
        v.mv_data = (char *)s.mv_data + kl;
        static const MDB_cursor_op opsl[] = {
            MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_NEXT, MDB_NEXT, MDB_PREV, MDB_PREV,
            MDB_NEXT_DUP, MDB_NEXT_DUP, MDB_PREV_DUP, MDB_NEXT_NODUP, MDB_PREV_NODUP,
            /* FIRST_DUP/LAST_DUP left out: whether they clear the end mark changed between
             * LMDB 0.9.24 (the system library) and 0.9.36; we follow the newer one */
            MDB_GET_CURRENT, MDB_SET, MDB_SET_KEY, MDB_SET_RANGE,
            MDB_GET_BOTH, MDB_GET_BOTH_RANGE, MDB_GET_MULTIPLE, MDB_NEXT_MULTIPLE,
            MDB_PREV_MULTIPLE};
        MDB_cursor_op op = opsl[rnd() % (sizeof(opsl) / sizeof(opsl[0]))];
        static unsigned char probe[1024];
        if (op == MDB_GET_BOTH_RANGE && vl && vl <= sizeof(probe) && rnd() % 2) {
            /* a probe just above a stored value: lands between values */
            memcpy(probe, v.mv_data, vl);
            probe[vl - 1]++;
            v.mv_data = probe;
        }
        int rc;
        if (rnd() % 20 == 0) {
            size_t cnt = 0;
            rc = mdb_cursor_count(cur[d], &cnt);
            printf("count d%d rc=%d n=%zu\n", d, rc, rc ? 0 : cnt);
            continue;
        }
        rc = mdb_cursor_get(cur[d], &k, &v, op);
        if (rc) {
            printf("op%d d%d rc=%d\n", (int)op, d, rc);
            if (op == MDB_SET || op == MDB_SET_KEY || op == MDB_GET_BOTH ||
                op == MDB_GET_BOTH_RANGE)
                mdb_cursor_get(cur[d], &k, &v, MDB_FIRST); /* layout-dependent state */
        } else {
            printf("op%d d%d ok k=%zu/%08x v=%zu/%08x\n", (int)op, d, k.mv_size, digest(&k),
                   v.mv_size, digest(&v));
        }
    }
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return 0;
}
