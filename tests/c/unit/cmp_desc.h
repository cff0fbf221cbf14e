/*
 * cmp_desc.h -- the descending byte order that lmdb_helper's "custom" DBs are written
 * with (through Debian's LMDB) and that test_check hands the checker to read them back:
 * one comparator, so the two sides cannot drift apart.  Included after lmdb.h.
 */
#ifndef CMP_DESC_H
#define CMP_DESC_H

#include <string.h>

/* Descending byte order: the reverse of the default comparator. */
static int cmp_desc(const MDB_val *a, const MDB_val *b)
{
    size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
    int r = memcmp(b->mv_data, a->mv_data, n);
    if (r)
        return r;
    return a->mv_size > b->mv_size ? -1 : a->mv_size < b->mv_size;
}

#endif
