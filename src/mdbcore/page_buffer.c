/*
 * page_buffer.c -- the heap memory of dirty pages (layer L2): taking a buffer for a page
 * or a run, giving it back, and the env's cache of page and short-run buffers.
 *
 * Page buffers outlive their txn: a released page, or run of up to PAGE_CACHE_RUN_PAGES
 * (an overflow value's), goes to env->page_cache[n] (at most PAGE_CACHE_BYTES in all) and
 * the next write txn takes it from there.  Giving them back to malloc at each commit made
 * the next txn fault every page in again: about one page fault per random put at 1,000
 * puts a txn; for runs, malloc's trimming of its heap did the same in part.
 *
 * Invariants: a cached buffer of n pages is n * psize bytes whose last word links the next
 * one of its list; the lists hold at most PAGE_CACHE_BYTES / psize pages together; under
 * WRITEMAP a dirty page is the map page itself and is never released here.  Under
 * AddressSanitizer the rest of a cached buffer (its header first: the link is at the end)
 * is poisoned, so a stale pointer to a released page is reported, not read.
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

/* Where a cached buffer of n pages keeps the next one: its last word (memcpy: any
 * alignment). */
static page *cache_next(const MDB_env *env, const page *p, unsigned n)
{
    page *next;
    memcpy(&next, (const uint8_t *)p + (size_t)env->psize * n - sizeof(page *), sizeof(page *));
    return next;
}

/* Put a buffer of n pages on the env's list for n. */
static void cache_push(MDB_env *env, page *p, unsigned n)
{
    size_t bytes = (size_t)env->psize * n;
    memcpy((uint8_t *)p + bytes - sizeof(page *), &env->page_cache[n], sizeof(page *));
    env->page_cache[n] = p;
    env->page_cache_count += n;
    BUFFER_POISON(p, bytes);
}

/* 64 MiB of 4 KiB pages: more than a txn of 10,000 random puts dirties, and a bound on
 * what a one-off huge txn leaves behind for the env's lifetime. */
#define PAGE_CACHE_BYTES ((size_t)64 << 20)

page *page_buffer_get(MDB_env *env, unsigned n)
{
    if (n <= PAGE_CACHE_RUN_PAGES && env->page_cache[n]) {
        page *p = env->page_cache[n];
        env->page_cache[n] = cache_next(env, p, n);
        env->page_cache_count -= n;
        BUFFER_UNPOISON(p, (size_t)env->psize * n);
        return p;
    }
    /* a new single buffer starts zeroed: copy-on-write leaves its gap as it finds it */
    return n == 1 ? calloc(1, env->psize) : malloc((size_t)env->psize * n);
}

/* Keep p (cached, while the lists hold fewer than `room` pages) or give it back to
 * malloc.  (n - 1 wraps for a run count of 0, which no buffer of ours has.) */
static inline void release_one(MDB_env *env, page *p, size_t room)
{
    unsigned n = (p->flags & P_OVERFLOW) ? p->u.overflow_pages : 1;
    if (n - 1 < PAGE_CACHE_RUN_PAGES && env->page_cache_count + n <= room) {
        cache_push(env, p, n);
        return;
    }
    free(p);
}

void page_release(MDB_env *env, page *p)
{
    if (env->flags & MDB_WRITEMAP)
        return;
    release_one(env, p, PAGE_CACHE_BYTES / env->psize);
}

void page_release_list(MDB_env *env, const dirty_entry *list, size_t n)
{
    if (env->flags & MDB_WRITEMAP)
        return;
    size_t room = PAGE_CACHE_BYTES / env->psize;
    for (size_t i = 0; i < n; i++)
        release_one(env, list[i].pg, room);
}

void page_cache_free(MDB_env *env)
{
    for (unsigned n = 1; n <= PAGE_CACHE_RUN_PAGES; n++) {
        while (env->page_cache[n]) {
            page *p = env->page_cache[n];
            env->page_cache[n] = cache_next(env, p, n);
            BUFFER_UNPOISON(p, (size_t)env->psize * n);
            free(p);
        }
    }
    env->page_cache_count = 0;
}
