/*
 * test_corrupt.c -- damaged data files must give error codes, never a crash or a hang.
 * Takes a valid environment file, and for each round writes a copy with random damage
 * (byte flips, zeroed or garbage pages, truncation, swapped page numbers), then opens it
 * read-only without a lock file and reads every database fully plus random lookups.
 *   test_corrupt SRC_DATA_FILE WORKDIR [rounds] [seed]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lmdb.h"

static unsigned long long rng;
static unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

static long walk_db(MDB_txn *txn, MDB_dbi dbi, int *errs)
{
    MDB_cursor *c;
    long n = 0;
    if (mdb_cursor_open(txn, dbi, &c)) {
        (*errs)++;
        return 0;
    }
    MDB_val k, v;
    int rc;
    while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0 && n < 10000000) {
        volatile unsigned char sink = 0;
        if (v.mv_size)
            sink ^= ((unsigned char *)v.mv_data)[v.mv_size - 1];
        if (k.mv_size)
            sink ^= ((unsigned char *)k.mv_data)[0];
        (void)sink;
        n++;
    }
    if (rc != MDB_NOTFOUND)
        (*errs)++;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_LAST); rc == 0 && n < 20000000;
         rc = mdb_cursor_get(c, &k, &v, MDB_PREV))
        n++;
    char kb[64];
    for (int i = 0; i < 50; i++) {
        snprintf(kb, sizeof(kb), "k%05u", rnd() % 3000);
        MDB_val kk = {strlen(kb), kb};
        mdb_cursor_get(c, &kk, &v, MDB_SET_RANGE);
    }
    mdb_cursor_close(c);
    return n;
}

int main(int argc, char **argv)
{
    const char *src = argv[1], *work = argv[2];
    int rounds = argc > 3 ? atoi(argv[3]) : 300;
    rng = argc > 4 ? (unsigned)atoi(argv[4]) : 1;
    int fd = open(src, O_RDONLY);
    struct stat st;
    fstat(fd, &st);
    size_t len = (size_t)st.st_size;
    unsigned char *orig = malloc(len), *buf = malloc(len);
    if (read(fd, orig, len) != (ssize_t)len)
        return 2;
    close(fd);
    size_t psize = 4096;
    char path[4096];
    snprintf(path, sizeof(path), "%s/data.mdb", work);
    mkdir(work, 0755);
    int outcomes[4] = {0};
    for (int r = 0; r < rounds; r++) {
        memcpy(buf, orig, len);
        size_t blen = len;
        int kind = rnd() % 6;
        size_t pages = len / psize;
        switch (kind) {
        case 0: /* random byte flips anywhere past the metas */
            for (int i = 0, n = 1 + rnd() % 20; i < n; i++)
                buf[2 * psize + rnd() % (len - 2 * psize)] ^= (unsigned char)(1 + rnd() % 255);
            break;
        case 1: /* one page of garbage */
        {
            size_t p = 2 + rnd() % (pages - 2);
            for (size_t i = 0; i < psize; i++)
                buf[p * psize + i] = (unsigned char)rnd();
            break;
        }
        case 2: /* header fields of a few pages */
            for (int i = 0, n = 1 + rnd() % 5; i < n; i++) {
                size_t p = 2 + rnd() % (pages - 2);
                buf[p * psize + 8 + rnd() % 8] = (unsigned char)rnd();
            }
            break;
        case 3: /* truncation */
            blen = psize * (2 + rnd() % (pages - 1));
            break;
        case 4: /* damage to a meta */
            buf[(rnd() % 2) * psize + 16 + rnd() % 136] ^= (unsigned char)(1 + rnd() % 255);
            break;
        case 5: /* node slot or size bytes near page starts */
            for (int i = 0, n = 1 + rnd() % 10; i < n; i++) {
                size_t p = 2 + rnd() % (pages - 2);
                buf[p * psize + 16 + rnd() % 64] = (unsigned char)rnd();
            }
            break;
        }
        unlink(path);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (write(fd, buf, blen) != (ssize_t)blen)
            return 2;
        close(fd);
        MDB_env *env;
        MDB_txn *txn;
        MDB_dbi dbi;
        int errs = 0;
        mdb_env_create(&env);
        mdb_env_set_maxdbs(env, 16);
        int rc = mdb_env_open(env, work, MDB_RDONLY | MDB_NOLOCK, 0644);
        if (rc == 0)
            rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
        if (rc) {
            outcomes[0]++;
            mdb_env_close(env);
            continue;
        }
        if (mdb_dbi_open(txn, NULL, 0, &dbi) == 0) {
            walk_db(txn, dbi, &errs);
            MDB_cursor *c;
            MDB_val k, v;
            if (mdb_cursor_open(txn, dbi, &c) == 0) {
                while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
                    char name[512];
                    if (k.mv_size >= sizeof(name) || memchr(k.mv_data, 0, k.mv_size))
                        continue;
                    memcpy(name, k.mv_data, k.mv_size);
                    name[k.mv_size] = 0;
                    MDB_dbi sub;
                    if (mdb_dbi_open(txn, name, 0, &sub) == 0)
                        walk_db(txn, sub, &errs);
                    else
                        errs++;
                }
                mdb_cursor_close(c);
            }
        }
        walk_db(txn, 0, &errs);
        mdb_txn_abort(txn);
        mdb_env_close(env);
        outcomes[errs ? 1 : 2]++;
    }
    printf("corrupt: %d rounds: %d refused at open, %d read with errors, %d read clean; no crash\n",
           rounds, outcomes[0], outcomes[1], outcomes[2]);
    return 0;
}
