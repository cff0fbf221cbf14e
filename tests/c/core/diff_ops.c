/*
 * diff_ops.c -- a deterministic stream of API calls whose every result (return code, key,
 * value digest) is printed, so the same program built against real LMDB and against mdb
 * must print the same text.  run.sh builds it twice (-llmdb and build/libmdbcore.a) and
 * diffs the outputs.
 *   diff_ops DIR [seed] [ops]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lmdb.h>

#include "diff_common.h"

static void show(const char *what, int rc, const MDB_val *k, const MDB_val *v)
{
    if (rc) {
        printf("%s rc=%d\n", what, rc);
        return;
    }
    printf("%s ok", what);
    if (k)
        printf(" k=%.*s", (int)k->mv_size, (char *)k->mv_data);
    show_value(v);
}

int main(int argc, char **argv)
{
    const char *dir = argv[1];
    long ops = seed_and_ops(argc, argv);
    static const char *const names[] = {"plain", "ints", "rev"};
    static const unsigned flags[] = {0, MDB_INTEGERKEY, MDB_REVERSEKEY};
    MDB_dbi dbi[3];
    MDB_env *env = open_env(dir, 3, names, flags, dbi);
    if (!env)
        return 2;
    MDB_txn *txn;
    static char vb[70200];
    for (size_t i = 0; i < sizeof(vb); i++)
        vb[i] = (char)(i * 13 + 5);
    MDB_cursor *c[3];
    mdb_txn_begin(env, NULL, 0, &txn);
    for (int d = 0; d < 3; d++)
        mdb_cursor_open(txn, dbi[d], &c[d]);
    for (long n = 0; n < ops; n++) {
        int d = rnd() % 3;
        char kb[32];
        unsigned long long ik = rnd() % 2000;
        MDB_val k, v;
        if (d == 1) {
            k.mv_size = 8;
            k.mv_data = kb;
            memcpy(kb, &ik, 8);
        } else {
            snprintf(kb, sizeof(kb), "k%04llu%s", ik, (ik % 3) ? "" : "-long-suffix");
            k.mv_size = strlen(kb);
            k.mv_data = kb;
        }
        v.mv_size = (rnd() % 30) ? rnd() % 300 : rnd() % 70000;
        v.mv_data = vb + rnd() % 100;
        unsigned r = rnd() % 100;
        int rc;
        MDB_val ck, cv;
        char what[64];
        if (r < 30) {
            unsigned fl = (unsigned[]){0, 0, MDB_NOOVERWRITE, MDB_APPEND}[rnd() % 4];
            rc = mdb_put(txn, dbi[d], &k, &v, fl);
            snprintf(what, sizeof(what), "put%u d%d %.*s", fl, d, d == 1 ? 0 : (int)k.mv_size, (char *)k.mv_data);
            show(what, rc, NULL, rc == MDB_KEYEXIST && fl == MDB_NOOVERWRITE ? &v : NULL);
        } else if (r < 40) {
            rc = mdb_cursor_put(c[d], &k, &v, 0);
            snprintf(what, sizeof(what), "cput d%d %.*s", d, d == 1 ? 0 : (int)k.mv_size, (char *)k.mv_data);
            show(what, rc, NULL, NULL);
        } else if (r < 52) {
            rc = mdb_del(txn, dbi[d], &k, NULL);
            snprintf(what, sizeof(what), "del d%d %.*s", d, d == 1 ? 0 : (int)k.mv_size, (char *)k.mv_data);
            show(what, rc, NULL, NULL);
        } else if (r < 57) {
            rc = mdb_cursor_del(c[d], 0);
            snprintf(what, sizeof(what), "cdel d%d", d);
            show(what, rc, NULL, NULL);
        } else if (r < 62) {
            rc = mdb_get(txn, dbi[d], &k, &cv);
            snprintf(what, sizeof(what), "get d%d %.*s", d, d == 1 ? 0 : (int)k.mv_size, (char *)k.mv_data);
            show(what, rc, NULL, &cv);
        } else {
            static const MDB_cursor_op opsl[] = {MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_NEXT,
                                                 MDB_NEXT, MDB_PREV, MDB_PREV, MDB_GET_CURRENT,
                                                 MDB_SET, MDB_SET_KEY, MDB_SET_RANGE,
                                                 MDB_NEXT_NODUP, MDB_PREV_NODUP};
            MDB_cursor_op op = opsl[rnd() % (sizeof(opsl) / sizeof(opsl[0]))];
            ck = k;
            rc = mdb_cursor_get(c[d], &ck, &cv, op);
            snprintf(what, sizeof(what), "cget%d d%d %.*s", (int)op, d, d == 1 ? 0 : (int)k.mv_size, (char *)k.mv_data);
            show(what, rc, d == 1 ? NULL : &ck, &cv);
            /* where a miss leaves the cursor depends on page layout, which differs between
             * implementations: put it somewhere well defined */
            if (rc == MDB_NOTFOUND && (op == MDB_SET || op == MDB_SET_KEY))
                mdb_cursor_get(c[d], &ck, &cv, MDB_FIRST);
        }
        if (rnd() % 500 == 0) {
            rc = mdb_txn_commit(txn);
            printf("commit rc=%d\n", rc);
            mdb_txn_begin(env, NULL, 0, &txn);
            for (int e = 0; e < 3; e++)
                mdb_cursor_open(txn, dbi[e], &c[e]);
        }
    }
    mdb_txn_commit(txn);
    show_entries(env, dbi, 3);
    mdb_env_close(env);
    return 0;
}
