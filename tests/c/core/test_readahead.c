/*
 * test_readahead.c -- which maps of data.mdb run without kernel read-ahead: every map of a
 * writable environment (WRITEMAP or not, including the part a grown map adds), and a
 * read-only environment's only when it asks for MDB_NORDAHEAD.  Read from what the kernel
 * says of this process's mappings (/proc/self/smaps, VmFlags "rr": MADV_RANDOM).
 *   test_readahead DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbtest.h"

static char dir[512];

/* How many of this process's mappings of DIR/data.mdb there are (*maps) and how many of
 * them carry the random-access hint (*random). */
static void data_maps(int *maps, int *random)
{
    char want[600], line[1024];
    PATHF(want, "%s/data.mdb", dir);
    FILE *f = fopen("/proc/self/smaps", "r");
    REQUIRE(f != NULL);
    int in_data = 0;
    *maps = *random = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char path[700] = "";
        /* a mapping's first line: "lo-hi perms offset dev inode [path]" */
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %699s", &lo, &hi, path) >= 2 &&
            strchr(line, '-') == line + strspn(line, "0123456789abcdef")) {
            in_data = strcmp(path, want) == 0;
            *maps += in_data;
            continue;
        }
        if (in_data && strncmp(line, "VmFlags:", 8) == 0 && strstr(line, " rr"))
            (*random)++;
    }
    fclose(f);
}

static MDB_env *open_env(unsigned flags, size_t mapsize)
{
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, mapsize));
    CHECK(mdb_env_open(env, dir, flags, 0644));
    return env;
}

static void put_some(MDB_env *env, int n)
{
    MDB_txn *txn;
    MDB_dbi dbi = mdbtest_begin_main(env, &txn);
    static char value[3000];
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "key%06d", i);
        memset(value, 'a' + i % 26, sizeof value);
        MDB_val k = {strlen(key), key}, v = {sizeof value, value};
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
}

static void expect_hint(const char *what, int want_random)
{
    int maps, random;
    data_maps(&maps, &random);
    EXPECT_MSG(maps > 0, "%s: no mapping of data.mdb found", what);
    if (want_random)
        EXPECT_MSG(random == maps, "%s: %d of %d maps of data.mdb without read-ahead, want all",
                   what, random, maps);
    else
        EXPECT_MSG(random == 0, "%s: %d of %d maps of data.mdb without read-ahead, want none",
                   what, random, maps);
    printf("%-44s %d map(s), %d without read-ahead\n", what, maps, random);
}

static void t_writable(void)
{
    MDB_env *env = open_env(MDB_NOSYNC, 1 << 20);
    put_some(env, 50);
    expect_hint("writable", 1);
    /* grown in place: the added part is a new mapping of the file */
    CHECK(mdb_env_set_mapsize(env, 64 << 20));
    put_some(env, 2000);
    expect_hint("writable, map grown from 1 to 64 MiB", 1);
    mdb_env_close(env);
}

static void t_writemap(void)
{
    MDB_env *env = open_env(MDB_NOSYNC | MDB_WRITEMAP, 8 << 20);
    put_some(env, 100);
    expect_hint("WRITEMAP", 1);
    mdb_env_close(env);
}

static void t_readonly(void)
{
    MDB_env *env = open_env(MDB_RDONLY, 64 << 20);
    expect_hint("RDONLY", 0);
    mdb_env_close(env);
    env = open_env(MDB_RDONLY | MDB_NORDAHEAD, 64 << 20);
    expect_hint("RDONLY | NORDAHEAD", 1);
    mdb_env_close(env);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        FAIL("usage: test_readahead DIR");
    PATHF(dir, "%s", argv[1]);
    mkdir(dir, 0755);
    TEST_RUN(t_writable);
    TEST_RUN(t_writemap);
    TEST_RUN(t_readonly);
    TEST_DONE();
}
