/*
 * test_threads.c -- one process, one writer thread and several reader threads: every read
 * snapshot must show a single generation across all keys (readers' slots are per thread,
 * or per txn under NOTLS, and must protect their pages from reuse); read txns are reset
 * and renewed as back-mdb does.
 *   test_threads DIR [notls]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lmdb.h"
#include "mdbtest.h"

#define NKEYS 300
#define GENS 600
static MDB_env *env;
static volatile int done;
static long snaps[8];
/* full snapshots taken before the writer's last generation: the test is only a test of
 * concurrency if some reader looked while the writer was still going */
static int midstream;

/* Halfway, the writer waits (at most 10 s) for a reader to have looked at a complete
 * generation, so that the readers cannot all have run before or after it. */
static void wait_for_a_reader(void)
{
    struct timespec pause = {0, 1000000};
    for (int i = 0; i < 10000 && __atomic_load_n(&midstream, __ATOMIC_ACQUIRE) == 0; i++)
        nanosleep(&pause, NULL);
}

static void *writer(void *arg)
{
    (void)arg;
    static char vb[6000];
    for (int g = 1; g <= GENS; g++) {
        MDB_txn *t;
        CHECK(mdb_txn_begin(env, NULL, 0, &t));
        for (int i = 0; i < NKEYS; i++) {
            char kb[16];
            snprintf(kb, sizeof(kb), "k%04d", i);
            size_t len = 8 + (size_t)((g * 7 + i) % ((i % 25 == 0) ? 5000 : 200));
            memset(vb, 'a' + g % 26, len);
            memcpy(vb, &g, sizeof(g));
            MDB_val k = {strlen(kb), kb}, v = {len, vb};
            CHECK(mdb_put(t, 1, &k, &v, 0));
        }
        CHECK(mdb_txn_commit(t));
        if (g == GENS / 2)
            wait_for_a_reader();
    }
    done = 1;
    return NULL;
}

static void *reader(void *arg)
{
    long id = (long)arg;
    MDB_txn *t;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
    while (!done) {
        MDB_cursor *c;
        MDB_val k, v;
        int gen = -1, n = 0;
        CHECK(mdb_cursor_open(t, 1, &c));
        while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
            int g;
            memcpy(&g, v.mv_data, sizeof(g));
            if (gen < 0)
                gen = g;
            if (g != gen) {
                fprintf(stderr, "reader %ld: generations %d and %d in one snapshot\n", id, gen, g);
                exit(1);
            }
            for (size_t j = sizeof(g); j < v.mv_size; j++)
                if (((char *)v.mv_data)[j] != 'a' + g % 26) {
                    fprintf(stderr, "reader %ld: torn value\n", id);
                    exit(1);
                }
            n++;
        }
        mdb_cursor_close(c);
        if (n && n != NKEYS) {
            fprintf(stderr, "reader %ld: %d keys\n", id, n);
            exit(1);
        }
        snaps[id]++;
        if (n == NKEYS && gen < GENS)
            __atomic_add_fetch(&midstream, 1, __ATOMIC_RELEASE);
        mdb_txn_reset(t);
        CHECK(mdb_txn_renew(t));
    }
    mdb_txn_abort(t);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    unsigned flags = (argc > 2 && !strcmp(argv[2], "notls")) ? MDB_NOTLS : 0;
    mkdir(argv[1], 0755);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 256u << 20));
    CHECK(mdb_env_open(env, argv[1], flags | MDB_NOSYNC, 0644));
    pthread_t w, r[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&r[i], NULL, reader, (void *)i);
    pthread_create(&w, NULL, writer, NULL);
    pthread_join(w, NULL);
    long total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(r[i], NULL);
        total += snaps[i];
    }
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    mdb_env_close(env);
    printf("threads%s: %d commits, %ld consistent snapshots (%d of a complete generation "
           "while the writer ran), last_pgno %zu\n",
           flags ? " (NOTLS)" : "", GENS, total, midstream, info.me_last_pgno);
    if (midstream == 0) {
        fprintf(stderr, "no reader saw a complete generation while the writer ran\n");
        return 1;
    }
    return 0;
}
