/*
 * idl.c -- page-number lists (layer L0, pure data structure).
 * Invariant: l[0] is the count, l[-1] the capacity; lists used for allocation are kept
 * ascending so a contiguous run is a window of consecutive values.
 */
#include <stdlib.h>
#include <string.h>

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
 * few compares there. */
#define IDL_SMALL_SORT 16

/*
 * Sort a[0..n) ascending by least-significant-byte radix passes, skipping the bytes in
 * which every key is the same (a file's page numbers differ in their low 2 to 4 bytes
 * only).  -1 (nothing changed) if the scratch buffer cannot be had.  A commit of 1,000
 * random puts sorts ~1,200 freed pages: qsort (glibc's merge sort, a call per compare)
 * took ~250,000 instructions there, this ~40,000.
 */
static int radix_sort(pgno_t *a, size_t n)
{
    pgno_t differ = 0;
    for (size_t i = 1; i < n; i++)
        differ |= a[i] ^ a[0];
    if (!differ)
        return 0;
    pgno_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return -1;
    pgno_t *src = a, *dst = tmp;
    for (unsigned shift = 0; shift < 8 * sizeof(pgno_t) && (differ >> shift); shift += 8) {
        if (!((differ >> shift) & 0xff))
            continue;
        size_t at[256] = {0};
        for (size_t i = 0; i < n; i++)
            at[(src[i] >> shift) & 0xff]++;
        size_t sum = 0;
        for (size_t b = 0; b < 256; b++) {
            size_t c = at[b];
            at[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[at[(src[i] >> shift) & 0xff]++] = src[i];
        pgno_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    free(tmp);
    return 0;
}

void idl_sort(pgno_list l)
{
    size_t n = l[0];
    if (n > IDL_SMALL_SORT) {
        if (radix_sort(l + 1, n) != 0)
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

void idl_store(const pgno_list l, void *dst)
{
    /* dst is a record inside a leaf node: nodes sit on 2-byte boundaries, so a page
     * whose earlier nodes have odd sizes (a file written elsewhere, or a damaged one)
     * puts it off 8-byte alignment; each number is copied bytewise for that reason */
    uint8_t *out = dst;
    size_t n = l[0];
    memcpy(out, &l[0], sizeof(pgno_t));
    for (size_t i = 0; i < n; i++)
        memcpy(out + (1 + i) * sizeof(pgno_t), &l[n - i], sizeof(pgno_t));
}
