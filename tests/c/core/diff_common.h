/*
 * diff_common.h -- what the differential programs (diff_*.c) share: the seeded generator
 * whose stream both builds (real LMDB and ours) must follow identically, and the digest
 * printed in place of a value.  Included after <lmdb.h>; each program gets its own copy.
 */
#ifndef DIFF_COMMON_H
#define DIFF_COMMON_H

#include <stddef.h>

static unsigned long long rng;

/* The next number of the seeded stream (seed: assign rng). */
static inline unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

/* FNV-1a of the value's bytes. */
static inline unsigned digest(const MDB_val *v)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < v->mv_size; i++)
        h = (h ^ ((unsigned char *)v->mv_data)[i]) * 16777619u;
    return h;
}

#endif
