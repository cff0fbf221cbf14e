/*
 * test_dead_writer.c -- a writer process that dies inside its txn must not block the next
 * writer (robust writer mutex), and its uncommitted changes must be gone.  Also: a reader
 * process killed while holding a snapshot leaves a slot that mdb_reader_check clears.
 *   test_dead_writer DIR
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbtest.h"

static MDB_env *open_env(const char *dir)
{
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_open(env, dir, 0, 0644));
    return env;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *dir = argv[1];
    mkdir(dir, 0755);
    MDB_env *env = open_env(dir);
    MDB_txn *txn;
    MDB_val k = {3, "key"}, v = {5, "first"};
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_put(txn, 1, &k, &v, 0));
    CHECK(mdb_txn_commit(txn));

    int pfd[2];
    if (pipe(pfd))
        return 2;
    pid_t pid = fork();
    if (pid == 0) {
        MDB_env *ce = open_env(dir);
        MDB_txn *ct;
        MDB_val cv = {6, "second"};
        CHECK(mdb_txn_begin(ce, NULL, 0, &ct));
        CHECK(mdb_put(ct, 1, &k, &cv, 0));
        MDB_txn *rt;
        (void)rt;
        if (write(pfd[1], "x", 1) != 1)
            _exit(3);
        pause(); /* killed while holding the writer mutex */
        _exit(0);
    }
    char ch;
    if (read(pfd[0], &ch, 1) != 1)
        return 2;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    alarm(20); /* a hang here is the failure */
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_get(txn, 1, &k, &v));
    if (v.mv_size != 5 || memcmp(v.mv_data, "first", 5))
        return fprintf(stderr, "dead writer's change is visible\n"), 1;
    MDB_val nv = {5, "third"};
    CHECK(mdb_put(txn, 1, &k, &nv, 0));
    CHECK(mdb_txn_commit(txn));

    /* a dead reader's slot */
    pid = fork();
    if (pid == 0) {
        MDB_env *ce = open_env(dir);
        MDB_txn *rt;
        CHECK(mdb_txn_begin(ce, NULL, MDB_RDONLY, &rt));
        if (write(pfd[1], "x", 1) != 1)
            _exit(3);
        pause();
        _exit(0);
    }
    if (read(pfd[0], &ch, 1) != 1)
        return 2;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    int dead = 0;
    CHECK(mdb_reader_check(env, &dead));
    if (dead != 1)
        return fprintf(stderr, "reader_check cleared %d slots, want 1\n", dead), 1;
    mdb_env_close(env);
    printf("dead writer/reader: OK\n");
    return 0;
}
