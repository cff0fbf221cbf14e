/*
 * lmdb_grower.c -- test_follow_map's writer on the REAL LMDB (Debian's -llmdb): it starts
 * an environment with an 8 MiB map and writes follow_data.h's txns (grow_load: on
 * MDB_MAP_FULL it doubles the map with mdb_env_set_mapsize, as an LMDB program does) until
 * a txn has committed into a map of TARGET_MIB.  Prints "<txns> <map size>".
 *   lmdb_grower DIR TARGET_MIB
 * Exit status 0, or 2 on an error (named on stderr).
 */
#include <lmdb.h>
#include <stdlib.h>

#define MDBTEST_FATAL_EXIT 2
#include "mdbtest.h"

#include "follow_data.h"

int main(int argc, char **argv)
{
    if (argc != 3)
        FAIL("usage: lmdb_grower DIR TARGET_MIB");
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 8 * MIB));
    CHECK(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
    unsigned long t = 0;
    CHECK(grow_load(env, (size_t)atol(argv[2]) * MIB, &t));
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    printf("%lu %zu\n", t, info.me_mapsize);
    mdb_env_close(env);
    return 0;
}
