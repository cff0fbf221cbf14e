/*
 * page_buffer.c -- the heap memory of dirty pages (layer L2): taking a buffer for a page
 * or a run, giving it back, and the env's cache of single-page buffers.
 *
 * Page buffers outlive their txn: a released single page goes to env->page_cache (at most
 * PAGE_CACHE_BYTES) and the next write txn takes it from there.  Giving them back to malloc
 * at each commit made the next txn fault every page in again: about one page fault per
 * random put at 1,000 puts a txn (issue 11).
 *
 * Invariants: a cached buffer is psize bytes whose last word links the next one; the
 * cache holds at most PAGE_CACHE_BYTES / psize buffers; under WRITEMAP a dirty page is the
 * map page itself and is never released here.  Under AddressSanitizer the rest of a cached
 * buffer (its header first: the link is at the end) is poisoned, so a stale pointer to a
 * released page is reported, not read.
 */
#include <stdlib.h>

#include "core.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PAGE_BUFFER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(PAGE_BUFFER_ASAN)
#include <sanitizer/asan_interface.h>
#define BUFFER_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n) - sizeof(page *))
#define BUFFER_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define BUFFER_POISON(p, n) ((void)(p), (void)(n))
#define BUFFER_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Where a cached buffer keeps the next one: its last word (memcpy: any alignment). */
static page *cache_next(const MDB_env *env, const page *p)
{
    page *next;
    memcpy(&next, (const uint8_t *)p + env->psize - sizeof(page *), sizeof(page *));
    return next;
}

/* Put a single-page buffer on the env's cache. */
static void cache_push(MDB_env *env, page *p)
{
    memcpy((uint8_t *)p + env->psize - sizeof(page *), &env->page_cache, sizeof(page *));
    env->page_cache = p;
    env->page_cache_count++;
    BUFFER_POISON(p, env->psize);
}

/* 64 MiB of 4 KiB pages: more than a txn of 10,000 random puts dirties, and a bound on
 * what a one-off huge txn leaves behind for the env's lifetime. */
#define PAGE_CACHE_BYTES ((size_t)64 << 20)

page *page_buffer_get(MDB_env *env, unsigned n)
{
    if (n == 1 && env->page_cache) {
        page *p = env->page_cache;
        env->page_cache = cache_next(env, p);
        env->page_cache_count--;
        BUFFER_UNPOISON(p, env->psize);
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
        cache_push(env, p);
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
            cache_push(env, p);
        } else {
            free(p);
        }
    }
}

void page_cache_free(MDB_env *env)
{
    while (env->page_cache) {
        page *p = env->page_cache;
        env->page_cache = cache_next(env, p);
        BUFFER_UNPOISON(p, env->psize);
        free(p);
    }
    env->page_cache_count = 0;
}
