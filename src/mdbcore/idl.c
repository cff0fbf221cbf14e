/*
 * idl.c -- page-number lists (layer L0, pure data structure).
 * Invariant: l[0] is the count, l[-1] the capacity; lists used for allocation are kept
 * ascending so a contiguous run is a window of consecutive values.
 */
#include <stdlib.h>

#include "core.h"

pgno_list idl_alloc(size_t cap)
{
    if (cap < 16)
        cap = 16;
    pgno_t *raw = malloc((cap + 2) * sizeof(pgno_t));
    if (!raw)
        return NULL;
    raw[0] = cap;
    raw[1] = 0;
    return raw + 1;
}

void idl_free(pgno_list l)
{
    if (l)
        free(l - 1);
}

int idl_need(pgno_list *l, size_t more)
{
    pgno_list cur = *l;
    size_t want = cur[0] + more;
    if (want <= cur[-1])
        return 0;
    size_t cap = cur[-1] * 2;
    if (cap < want)
        cap = want;
    pgno_t *raw = realloc(cur - 1, (cap + 2) * sizeof(pgno_t));
    if (!raw)
        return ENOMEM;
    raw[0] = cap;
    *l = raw + 1;
    return 0;
}

int idl_append(pgno_list *l, pgno_t id)
{
    int rc = idl_need(l, 1);
    if (rc)
        return rc;
    (*l)[++(*l)[0]] = id;
    return 0;
}

int idl_append_run(pgno_list *l, pgno_t first, size_t n)
{
    int rc = idl_need(l, n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        (*l)[++(*l)[0]] = first + i;
    return 0;
}

static int pgno_order(const void *a, const void *b)
{
    pgno_t x = *(const pgno_t *)a, y = *(const pgno_t *)b;
    return x < y ? -1 : x > y;
}

/* A commit's own freed list is usually a handful of pages: an insertion sort costs a
 * few compares there, where qsort (glibc's merge sort) pays for a call per compare and a
 * temporary buffer. */
#define IDL_SMALL_SORT 16

void idl_sort(pgno_list l)
{
    size_t n = l[0];
    if (n > IDL_SMALL_SORT) {
        qsort(l + 1, n, sizeof(pgno_t), pgno_order);
        return;
    }
    for (size_t i = 2; i <= n; i++) {
        pgno_t v = l[i];
        size_t j = i;
        for (; j > 1 && l[j - 1] > v; j--)
            l[j] = l[j - 1];
        l[j] = v;
    }
}

int idl_merge(pgno_list *l, const pgno_t *src, size_t n)
{
    int rc = idl_need(l, n);
    if (rc)
        return rc;
    pgno_list d = *l;
    /* merge from the back so the list can be filled in place */
    size_t i = d[0], j = n, k = d[0] + n;
    while (j > 0) {
        if (i > 0 && d[i] > src[j - 1])
            d[k--] = d[i--];
        else
            d[k--] = src[--j];
    }
    d[0] += n;
    return 0;
}

void idl_store(const pgno_list l, pgno_t *dst)
{
    size_t n = l[0];
    dst[0] = n;
    for (size_t i = 0; i < n; i++)
        dst[1 + i] = l[n - i];
}
