/*
 * follow_data.h -- the data that test_follow_map's writers put and its readers check.
 * Included by the test (our engine) and by lmdb_grower (real LMDB), so both sides agree.
 *
 * Txn t (t = 0, 1, ...) puts BATCH records "r%08d" (numbers t*BATCH .. t*BATCH+BATCH-1),
 * each VLEN bytes whose content follows from its number (fill), rewrites the HOT records
 * "h%02d" with t in them (so freed pages are reused while readers hold snapshots), and
 * puts "state" = "<records> <t> <hash of this txn's BATCH values>".  A snapshot is
 * consistent when the database holds records + HOT + 1 entries, every hot record says t,
 * the last batch hashes to the state's hash and sampled older records hold their content.
 * grow_load is the writer, as an LMDB program writes: on MDB_MAP_FULL it aborts, doubles
 * the map with mdb_env_set_mapsize and writes the txn again.
 */
#ifndef FOLLOW_DATA_H
#define FOLLOW_DATA_H

#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BATCH 64
#define VLEN 16000 /* four pages of overflow each: a txn adds about 1 MiB */
#define HOT 16
#define MIB ((size_t)1 << 20)

static inline void fill(char *v, unsigned long n)
{
    for (size_t i = 0; i < VLEN; i++)
        v[i] = (char)((n * 131 + i * 7 + (i >> 8)) & 0xff);
    memcpy(v, &n, sizeof n);
}

static inline uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

#define FNV0 0xcbf29ce484222325ULL

/* Make txn t's records with put(ctx, key, klen, val, vlen) (0 or an error code, returned). */
static inline int put_batch(unsigned long t, int (*put)(void *, const char *, size_t, const char *,
                                                       size_t),
                            void *ctx)
{
    static char v[VLEN];
    char k[32], s[64];
    uint64_t h = FNV0;
    int rc;
    for (unsigned long j = 0; j < BATCH; j++) {
        unsigned long n = t * BATCH + j;
        fill(v, n);
        h = fnv(h, v, VLEN);
        if ((rc = put(ctx, k, (size_t)snprintf(k, sizeof k, "r%08lu", n), v, VLEN)) != 0)
            return rc;
    }
    for (int j = 0; j < HOT; j++) {
        int len = snprintf(s, sizeof s, "hot %lu", t);
        if ((rc = put(ctx, k, (size_t)snprintf(k, sizeof k, "h%02d", j), s, (size_t)len)) != 0)
            return rc;
    }
    int len = snprintf(s, sizeof s, "%lu %lu %llu", (t + 1) * BATCH, t, (unsigned long long)h);
    return put(ctx, "state", 5, s, (size_t)len);
}

static inline int put_in_txn(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
    MDB_val key = {kl, (void *)k}, val = {vl, (void *)v};
    return mdb_put((MDB_txn *)ctx, 1, &key, &val, 0);
}

/* Write txns from an 8 MiB map (env opened with it) until a txn has committed into a map
 * of `target` bytes; *txns gets their number.  0 or the first error. */
static inline int grow_load(MDB_env *env, size_t target, unsigned long *txns)
{
    size_t size = 8 * MIB;
    unsigned long t = 0;
    for (int guard = 0; guard < 100000; guard++) {
        MDB_txn *txn;
        int rc = mdb_txn_begin(env, NULL, 0, &txn);
        if (rc)
            return rc;
        MDB_dbi dbi; /* LMDB sets up the main database's comparator here */
        rc = mdb_dbi_open(txn, NULL, 0, &dbi);
        if (!rc)
            rc = put_batch(t, put_in_txn, txn);
        if (!rc)
            rc = mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
        if (rc == MDB_MAP_FULL) {
            size *= 2;
            if ((rc = mdb_env_set_mapsize(env, size)) != 0)
                return rc;
            continue;
        }
        if (rc)
            return rc;
        t++;
        if (size >= target)
            break;
    }
    *txns = t;
    return 0;
}

#endif
