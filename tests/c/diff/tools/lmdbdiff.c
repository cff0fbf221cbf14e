/*
 * lmdbdiff.c -- one seeded random workload through the LMDB 0.9 C API, printed as a
 * deterministic transcript (operation, return code, keys and values; never a pointer).
 *
 * The same source is compiled twice: against Debian's lmdb.h + liblmdb.so.0 and against
 * our build/include/lmdb.h + build/compat/liblmdb.so.0.  For a given seed and feature set
 * the two transcripts must be identical (tests/c/diff/rundiff.py compares them).
 *
 *   lmdbdiff [--seed N] [--txns N] [--no-dupsort] [--no-nested] [--layout] [--lmdb0924]
 *            [--no-custdup] [--walk] [--neighbours] [--envflags HEX] [--lifetime-soft] DIR
 *
 *   --seed N       PRNG seed (default 1)
 *   --txns N       number of top-level write transactions (default 60)
 *   --no-dupsort   leave out the DUPSORT / DUPFIXED / INTEGERDUP / REVERSEDUP databases
 *   --no-nested    never begin a child transaction
 *   --no-custdup   leave out "custdup", the DUPSORT database with our own dupsort function
 *                  (mdb_set_dupsort), where MDB_CURRENT and plain puts replace the bytes of
 *                  a duplicate that compares equal (what back-mdb's dn2i relies on)
 *   --layout       also print depth and page counts per database at the end (these depend
 *                  on the page-split policy, so they are not part of the default transcript)
 *   --lmdb0924     steer clear of cursor bugs of LMDB 0.9.24 (Debian 12's liblmdb), fixed in
 *                  later 0.9 releases: on a DUPSORT database, a key-level relative move
 *                  (NEXT, PREV, NEXT_NODUP, PREV_NODUP) right after a duplicate-level call
 *                  (FIRST_DUP, GET_BOTH, NEXT_MULTIPLE, ...) or after a write or delete
 *                  through the cursor gives wrong items there (seen: NOTFOUND after
 *                  FIRST_DUP+NEXT on the last key, a garbage key from PREV after
 *                  cursor_del).  With this flag such a move becomes FIRST; so does any
 *                  move right after FIRST_DUP (0.9.24 keeps a stale end-of-duplicates
 *                  flag there: LAST, FIRST_DUP, NEXT_DUP gives NOTFOUND).  Both builds of
 *                  a comparison must get the same flags.
 *                  Without the flag (comparing with LMDB 0.9.36) the workload makes every
 *                  cursor op from every state, failed calls and what follows them, and
 *                  steers clear only of what makes 0.9.36 crash or damage its own data
 *                  and of answers that depend on the page layout (op_cursor says which;
 *                  docs/compat.md lists them).
 *   --walk         one database (plain, DUPSORT or DUPFIXED) filled at random, then one
 *                  cursor session of 300 calls on it in a write txn
 *   --neighbours   one DUPSORT or DUPFIXED database: several cursors around a duplicate
 *                  that another cursor deletes, and their next moves (neighbours below)
 *   --envflags HEX flags for mdb_env_open (default MDB_NOTLS); MDB_RDONLY adds a phase
 *                  that opens the written environment again read-only
 *   --lifetime-soft  values changed before their txn's next write or end are only
 *                  counted (stderr), not printed in the transcript
 * Every key and value returned is checked by a value-lifetime oracle (check_vals); the
 * count is printed on stderr ("lifetime: checked=N changed=M ...").
 *
 * DIR must exist and be empty; the environment is left there for the file checks.
 * Exit status: 0 when the workload ran to its end (whatever the return codes were),
 * 2 on a usage error, 3 when an operation the workload depends on failed (printed).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lmdb.h"

#ifdef LMDBDIFF_EMBED
/* Built into the API-differential fuzzer (fuzz/fuzz_apidiff.c, fuzz/apidiff_ref.c): every
 * decision is read from the fuzzer's input bytes instead of the PRNG (the workload ends
 * when they run out), the transcript goes to `tout`, and a fatal error jumps back to the
 * harness instead of exiting. */
#include <setjmp.h>
static const unsigned char *feed;
static size_t feed_len, feed_pos;
static FILE *tout;
static jmp_buf fatal_jmp;
#define printf(...) fprintf(tout, __VA_ARGS__)
#define putchar(c) fputc((c), tout)
#define main lmdbdiff_main
#define FEED_DONE() (feed_pos >= feed_len)

static uint64_t feed_bytes(unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = (v << 8) | (feed_pos < feed_len ? feed[feed_pos++] : 0);
    return v;
}
#else
#define FEED_DONE() 0
#endif

/* ------------------------------------------------------------------ PRNG (splitmix64) */
static uint64_t rng_state;

static uint64_t rnd64(void)
{
#ifdef LMDBDIFF_EMBED
    return feed_bytes(8);
#endif
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned rnd(unsigned n) /* uniform-ish in [0, n) */
{
#ifdef LMDBDIFF_EMBED
    /* as few input bytes as the range needs, so short inputs make long workloads */
    if (!n)
        return 0;
    unsigned nbytes = n <= 0x100u ? 1 : n <= 0x10000u ? 2 : n <= 0x1000000u ? 3 : 4;
    return (unsigned)(feed_bytes(nbytes) % n);
#endif
    return n ? (unsigned)(rnd64() % n) : 0;
}

static int chance(unsigned percent)
{
    return rnd(100) < percent;
}

/* ------------------------------------------------------------------ transcript */
static unsigned long seq;

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 0x100000001B3ull;
    }
    return h;
}
#define FNV0 0xCBF29CE484222325ull

/* A value in the transcript: short ones in hex, long ones as length and hash. */
static void pval(const char *tag, const MDB_val *v)
{
    if (!v) {
        printf(" %s=-", tag);
        return;
    }
    if (!v->mv_data) {
        printf(" %s=null:%zu", tag, v->mv_size);
        return;
    }
    if (v->mv_size <= 40) {
        printf(" %s=", tag);
        for (size_t i = 0; i < v->mv_size; i++)
            printf("%02x", ((const unsigned char *)v->mv_data)[i]);
        if (!v->mv_size)
            printf("''");
    } else {
        printf(" %s=#%zu:%016llx", tag, v->mv_size,
               (unsigned long long)fnv(v->mv_data, v->mv_size, FNV0));
    }
}

static void line_start(const char *what)
{
    printf("%06lu %s", ++seq, what);
}

/* ------------------------------------------------------------------ value lifetimes */
/* LMDB's contract: data a call returns stays valid and unchanged until the txn ends (read
 * txn) or until its next write (write txn).  Every key and value a call returns is kept
 * here with a copy, tagged with its txn; before the txn's next write (and before a child
 * txn begins under it) and at its end (commit, abort, reset) the bytes are compared with
 * the copy.  A change is printed in the transcript (LMDB has none, so the comparison
 * reports it where it happened), or, with --lifetime-soft, only counted (stderr). */
struct kept_val {
    const MDB_txn *txn;
    const void *p;
    size_t n;
    unsigned char *copy;
    const char *what; /* the call that returned it */
    int kind;
};
static struct kept_val *kept;
static size_t nkept, capkept;
static unsigned long long lt_checked, lt_changed, lt_bytes;
static unsigned long long lt_kind_checked[16], lt_kind_changed[16];
static int opt_lt_soft;
/* values checked per returning call (cursor op, get, digest, ...) */
static struct {
    const char *what;
    unsigned long long n;
} lt_by_call[64];

static void count_call(const char *what)
{
    for (int i = 0; i < 64; i++) {
        if (!lt_by_call[i].what)
            lt_by_call[i].what = what;
        if (lt_by_call[i].what == what || !strcmp(lt_by_call[i].what, what)) {
            lt_by_call[i].n++;
            return;
        }
    }
}

/* One line: values checked by kind of database and by returning call. */
static void lifetime_report(FILE *f)
{
    fprintf(f, "lifetime: checked=%llu changed=%llu bytes=%llu", lt_checked, lt_changed,
            lt_bytes);
    for (int k = 0; k < 16; k++)
        if (lt_kind_checked[k])
            fprintf(f, " kind%d=%llu/%llu", k, lt_kind_checked[k], lt_kind_changed[k]);
    for (int i = 0; i < 64 && lt_by_call[i].what; i++)
        fprintf(f, " %s:%llu", lt_by_call[i].what, lt_by_call[i].n);
    fputc('\n', f);
}

static void keep_val(const MDB_txn *txn, int kind, const char *what, const MDB_val *v)
{
    if (!v || !v->mv_data || !v->mv_size)
        return;
    if (nkept == capkept) {
        capkept = capkept ? capkept * 2 : 256;
        kept = realloc(kept, capkept * sizeof *kept);
        if (!kept)
            abort();
    }
    struct kept_val *e = &kept[nkept++];
    e->txn = txn;
    e->p = v->mv_data;
    e->n = v->mv_size;
    e->copy = malloc(v->mv_size);
    if (!e->copy)
        abort();
    memcpy(e->copy, v->mv_data, v->mv_size);
    e->what = what;
    e->kind = kind;
}

/* Under AddressSanitizer (the fuzzer's build), memory a value pointed into may have been
 * freed already (a cursor's copy of a page, freed with the cursor): that value is gone,
 * and reading it would stop the run. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LT_ASAN 1
#endif
#endif
#ifdef LT_ASAN
void *__asan_region_is_poisoned(void *beg, size_t size);
static int lt_freed(const void *p, size_t n)
{
    return __asan_region_is_poisoned((void *)p, n) != NULL;
}
#else
static int lt_freed(const void *p, size_t n)
{
    (void)p;
    (void)n;
    return 0;
}
#endif

/* Compare and forget every value kept for `txn` (NULL: all). */
static void check_vals(const MDB_txn *txn, const char *why)
{
    size_t j = 0;
    for (size_t i = 0; i < nkept; i++) {
        struct kept_val *e = &kept[i];
        if (txn && e->txn != txn) {
            kept[j++] = *e;
            continue;
        }
        if (getenv("LMDBDIFF_LIFETIME_TRACE"))
            fprintf(stderr, "lifetime: checking a value from %s (kind %d) before %s\n",
                    e->what, e->kind, why);
        lt_checked++;
        lt_bytes += e->n;
        lt_kind_checked[e->kind & 15]++;
        count_call(e->what);
        if (lt_freed(e->p, e->n) || memcmp(e->p, e->copy, e->n) != 0) {
            lt_changed++;
            lt_kind_changed[e->kind & 15]++;
            if (opt_lt_soft) {
#ifndef LMDBDIFF_EMBED
                if (lt_changed <= 5)
                    fprintf(stderr, "lifetime-changed: a value from %s changed before %s\n", e->what,
                            why);
#endif
            } else {
                line_start("LIFETIME-CHANGED");
                printf(" from=%s at=%s size=%zu\n", e->what, why, e->n);
            }
        }
        free(e->copy);
    }
    nkept = j;
}

static void fatal(const char *what, int rc)
{
    printf("FATAL %s rc=%d\n", what, rc);
#ifdef LMDBDIFF_EMBED
    longjmp(fatal_jmp, 1);
#endif
    fflush(stdout);
    exit(3);
}

/* ------------------------------------------------------------------ databases */
enum kind { K_PLAIN, K_INTKEY, K_REVKEY, K_DUPS, K_DUPFIXED, K_INTDUP, K_REVDUP, K_CUSTDUP,
            K_NKINDS };
static const char *const kind_name[K_NKINDS] = {"plain", "intkey", "revkey", "dups",
                                                "dupfixed", "intdup", "revdup", "custdup"};
static const unsigned kind_flags[K_NKINDS] = {
    0,
    MDB_INTEGERKEY,
    MDB_REVERSEKEY,
    MDB_DUPSORT,
    MDB_DUPSORT | MDB_DUPFIXED,
    MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP | MDB_INTEGERKEY,
    MDB_DUPSORT | MDB_REVERSEDUP,
    MDB_DUPSORT, /* with a dupsort function of ours (mdb_set_dupsort), as back-mdb's dn2i */
};

/* custdup's duplicate order: the first 6 bytes only ("d%05u"); the 4 bytes after them
 * are payload, so two values with the same head are the same duplicate (back-mdb keeps a
 * counter behind the compared part of its dn2i values and updates it with MDB_CURRENT). */
static int cmp_head6(const MDB_val *a, const MDB_val *b)
{
    size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
    int r = memcmp(a->mv_data, b->mv_data, n < 6 ? n : 6);
    if (r || n >= 6)
        return r;
    return (a->mv_size > b->mv_size) - (a->mv_size < b->mv_size);
}

struct db {
    enum kind kind;
    MDB_dbi dbi;
    int dup, fixed;
    /* The database held more than a page's worth since it was last seen empty: its page
     * layout, no part of the API, may then differ between engines (split and merge
     * policies differ) even after it shrank, since neither engine merges every page a
     * shrink leaves sparse.  Kept by db_bytes. */
    int grown;
};

static struct db dbs[K_NKINDS];
static int ndbs;
static MDB_env *env;
static int opt_dupsort = 1, opt_nested = 1, opt_layout, opt_0924, opt_custdup = 1, opt_walk;
static int opt_neighbours;
static unsigned opt_envflags = MDB_NOTLS;

/* Buffers for generated keys and values (one key and one value alive at a time). */
static unsigned char kbuf[600], vbuf[12000];
static unsigned int kint;
static uint64_t kint64;

static void gen_key(const struct db *d, MDB_val *k)
{
    switch (d->kind) {
    case K_INTKEY:
        kint = chance(90) ? rnd(600) : (unsigned)rnd64();
        k->mv_data = &kint;
        k->mv_size = sizeof kint;
        return;
    case K_INTDUP:
        kint = rnd(50);
        k->mv_data = &kint;
        k->mv_size = sizeof kint;
        return;
    case K_DUPS:
    case K_DUPFIXED:
    case K_REVDUP:
    case K_CUSTDUP:
        k->mv_size = (size_t)snprintf((char *)kbuf, sizeof kbuf, "g%03u", rnd(40));
        k->mv_data = kbuf;
        return;
    default: {
        int n = snprintf((char *)kbuf, sizeof kbuf, "k%05u", rnd(400));
        if (chance(10)) { /* long keys, up to the 511-byte limit, for branch splits */
            unsigned extra = 1 + rnd(chance(20) ? 505 : 120);
            for (unsigned i = 0; i < extra; i++)
                kbuf[n + i] = (unsigned char)('a' + (i * 7 + extra) % 26);
            n += (int)extra;
        }
        k->mv_size = (size_t)n;
        k->mv_data = kbuf;
        return;
    }
    }
}

static void fill(unsigned char *buf, size_t n, unsigned tag)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(tag * 31u + i * 13u + (i >> 8));
}

static void gen_val_into(const struct db *d, MDB_val *v, unsigned char *buf)
{
    unsigned tag = rnd(5000);
    switch (d->kind) {
    case K_DUPFIXED: /* 8 bytes, big-endian so that memcmp order is numeric order */
        for (int i = 0; i < 8; i++)
            buf[i] = (unsigned char)((uint64_t)tag >> (56 - 8 * i));
        v->mv_size = 8;
        break;
    case K_INTDUP:
        kint64 = tag;
        memcpy(buf, &kint64, 8);
        v->mv_size = 8;
        break;
    case K_CUSTDUP: /* 6 compared bytes (few distinct ones) + 4 bytes of payload */
        snprintf((char *)buf, 8, "d%05u", tag % 300);
        fill(buf + 6, 4, (unsigned)rnd(1u << 20));
        v->mv_size = 10;
        break;
    case K_DUPS:
    case K_REVDUP: {
        int n = snprintf((char *)buf, 64, "d%05u", tag);
        size_t pad = chance(15) ? rnd(200) : rnd(12);
        fill(buf + n, pad, tag);
        v->mv_size = (size_t)n + pad;
        break;
    }
    default: {
        size_t n;
        unsigned r = rnd(100);
        if (r < 4)
            n = 0;
        else if (r < 88)
            n = 1 + rnd(120);
        else if (r < 96)
            n = 200 + rnd(1800);
        else
            n = 2000 + rnd(9000); /* overflow pages */
        int h = snprintf((char *)buf, 16, "v%u:", tag);
        if ((size_t)h > n)
            h = (int)n;
        fill(buf + h, n - (size_t)h, tag);
        v->mv_size = n;
        break;
    }
    }
    v->mv_data = buf;
}

static void gen_val(const struct db *d, MDB_val *v)
{
    gen_val_into(d, v, vbuf);
}

/* keep_val for what a call returned: pointers into the workload's own buffers (a key or
 * value LMDB left alone) are not the library's. */
static int ours_buf(const void *p)
{
    const unsigned char *c = p;
    return (c >= kbuf && c < kbuf + sizeof kbuf) || (c >= vbuf && c < vbuf + sizeof vbuf) ||
           p == (const void *)&kint || p == (const void *)&kint64;
}

static void keep(const MDB_txn *txn, const struct db *d, const char *what, const MDB_val *v)
{
    if (v && v->mv_data && !ours_buf(v->mv_data))
        keep_val(txn, (int)d->kind, what, v);
}

/* A value for MDB_APPENDDUP: LMDB 0.9 does not check the order of appended duplicates
 * (an out-of-order one corrupts the sub-page), so only a value above the key's current
 * last duplicate is used, and only in the numeric DUPFIXED databases. */
static int gen_appenddup(MDB_txn *txn, const struct db *d, MDB_val *k, MDB_val *v)
{
    MDB_cursor *c;
    MDB_val kk = *k, last;
    uint64_t x = rnd(5000);
    if (d->kind != K_DUPFIXED && d->kind != K_INTDUP)
        return 0;
    if (mdb_cursor_open(txn, d->dbi, &c))
        return 0;
    if (mdb_cursor_get(c, &kk, &last, MDB_SET_KEY) == 0 &&
        mdb_cursor_get(c, &kk, &last, MDB_LAST_DUP) == 0 && last.mv_size == 8) {
        uint64_t cur = 0;
        if (d->kind == K_INTDUP)
            memcpy(&cur, last.mv_data, 8);
        else
            for (int i = 0; i < 8; i++)
                cur = cur << 8 | ((const unsigned char *)last.mv_data)[i];
        x = cur + 1 + rnd(4);
    }
    mdb_cursor_close(c);
    if (d->kind == K_INTDUP)
        memcpy(vbuf, &x, 8);
    else
        for (int i = 0; i < 8; i++)
            vbuf[i] = (unsigned char)(x >> (56 - 8 * i));
    v->mv_data = vbuf;
    v->mv_size = 8;
    return 1;
}

/* ------------------------------------------------------------------ checksums */
/* Count and hash every pair of one database, through a cursor in `txn`. */
static void db_digest(MDB_txn *txn, const struct db *d, const char *why)
{
    MDB_cursor *c;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, d->dbi, &c);
    line_start(why);
    printf(" db=%s", kind_name[d->kind]);
    if (rc) {
        printf(" cursor_open rc=%d\n", rc);
        return;
    }
    uint64_t h = FNV0;
    unsigned long n = 0;
    while ((rc = mdb_cursor_get(c, &k, &v, n ? MDB_NEXT : MDB_FIRST)) == 0) {
        keep(txn, d, "digest", &k);
        keep(txn, d, "digest", &v);
        h = fnv(&k.mv_size, sizeof k.mv_size, h);
        h = fnv(k.mv_data, k.mv_size, h);
        h = fnv(&v.mv_size, sizeof v.mv_size, h);
        h = fnv(v.mv_data, v.mv_size, h);
        n++;
    }
    MDB_stat st;
    int src = mdb_stat(txn, d->dbi, &st);
    printf(" n=%lu end=%d hash=%016llx stat=%d entries=%zu\n", n, rc, (unsigned long long)h, src,
           src ? (size_t)0 : st.ms_entries);
    mdb_cursor_close(c);
}

static void db_dump(MDB_txn *txn, const struct db *d)
{
    MDB_cursor *c;
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, d->dbi, &c);
    if (rc)
        fatal("dump cursor_open", rc);
    unsigned long n = 0;
    while ((rc = mdb_cursor_get(c, &k, &v, n ? MDB_NEXT : MDB_FIRST)) == 0) {
        keep(txn, d, "dump", &k);
        keep(txn, d, "dump", &v);
        line_start("dump");
        printf(" db=%s", kind_name[d->kind]);
        pval("k", &k);
        pval("v", &v);
        putchar('\n');
        n++;
    }
    line_start("dump-end");
    printf(" db=%s n=%lu rc=%d\n", kind_name[d->kind], n, rc);
    mdb_cursor_close(c);
}

/* ------------------------------------------------------------------ operations */
static const struct db *walk_db;
static unsigned walk_nops;

static const struct db *pick_db(void)
{
    return walk_db ? walk_db : &dbs[rnd((unsigned)ndbs)];
}

static void op_put(MDB_txn *txn)
{
    const struct db *d = pick_db();
    MDB_val k, v;
    unsigned flags = 0;
    gen_key(d, &k);
    gen_val(d, &v);
    unsigned r = rnd(100);
    if (r < 15)
        flags = MDB_NOOVERWRITE;
    else if (r < 25 && d->dup)
        flags = MDB_NODUPDATA;
    else if (r < 30)
        flags = MDB_APPEND;
    else if (r < 33 && d->dup && gen_appenddup(txn, d, &k, &v))
        flags = MDB_APPENDDUP;
    else if (r < 40 && !d->dup)
        flags = MDB_RESERVE;
    size_t vsize = v.mv_size;
    check_vals(txn, "put");
    line_start("put");
    printf(" db=%s fl=%x", kind_name[d->kind], flags);
    pval("k", &k);
    pval("v", &v);
    int rc = mdb_put(txn, d->dbi, &k, &v, flags);
    printf(" rc=%d", rc);
    if (rc == MDB_KEYEXIST) {
        pval("old", &v);
        keep(txn, d, "put-old", &v);
    }
    if (rc == 0 && (flags & MDB_RESERVE)) {
        printf(" rsize=%zu", v.mv_size);
        if (v.mv_size == vsize)
            fill(v.mv_data, vsize, 77);
    }
    putchar('\n');
}

static void op_del(MDB_txn *txn)
{
    const struct db *d = pick_db();
    MDB_val k, v;
    gen_key(d, &k);
    int with_data = d->dup && chance(60);
    if (with_data)
        gen_val(d, &v);
    check_vals(txn, "del");
    line_start("del");
    printf(" db=%s", kind_name[d->kind]);
    pval("k", &k);
    if (with_data)
        pval("v", &v);
    printf(" rc=%d\n", mdb_del(txn, d->dbi, &k, with_data ? &v : NULL));
}

static void op_get(MDB_txn *txn, const char *tag)
{
    const struct db *d = pick_db();
    MDB_val k, v;
    gen_key(d, &k);
    line_start(tag);
    printf(" db=%s", kind_name[d->kind]);
    pval("k", &k);
    int rc = mdb_get(txn, d->dbi, &k, &v);
    printf(" rc=%d", rc);
    if (rc == 0) {
        pval("v", &v);
        keep(txn, d, "get", &v);
    }
    putchar('\n');
}

/* Calls that must fail the same way on both libraries. */
static void op_bad(MDB_txn *txn)
{
    const struct db *d = pick_db();
    MDB_val k, v;
    check_vals(txn, "bad-put");
    gen_val(d, &v);
    unsigned r = rnd(3);
    if (r == 0) { /* empty key */
        k.mv_size = 0;
        k.mv_data = kbuf;
        line_start("bad-emptykey");
    } else if (r == 1 && (d->kind == K_PLAIN || d->kind == K_REVKEY)) { /* key too long */
        memset(kbuf, 'z', 512);
        k.mv_size = 512;
        k.mv_data = kbuf;
        line_start("bad-longkey");
    } else {
        /* (A DUPFIXED value of the wrong size is not tried: LMDB 0.9 does not check it and
         * writes a damaged page, so there is no defined result to compare.) */
        gen_key(d, &k);
        line_start("bad-none");
    }
    printf(" db=%s rc=%d\n", kind_name[d->kind], mdb_put(txn, d->dbi, &k, &v, 0));
}

/* Cursor states, to issue only calls whose result LMDB 0.9 defines:
 * FRESH never positioned; UNSET after a failed positioning call (LMDB leaves the position
 * unspecified); POS on an item; EOF after NEXT/PREV ran off an end; DELETED after cursor_del. */
enum cstate { CS_FRESH, CS_UNSET, CS_POS, CS_EOF, CS_DELETED };

static void print_cur(int rc, const MDB_val *k, const MDB_val *v)
{
    printf(" rc=%d", rc);
    if (rc == 0) {
        pval("k", k);
        if (v)
            pval("v", v);
    }
    putchar('\n');
}

/* Whether cursor `c` (positioned, no delete pending) stands on the database's last key.
 * Nothing printed; GET_CURRENT and a second cursor leave `c` as it was. */
static int on_last_key(MDB_txn *txn, const struct db *d, MDB_cursor *c)
{
    MDB_cursor *probe;
    MDB_val lk, lv, ck, cv;
    int last = 0;
    if (mdb_cursor_open(txn, d->dbi, &probe) != 0)
        return 0;
    if (mdb_cursor_get(probe, &lk, &lv, MDB_LAST) == 0 &&
        mdb_cursor_get(c, &ck, &cv, MDB_GET_CURRENT) == 0)
        last = lk.mv_size == ck.mv_size && memcmp(lk.mv_data, ck.mv_data, lk.mv_size) == 0;
    mdb_cursor_close(probe);
    return last;
}

/* The bytes of a database's records as the API shows them (identical on both engines):
 * below about 1,000 the database is one leaf in LMDB and in ours. */
static size_t db_bytes(MDB_txn *txn, struct db *d)
{
    MDB_cursor *probe;
    MDB_val k, v;
    size_t n = 0;
    if (mdb_cursor_open(txn, d->dbi, &probe) != 0)
        return (size_t)-1;
    for (int rc = mdb_cursor_get(probe, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(probe, &k, &v, MDB_NEXT))
        n += k.mv_size + v.mv_size + 10;
    mdb_cursor_close(probe);
    if (n > 1000)
        d->grown = 1;
    else if (n == 0)
        d->grown = 0; /* an empty tree is no page at all, in every engine */
    return n;
}

/* Whether the page layout of d may differ between engines (see struct db's grown). */
static int layout_may_differ(MDB_txn *txn, struct db *d)
{
    return db_bytes(txn, d) > 1000 || d->grown;
}

/* Whether `key` sorts after every key of the database (mdb_cmp: the database's order). */
static int past_last(MDB_txn *txn, const struct db *d, const MDB_val *key)
{
    MDB_cursor *probe;
    MDB_val k, v;
    int past = 1;
    if (mdb_cursor_open(txn, d->dbi, &probe) != 0)
        return 1;
    if (mdb_cursor_get(probe, &k, &v, MDB_LAST) == 0)
        past = mdb_cmp(txn, d->dbi, key, &k) > 0;
    mdb_cursor_close(probe);
    return past;
}

/* A cursor session: open, a few moves / puts / deletes, close.  `writable` allows puts. */
static void op_cursor(MDB_txn *txn, int writable)
{
    struct db *d = (struct db *)pick_db();
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, d->dbi, &c);
    line_start("cursor-open");
    printf(" db=%s rc=%d\n", kind_name[d->kind], rc);
    if (rc)
        return;
    (void)db_bytes(txn, d); /* d->grown after the writes made outside this cursor */
    enum cstate st = CS_FRESH;
    /* --lmdb0924: on a DUPSORT database, set after a duplicate-level call or a write
     * through the cursor; the next key-level relative move is then replaced (see usage). */
    int dupdirty = 0;
    /* Set right after a successful NEXT_DUP, PREV_DUP or NEXT_MULTIPLE.
     * GET_MULTIPLE is only issued then: LMDB 0.9 (0.9.24 and 0.9.36 alike) answers it from
     * its duplicate sub-cursor without re-reading the current item, so after a key-level
     * move onto a key with one value, or after a cursor put, it returns values of an
     * earlier position -- stale data no other implementation can be asked to reproduce. */
    int xfresh = 0;
    /* LMDB 0.9 keeps the cursor's end-of-data flag (set by LAST or by NEXT/PREV running off
     * the end) through mdb_cursor_put and mdb_cursor_del, so that a NEXT after such a write
     * can give NOTFOUND although an item follows (0.9.24 and 0.9.36 alike).  `eofish`
     * tracks that flag; after a write made while it is set, relative moves are replaced by
     * FIRST until an absolute positioning call. */
    int eofish = 0, stale_eof = 0;
    /* LMDB 0.9.36 bug: when mdb_cursor_del removes a whole key of a DUPSORT database, the
     * cursor slides onto the next key but its duplicate sub-cursor keeps the position it had
     * on the deleted key, still marked valid.  The next NEXT then skips the new key's first
     * value or PREV returns the new key itself.  We do not copy that (docs/compat.md); in a
     * comparison with 0.9.36 the relative move right after such a delete becomes FIRST.
     * (0.9.24 has no such bug: --lmdb0924 runs keep the move.) */
    int whole_key_gone = 0;
    /* 0.9.36 mode: an exact lookup missed on a DUPSORT database (see the moves below) */
    int xunset = 0, missed_big = 0, missed_end = 0, eof_big = 0;
    unsigned nops = walk_nops ? walk_nops : 1 + rnd(14);
    for (unsigned i = 0; i < nops; i++) {
        MDB_val k, v;
        unsigned r = rnd(100);
        if (writable && r >= 82) { /* writes through the cursor */
            check_vals(txn, "cursor write");
            (void)db_bytes(txn, d); /* d->grown after this cursor's earlier writes */
            dupdirty = d->dup;
            xfresh = 0;
            /* 0.9.36: a write through the sub-cursor a whole-key delete left behind
             * corrupts the database: only puts (which position the cursor by key) follow */
            int stale_x = !opt_0924 && whole_key_gone;
            if (!opt_0924 && (eofish || eof_big))
                eof_big = layout_may_differ(txn, d);
            whole_key_gone = 0;
            if (eofish)
                stale_eof = 1;
            unsigned w = rnd(100);
            if (w < 35 && (opt_0924 ? st == CS_POS : !missed_big && !stale_x)) {
                line_start("c-del");
                unsigned fl = (d->dup && chance(30)) ? MDB_NODUPDATA : 0;
                /* 0.9.36 deletes the key with MDB_NODUPDATA after a missed lookup and
                 * subtracts the count of an earlier key's duplicates from the database's
                 * entries (its own data corrupted): steered clear of */
                if (xunset)
                    fl = 0;
                size_t values = 0; /* not printed: count leaves the cursor alone */
                if (d->dup && !fl && mdb_cursor_count(c, &values) != 0)
                    values = 0;
                int at_last_key = st == CS_POS && on_last_key(txn, d, c);
                rc = mdb_cursor_del(c, fl);
                printf(" fl=%x rc=%d\n", fl, rc);
                if (rc == 0)
                    xunset = missed_big = missed_end = 0;
                st = rc ? CS_UNSET : CS_DELETED;
                int whole = !d->dup || fl || values == 1;
                whole_key_gone = rc == 0 && d->dup && !opt_0924 && whole;
                /* the last key gone: LMDB sets its end flag, which the next write keeps */
                if (rc == 0 && whole && at_last_key)
                    eofish = 1;
            } else if (w < 50 && (opt_0924 ? st == CS_POS : !missed_big && !stale_x) &&
                       (!d->dup || d->kind == K_CUSTDUP)) {
                /* replace the current value: any size in a non-DUPSORT DB; in custdup a
                 * value equal under its dupsort function (same head, new payload) */
                MDB_val cur;
                gen_val(d, &v);
                rc = mdb_cursor_get(c, &k, &cur, MDB_GET_CURRENT);
                if (rc == 0 && d->kind == K_CUSTDUP && cur.mv_size == 10)
                    memcpy(vbuf, cur.mv_data, 6);
                if (rc == 0) {
                    keep(txn, d, "c-getcur-for-put", &cur);
                    check_vals(txn, "c-put-current"); /* the put is the next write */
                }
                if (rc) {
                    line_start("c-getcur-for-put");
                    printf(" rc=%d\n", rc);
                    st = CS_UNSET;
                    continue;
                }
                memcpy(kbuf, k.mv_data, k.mv_size); /* key must not point into the map */
                k.mv_data = kbuf;
                line_start("c-put-current");
                pval("k", &k);
                pval("v", &v);
                rc = mdb_cursor_put(c, &k, &v, MDB_CURRENT);
                printf(" rc=%d\n", rc);
                st = rc ? CS_UNSET : CS_POS;
            } else if (w < 60 && d->fixed) {
                /* MDB_MULTIPLE: a run of fixed-size values under one key */
                static unsigned char multi[8 * 64];
                MDB_val m[2];
                unsigned cnt = 1 + rnd(40);
                unsigned base = rnd(5000);
                gen_key(d, &k);
                for (unsigned j = 0; j < cnt; j++) {
                    uint64_t x = base + j * (1 + rnd(3));
                    if (d->kind == K_INTDUP)
                        memcpy(multi + 8 * j, &x, 8);
                    else
                        for (int b = 0; b < 8; b++)
                            multi[8 * j + b] = (unsigned char)(x >> (56 - 8 * b));
                }
                /* LMDB 0.9 bug (0.9.24 and 0.9.36): when the key holds exactly one value
                 * and it equals the batch's first, MDB_MULTIPLE rewrites it, stores nothing
                 * more and reports success with 0 done (docs/compat.md).  Ours stores the
                 * batch; the workload moves the first value off the existing one. */
                {
                    MDB_cursor *probe;
                    MDB_val pk = k, pv;
                    size_t n = 0;
                    if (mdb_cursor_open(txn, d->dbi, &probe) == 0) {
                        if (mdb_cursor_get(probe, &pk, &pv, MDB_SET_KEY) == 0 &&
                            mdb_cursor_count(probe, &n) == 0 && n == 1 && pv.mv_size == 8 &&
                            memcmp(pv.mv_data, multi, 8) == 0)
                            multi[d->kind == K_INTDUP ? 0 : 7] ^= 1;
                        mdb_cursor_close(probe);
                    }
                }
                m[0].mv_size = 8;
                m[0].mv_data = multi;
                m[1].mv_size = cnt;
                m[1].mv_data = NULL;
                line_start("c-put-multiple");
                pval("k", &k);
                printf(" n=%u base=%u", cnt, base);
                rc = mdb_cursor_put(c, &k, m, MDB_MULTIPLE);
                printf(" rc=%d done=%zu\n", rc, m[1].mv_size);
                st = rc ? CS_UNSET : CS_POS;
            } else {
                unsigned fl = 0, f = rnd(100);
                if (f < 20)
                    fl = MDB_NOOVERWRITE;
                else if (f < 35 && d->dup)
                    fl = MDB_NODUPDATA;
                else if (f < 42)
                    fl = MDB_APPEND;
                gen_key(d, &k);
                gen_val(d, &v);
                if (f >= 42 && f < 48 && d->dup && gen_appenddup(txn, d, &k, &v))
                    fl = MDB_APPENDDUP;
                line_start("c-put");
                printf(" fl=%x", fl);
                pval("k", &k);
                pval("v", &v);
                rc = mdb_cursor_put(c, &k, &v, fl);
                printf(" rc=%d", rc);
                if (rc == 0)
                    xunset = missed_big = missed_end = 0;
                if (rc == MDB_KEYEXIST) {
                    pval("old", &v);
                    keep(txn, d, "c-put-old", &v);
                }
                putchar('\n');
                /* APPEND looks at the last record through LMDB's cursor_last, which sets
                 * the end flag -- refused or not (found by fuzz_apidiff) */
                if (fl & (MDB_APPEND | MDB_APPENDDUP))
                    eofish = 1;
                st = rc ? CS_UNSET : CS_POS;
            }
            continue;
        }
        /* moves */
        MDB_cursor_op op;
        const char *name;
        int needk = 0, needv = 0;
        if (!opt_0924) {
            /* Compared with 0.9.36: every op from every state, failed calls included, on
             * every kind of database.  Steered clear of only where 0.9.36 reads through a
             * stale duplicate sub-cursor (see whole_key_gone above, and after a cursor
             * write, GET_MULTIPLE: the sub-cursor's page may have been freed). */
            static const struct { MDB_cursor_op op; const char *name; int k, v; } all[] = {
                {MDB_FIRST, "FIRST", 0, 0},
                {MDB_LAST, "LAST", 0, 0},
                {MDB_NEXT, "NEXT", 0, 0},
                {MDB_NEXT, "NEXT", 0, 0},
                {MDB_PREV, "PREV", 0, 0},
                {MDB_PREV, "PREV", 0, 0},
                {MDB_SET, "SET", 1, 0},
                {MDB_SET_KEY, "SET_KEY", 1, 0},
                {MDB_SET_RANGE, "SET_RANGE", 1, 0},
                {MDB_GET_CURRENT, "GET_CURRENT", 0, 0},
                {MDB_FIRST_DUP, "FIRST_DUP", 0, 0},
                {MDB_LAST_DUP, "LAST_DUP", 0, 0},
                {MDB_NEXT_DUP, "NEXT_DUP", 0, 0},
                {MDB_PREV_DUP, "PREV_DUP", 0, 0},
                {MDB_NEXT_NODUP, "NEXT_NODUP", 0, 0},
                {MDB_PREV_NODUP, "PREV_NODUP", 0, 0},
                {MDB_GET_BOTH, "GET_BOTH", 1, 1},
                {MDB_GET_BOTH_RANGE, "GET_BOTH_RANGE", 1, 1},
                {MDB_GET_MULTIPLE, "GET_MULTIPLE", 0, 0},
                {MDB_NEXT_MULTIPLE, "NEXT_MULTIPLE", 0, 0},
                {MDB_PREV_MULTIPLE, "PREV_MULTIPLE", 0, 0},
                {MDB_GET_CURRENT, "COUNT", 0, 0}, /* mdb_cursor_count */
            };
            unsigned m = rnd(sizeof all / sizeof all[0]);
            int repos = 0;
            op = all[m].op;
            name = all[m].name;
            needk = all[m].k;
            needv = all[m].v;
            int rel = op == MDB_NEXT || op == MDB_PREV || op == MDB_NEXT_NODUP ||
                      op == MDB_PREV_NODUP || op == MDB_NEXT_DUP || op == MDB_PREV_DUP ||
                      op == MDB_NEXT_MULTIPLE || op == MDB_PREV_MULTIPLE ||
                      op == MDB_GET_MULTIPLE || op == MDB_GET_CURRENT;
            /* After an exact lookup missed on a DUPSORT database, 0.9.36 leaves its
             * duplicate sub-cursor unset but keeps the pointers of the last key it loaded:
             * NEXT, PREV, their _DUP forms and the MULTIPLE ops on a key with duplicates
             * then read that earlier key's sub-page or sub-tree (seen: an assertion
             * failure, 'root > 1', in mdb_page_search; docs/compat.md). */
            int stale = xunset && op != MDB_GET_CURRENT && rel;
            /* GET_MULTIPLE reads the sub-cursor as it is, without looking at the item
             * under the cursor: only right after a duplicate-level move is it current */
            if (op == MDB_GET_MULTIPLE && !xfresh)
                stale = 1;
            /* After a missed exact lookup the cursor stands at the insertion point, and
             * where that is depends on the page layout, which is no part of the API and
             * differs between engines (split policy): between two leaves LMDB stands at
             * the end of the left one or at the start of the right one, depending on the
             * separator key, so NEXT, GET_CURRENT, count and cursor_del answer for
             * different items.  Those calls follow a miss only while the database is
             * smaller than one page in either engine (missed_big: see db_bytes). */
            /* The same holds for LMDB's end mark kept through a cursor write: whether NEXT
             * answers MDB_NOTFOUND depends on the item being last on its leaf */
            if (eof_big && (op == MDB_NEXT || op == MDB_NEXT_NODUP || op == MDB_NEXT_DUP ||
                            op == MDB_NEXT_MULTIPLE))
                stale = 1;
            if (missed_big && (op == MDB_NEXT || op == MDB_NEXT_NODUP || op == MDB_NEXT_DUP ||
                               op == MDB_GET_CURRENT || op == MDB_FIRST_DUP ||
                               op == MDB_LAST_DUP || op == MDB_NEXT_MULTIPLE ||
                               !strcmp(name, "COUNT")))
                stale = 1;
            /* after a whole-key delete 0.9.36's sub-cursor still holds the deleted key's
             * position: every call that reads it is steered clear of, until the cursor
             * is positioned again */
            if (whole_key_gone && (op == MDB_FIRST_DUP || op == MDB_LAST_DUP ||
                                   !strcmp(name, "COUNT")))
                stale = 1;
            /* count does not check that the cursor stands on an item (0.9.36 reads the
             * node slot past the last one): not after a miss past the last key */
            if (missed_end && !strcmp(name, "COUNT"))
                stale = 1;
            if ((whole_key_gone && rel) || (dupdirty && op == MDB_GET_MULTIPLE) || stale) {
                op = MDB_FIRST;
                name = "FIRST";
                needk = needv = 0;
            }
            if (op == MDB_FIRST || op == MDB_LAST || needk)
                dupdirty = 0;
            if (op == MDB_FIRST || op == MDB_LAST || needk || op == MDB_NEXT_NODUP ||
                op == MDB_PREV_NODUP)
                repos = 1;
            if (!strcmp(name, "COUNT")) {
                size_t cnt = 0;
                rc = mdb_cursor_count(c, &cnt);
                line_start("c-count");
                printf(" rc=%d n=%zu\n", rc, rc ? (size_t)0 : cnt);
                continue;
            }
            k.mv_size = v.mv_size = 0;
            k.mv_data = v.mv_data = NULL;
            if (needk)
                gen_key(d, &k);
            if (needv)
                gen_val(d, &v);
            line_start("c-get");
            printf(" %s", name);
            if (needk)
                pval("k", &k);
            if (needv)
                pval("v", &v);
            rc = mdb_cursor_get(c, &k, &v, op);
            print_cur(rc, &k, &v);
            if (rc == 0) {
                keep(txn, d, name, &k);
                keep(txn, d, name, &v);
            }
            if (d->dup && rc == MDB_NOTFOUND && needk)
                xunset = 1;
            else if (rc == 0 && repos)
                xunset = 0;
            if (rc == MDB_NOTFOUND && needk) {
                missed_big = layout_may_differ(txn, d);
                missed_end = op == MDB_SET_RANGE || past_last(txn, d, &k);
            } else if (rc == 0 && repos) {
                missed_big = missed_end = 0;
            }
            if (repos)
                whole_key_gone = 0;
            if (rc == 0 && (op == MDB_LAST || op == MDB_LAST_DUP))
                eofish = 1;
            else if (rc == MDB_NOTFOUND && (rel || op == MDB_SET_RANGE))
                eofish = 1;
            else if (rc == 0 && op != MDB_GET_CURRENT && op != MDB_FIRST_DUP)
                eofish = 0;
            if (rc == 0 && repos)
                eof_big = 0;
            xfresh = rc == 0 && (op == MDB_NEXT_DUP || op == MDB_PREV_DUP ||
                                 op == MDB_NEXT_MULTIPLE || (op == MDB_GET_MULTIPLE && xfresh));
            continue;
        }
        unsigned m = rnd(d->dup ? 19 : 9);
        switch (m) {
        case 0: op = MDB_FIRST; name = "FIRST"; break;
        case 1: op = MDB_LAST; name = "LAST"; break;
        case 2: case 3: op = MDB_NEXT; name = "NEXT"; break;
        case 4: op = MDB_PREV; name = "PREV"; break;
        case 5: op = MDB_SET; name = "SET"; needk = 1; break;
        case 6: op = MDB_SET_KEY; name = "SET_KEY"; needk = 1; break;
        case 7: op = MDB_SET_RANGE; name = "SET_RANGE"; needk = 1; break;
        case 8: op = MDB_GET_CURRENT; name = "GET_CURRENT"; break;
        case 9: op = MDB_FIRST_DUP; name = "FIRST_DUP"; break;
        case 10: op = MDB_LAST_DUP; name = "LAST_DUP"; break;
        case 11: op = MDB_NEXT_DUP; name = "NEXT_DUP"; break;
        case 12: op = MDB_PREV_DUP; name = "PREV_DUP"; break;
        case 13: op = MDB_NEXT_NODUP; name = "NEXT_NODUP"; break;
        case 14: op = MDB_PREV_NODUP; name = "PREV_NODUP"; break;
        case 15: op = MDB_GET_BOTH; name = "GET_BOTH"; needk = needv = 1; break;
        case 16: op = MDB_GET_BOTH_RANGE; name = "GET_BOTH_RANGE"; needk = needv = 1; break;
        case 17: op = MDB_NEXT; name = "NEXT"; break;
        default:
            if (d->fixed) {
                op = ((xfresh && chance(70)) || (st == CS_POS && chance(30))) ? MDB_GET_MULTIPLE
                                                                         : MDB_NEXT_MULTIPLE;
                name = op == MDB_GET_MULTIPLE ? "GET_MULTIPLE" : "NEXT_MULTIPLE";
            } else {
                op = MDB_PREV;
                name = "PREV";
            }
            break;
        }
        int absolute = op == MDB_FIRST || op == MDB_LAST || needk;
        int relative = op == MDB_NEXT || op == MDB_PREV || op == MDB_NEXT_NODUP ||
                       op == MDB_PREV_NODUP || op == MDB_NEXT_MULTIPLE;
        /* Only calls whose outcome LMDB 0.9 defines: dup moves, GET_CURRENT, count and
         * GET_MULTIPLE from a valid position; NEXT/PREV also after NOTFOUND or a delete. */
        if (!absolute && st != CS_POS && !(relative && (st == CS_EOF || st == CS_DELETED))) {
            if (st == CS_FRESH && (op == MDB_NEXT || (op == MDB_PREV && !d->dup))) {
                /* NEXT/PREV on a fresh cursor mean FIRST/LAST: defined, keep them.  (Not
                 * PREV on a DUPSORT database: LMDB 0.9.24 returns a garbage key there, a
                 * bug fixed in later 0.9 releases.) */
            } else {
                op = MDB_FIRST;
                name = "FIRST";
                needk = needv = 0;
            }
        }
        if (stale_eof && (relative || op == MDB_NEXT_DUP)) {
            op = MDB_FIRST;
            name = "FIRST";
            needk = needv = 0;
        }
        if (op == MDB_GET_MULTIPLE && !xfresh) {
            op = MDB_FIRST_DUP;
            name = "FIRST_DUP";
        }
        if (whole_key_gone && relative) {
            op = MDB_FIRST;
            name = "FIRST";
            needk = needv = 0;
        }
        whole_key_gone = 0;
        if (opt_0924 && d->dup && dupdirty && relative) {
            op = MDB_FIRST;
            name = "FIRST";
            needk = needv = 0;
        }
        if (d->dup)
            dupdirty = !(op == MDB_FIRST || op == MDB_LAST || op == MDB_SET ||
                         op == MDB_SET_KEY || op == MDB_SET_RANGE || (relative && !dupdirty)) ||
                       op == MDB_NEXT_MULTIPLE;
        /* the op may have been replaced above: classify it again */
        absolute = op == MDB_FIRST || op == MDB_LAST || needk;
        relative = op == MDB_NEXT || op == MDB_PREV || op == MDB_NEXT_NODUP ||
                   op == MDB_PREV_NODUP || op == MDB_NEXT_MULTIPLE;
        if (needk)
            gen_key(d, &k);
        if (needv)
            gen_val(d, &v);
        line_start("c-get");
        printf(" %s", name);
        if (needk)
            pval("k", &k);
        if (needv)
            pval("v", &v);
        rc = mdb_cursor_get(c, &k, &v, op);
        if (op == MDB_SET)
            print_cur(rc, NULL, &v); /* SET does not return the key */
        else
            print_cur(rc, &k, &v);
        if (rc == 0) {
            keep(txn, d, name, &k);
            keep(txn, d, name, &v);
        }
        if (op == MDB_FIRST || op == MDB_LAST || op == MDB_SET || op == MDB_SET_KEY ||
            op == MDB_SET_RANGE || op == MDB_GET_BOTH || op == MDB_GET_BOTH_RANGE)
            stale_eof = 0;
        if (rc == 0 && op == MDB_LAST)
            eofish = 1;
        else if (rc == MDB_NOTFOUND && (relative || op == MDB_SET_RANGE))
            eofish = 1; /* SET_RANGE past the last key also leaves LMDB's end flag set */
        else if (rc == 0 && (absolute || relative))
            eofish = 0;
        /* only calls that succeed solely on a key with several values (so that LMDB's
         * sub-cursor is set up): FIRST_DUP, LAST_DUP and GET_BOTH also succeed on a key
         * with one value and leave the sub-cursor as it was */
        xfresh = rc == 0 && (op == MDB_NEXT_DUP || op == MDB_PREV_DUP ||
                             op == MDB_NEXT_MULTIPLE || (op == MDB_GET_MULTIPLE && xfresh));
        if (rc == 0 && opt_0924 && op == MDB_FIRST_DUP)
            st = CS_UNSET; /* 0.9.24 leaves a stale end-of-dups flag: reposition next */
        else if (rc == 0)
            st = CS_POS;
        else if (rc == MDB_NOTFOUND && st != CS_UNSET && st != CS_FRESH && relative)
            st = CS_EOF;
        else if (rc == MDB_NOTFOUND && (op == MDB_NEXT_DUP || op == MDB_PREV_DUP))
            st = CS_POS; /* still on the same key: LMDB keeps the position */
        else
            st = CS_UNSET;
        if (st == CS_POS && d->dup && chance(25)) {
            size_t cnt = 0;
            rc = mdb_cursor_count(c, &cnt);
            line_start("c-count");
            printf(" rc=%d n=%zu\n", rc, rc ? (size_t)0 : cnt);
        }
    }
    mdb_cursor_close(c);
}

static void ops_in(MDB_txn *txn, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        unsigned r = rnd(100);
        if (r < 45)
            op_put(txn);
        else if (r < 60)
            op_del(txn);
        else if (r < 70)
            op_get(txn, "get");
        else if (r < 90)
            op_cursor(txn, 1);
        else if (r < 93)
            op_bad(txn);
        else if (r < 94) {
            const struct db *d = pick_db();
            if (!opt_0924 && chance(15)) {
                /* a named database's record in the main database: refused with
                 * MDB_INCOMPATIBLE, after which LMDB fails every call of the txn */
                MDB_val k, v;
                k.mv_data = (void *)kind_name[d->kind];
                k.mv_size = strlen(kind_name[d->kind]);
                check_vals(txn, "main-db write");
                int del = chance(50);
                line_start(del ? "del-main" : "put-main");
                gen_val(&dbs[0], &v);
                printf(" k=%s rc=%d\n", kind_name[d->kind],
                       del ? mdb_del(txn, 1, &k, NULL) : mdb_put(txn, 1, &k, &v, 0));
                continue;
            }
            check_vals(txn, "drop");
            line_start("drop-empty");
            printf(" db=%s rc=%d\n", kind_name[d->kind], mdb_drop(txn, d->dbi, 0));
        } else {
            const struct db *d = pick_db();
            MDB_stat st;
            int rc = mdb_stat(txn, d->dbi, &st);
            line_start("stat");
            printf(" db=%s rc=%d entries=%zu\n", kind_name[d->kind], rc,
                   rc ? (size_t)0 : st.ms_entries);
        }
    }
}

/* A child transaction of `parent` (depth 1 or 2), committed or aborted. */
static void nested(MDB_txn *parent, int depth)
{
    MDB_txn *child;
    check_vals(parent, "child-begin");
    int rc = mdb_txn_begin(env, parent, 0, &child);
    line_start("child-begin");
    printf(" depth=%d rc=%d", depth, rc);
    if (rc) {
        putchar('\n');
        return;
    }
    printf(" id=%zu\n", mdb_txn_id(child));
    ops_in(child, 1 + rnd(20));
    if (depth < 2 && chance(30))
        nested(child, depth + 1);
    ops_in(child, rnd(6));
    check_vals(child, "child-end");
    if (chance(65)) {
        rc = mdb_txn_commit(child);
        line_start("child-commit");
    } else {
        mdb_txn_abort(child);
        rc = 0;
        line_start("child-abort");
    }
    printf(" depth=%d rc=%d\n", depth, rc);
}

/* Calls on a read txn after mdb_txn_reset, before it is renewed: each must fail the same
 * way.  1 when the txn was ended here (committed). */
static int reset_calls(MDB_txn *r)
{
    unsigned n = rnd(4);
    for (unsigned i = 0; i < n; i++) {
        const struct db *d = pick_db();
        MDB_val k, v;
        MDB_stat st;
        MDB_cursor *c;
        unsigned fl = 0;
        int rc;
        switch (rnd(8)) {
        case 0:
            gen_key(d, &k);
            rc = mdb_get(r, d->dbi, &k, &v);
            line_start("reset-get");
            break;
        case 1:
            rc = mdb_cursor_open(r, d->dbi, &c);
            if (rc == 0)
                mdb_cursor_close(c);
            line_start("reset-cursor-open");
            break;
        case 2:
            gen_key(d, &k);
            gen_val(d, &v);
            rc = mdb_put(r, d->dbi, &k, &v, 0);
            line_start("reset-put");
            break;
        case 3:
            rc = mdb_stat(r, d->dbi, &st);
            line_start("reset-stat");
            break;
        case 4:
            rc = mdb_dbi_flags(r, d->dbi, &fl);
            line_start("reset-dbi-flags");
            printf(" fl=%x", rc ? 0 : fl);
            break;
        case 5:
            mdb_txn_reset(r);
            rc = 0;
            line_start("reset-again");
            break;
        case 6:
            gen_key(d, &k);
            rc = mdb_del(r, d->dbi, &k, NULL);
            line_start("reset-del");
            break;
        default:
            rc = mdb_txn_commit(r);
            line_start("reset-commit");
            printf(" rc=%d\n", rc);
            return 1;
        }
        printf(" db=%s rc=%d\n", kind_name[d->kind], rc);
    }
    return 0;
}

static void all_digests(MDB_txn *txn, const char *why)
{
    for (int i = 0; i < ndbs; i++)
        db_digest(txn, &dbs[i], why);
}

/* MDB_RDONLY: the written environment opened again read-only and read (writes refused). */
static void read_only_phase(const char *dir, unsigned eflags)
{
    int rc = mdb_env_create(&env);
    if (rc)
        fatal("env_create(rdonly)", rc);
    mdb_env_set_maxdbs(env, 16);
    rc = mdb_env_open(env, dir, eflags | MDB_RDONLY, 0644);
    line_start("rdonly-open");
    printf(" rc=%d\n", rc);
    if (rc) {
        mdb_env_close(env);
        return;
    }
    MDB_txn *w, *r;
    rc = mdb_txn_begin(env, NULL, 0, &w);
    line_start("rdonly-write-begin");
    printf(" rc=%d\n", rc);
    if (rc == 0)
        mdb_txn_abort(w);
    if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &r)) != 0)
        fatal("txn_begin(rdonly)", rc);
    for (int i = 0; i < ndbs; i++) {
        rc = mdb_dbi_open(r, kind_name[dbs[i].kind], 0, &dbs[i].dbi);
        line_start("rdonly-dbi-open");
        printf(" db=%s rc=%d\n", kind_name[dbs[i].kind], rc);
        if (rc)
            fatal("dbi_open(rdonly)", rc);
    }
    all_digests(r, "rdonly-db");
    for (int i = 0; i < 3; i++)
        op_cursor(r, 0);
    MDB_val k, v;
    gen_key(&dbs[0], &k);
    gen_val(&dbs[0], &v);
    line_start("rdonly-put");
    printf(" rc=%d\n", mdb_put(r, dbs[0].dbi, &k, &v, 0));
    check_vals(r, "rdonly-end");
    mdb_txn_abort(r);
    mdb_env_close(env);
}

/* ------------------------------------------------------------------ --neighbours */
/* Cursors of one DUPSORT database standing around a duplicate that another cursor deletes
 * must still see the right neighbours.  Keys k00..k05 get between 2 and 900 values each
 * (a sub-page below about 120, a sub-tree above), in a DUPSORT or DUPFIXED database; then,
 * in one write txn, rounds of: cursors on the value before the victim, on the victim, on
 * the value after it, on the next key and on the previous key's last value; mdb_cursor_del
 * of the victim through another cursor; then one or two moves from each cursor, printed.
 * Only keys keeping at least one value are touched (LMDB 0.9.36 mishandles the sub-cursor
 * of a cursor whose whole key is deleted: docs/compat.md). */
#define NB_KEYS 6
#define NB_VALS 900
static unsigned char nb_have[NB_KEYS][NB_VALS];
static unsigned nb_count[NB_KEYS];

static void nb_key(unsigned i, MDB_val *k, char *buf)
{
    snprintf(buf, 8, "k%02u", i);
    k->mv_size = 3;
    k->mv_data = buf;
}

static void nb_val(unsigned j, MDB_val *v, char *buf)
{
    snprintf(buf, 8, "v%05u", j);
    v->mv_size = 6;
    v->mv_data = buf;
}

/* The present value of key i nearest to j in direction dir (+1 / -1), or -1. */
static int nb_near(unsigned i, int j, int dir)
{
    for (j += dir; j >= 0 && j < NB_VALS; j += dir)
        if (nb_have[i][j])
            return j;
    return -1;
}

static MDB_cursor *nb_open_at(MDB_txn *txn, MDB_dbi dbi, const char *name, int i, int j,
                              int last_of_key)
{
    MDB_cursor *c;
    char kb[8], vb[8];
    MDB_val k, v;
    int rc = mdb_cursor_open(txn, dbi, &c);
    if (rc)
        fatal("neighbours: cursor_open", rc);
    if (i < 0 || i >= NB_KEYS)
        return c; /* left unpositioned */
    nb_key((unsigned)i, &k, kb);
    if (last_of_key) {
        rc = mdb_cursor_get(c, &k, &v, MDB_SET);
        if (rc == 0)
            rc = mdb_cursor_get(c, &k, &v, j ? MDB_LAST_DUP : MDB_FIRST_DUP);
    } else {
        nb_val((unsigned)j, &v, vb);
        rc = mdb_cursor_get(c, &k, &v, MDB_GET_BOTH);
    }
    line_start("nb-place");
    printf(" c=%s", name);
    print_cur(rc, &k, &v);
    return c;
}

static void neighbours(const struct db *d, unsigned rounds)
{
    static const unsigned sizes[] = {2, 3, 5, 20, 119, 150, 400, 900};
    MDB_txn *txn;
    char kb[8], vb[8];
    MDB_val k, v;
    int rc;
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn)))
        fatal("txn_begin(nb-fill)", rc);
    memset(nb_have, 0, sizeof nb_have);
    for (unsigned i = 0; i < NB_KEYS; i++) {
        nb_count[i] = sizes[rnd(sizeof sizes / sizeof sizes[0])];
        nb_key(i, &k, kb);
        for (unsigned j = 0; j < nb_count[i]; j++) {
            nb_val(j, &v, vb);
            if ((rc = mdb_put(txn, d->dbi, &k, &v, 0)))
                fatal("neighbours: put", rc);
            nb_have[i][j] = 1;
        }
        line_start("nb-fill");
        printf(" db=%s key=%u values=%u\n", kind_name[d->kind], i, nb_count[i]);
    }
    if ((rc = mdb_txn_commit(txn)))
        fatal("txn_commit(nb-fill)", rc);
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn)))
        fatal("txn_begin(nb)", rc);
    static const MDB_cursor_op moves[] = {MDB_NEXT, MDB_PREV, MDB_NEXT_DUP, MDB_PREV_DUP,
                                          MDB_NEXT_NODUP, MDB_PREV_NODUP, MDB_GET_CURRENT};
    static const char *const move_name[] = {"NEXT", "PREV", "NEXT_DUP", "PREV_DUP",
                                            "NEXT_NODUP", "PREV_NODUP", "GET_CURRENT"};
    for (unsigned r = 0; r < rounds; r++) {
        unsigned i = rnd(NB_KEYS);
        if (nb_count[i] < 2)
            continue;
        /* the victim: any present value, often the first or the last */
        int j, w = (int)rnd(100);
        if (w < 20)
            j = nb_near(i, -1, 1);
        else if (w < 40)
            j = nb_near(i, NB_VALS, -1);
        else {
            j = (int)rnd(NB_VALS);
            if (!nb_have[i][j] && (j = nb_near(i, j, 1)) < 0)
                j = nb_near(i, NB_VALS, -1);
        }
        int before = nb_near(i, j, -1), after = nb_near(i, j, 1);
        line_start("nb-round");
        printf(" key=%u victim=%d before=%d after=%d\n", i, j, before, after);
        MDB_cursor *cs[6];
        static const char *const names[6] = {"del", "before", "on", "after", "nextkey",
                                             "prevkey"};
        cs[0] = nb_open_at(txn, d->dbi, names[0], (int)i, j, 0);
        cs[1] = nb_open_at(txn, d->dbi, names[1], before < 0 ? -1 : (int)i, before, 0);
        cs[2] = nb_open_at(txn, d->dbi, names[2], (int)i, j, 0);
        cs[3] = nb_open_at(txn, d->dbi, names[3], after < 0 ? -1 : (int)i, after, 0);
        cs[4] = nb_open_at(txn, d->dbi, names[4], (int)i + 1, 0, 1);
        cs[5] = nb_open_at(txn, d->dbi, names[5], (int)i - 1, 1, 1);
        rc = mdb_cursor_del(cs[0], 0);
        line_start("nb-del");
        printf(" rc=%d\n", rc);
        if (rc)
            fatal("neighbours: cursor_del", rc);
        nb_have[i][j] = 0;
        nb_count[i]--;
        for (unsigned c = 0; c < 6; c++) {
            unsigned nm = 1 + rnd(2);
            for (unsigned m = 0; m < nm; m++) {
                unsigned op = rnd(sizeof moves / sizeof moves[0]);
                rc = mdb_cursor_get(cs[c], &k, &v, moves[op]);
                line_start("nb-move");
                printf(" c=%s op=%s", names[c], move_name[op]);
                print_cur(rc, &k, &v);
            }
            mdb_cursor_close(cs[c]);
        }
        if (chance(10)) {
            rc = mdb_txn_commit(txn);
            line_start("nb-commit");
            printf(" rc=%d\n", rc);
            if (rc || (rc = mdb_txn_begin(env, NULL, 0, &txn)))
                fatal("neighbours: commit/begin", rc);
        }
    }
    db_digest(txn, d, "nb-db");
    rc = mdb_txn_commit(txn);
    line_start("nb-commit");
    printf(" rc=%d\n", rc);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: lmdbdiff [--seed N] [--txns N] [--no-dupsort] [--no-nested] [--layout] "
            "[--lmdb0924] [--no-custdup] [--walk] [--neighbours] [--envflags HEX] "
            "[--lifetime-soft] DIR\n");
    return 2;
}

int main(int argc, char **argv)
{
    unsigned long long seed = 1;
    unsigned txns = 60;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--txns") && i + 1 < argc)
            txns = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--no-dupsort"))
            opt_dupsort = 0;
        else if (!strcmp(argv[i], "--no-nested"))
            opt_nested = 0;
        else if (!strcmp(argv[i], "--layout"))
            opt_layout = 1;
        else if (!strcmp(argv[i], "--lmdb0924"))
            opt_0924 = 1;
        else if (!strcmp(argv[i], "--no-custdup"))
            opt_custdup = 0;
        else if (!strcmp(argv[i], "--walk"))
            opt_walk = 1;
        else if (!strcmp(argv[i], "--neighbours"))
            opt_neighbours = 1;
        else if (!strcmp(argv[i], "--lifetime-soft"))
            opt_lt_soft = 1;
        else if (!strcmp(argv[i], "--envflags") && i + 1 < argc)
            opt_envflags = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (argv[i][0] == '-' || dir)
            return usage();
        else
            dir = argv[i];
    }
    if (!dir)
        return usage();
    rng_state = seed * 0x2545F4914F6CDD1Dull + 17;
    seq = 0; /* (one process may run several workloads when embedded) */
    ndbs = 0;
    env = NULL;
    walk_db = NULL;
    walk_nops = 0;
    for (size_t i = 0; i < nkept; i++)
        free(kept[i].copy);
    nkept = 0;
    if (getenv("LMDBDIFF_LIFETIME_SOFT"))
        opt_lt_soft = 1;
#ifdef LMDBDIFF_EMBED
    {
        /* the input's first byte picks the environment flags; most inputs get the usual */
        static const unsigned sets[] = {
            MDB_NOTLS | MDB_WRITEMAP, MDB_NOTLS | MDB_WRITEMAP | MDB_MAPASYNC, 0,
            MDB_NOTLS | MDB_NOSUBDIR, MDB_NOTLS | MDB_NOLOCK, MDB_NOTLS | MDB_NORDAHEAD,
            MDB_NOTLS | MDB_NOMEMINIT, MDB_NOTLS | MDB_FIXEDMAP, MDB_NOTLS | MDB_RDONLY};
        unsigned pick = rnd(16);
        opt_envflags = pick < sizeof sets / sizeof sets[0] ? sets[pick] : MDB_NOTLS;
    }
#endif
    /* MDB_RDONLY: the workload writes as usual; the environment is then opened again
     * read-only for a read phase (read_only_phase) */
    unsigned eflags = opt_envflags & ~(unsigned)MDB_RDONLY;
    char path[4200];
    if (opt_envflags & MDB_NOSUBDIR) {
        snprintf(path, sizeof path, "%s/db", dir);
        dir = path;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash leaves a transcript up to the crashing call */

    int major, minor, patch;
    mdb_version(&major, &minor, &patch);
    printf("# lmdbdiff seed=%llu txns=%u dupsort=%d nested=%d lmdb0924=%d custdup=%d envflags=%x "
           "walk=%d\n",
           seed, txns, opt_dupsort, opt_nested, opt_0924, opt_custdup, opt_envflags, opt_walk);
    /* The library's own version is printed to stderr: the transcript must not depend on it. */
#ifndef LMDBDIFF_EMBED
    fprintf(stderr, "library: %d.%d.%d\n", major, minor, patch);
#endif

    int rc;
    if ((rc = mdb_env_create(&env)))
        fatal("env_create", rc);
    if ((rc = mdb_env_set_maxdbs(env, 16)))
        fatal("set_maxdbs", rc);
    if ((rc = mdb_env_set_mapsize(env, (size_t)256 << 20)))
        fatal("set_mapsize", rc);
    if ((rc = mdb_env_open(env, dir, MDB_NOSYNC | eflags, 0644)))
        fatal("env_open", rc);
    line_start("env-open");
    printf(" maxkeysize=%d\n", mdb_env_get_maxkeysize(env));

    MDB_txn *txn;
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn)))
        fatal("txn_begin(setup)", rc);
    for (int k = 0; k < K_NKINDS; k++) {
        if (!opt_dupsort && (kind_flags[k] & MDB_DUPSORT))
            continue;
        if (!opt_custdup && k == K_CUSTDUP)
            continue;
        struct db *d = &dbs[ndbs];
        d->kind = (enum kind)k;
        d->dup = !!(kind_flags[k] & MDB_DUPSORT);
        d->fixed = !!(kind_flags[k] & MDB_DUPFIXED);
        d->grown = 0;
        rc = mdb_dbi_open(txn, kind_name[k], kind_flags[k] | MDB_CREATE, &d->dbi);
        unsigned fl = 0;
        if (!rc)
            mdb_dbi_flags(txn, d->dbi, &fl);
        line_start("dbi-open");
        printf(" db=%s rc=%d flags=%x\n", kind_name[k], rc, fl);
        if (rc)
            fatal("dbi_open", rc);
        if (k == K_CUSTDUP && (rc = mdb_set_dupsort(txn, d->dbi, cmp_head6)))
            fatal("set_dupsort", rc);
        ndbs++;
    }
    if ((rc = mdb_txn_commit(txn)))
        fatal("txn_commit(setup)", rc);

    if (opt_walk) {
        /* --walk: a plain, DUPSORT or DUPFIXED database filled at random, then one cursor
         * session of 300 calls on it in a write txn (every op, from every state, failed
         * calls, cursor puts and deletes), then its digest */
        static const enum kind wk[3] = {K_PLAIN, K_DUPS, K_DUPFIXED};
        enum kind want = wk[rnd(3)];
        for (int i = 0; i < ndbs; i++)
            if (dbs[i].kind == want)
                walk_db = &dbs[i];
        if (!walk_db)
            fatal("walk: database kind left out", 0);
        if ((rc = mdb_txn_begin(env, NULL, 0, &txn)))
            fatal("txn_begin(fill)", rc);
        unsigned n = chance(50) ? 3 + rnd(25) : 10 + rnd(150);
        for (unsigned i = 0; i < n; i++)
            op_put(txn);
        check_vals(txn, "fill-end");
        if ((rc = mdb_txn_commit(txn)))
            fatal("txn_commit(fill)", rc);
        if ((rc = mdb_txn_begin(env, NULL, 0, &txn)))
            fatal("txn_begin(walk)", rc);
        walk_nops = 300;
        op_cursor(txn, 1);
        walk_nops = 0;
        check_vals(txn, "walk-end");
        rc = mdb_txn_commit(txn);
        line_start("walk-commit");
        printf(" rc=%d\n", rc);
        txns = 0;
    }

    if (opt_neighbours) {
        /* --neighbours: a DUPSORT or DUPFIXED database, cursors around deleted duplicates */
        enum kind want = chance(50) ? K_DUPS : K_DUPFIXED;
        const struct db *nd = NULL;
        for (int i = 0; i < ndbs; i++)
            if (dbs[i].kind == want)
                nd = &dbs[i];
        if (!nd)
            fatal("neighbours: database kind left out", 0);
        neighbours(nd, 60);
        txns = 0;
    }

    /* A long-lived reader (the env has MDB_NOTLS, so it has its own reader slot next to the
     * short snapshot-check txns of the same thread): begun after the first workload txn,
     * read from at intervals (its snapshot must not change while writers commit), sometimes
     * reset and renewed onto the newest snapshot, sometimes ended and begun again. */
    MDB_txn *reader = NULL;
    for (unsigned t = 0; t < txns && !FEED_DONE(); t++) {
        if ((rc = mdb_txn_begin(env, NULL, 0, &txn)))
            fatal("txn_begin", rc);
        line_start("txn-begin");
        printf(" t=%u id=%zu\n", t, mdb_txn_id(txn));
        ops_in(txn, 1 + rnd(40));
        if (opt_nested && chance(35)) {
            nested(txn, 1);
            ops_in(txn, rnd(5));
        }
        check_vals(txn, "txn-end");
        if (chance(80)) {
            rc = mdb_txn_commit(txn);
            line_start("txn-commit");
            printf(" rc=%d\n", rc);
            if (rc && opt_0924)
                fatal("txn_commit", rc);
            MDB_txn *r;
            rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &r);
            line_start("snap");
            printf(" rc=%d id=%zu\n", rc, rc ? (size_t)0 : mdb_txn_id(r));
            if (rc == 0) {
                all_digests(r, "snap-db");
                check_vals(r, "snap-end");
                mdb_txn_abort(r);
            }
        } else {
            mdb_txn_abort(txn);
            line_start("txn-abort\n");
        }
        if (!reader) {
            /* MDB_NOLOCK: no reader table, so a reader living across write txns is the
             * caller's error (LMDB then reuses pages it still reads: MDB_CORRUPTED,
             * crashes); only the snapshot reads between write txns are made */
            if (t >= 1 && !(opt_envflags & MDB_NOLOCK)) {
                rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &reader);
                line_start("reader-begin");
                printf(" rc=%d id=%zu\n", rc, rc ? (size_t)0 : mdb_txn_id(reader));
                if (rc)
                    reader = NULL;
                else
                    all_digests(reader, "reader-db");
            }
            continue;
        }
        unsigned r = rnd(100);
        if (r < 30) {
            for (int g = 0; g < 3; g++)
                op_get(reader, "reader-get");
            if (chance(50))
                op_cursor(reader, 0);
            if (chance(25)) { /* writing through a read-only txn */
                MDB_val k, v;
                gen_key(&dbs[0], &k);
                gen_val(&dbs[0], &v);
                line_start("reader-put");
                printf(" rc=%d\n", mdb_put(reader, dbs[0].dbi, &k, &v, 0));
            }
        } else if (r < 45) {
            check_vals(reader, "reader-reset");
            if (!opt_0924 && chance(15)) { /* renewing a live txn */
                line_start("reader-renew-live");
                printf(" rc=%d\n", mdb_txn_renew(reader));
            }
            mdb_txn_reset(reader);
            if (!opt_0924 && reset_calls(reader)) {
                reader = NULL;
                continue;
            }
            rc = mdb_txn_renew(reader);
            line_start("reader-renew");
            printf(" rc=%d id=%zu\n", rc, rc ? (size_t)0 : mdb_txn_id(reader));
            if (rc) {
                mdb_txn_abort(reader);
                reader = NULL;
            }
        } else if (r < 60) {
            all_digests(reader, "reader-db"); /* the old snapshot, unchanged */
        } else if (r < 65) {
            check_vals(reader, "reader-end");
            mdb_txn_abort(reader);
            reader = NULL;
            line_start("reader-end\n");
        }
    }
    if (reader) {
        check_vals(reader, "reader-end");
        mdb_txn_abort(reader);
    }

    if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)))
        fatal("txn_begin(final)", rc);
    line_start("final");
    printf(" id=%zu\n", mdb_txn_id(txn));
    for (int i = 0; i < ndbs; i++)
        db_dump(txn, &dbs[i]);
    if (opt_layout) {
        for (int i = 0; i < ndbs; i++) {
            MDB_stat st;
            rc = mdb_stat(txn, dbs[i].dbi, &st);
            printf("layout db=%s rc=%d depth=%u branch=%zu leaf=%zu overflow=%zu\n",
                   kind_name[dbs[i].kind], rc, st.ms_depth, st.ms_branch_pages,
                   st.ms_leaf_pages, st.ms_overflow_pages);
        }
    }
    check_vals(txn, "final-end");
    mdb_txn_abort(txn);
    MDB_stat est;
    rc = mdb_env_stat(env, &est);
    line_start("env-stat");
    printf(" rc=%d main_entries=%zu psize=%u\n", rc, est.ms_entries, est.ms_psize);
    MDB_envinfo info;
    rc = mdb_env_info(env, &info);
    line_start("env-info");
    printf(" rc=%d last_txnid=%zu mapsize=%zu\n", rc, info.me_last_txnid, info.me_mapsize);
    rc = mdb_env_sync(env, 1);
    line_start("env-sync");
    printf(" rc=%d\n", rc);
    mdb_env_close(env);
    if (opt_envflags & MDB_RDONLY)
        read_only_phase(dir, eflags);
    printf("# end\n");
#ifndef LMDBDIFF_EMBED
    lifetime_report(stderr);
#endif
    return 0;
}
