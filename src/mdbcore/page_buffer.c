/*
 * page_buffer.c -- the heap memory of dirty pages (layer L2): taking a buffer for a page
 * or a run, giving it back, and the env's cache of single-page buffers.
 *
 * Page buffers outlive their txn: a released single page goes to env->page_cache (at most
 * PAGE_CACHE_BYTES) and the next write txn takes it from there.  Giving them back to malloc
 * at each commit made the next txn fault every page in again: about one page fault per
 * random put at 1,000 puts a txn (issue 11).
 *
 * Invariants: a cached buffer is psize bytes whose first word links the next one; the
 * cache holds at most PAGE_CACHE_BYTES / psize buffers; under WRITEMAP a dirty page is the
 * map page itself and is never released here.
 */
#include <stdlib.h>

#include "core.h"

/* 64 MiB of 4 KiB pages: more than a txn of 10,000 random puts dirties, and a bound on
 * what a one-off huge txn leaves behind for the env's lifetime. */
#define PAGE_CACHE_BYTES ((size_t)64 << 20)

page *page_buffer_get(MDB_env *env, unsigned n)
{
    if (n == 1 && env->page_cache) {
        page *p = env->page_cache;
        env->page_cache = *(page **)p;
        env->page_cache_count--;
        return p;
    }
    /* a new single buffer starts zeroed: copy-on-write leaves its gap as it finds it */
    return n == 1 ? calloc(1, env->psize) : malloc((size_t)env->psize * n);
}

void page_release(MDB_env *env, page *p)
{
    if (env->flags & MDB_WRITEMAP)
        return;
    int single = !(p->flags & P_OVERFLOW) || p->u.overflow_pages == 1;
    if (single && env->page_cache_count < PAGE_CACHE_BYTES / env->psize) {
        *(page **)p = env->page_cache;
        env->page_cache = p;
        env->page_cache_count++;
        return;
    }
    free(p);
}

void page_release_list(MDB_env *env, const dirty_entry *list, size_t n)
{
    if (env->flags & MDB_WRITEMAP)
        return;
    size_t room = PAGE_CACHE_BYTES / env->psize;
    for (size_t i = 0; i < n; i++) {
        page *p = list[i].pg;
        if ((!(p->flags & P_OVERFLOW) || p->u.overflow_pages == 1) && env->page_cache_count < room) {
            *(page **)p = env->page_cache;
            env->page_cache = p;
            env->page_cache_count++;
        } else {
            free(p);
        }
    }
}

void page_cache_free(MDB_env *env)
{
    while (env->page_cache) {
        page *p = env->page_cache;
        env->page_cache = *(page **)p;
        free(p);
    }
    env->page_cache_count = 0;
}
