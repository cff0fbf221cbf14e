/*
 * demo.c -- a tour of the LMDB API on whatever library it is linked against.
 *
 *   demo [DIR]     (default ./demo-db; DIR is created, and emptied of data.mdb/lock.mdb)
 *
 * Builds a small "library catalogue":
 *   books     title -> "author|year"                                5,000 keys
 *   by_year   INTEGERKEY, key = year << 32 | book number (a native size_t) -> title
 *   tags      key = "tag/title", empty value (an index made of composite keys)
 * plus a "meta" key in the main database.  Then it reads everything back in a fresh read
 * transaction, verifies every value against the generator, runs a few range queries, and
 * prints statistics in the style of mdb_stat.  Exit status 0 when every check passed.
 *
 * `make demo` builds it against the selected library (LMDB_IMPL=mdb: build/libmdbcore.so;
 * LMDB_IMPL=system: Debian's liblmdb) and runs it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lmdb.h"

/* snprintf into a char array; a truncated result is a bug of this program: stop. */
#define PATHF(buf, ...)                                                                   \
    do {                                                                                  \
        if (snprintf((buf), sizeof(buf), __VA_ARGS__) >= (int)sizeof(buf)) {            \
            fprintf(stderr, "%s:%d: string too long\n", __FILE__, __LINE__);             \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

#define NBOOKS 5000

#define E(expr)                                                                           \
    do {                                                                                  \
        int rc_ = (expr);                                                                 \
        if (rc_ != MDB_SUCCESS) {                                                         \
            fprintf(stderr, "demo: %s: %s\n", #expr, mdb_strerror(rc_));                 \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static const char *tags[] = {"fiction", "history", "science", "poetry", "travel", "cooking"};

/* The generator: book i's title, author, year and tags are pure functions of i. */
static void book(int i, char *title, size_t tl, char *value, size_t vl, uint32_t *year) {
    static const char *adj[] = {"Silent", "Crimson", "Hidden", "Last", "Northern", "Paper"};
    static const char *noun[] = {"River", "Garden", "Engine", "Harbour", "Library", "Winter"};
    *year = 1900 + (uint32_t)((i * 37) % 125);
    snprintf(title, tl, "The %s %s, vol. %d", adj[i % 6], noun[(i / 6) % 6], i);
    snprintf(value, vl, "author-%03d|%u", (i * 13) % 500, *year);
}

static MDB_val val(const void *p, size_t n) {
    MDB_val v = {n, (void *)p};
    return v;
}

static void print_stat(const char *name, const MDB_stat *st) {
    printf("Status of %s\n", name);
    printf("  Tree depth: %u\n", st->ms_depth);
    printf("  Branch pages: %zu\n", st->ms_branch_pages);
    printf("  Leaf pages: %zu\n", st->ms_leaf_pages);
    printf("  Overflow pages: %zu\n", st->ms_overflow_pages);
    printf("  Entries: %zu\n", st->ms_entries);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "demo-db";
    char path[4096], title[128], value[128];
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi books, by_year, tagdb, main_db;
    MDB_cursor *cur;
    MDB_val k, v;
    uint32_t year;
    int failures = 0;

    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        perror(dir);
        return 1;
    }
    PATHF(path, "%s/data.mdb", dir);
    unlink(path);
    PATHF(path, "%s/lock.mdb", dir);
    unlink(path);

    int major, minor, patch;
    printf("%s\n", mdb_version(&major, &minor, &patch));
    E(mdb_env_create(&env));
    E(mdb_env_set_maxdbs(env, 4));
    E(mdb_env_set_mapsize(env, 64UL << 20));
    E(mdb_env_open(env, dir, 0, 0644));

    /* ---- write: one transaction per 1,000 books ---- */
    for (int base = 0; base < NBOOKS; base += 1000) {
        E(mdb_txn_begin(env, NULL, 0, &txn));
        E(mdb_dbi_open(txn, "books", MDB_CREATE, &books));
        E(mdb_dbi_open(txn, "by_year", MDB_CREATE | MDB_INTEGERKEY, &by_year));
        E(mdb_dbi_open(txn, "tags", MDB_CREATE, &tagdb));
        for (int i = base; i < base + 1000; i++) {
            book(i, title, sizeof title, value, sizeof value, &year);
            k = val(title, strlen(title));
            v = val(value, strlen(value));
            E(mdb_put(txn, books, &k, &v, MDB_NOOVERWRITE));
            size_t ykey = (size_t)year << 32 | (size_t)i;
            k = val(&ykey, sizeof ykey);
            v = val(title, strlen(title));
            E(mdb_put(txn, by_year, &k, &v, 0));
            for (int t = 0; t < 6; t++) {
                if ((i >> t) & 1) {
                    char tk[160];
                    PATHF(tk, "%s/%s", tags[t], title);
                    k = val(tk, strlen(tk));
                    v = val("", 0);
                    E(mdb_put(txn, tagdb, &k, &v, 0));
                }
            }
        }
        E(mdb_txn_commit(txn));
    }
    E(mdb_txn_begin(env, NULL, 0, &txn));
    E(mdb_dbi_open(txn, NULL, 0, &main_db));
    k = val("meta", 4);
    v = val("demo catalogue v1", 17);
    E(mdb_put(txn, main_db, &k, &v, 0));
    E(mdb_txn_commit(txn));
    printf("wrote %d books in %d transactions\n", NBOOKS, NBOOKS / 1000 + 1);

    /* ---- read back and verify ---- */
    E(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    E(mdb_dbi_open(txn, "books", 0, &books));
    E(mdb_dbi_open(txn, "by_year", 0, &by_year));
    E(mdb_dbi_open(txn, "tags", 0, &tagdb));
    for (int i = 0; i < NBOOKS; i++) {
        book(i, title, sizeof title, value, sizeof value, &year);
        k = val(title, strlen(title));
        int rc = mdb_get(txn, books, &k, &v);
        if (rc != 0 || v.mv_size != strlen(value) || memcmp(v.mv_data, value, v.mv_size)) {
            printf("MISMATCH: book %d (%s): %s\n", i, title, rc ? mdb_strerror(rc) : "value");
            failures++;
        }
    }
    /* Keys come back sorted: walk "books" and check the order. */
    E(mdb_cursor_open(txn, books, &cur));
    char prev[128] = "";
    int n = 0, rc;
    while ((rc = mdb_cursor_get(cur, &k, &v, n ? MDB_NEXT : MDB_FIRST)) == 0) {
        char cur_key[128];
        PATHF(cur_key, "%.*s", (int)k.mv_size, (char *)k.mv_data);
        if (n && strcmp(prev, cur_key) >= 0) {
            printf("ORDER: %s after %s\n", cur_key, prev);
            failures++;
        }
        strcpy(prev, cur_key);
        n++;
    }
    mdb_cursor_close(cur);
    if (n != NBOOKS) {
        printf("COUNT: walked %d books, want %d\n", n, NBOOKS);
        failures++;
    }
    /* Range query on an INTEGERKEY database: how many books from the 1950s. */
    size_t from = (size_t)1950 << 32, to = (size_t)1960 << 32;
    size_t in_fifties = 0, want_fifties = 0;
    for (int i = 0; i < NBOOKS; i++) {
        book(i, title, sizeof title, value, sizeof value, &year);
        want_fifties += year >= 1950 && year < 1960;
    }
    E(mdb_cursor_open(txn, by_year, &cur));
    k = val(&from, sizeof from);
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        size_t y;
        memcpy(&y, k.mv_data, sizeof y);
        if (y >= to) break;
        in_fifties++;
    }
    mdb_cursor_close(cur);
    printf("books from the 1950s: %zu (by_year range scan)\n", in_fifties);
    if (in_fifties != want_fifties) {
        printf("RANGE: %zu books from the 1950s, want %zu\n", in_fifties, want_fifties);
        failures++;
    }
    /* Prefix scans on the composite-key index: books per tag. */
    E(mdb_cursor_open(txn, tagdb, &cur));
    for (int t = 0; t < 6; t++) {
        size_t c = 0, want = 0;
        char prefix[32];
        for (int i = 0; i < NBOOKS; i++) want += (i >> t) & 1;
        PATHF(prefix, "%s/", tags[t]);
        size_t pl = strlen(prefix);
        k = val(prefix, pl);
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
             rc == 0 && k.mv_size >= pl && memcmp(k.mv_data, prefix, pl) == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (v.mv_size != 0) failures++;
            c++;
        }
        printf("tag %-8s %5zu books\n", tags[t], c);
        if (c != want) {
            printf("TAG: %s has %zu, want %zu\n", tags[t], c, want);
            failures++;
        }
    }
    mdb_cursor_close(cur);

    /* ---- statistics, in the style of mdb_stat -ea ---- */
    MDB_envinfo info;
    MDB_stat st;
    E(mdb_env_info(env, &info));
    E(mdb_env_stat(env, &st));
    printf("Environment Info\n");
    printf("  Map size: %zu\n", info.me_mapsize);
    printf("  Page size: %u\n", st.ms_psize);
    printf("  Number of pages used: %zu\n", info.me_last_pgno + 1);
    printf("  Last transaction ID: %zu\n", info.me_last_txnid);
    printf("  Max readers: %u\n", info.me_maxreaders);
    printf("  Number of readers used: %u\n", info.me_numreaders);
    print_stat("Main DB", &st);
    E(mdb_stat(txn, books, &st));
    print_stat("books", &st);
    if (st.ms_entries != NBOOKS) failures++;
    E(mdb_stat(txn, by_year, &st));
    print_stat("by_year", &st);
    if (st.ms_entries != NBOOKS) failures++;
    E(mdb_stat(txn, tagdb, &st));
    print_stat("tags", &st);
    mdb_txn_abort(txn);
    mdb_env_close(env);

    printf("%s: %d problem%s\n", failures ? "DEMO FAILED" : "demo ok", failures,
           failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
