/*
 * check_tool.c -- run the structural checker (mdbcore_check_env) on environments written
 * during the core tests: exit 1 if any page is leaked, listed twice or a tree is malformed.
 *   check_tool DIR...
 */
#include <stdio.h>

#include "lmdb.h"
#include "mdbcore.h"

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        MDB_env *env;
        mdbcore_check_report rep;
        int rc = mdb_env_create(&env);
        if (!rc)
            rc = mdb_env_set_maxdbs(env, 64);
        if (!rc)
            rc = mdb_env_open(env, argv[i], MDB_RDONLY, 0644);
        if (!rc)
            rc = mdbcore_check_env(env, &rep);
        if (rc) {
            printf("%s: %s\n", argv[i], mdb_strerror(rc));
            bad = 1;
        } else {
            if (rep.problems_total || rep.leaked_pages) {
                printf("%s: %llu problems, %llu leaked pages\n", argv[i],
                       (unsigned long long)rep.problems_total,
                       (unsigned long long)rep.leaked_pages);
                bad = 1;
            }
            mdbcore_check_report_free(&rep);
        }
        mdb_env_close(env);
    }
    return bad;
}
