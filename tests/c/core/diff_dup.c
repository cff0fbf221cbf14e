/*
 * diff_dup.c -- differential test of sorted duplicates, reads and writes: a seeded stream
 * of puts (NODUPDATA, NOOVERWRITE, APPENDDUP), deletes of one or all values, cursor deletes
 * and cursor moves over a DUPSORT and a DUPFIXED|INTEGERDUP database, each result printed.
 * Built against real liblmdb and against mdb, the outputs must be identical.
 *   diff_dup DIR [seed] [ops] [content]
 * "content" restricts the stream to mdb_put/mdb_del/mdb_get and prints a digest of every
 * database at each commit: it checks what is stored, independent of cursor-state details
 * (where LMDB 0.9.24 itself still has bugs with several cursors on one DUPSORT DB).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lmdb.h>

#include "diff_common.h"

static void show(const char *what, int d, int rc, const MDB_val *k, const MDB_val *v)
{
    if (rc) {
        printf("%s d%d rc=%d\n", what, d, rc);
        return;
    }
    printf("%s d%d ok", what, d);
    if (k)
        printf(" k=%zu/%08x", k->mv_size, digest(k));
    show_value(v);
}

int main(int argc, char **argv)
{
    const char *dir = argv[1];
    long ops = seed_and_ops(argc, argv);
    int content = argc > 4 && !strcmp(argv[4], "content");
    static const char *const names[] = {"dups", "fixed"};
    static const unsigned flags[] = {MDB_DUPSORT, MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP};
    MDB_dbi dbi[2];
    MDB_env *env = open_env(dir, 2, names, flags, dbi);
    if (!env)
        return 2;
    MDB_txn *txn;
    MDB_cursor *c[2];
    mdb_txn_begin(env, NULL, 0, &txn);
    for (int d = 0; d < 2; d++)
        mdb_cursor_open(txn, dbi[d], &c[d]);
    char kb[32], vb[600];
    unsigned iv;
    for (long n = 0; n < ops; n++) {
        int d = rnd() % 2;
        unsigned key = rnd() % 60;
        /* a few keys get many values so sub-pages turn into sub-trees */
        unsigned spread = (key < 5) ? 3000 : (key < 20 ? 40 : 4);
        snprintf(kb, sizeof(kb), "key%03u", key);
        MDB_val k = {strlen(kb), kb}, v;
        if (d == 0) {
            unsigned x = rnd() % spread;
            int len = snprintf(vb, sizeof(vb), "val%05u", x);
            size_t extra = (x * 7) % 90;
            memset(vb + len, 'a' + x % 26, extra);
            v.mv_size = (size_t)len + extra;
            v.mv_data = vb;
        } else {
            iv = rnd() % spread * 2654435761u;
            v.mv_size = sizeof(iv);
            v.mv_data = &iv;
        }
        unsigned r = rnd() % 100;
        if (content && r >= 50 && r < 60)
            r = 5; /* no cursor writes: plain puts instead */
        int rc;
        MDB_val ck, cv;
        char what[48];
        if (r < 40) {
            unsigned fl = (unsigned[]){0, 0, 0, MDB_NODUPDATA, MDB_NOOVERWRITE, MDB_APPENDDUP}[rnd() % 6];
            if (rnd() % 2 || content) {
                rc = mdb_put(txn, dbi[d], &k, &v, fl);
                snprintf(what, sizeof(what), "put%x", fl);
            } else {
                rc = mdb_cursor_put(c[d], &k, &v, fl);
                snprintf(what, sizeof(what), "cput%x", fl);
            }
            show(what, d, rc, NULL, rc == MDB_KEYEXIST && fl == MDB_NOOVERWRITE ? &v : NULL);
        } else if (r < 50) {
            rc = mdb_del(txn, dbi[d], &k, (rnd() % 4) ? &v : NULL);
            show("del", d, rc, NULL, NULL);
        } else if (r < 56) {
            unsigned fl = (rnd() % 5) ? 0 : MDB_NODUPDATA;
            rc = mdb_cursor_del(c[d], fl);
            snprintf(what, sizeof(what), "cdel%x", fl);
            show(what, d, rc, NULL, NULL);
        } else if (r < 60) {
            size_t cnt = 0;
            rc = mdb_cursor_count(c[d], &cnt);
            printf("count d%d rc=%d n=%zu\n", d, rc, rc ? 0 : cnt);
        } else if (content) {
            rc = mdb_get(txn, dbi[d], &k, &cv);
            show("get", d, rc, NULL, &cv);
        } else {
            static const MDB_cursor_op opsl[] = {
                MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_NEXT, MDB_NEXT, MDB_PREV, MDB_PREV,
                MDB_NEXT_DUP, MDB_NEXT_DUP, MDB_PREV_DUP, MDB_NEXT_NODUP, MDB_PREV_NODUP,
                MDB_GET_CURRENT, MDB_SET, MDB_SET_KEY, MDB_SET_RANGE, MDB_GET_BOTH,
                MDB_GET_BOTH_RANGE, MDB_NEXT_MULTIPLE};
            /* GET_MULTIPLE left out: on a single-value key LMDB 0.9.24 reports a stale page */
            MDB_cursor_op op = opsl[rnd() % (sizeof(opsl) / sizeof(opsl[0]))];
            ck = k;
            cv = v;
            rc = mdb_cursor_get(c[d], &ck, &cv, op);
            snprintf(what, sizeof(what), "cget%d", (int)op);
            show(what, d, rc, &ck, &cv);
            if (rc == MDB_NOTFOUND && (op == MDB_SET || op == MDB_SET_KEY || op == MDB_GET_BOTH ||
                                       op == MDB_GET_BOTH_RANGE))
                mdb_cursor_get(c[d], &ck, &cv, MDB_FIRST);
        }
        if (rnd() % 700 == 0) {
            if (content) {
                for (int e = 0; e < 2; e++) {
                    MDB_cursor *w;
                    unsigned h = 0, cnt = 0;
                    mdb_cursor_open(txn, dbi[e], &w);
                    while (mdb_cursor_get(w, &ck, &cv, MDB_NEXT) == 0) {
                        h = h * 31 + digest(&ck) * 7 + digest(&cv);
                        cnt++;
                    }
                    mdb_cursor_close(w);
                    printf("content d%d %u items %08x\n", e, cnt, h);
                }
            }
            rc = mdb_txn_commit(txn);
            printf("commit rc=%d\n", rc);
            mdb_txn_begin(env, NULL, 0, &txn);
            for (int e = 0; e < 2; e++) {
                mdb_cursor_open(txn, dbi[e], &c[e]);
                mdb_cursor_get(c[e], &ck, &cv, MDB_FIRST);
            }
        }
    }
    mdb_txn_commit(txn);
    show_entries(env, dbi, 2);
    mdb_env_close(env);
    return 0;
}
