/*
 * cmp.c -- the default orderings (layer L2): byte-wise, byte-wise from the end, and native
 * unsigned integers (INTEGERKEY / INTEGERDUP, and the free list's txnid keys).
 */
#include "core.h"

int cmp_lex(const MDB_val *a, const MDB_val *b)
{
    size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
    int c = n ? memcmp(a->mv_data, b->mv_data, n) : 0;
    if (c)
        return c;
    return a->mv_size < b->mv_size ? -1 : a->mv_size > b->mv_size;
}

int cmp_lex_rev(const MDB_val *a, const MDB_val *b)
{
    const uint8_t *p = (const uint8_t *)a->mv_data + a->mv_size;
    const uint8_t *q = (const uint8_t *)b->mv_data + b->mv_size;
    size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
    while (n--) {
        int c = (int)*--p - (int)*--q;
        if (c)
            return c;
    }
    return a->mv_size < b->mv_size ? -1 : a->mv_size > b->mv_size;
}

/* Native unsigned integers.  Keys of one DB share a size (4 or 8); mixed sizes fall back
 * to comparing the size so the order stays total instead of reading out of bounds. */
int cmp_int(const MDB_val *a, const MDB_val *b)
{
    if (a->mv_size == sizeof(uint64_t) && b->mv_size == sizeof(uint64_t)) {
        uint64_t x, y;
        memcpy(&x, a->mv_data, 8);
        memcpy(&y, b->mv_data, 8);
        return x < y ? -1 : x > y;
    }
    if (a->mv_size == sizeof(unsigned) && b->mv_size == sizeof(unsigned)) {
        unsigned x, y;
        memcpy(&x, a->mv_data, 4);
        memcpy(&y, b->mv_data, 4);
        return x < y ? -1 : x > y;
    }
    if (a->mv_size != b->mv_size)
        return a->mv_size < b->mv_size ? -1 : 1;
    return cmp_lex_rev(a, b); /* other equal sizes: little-endian magnitude */
}

int cmp_size(const MDB_val *a, const MDB_val *b)
{
    return cmp_int(a, b);
}

MDB_cmp_func *cmp_for_keys(unsigned f)
{
    if (f & MDB_INTEGERKEY)
        return cmp_int;
    if (f & MDB_REVERSEKEY)
        return cmp_lex_rev;
    return cmp_lex;
}

MDB_cmp_func *cmp_for_dups(unsigned f)
{
    if (!(f & MDB_DUPSORT))
        return NULL;
    if (f & MDB_INTEGERDUP)
        return cmp_int;
    if (f & MDB_REVERSEDUP)
        return cmp_lex_rev;
    return cmp_lex;
}
