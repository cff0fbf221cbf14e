/*
 * test_api.c -- deterministic API scenarios: flags of put, MAP_FULL and growing the map while
 * open, poisoned txns, a 200 MiB value, NOSUBDIR/NOTLS/NOLOCK, reset/renew, drop, copy,
 * strerror/version, refused DUPSORT, refused writes after a missed DUPSORT lookup.
 *   test_api WORKDIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbtest.h"

static char dirbuf[4096];
static const char *sub(const char *base, const char *name)
{
    snprintf(dirbuf, sizeof(dirbuf), "%s/%s", base, name);
    return dirbuf;
}

static MDB_val V(const char *s) { MDB_val v = {strlen(s), (void *)s}; return v; }

static int count_lines(const char *msg, void *ctx)
{
    (void)msg;
    (*(int *)ctx)++;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *work = argv[1];
    mkdir(work, 0755);
    MDB_env *env;
    MDB_txn *txn, *rtxn;
    MDB_dbi dbi;
    MDB_val k, v;

    /* strerror / version */
    if (strcmp(mdb_strerror(MDB_NOTFOUND), "MDB_NOTFOUND: No matching key/data pair found") ||
        strcmp(mdb_strerror(0), "Successful return: 0") ||
        strcmp(mdb_strerror(-1), "Invalid error code") || strcmp(mdb_strerror(ENOENT), strerror(ENOENT)))
        return fprintf(stderr, "strerror texts\n"), 1;
    int ma, mi, pa;
    mdb_version(&ma, &mi, &pa);
    if (MDB_VERINT(ma, mi, pa) != 0x0009001D)
        return fprintf(stderr, "version\n"), 1;

    /* put flags */
    const char *d1 = sub(work, "flags");
    mkdir(d1, 0755);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_maxdbs(env, 4));
    CHECK(mdb_env_open(env, d1, 0, 0644));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    k = V("a"), v = V("one");
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    v = V("two");
    CHECK_RC(mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE), MDB_KEYEXIST);
    if (v.mv_size != 3 || memcmp(v.mv_data, "one", 3))
        return fprintf(stderr, "NOOVERWRITE must return the existing value\n"), 1;
    k = V("c"), v = V("3");
    CHECK(mdb_put(txn, dbi, &k, &v, MDB_APPEND));
    k = V("b");
    CHECK_RC(mdb_put(txn, dbi, &k, &v, MDB_APPEND), MDB_KEYEXIST);
    k = V("c");
    CHECK_RC(mdb_put(txn, dbi, &k, &v, MDB_APPEND), MDB_KEYEXIST);
    k = V("");
    CHECK_RC(mdb_put(txn, dbi, &k, &v, 0), MDB_BAD_VALSIZE);
    char big[600];
    memset(big, 'k', sizeof(big));
    k.mv_size = 512, k.mv_data = big;
    CHECK_RC(mdb_put(txn, dbi, &k, &v, 0), MDB_BAD_VALSIZE);
    k.mv_size = 511;
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    k = V("r"), v.mv_size = 5000, v.mv_data = NULL;
    CHECK(mdb_put(txn, dbi, &k, &v, MDB_RESERVE));
    memset(v.mv_data, 'R', 5000);
    MDB_cursor *c;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    k = V("a");
    CHECK(mdb_cursor_get(c, &k, &v, MDB_SET));
    v = V("ONE!");
    CHECK(mdb_cursor_put(c, &k, &v, MDB_CURRENT));
    CHECK(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT));
    if (v.mv_size != 4 || memcmp(v.mv_data, "ONE!", 4))
        return fprintf(stderr, "CURRENT\n"), 1;
    CHECK_RC(mdb_cursor_count(c, &(size_t){0}), MDB_INCOMPATIBLE);
    MDB_dbi dd;
    CHECK(mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &dd));
    CHECK(mdb_txn_begin(env, txn, 0, &rtxn)); /* nested */
    CHECK_RC(mdb_put(txn, dbi, &k, &v, 0), MDB_BAD_TXN); /* parent blocked meanwhile */
    mdb_txn_abort(rtxn);
    CHECK_RC(mdb_txn_begin(env, txn, MDB_RDONLY, &rtxn), EINVAL);
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    k = V("r");
    CHECK(mdb_get(txn, dbi, &k, &v));
    if (v.mv_size != 5000 || ((char *)v.mv_data)[4999] != 'R')
        return fprintf(stderr, "RESERVE\n"), 1;
    k = V("zz");
    CHECK_RC(mdb_get(txn, dbi, &k, &v), MDB_NOTFOUND);
    CHECK_RC(mdb_put(txn, dbi, &k, &v, 0), EACCES);
    /* reset / renew */
    mdb_txn_reset(txn);
    CHECK_RC(mdb_get(txn, dbi, &k, &v), EINVAL); /* LMDB: a reset txn has no handles */
    CHECK(mdb_txn_renew(txn));
    k = V("a");
    CHECK(mdb_get(txn, dbi, &k, &v));
    int lines = 0;
    CHECK(mdb_reader_list(env, count_lines, &lines));
    if (lines != 2)
        return fprintf(stderr, "reader_list lines %d\n", lines), 1;
    mdb_txn_abort(txn);
    int dead = -1;
    CHECK(mdb_reader_check(env, &dead));
    /* drop */
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "named", MDB_CREATE, &dd));
    for (int i = 0; i < 1000; i++) {
        char kb[16];
        snprintf(kb, sizeof(kb), "%06d", i);
        k = V(kb), v = V("value-value-value");
        CHECK(mdb_put(txn, dd, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_drop(txn, dd, 0));
    MDB_stat st;
    CHECK(mdb_stat(txn, dd, &st));
    if (st.ms_entries || st.ms_depth)
        return fprintf(stderr, "drop 0\n"), 1;
    CHECK(mdb_drop(txn, dd, 1));
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK_RC(mdb_dbi_open(txn, "named", 0, &dd), MDB_NOTFOUND);
    mdb_txn_abort(txn);
    /* copy */
    const char *d2 = sub(work, "copy");
    mkdir(d2, 0755);
    CHECK(mdb_env_copy(env, d2));
    const char *d2c = sub(work, "copy-compact");
    mkdir(d2c, 0755);
    CHECK(mdb_env_copy2(env, d2c, MDB_CP_COMPACT));
    CHECK_RC(mdb_env_copy2(env, d2c, 0x100), EINVAL);
    mdb_env_close(env);

    /* MAP_FULL, poisoned txn, grow the map while open */
    const char *d3 = sub(work, "mapfull");
    mkdir(d3, 0755);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 1 << 20));
    CHECK(mdb_env_open(env, d3, MDB_NOSYNC, 0644));
    static char val[100000];
    memset(val, 'v', sizeof(val));
    int i, rc = 0;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (i = 0; i < 100; i++) {
        char kb[16];
        snprintf(kb, sizeof(kb), "big%03d", i);
        k = V(kb), v.mv_size = sizeof(val), v.mv_data = val;
        if ((rc = mdb_put(txn, 1, &k, &v, 0)) != 0)
            break;
    }
    CHECK_RC(rc, MDB_MAP_FULL);
    CHECK_RC(mdb_put(txn, 1, &k, &v, 0), MDB_BAD_TXN);
    CHECK_RC(mdb_txn_commit(txn), MDB_BAD_TXN);
    CHECK(mdb_env_set_mapsize(env, 64 << 20));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (i = 0; i < 100; i++) {
        char kb[16];
        snprintf(kb, sizeof(kb), "big%03d", i);
        k = V(kb), v.mv_size = sizeof(val), v.mv_data = val;
        CHECK(mdb_put(txn, 1, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    if (info.me_mapsize != 64 << 20)
        return fprintf(stderr, "mapsize\n"), 1;
    mdb_env_close(env);

    /* a 200 MiB value, NOSUBDIR + NOTLS */
    const char *f4 = sub(work, "bigvalue.mdb");
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 1ul << 30));
    CHECK(mdb_env_open(env, f4, MDB_NOSUBDIR | MDB_NOTLS, 0644));
    size_t bl = 200u << 20;
    char *bv = malloc(bl);
    for (size_t j = 0; j < bl; j++)
        bv[j] = (char)(j * 131 >> 7);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    k = V("huge"), v.mv_size = bl, v.mv_data = bv;
    CHECK(mdb_put(txn, 1, &k, &v, 0));
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &rtxn)); /* NOTLS: two readers, one thread */
    CHECK(mdb_get(rtxn, 1, &k, &v));
    if (v.mv_size != bl || memcmp(v.mv_data, bv, bl))
        return fprintf(stderr, "big value\n"), 1;
    mdb_txn_abort(rtxn);
    mdb_txn_abort(txn);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_del(txn, 1, &k, NULL));
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);
    free(bv);

    /* NOLOCK */
    const char *d5 = sub(work, "nolock");
    mkdir(d5, 0755);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_open(env, d5, MDB_NOLOCK, 0644));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    k = V("x"), v = V("y");
    CHECK(mdb_put(txn, 1, &k, &v, 0));
    CHECK(mdb_txn_commit(txn));
    if (access(sub(work, "nolock/lock.mdb"), F_OK) == 0)
        return fprintf(stderr, "NOLOCK made a lock file\n"), 1;
    mdb_env_close(env);

    /* opening a foreign file */
    const char *d6 = sub(work, "foreign");
    mkdir(d6, 0755);
    FILE *f = fopen(sub(work, "foreign/data.mdb"), "w");
    for (int j = 0; j < 9000; j++)
        fputc('z', f);
    fclose(f);
    CHECK(mdb_env_create(&env));
    CHECK_RC(mdb_env_open(env, sub(work, "foreign"), MDB_RDONLY | MDB_NOLOCK, 0644), MDB_INVALID);
    mdb_env_close(env);
    /* After a missed lookup on a DUPSORT database, where LMDB 0.9.36 writes through the
     * duplicate position of an earlier key (MDB_NODUPDATA delete: the key goes and the
     * entry count is miscounted; MDB_CURRENT put), ours refuses with EINVAL and keeps every
     * record (docs/compat.md; not run on LMDB, which damages its own data here) */
    const char *d7 = sub(work, "miss");
    mkdir(d7, 0755);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_maxdbs(env, 2));
    CHECK(mdb_env_open(env, d7, 0, 0644));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    MDB_dbi dm;
    CHECK(mdb_dbi_open(txn, "d", MDB_CREATE | MDB_DUPSORT, &dm));
    const char *pairs[6][2] = {{"k2", "1"}, {"k2", "2"}, {"k4", "1"},
                               {"k4", "2"}, {"k6", "1"}, {"k6", "2"}};
    for (int j = 0; j < 6; j++) {
        MDB_val pk = V(pairs[j][0]), pv = V(pairs[j][1]);
        CHECK(mdb_put(txn, dm, &pk, &pv, 0));
    }
    MDB_cursor *mc;
    CHECK(mdb_cursor_open(txn, dm, &mc));
    MDB_val mk = V("k2"), mv;
    CHECK(mdb_cursor_get(mc, &mk, &mv, MDB_SET));
    mk = V("k5");
    CHECK_RC(mdb_cursor_get(mc, &mk, &mv, MDB_SET), MDB_NOTFOUND);
    CHECK_RC(mdb_cursor_del(mc, MDB_NODUPDATA), EINVAL);
    mk = V("k6"), mv = V("1");
    CHECK_RC(mdb_cursor_put(mc, &mk, &mv, MDB_CURRENT), EINVAL);
    MDB_stat mst;
    CHECK(mdb_stat(txn, dm, &mst));
    if (mst.ms_entries != 6)
        return fprintf(stderr, "a refused call after a miss deleted: %zu entries\n",
                       mst.ms_entries), 1;
    mdb_cursor_close(mc);
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);
    printf("api: all scenarios OK\n");
    return 0;
}
