/*
 * datafile.c -- the data file's memory map (layer L1): map and unmap (read-only, or
 * writable under WRITEMAP), following a map grown by another process, growing the map
 * in place, the cached file length used to reject pages past EOF, and syncing.  The
 * engine never writes through a read-only map; pages reach the file with pwrite(v)
 * through os_current, or are copied into the write map (datafile_write_map), a second,
 * writable map that only the writer's pages_write uses and that never leaves the
 * library: where the file has its blocks (below wmap_backed, no hole) and its filesystem
 * rewrites blocks in place, a store there is a write into the page cache without a
 * system call, and it can neither fault past the end nor need space.
 *
 * Every map reserves address space past its end at open (an inaccessible anonymous
 * mapping, span_for's policy, or the bound of mdbcore_env_set_maxsize) and maps the file
 * over its start.  Growing maps the next part of the file over the reservation, right
 * after the mapped part: pages already mapped keep their address, so pointers held by
 * txns in other threads stay valid.  A size past the reservation moves the map to a new,
 * larger reservation; the old one is kept, still mapping the file, until the environment
 * closes ("retired"), so a pointer into it stays valid and reads what the file holds.
 * Under FIXEDMAP the map never moves: it grows as far as its reservation goes.
 *
 * Invariants: map_span >= mapsize; [map, map + mapsize) is the file, the rest of the span
 * inaccessible; every retired map still maps the file over at least the size it had.
 * map and maxpg change only under map_mutex (or with no txn live, mdb_env_set_mapsize);
 * map is stored before maxpg, with release order, and read after it (env_maxpg, then
 * env_map, in core.h), so a thread that sees a maxpg sees a map at least that large.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "core.h"
#include "os.h"

/* Kernel read-ahead on the map is off in a writable environment, as MDB_NORDAHEAD asks.
 * Read-ahead fills the page cache with large folios (Linux 6.x, ext4: up to 2 MiB), and the
 * engine writes single pages: each pwrite of one 4 KiB page into a large folio walks all of
 * the folio's buffers (ext4_block_write_begin), so it costs O(folio) instead of O(page).
 * Measured in slapd: a database loaded by slapadd -q with read-ahead made every later
 * modify cost ~150 us of slapd CPU, 65% of it in that walk; loaded without, ~60 us
 * (docs/performance.md, "Page cache folios").  A read-only environment never writes, so it
 * keeps read-ahead for its cold scans unless it asks for MDB_NORDAHEAD. */
static void advise_map(const MDB_env *env, void *p, size_t len)
{
    if ((env->flags & MDB_NORDAHEAD) || !(env->flags & MDB_RDONLY))
        os_current->madvise(p, len, MADV_RANDOM);
}

static int map_prot(const MDB_env *env)
{
    int prot = PROT_READ;
    if ((env->flags & (MDB_WRITEMAP | MDB_RDONLY)) == MDB_WRITEMAP)
        prot |= PROT_WRITE;
    return prot;
}

/* The reservation a map of `size` bytes gets when nothing else is asked for: sixteen
 * times the map, at least 256 GiB, at most 16 TiB (a process has 128 TiB of address
 * space; the reservation costs address space only, no memory and no disk). */
#define RESERVE_FLOOR ((size_t)256 << 30)
#define RESERVE_CAP ((size_t)16 << 40)

static size_t round_os(const MDB_env *env, size_t v)
{
    return (v + env->os_psize - 1) / env->os_psize * env->os_psize;
}

static size_t span_for(const MDB_env *env, size_t size)
{
    size_t span;
    if (env->reserve) {
        span = env->reserve;
    } else {
        span = size > RESERVE_CAP / 16 ? RESERVE_CAP : size * 16;
        if (span < RESERVE_FLOOR)
            span = RESERVE_FLOOR;
    }
    if (span < env->maxsize)
        span = env->maxsize;
    if (span < size)
        span = size;
    return round_os(env, span);
}

/* Map the file's first `size` bytes at the start of a new reservation (at `addr`, or
 * anywhere).  When the address space is short (RLIMIT_AS, many environments, or `addr`
 * taken further on) the reservation halves until it fits, down to a plain map. */
static int map_new(MDB_env *env, void *addr, size_t size, uint8_t **out, size_t *span_out)
{
    int prot = map_prot(env);
    size_t span = span_for(env, size);
    void *p;
    int rc;
    while (span > size) {
        rc = os_current->mmap(addr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                              -1, 0, &p);
        if (!rc && addr && p != addr) {
            os_current->munmap(p, span);
            rc = EBUSY;
        }
        if (!rc) {
            void *f;
            rc = os_current->mmap(p, size, prot, MAP_SHARED | MAP_FIXED, env->data_fd, 0, &f);
            if (rc) {
                os_current->munmap(p, span);
                return rc;
            }
            *out = p;
            *span_out = span;
            return 0;
        }
        span = round_os(env, span / 2);
        if (span < size)
            span = size;
    }
    rc = os_current->mmap(addr, size, prot, MAP_SHARED, env->data_fd, 0, &p);
    if (rc)
        return rc;
    if (addr && p != addr) {
        os_current->munmap(p, size);
        return EBUSY; /* FIXEDMAP could not get its address */
    }
    *out = p;
    *span_out = size;
    return 0;
}

/* Publish a map: the base before the size, so that a reader seeing the size sees a base
 * that covers it (env_maxpg, then env_map). */
static void publish(MDB_env *env, uint8_t *map, size_t span, size_t size)
{
    __atomic_store_n(&env->map, map, __ATOMIC_RELEASE);
    env->map_span = span;
    __atomic_store_n(&env->metas[0], (meta_record *)(map + PAGEHDRSZ), __ATOMIC_RELAXED);
    __atomic_store_n(&env->metas[1], (meta_record *)(map + env->psize + PAGEHDRSZ),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&env->maxpg, (pgno_t)(size / env->psize), __ATOMIC_RELEASE);
    __atomic_store_n(&env->mapsize, size, __ATOMIC_RELEASE);
}

int datafile_map(MDB_env *env, void *addr)
{
    uint8_t *p;
    size_t span;
    int rc = map_new(env, addr, env->mapsize, &p, &span);
    if (rc)
        return rc;
    publish(env, p, span, env->mapsize);
    advise_map(env, p, env->mapsize);
    return datafile_refresh_size(env);
}

uint8_t *datafile_write_map(MDB_env *env)
{
    if ((env->flags & (MDB_WRITEMAP | MDB_RDONLY)) || env->wmap_state < 0)
        return NULL;
    int first = env->wmap_state == 0;
    if (first && !os_fs_overwrites_in_place(env->data_fd)) {
        env->wmap_state = -1;
        return NULL;
    }
    env->wmap_state = 1;
    size_t psize = env->psize;
    uint64_t file_bytes = (uint64_t)env->file_pages * psize, ram = os_physical_memory();
    if (!ram || file_bytes > ram / 2)
        return NULL;
    if (!env->wmap || env->wmap_size < file_bytes) {
        if (env->wmap) {
            os_current->munmap(env->wmap, env->wmap_size);
            env->wmap = NULL;
        }
        size_t size = env->mapsize > file_bytes ? env->mapsize : (size_t)file_bytes;
        void *p;
        if (os_current->mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, env->data_fd, 0,
                             &p) != 0) {
            env->wmap_state = -1;
            return NULL;
        }
        /* a store into a page not in the page cache reads just that page (no read-ahead,
         * whose large folios would make every later single-page write walk them) */
        os_current->madvise(p, size, MADV_RANDOM);
        env->wmap = p;
        env->wmap_size = size;
    }
    if (first) {
        uint64_t hole;
        env->wmap_backed = 0;
        if (os_first_hole(env->data_fd, 0, &hole) == 0)
            env->wmap_backed = hole / psize < env->file_pages ? (pgno_t)(hole / psize)
                                                              : env->file_pages;
    }
    return env->wmap;
}

void datafile_write_map_extend(MDB_env *env, pgno_t written_to)
{
    if (written_to <= env->wmap_backed)
        return;
    env->wmap_backed = written_to;
    uint64_t hole;
    if (written_to < env->file_pages &&
        os_first_hole(env->data_fd, (uint64_t)written_to * env->psize, &hole) == 0) {
        pgno_t to = hole / env->psize < env->file_pages ? (pgno_t)(hole / env->psize)
                                                        : env->file_pages;
        if (to > env->wmap_backed)
            env->wmap_backed = to;
    }
}

void datafile_unmap(MDB_env *env)
{
    if (env->wmap) {
        os_current->munmap(env->wmap, env->wmap_size);
        env->wmap = NULL;
        env->wmap_size = 0;
    }
    if (env->map) {
        os_current->munmap(env->map, env->map_span > env->mapsize ? env->map_span : env->mapsize);
        env->map = NULL;
        env->map_span = 0;
    }
    for (size_t i = 0; i < env->nretired; i++)
        os_current->munmap(env->retired[i].map, env->retired[i].span);
    free(env->retired);
    env->retired = NULL;
    env->nretired = 0;
}

/* Move the map to a new reservation that holds `size` bytes; the old map stays as it is
 * (retired) until the environment closes.  Under map_mutex. */
static int relocate(MDB_env *env, size_t size)
{
    retired_map *r = realloc(env->retired, (env->nretired + 1) * sizeof(*r));
    if (!r)
        return ENOMEM;
    env->retired = r;
    uint8_t *p;
    size_t span;
    int rc = map_new(env, NULL, size, &p, &span);
    if (rc)
        return rc;
    r[env->nretired].map = env->map;
    r[env->nretired].span = env->map_span > env->mapsize ? env->map_span : env->mapsize;
    env->nretired++;
    advise_map(env, p, size);
    publish(env, p, span, size);
    return 0;
}

/* Under map_mutex: the map becomes `size` bytes (rounded to OS pages), in place when the
 * reservation holds it, else moved (never under FIXEDMAP: there it stops at the
 * reservation's end).  `shrink`: a smaller size unmaps the tail (mdb_env_set_mapsize). */
static int resize_locked(MDB_env *env, size_t size, int shrink)
{
    size = round_os(env, size);
    size_t old = env->mapsize;
    if (size == old || (size < old && !shrink))
        return 0;
    if (size > env->map_span && (env->flags & MDB_FIXEDMAP)) {
        size = env->map_span;
        if (size <= old)
            return 0;
    }
    int rc;
    if (size > old && (env->flags & (MDB_WRITEMAP | MDB_RDONLY)) == MDB_WRITEMAP) {
        /* the file must cover what a writable map may touch */
        off_t sz;
        if ((rc = os_current->fsize(env->data_fd, &sz)) != 0)
            return rc;
        if ((size_t)sz < size && (rc = os_current->ftruncate(env->data_fd, (off_t)size)) != 0)
            return rc;
    }
    if (size > env->map_span) {
        if ((rc = relocate(env, size)) != 0)
            return rc;
        return datafile_refresh_size(env);
    }
    void *p;
    if (size > old) {
        rc = os_current->mmap(env->map + old, size - old, map_prot(env), MAP_SHARED | MAP_FIXED,
                              env->data_fd, (off_t)old, &p);
        if (rc)
            return rc;
        advise_map(env, p, size - old);
        publish(env, env->map, env->map_span, size);
    } else {
        /* no txn is live (mdb_env_set_mapsize's contract): the tail goes back to the
         * reservation; the size first, so nothing reads there meanwhile */
        publish(env, env->map, env->map_span, size);
        rc = os_current->mmap(env->map + size, old - size, PROT_NONE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0, &p);
        if (rc)
            return rc;
    }
    return datafile_refresh_size(env);
}

int datafile_grow(MDB_env *env, size_t size)
{
    pthread_mutex_lock(&env->map_mutex);
    int rc = resize_locked(env, size, 0);
    pthread_mutex_unlock(&env->map_mutex);
    return rc;
}

int datafile_resize(MDB_env *env, size_t size)
{
    pthread_mutex_lock(&env->map_mutex);
    int rc = resize_locked(env, size, 1);
    pthread_mutex_unlock(&env->map_mutex);
    return rc;
}

int datafile_grow_for(MDB_env *env, pgno_t pages)
{
    /* only a map with a bound grows by itself; the others are full, as in LMDB */
    size_t want = (size_t)pages * env->psize;
    size_t bound = round_os(env, env->maxsize);
    if (bound <= env->mapsize || want > bound)
        return MDB_MAP_FULL;
    /* double, so that n growths cover 2^n times the first map; never past the bound */
    size_t size = env->mapsize * 2;
    if (size < want)
        size = want;
    if (size > bound)
        size = bound;
    int rc = datafile_grow(env, size);
    if (rc)
        return rc;
    return env->mapsize >= want ? 0 : MDB_MAP_FULL;
}

int datafile_refresh_size(MDB_env *env)
{
    off_t sz;
    int rc = os_current->fsize(env->data_fd, &sz);
    if (rc)
        return rc;
    env->file_pages = (pgno_t)sz / env->psize;
    return 0;
}

int datafile_sync(MDB_env *env, int force)
{
    if (env->flags & MDB_RDONLY)
        return EACCES;
    if (!force && (env->flags & MDB_NOSYNC))
        return 0;
    if ((env->flags & MDB_WRITEMAP) && env->map) {
        int how = (!force && (env->flags & MDB_MAPASYNC)) ? MS_ASYNC : MS_SYNC;
        int rc = os_current->msync(env->map, env->mapsize, how);
        if (rc)
            return rc;
        if (how == MS_ASYNC)
            return 0;
    }
    return os_current->fdatasync(env->data_fd);
}
