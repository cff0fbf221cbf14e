/*
 * test_idl.c -- idl.c's page-number lists: idl_sort against qsort on many shapes of input
 * (sizes around the insertion-sort cut, keys that differ in one byte or in all eight,
 * duplicates, runs, already sorted and reversed), and idl_merge keeping a list ascending.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "mdbtest.h"

static unsigned long long rng = MDBTEST_XORSHIFT_SEED;
static unsigned long long next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int order(const void *a, const void *b)
{
    pgno_t x = *(const pgno_t *)a, y = *(const pgno_t *)b;
    return x < y ? -1 : x > y;
}

/* Fill l with n keys of the given shape; want gets the same keys, sorted by qsort. */
static void fill(pgno_list l, pgno_t *want, size_t n, int shape)
{
    pgno_t base = (pgno_t)next_rand() & 0xffffff;
    for (size_t i = 0; i < n; i++) {
        pgno_t v;
        switch (shape) {
        case 0: v = 2 + next_rand() % 40000; break;         /* a file's pages: 2 bytes */
        case 1: v = next_rand(); break;                     /* all 8 bytes differ */
        case 2: v = base + (next_rand() & 0xff); break;     /* one byte differs, dups */
        case 3: v = base + i; break;                        /* ascending run */
        case 4: v = base + (n - i); break;                  /* descending run */
        case 5: v = 7; break;                               /* all equal */
        default: v = (next_rand() & 0xff) << 40 | (pgno_t)i; /* bytes 0, 1 and 5 */
        }
        l[i + 1] = v;
        want[i] = v;
    }
    l[0] = n;
    qsort(want, n, sizeof *want, order);
}

static void t_sort_matches_qsort(void)
{
    static const size_t sizes[] = {0, 1, 2, 15, 16, 17, 31, 255, 256, 257, 1000, 5000, 70000};
    pgno_t *want = malloc(70000 * sizeof *want);
    pgno_list l = idl_alloc(70000);
    REQUIRE(want && l);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        for (int shape = 0; shape <= 6; shape++) {
            for (int round = 0; round < 3; round++) {
                size_t n = sizes[s];
                fill(l, want, n, shape);
                idl_sort(l);
                EXPECT_EQ(l[0], n);
                EXPECT_MSG(!memcmp(l + 1, want, n * sizeof *want),
                           "idl_sort: %zu keys of shape %d, round %d: not qsort's order", n,
                           shape, round);
            }
        }
    }
    idl_free(l);
    free(want);
}

static void t_merge_keeps_ascending(void)
{
    pgno_list l = idl_alloc(4);
    REQUIRE(l);
    pgno_t all[600];
    size_t n = 0;
    for (int round = 0; round < 20; round++) {
        pgno_t batch[30];
        for (size_t i = 0; i < 30; i++)
            batch[i] = 1000 * (pgno_t)round + 2 + (pgno_t)(next_rand() % 50000) * 31 + i;
        qsort(batch, 30, sizeof *batch, order);
        EXPECT_OK(idl_merge(&l, batch, 30));
        memcpy(all + n, batch, sizeof batch);
        n += 30;
    }
    qsort(all, n, sizeof *all, order);
    EXPECT_EQ(l[0], n);
    EXPECT(!memcmp(l + 1, all, n * sizeof *all));
    idl_free(l);
}

int main(void)
{
    TEST_RUN(t_sort_matches_qsort);
    TEST_RUN(t_merge_keeps_ascending);
    TEST_DONE();
}
