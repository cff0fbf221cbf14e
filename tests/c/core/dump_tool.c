/*
 * dump_tool.c -- print an environment in mdb_dump's bytevalue text through OUR library, so
 * its output can be diffed with the real mdb_dump on the same files.
 *   dump_tool DIR            main DB
 *   dump_tool -a DIR         every named DB (records of the main DB), as mdb_dump -a
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lmdb.h"

static void hex(const MDB_val *v)
{
    const unsigned char *p = v->mv_data;
    putchar(' ');
    for (size_t i = 0; i < v->mv_size; i++)
        printf("%02x", p[i]);
    putchar('\n');
}

static int dump_db(MDB_txn *txn, MDB_dbi dbi, const char *name)
{
    MDB_envinfo info;
    MDB_stat st;
    unsigned flags;
    mdb_env_info(mdb_txn_env(txn), &info);
    mdb_dbi_flags(txn, dbi, &flags);
    mdb_stat(txn, dbi, &st);
    printf("VERSION=3\nformat=bytevalue\n");
    if (name)
        printf("database=%s\n", name);
    printf("type=btree\nmapsize=%zu\n", info.me_mapsize);
    if (info.me_mapaddr && 0)
        printf("mapaddr=%p\n", info.me_mapaddr);
    printf("maxreaders=%u\n", info.me_maxreaders);
    if (flags & MDB_DUPSORT)
        printf("duplicates=1\n");
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{MDB_REVERSEKEY, "reversekey"}, {MDB_DUPSORT, "dupsort"},
                 {MDB_INTEGERKEY, "integerkey"}, {MDB_DUPFIXED, "dupfixed"},
                 {MDB_INTEGERDUP, "integerdup"}, {MDB_REVERSEDUP, "reversedup"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (flags & names[i].bit)
            printf("%s=1\n", names[i].name);
    printf("db_pagesize=%u\nHEADER=END\n", st.ms_psize);
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, dbi, &c);
    if (rc)
        return rc;
    MDB_val k, v;
    while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
        hex(&k);
        hex(&v);
    }
    mdb_cursor_close(c);
    printf("DATA=END\n");
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int main(int argc, char **argv)
{
    int all = argc > 2 && !strcmp(argv[1], "-a");
    const char *dir = argv[argc - 1];
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    int rc;
    mdb_env_create(&env);
    mdb_env_set_maxdbs(env, 1000);
    if ((rc = mdb_env_open(env, dir, MDB_RDONLY, 0644)) ||
        (rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) ||
        (rc = mdb_dbi_open(txn, NULL, 0, &dbi))) {
        fprintf(stderr, "open: %s\n", mdb_strerror(rc));
        return 1;
    }
    if (!all) {
        rc = dump_db(txn, dbi, NULL);
    } else {
        MDB_cursor *c;
        MDB_val k, v;
        mdb_cursor_open(txn, dbi, &c);
        while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
            char name[512];
            if (memchr(k.mv_data, 0, k.mv_size) || k.mv_size >= sizeof(name))
                continue;
            memcpy(name, k.mv_data, k.mv_size);
            name[k.mv_size] = 0;
            MDB_dbi sub;
            if (mdb_dbi_open(txn, name, 0, &sub))
                continue;
            if ((rc = dump_db(txn, sub, name)) != 0)
                break;
            mdb_dbi_close(env, sub);
        }
        mdb_cursor_close(c);
        if (rc == MDB_NOTFOUND)
            rc = 0;
    }
    if (rc)
        fprintf(stderr, "dump: %s\n", mdb_strerror(rc));
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return rc != 0;
}
