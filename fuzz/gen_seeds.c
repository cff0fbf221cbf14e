/*
 * gen_seeds.c -- writes the seed data files of fuzz/corpus/datafile/ (issue 12).
 *
 * Built twice by `make fuzz-seeds`: against our library and against Debian's liblmdb
 * (the same LMDB API calls), so the corpus holds files written by both.  Each file is a
 * small environment (4 KiB pages, a few pages) of one kind:
 *   plain     the main DB with a few keys
 *   kinds     named DBs: plain, DUPSORT, DUPFIXED, INTEGERKEY, INTEGERDUP, REVERSEKEY,
 *             REVERSEDUP, and one overflow value
 *   tree      a main DB two levels deep (branch pages) and a DUPSORT key whose duplicates
 *             live in a sub-DB
 *   freelist  records written then deleted over several txns: a non-empty free DB
 *
 *   gen_seeds OUTDIR PREFIX      writes OUTDIR/PREFIX-<kind>.mdb (MDB_NOSUBDIR files)
 *   gen_seeds -lock OUTDIR PREFIX   writes lock files for fuzz/corpus/lockfile/, copied
 *                                from a live environment: PREFIX-idle.lock (no txn),
 *                                PREFIX-reader.lock (a read txn open), PREFIX-readers.lock
 *                                (two read txns of different snapshots, 16 slots)
 *
 * Deterministic: the same library writes the same bytes (no timestamps in the format).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

/* CHECK(call): a failing LMDB call ends the program, "FILE:LINE: call: message". */
static void check_rc(int rc, const char *file, int line, const char *call)
{
    if (!rc)
        return;
    fprintf(stderr, "%s:%d: %s: %s\n", file, line, call, mdb_strerror(rc));
    exit(1);
}
#define CHECK(x) check_rc((x), __FILE__, __LINE__, #x)

static char path[4096];

static MDB_env *open_env(const char *dir, const char *prefix, const char *kind, int maxdbs)
{
    MDB_env *env;
    snprintf(path, sizeof path, "%s/%s-%s.mdb", dir, prefix, kind);
    unlink(path);
    char lock[4200];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(lock);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 1u << 20));
    CHECK(mdb_env_set_maxdbs(env, (MDB_dbi)maxdbs));
    CHECK(mdb_env_open(env, path, MDB_NOSUBDIR, 0644));
    return env;
}

static void close_env(MDB_env *env)
{
    mdb_env_close(env);
    char lock[4200];
    snprintf(lock, sizeof lock, "%s-lock", path);
    unlink(lock);
}

static void put(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t kl, const void *v, size_t vl,
                unsigned flags)
{
    MDB_val key = {kl, (void *)k}, val = {vl, (void *)v};
    CHECK(mdb_put(txn, dbi, &key, &val, flags));
}

static void puts_s(MDB_txn *txn, MDB_dbi dbi, const char *k, const char *v)
{
    put(txn, dbi, k, strlen(k), v, strlen(v), 0);
}

/* A write txn of env with the main database opened in *dbi. */
static MDB_txn *begin_main(MDB_env *env, MDB_dbi *dbi)
{
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, dbi));
    return txn;
}

/* Commit txn, then close env (a generator's end). */
static void commit_close(MDB_env *env, MDB_txn *txn)
{
    CHECK(mdb_txn_commit(txn));
    close_env(env);
}

static void gen_plain(const char *dir, const char *prefix)
{
    MDB_env *env = open_env(dir, prefix, "plain", 0);
    MDB_dbi dbi;
    MDB_txn *txn = begin_main(env, &dbi);
    puts_s(txn, dbi, "apple", "red");
    puts_s(txn, dbi, "banana", "yellow");
    puts_s(txn, dbi, "cherry", "");
    put(txn, dbi, "\x00\xff", 2, "bin\x00", 4, 0);
    commit_close(env, txn);
}

static void gen_kinds(const char *dir, const char *prefix)
{
    MDB_env *env = open_env(dir, prefix, "kinds", 16);
    MDB_txn *txn;
    MDB_dbi d;
    char buf[64];
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));

    CHECK(mdb_dbi_open(txn, "plain", MDB_CREATE, &d));
    puts_s(txn, d, "k1", "v1");
    puts_s(txn, d, "k2", "v2");
    static char big[6000]; /* two overflow pages */
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    put(txn, d, "big", 3, big, sizeof big, 0);

    CHECK(mdb_dbi_open(txn, "dupsort", MDB_CREATE | MDB_DUPSORT, &d));
    for (int k = 0; k < 3; k++)
        for (int v = 0; v < 4; v++) {
            snprintf(buf, sizeof buf, "val%d", v * 3 + k);
            char key[8];
            snprintf(key, sizeof key, "d%d", k);
            puts_s(txn, d, key, buf);
        }

    CHECK(mdb_dbi_open(txn, "dupfixed", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &d));
    for (int k = 0; k < 2; k++)
        for (unsigned v = 0; v < 5; v++) {
            unsigned val = v * 1000u + (unsigned)k;
            char key[8];
            snprintf(key, sizeof key, "f%d", k);
            put(txn, d, key, strlen(key), &val, sizeof val, 0);
        }

    CHECK(mdb_dbi_open(txn, "intkey", MDB_CREATE | MDB_INTEGERKEY, &d));
    for (size_t i = 0; i < 6; i++) {
        size_t key = i * 77777u;
        snprintf(buf, sizeof buf, "n%zu", i);
        put(txn, d, &key, sizeof key, buf, strlen(buf), 0);
    }
    for (unsigned i = 0; i < 3; i++) {
        /* INTEGERKEY also allows 4-byte keys, in their own DB */
        (void)i;
    }

    CHECK(mdb_dbi_open(txn, "intdup",
                       MDB_CREATE | MDB_INTEGERKEY | MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP,
                       &d));
    for (unsigned k = 1; k <= 2; k++)
        for (unsigned v = 0; v < 4; v++) {
            unsigned val = 0x01000000u * v + k;
            put(txn, d, &k, sizeof k, &val, sizeof val, 0);
        }

    CHECK(mdb_dbi_open(txn, "revkey", MDB_CREATE | MDB_REVERSEKEY, &d));
    puts_s(txn, d, "xa", "1");
    puts_s(txn, d, "ya", "2");
    puts_s(txn, d, "ab", "3");

    CHECK(mdb_dbi_open(txn, "revdup", MDB_CREATE | MDB_DUPSORT | MDB_REVERSEDUP, &d));
    puts_s(txn, d, "r", "za");
    puts_s(txn, d, "r", "ab");
    puts_s(txn, d, "r", "mb");

    CHECK(mdb_dbi_open(txn, "empty", MDB_CREATE, &d));
    commit_close(env, txn);
}

static void gen_tree(const char *dir, const char *prefix)
{
    MDB_env *env = open_env(dir, prefix, "tree", 4);
    MDB_dbi d;
    char key[128], val[128];
    MDB_txn *txn = begin_main(env, &d);
    /* ~100 records of ~110 bytes: three or four leaves under one branch page */
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "key-%04d-%040d", i * 7 % 100, i);
        snprintf(val, sizeof val, "value-%060d", i);
        puts_s(txn, d, key, val);
    }
    CHECK(mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &d));
    /* enough duplicates of one key to move them from a sub-page into a sub-DB */
    for (int i = 0; i < 120; i++) {
        snprintf(val, sizeof val, "dup-%03d-%020d", i, i * 31);
        puts_s(txn, d, "many", val);
    }
    puts_s(txn, d, "one", "x");
    commit_close(env, txn);
}

static void gen_freelist(const char *dir, const char *prefix)
{
    MDB_env *env = open_env(dir, prefix, "freelist", 0);
    MDB_dbi d;
    char key[64], val[200];
    for (int round = 0; round < 4; round++) {
        MDB_txn *txn = begin_main(env, &d);
        for (int i = 0; i < 30; i++) {
            snprintf(key, sizeof key, "r%d-%03d", round, i);
            memset(val, 'a' + round, sizeof val);
            put(txn, d, key, strlen(key), val, sizeof val, 0);
        }
        if (round > 0)
            for (int i = 0; i < 30; i += 2) {
                snprintf(key, sizeof key, "r%d-%03d", round - 1, i);
                MDB_val k = {strlen(key), key};
                CHECK(mdb_del(txn, d, &k, NULL));
            }
        CHECK(mdb_txn_commit(txn));
    }
    close_env(env);
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    if (!in || !out) {
        fprintf(stderr, "cannot copy %s to %s\n", from, to);
        exit(1);
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
}

static void gen_locks(const char *dir, const char *prefix)
{
    char envdir[4096], lock[4200], out[4200];
    snprintf(envdir, sizeof envdir, "%s/%s-lockenv", dir, prefix);
    mkdir(envdir, 0755);
    snprintf(lock, sizeof lock, "%s/lock.mdb", envdir);
    for (int variant = 0; variant < 3; variant++) {
        char data[4200];
        snprintf(data, sizeof data, "%s/data.mdb", envdir);
        unlink(data);
        unlink(lock);
        MDB_env *env;
        MDB_txn *w, *r1 = NULL, *r2 = NULL;
        MDB_dbi d;
        CHECK(mdb_env_create(&env));
        CHECK(mdb_env_set_mapsize(env, 1u << 20));
        CHECK(mdb_env_set_maxreaders(env, variant == 2 ? 16 : 4));
        CHECK(mdb_env_open(env, envdir, MDB_NOTLS, 0644));
        CHECK(mdb_txn_begin(env, NULL, 0, &w));
        CHECK(mdb_dbi_open(w, NULL, 0, &d));
        puts_s(w, d, "a", "1");
        CHECK(mdb_txn_commit(w));
        if (variant >= 1)
            CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r1));
        if (variant == 2) {
            CHECK(mdb_txn_begin(env, NULL, 0, &w));
            puts_s(w, d, "b", "2");
            CHECK(mdb_txn_commit(w));
            CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r2));
        }
        static const char *names[] = {"idle", "reader", "readers"};
        snprintf(out, sizeof out, "%s/%s-%s.lock", dir, prefix, names[variant]);
        copy_file(lock, out);
        if (r2)
            mdb_txn_abort(r2);
        if (r1)
            mdb_txn_abort(r1);
        mdb_env_close(env);
        unlink(data);
        unlink(lock);
    }
    rmdir(envdir);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "-lock") == 0) {
        gen_locks(argv[2], argv[3]);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s OUTDIR PREFIX\n", argv[0]);
        return 2;
    }
    gen_plain(argv[1], argv[2]);
    gen_kinds(argv[1], argv[2]);
    gen_tree(argv[1], argv[2]);
    gen_freelist(argv[1], argv[2]);
    return 0;
}
