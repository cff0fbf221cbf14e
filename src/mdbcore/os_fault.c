/*
 * os_fault.c -- the fault-injection seam over os.h (layer L0, compiled into every build).
 *
 * Inert until a test arms it: os_current keeps pointing at os_posix_ops and nothing here
 * runs.  mdbcore_fault_install() (implicit in every arm/record call) swaps os_current for
 * `fault_ops`, whose entries
 *   1. count the call for its kind and fail it with a chosen errno when a rule says so
 *      (the OS is then not called at all, except by a "short" rule: a write that reaches
 *      the file with only its first bytes, then fails);
 *   2. pass it to the table that was in force before (`inner`);
 *   3. while recording, append writes (with a copy of the bytes), syncs, truncates and
 *      map calls to an in-memory log.
 * mdbcore_fault_crash_image() replays that log onto a copy of a file to build the image a
 * power loss could leave.  Everything is serialised by one mutex; this is test machinery.
 *
 * Calls: os.h (the inner table and os_file_identity), libc memory, pthread.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "mdbcore.h"
#include "os.h"

#define FAULT_MAX_RULES 16
/* Rule actions other than "fail with errno" (stored in fault_rule.err). */
#define FAULT_KILL_BEFORE (-1) /* SIGKILL the process instead of making the call */
#define FAULT_KILL_AFTER (-2)  /* make the call (and log it), then SIGKILL the process */
#define FAULT_SKIP (-3) /* sync kinds: succeed without the OS; logged as failed (no barrier) */

typedef struct fault_rule {
    int kind;
    int err;
    int sticky;
    int active;
    unsigned long n;
    unsigned long seen;
    size_t short_len; /* SHORT_NONE, or: write this many bytes, then fail with err */
} fault_rule;

#define SHORT_NONE ((size_t)-1)

typedef struct fault_map {
    void *addr;
    size_t len;
    uint64_t off, dev, ino;
} fault_map;

static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int fault_kill_pending; /* a KILL_AFTER rule fired for the current call */
static __thread size_t fault_short_len;  /* a short rule fired: bytes that reach the file */
static const os_ops *fault_inner; /* non-NULL while installed */
static fault_rule fault_rules[FAULT_MAX_RULES];
static unsigned long fault_counts[MDBCORE_FAULT_NKINDS];
static unsigned long fault_injected_n;
static int fault_recording;
static mdbcore_fault_entry *fault_log;
static size_t fault_log_n, fault_log_cap;
static fault_map *fault_maps; /* live mappings seen while installed, for msync */
static size_t fault_maps_n, fault_maps_cap;

static int kind_matches(int rule_kind, int kind)
{
    if (rule_kind == kind || rule_kind == MDBCORE_FAULT_ANY)
        return 1;
    if (rule_kind == MDBCORE_FAULT_WRITE)
        return kind == MDBCORE_FAULT_PWRITE || kind == MDBCORE_FAULT_PWRITEV;
    if (rule_kind == MDBCORE_FAULT_SYNC)
        return kind == MDBCORE_FAULT_FSYNC || kind == MDBCORE_FAULT_FDATASYNC ||
               kind == MDBCORE_FAULT_MSYNC;
    return 0;
}

/* Count the call; return the errno to inject, or 0. */
static int fault_enter(int kind)
{
    int err = 0;
    fault_short_len = SHORT_NONE;
    pthread_mutex_lock(&fault_mu);
    fault_counts[kind]++;
    for (int i = 0; i < FAULT_MAX_RULES; i++) {
        fault_rule *r = &fault_rules[i];
        if (!r->active || !kind_matches(r->kind, kind))
            continue;
        r->seen++;
        if (r->seen == r->n || (r->sticky && r->seen > r->n)) {
            if (r->err == FAULT_KILL_BEFORE) {
                pthread_mutex_unlock(&fault_mu);
                raise(SIGKILL);
            }
            if (r->err == FAULT_KILL_AFTER)
                fault_kill_pending = 1;
            else if (!err) {
                err = r->err;
                fault_short_len = r->short_len;
            }
            if (!r->sticky)
                r->active = 0;
        }
    }
    if (err)
        fault_injected_n++;
    pthread_mutex_unlock(&fault_mu);
    return err;
}

/* Every wrapper returns through here, after the call and its log entry. */
static int fault_leave(int rc)
{
    if (fault_kill_pending)
        raise(SIGKILL);
    return rc;
}

/* Append an entry (caller holds no lock).  `data` is copied. */
static void fault_log_add(const mdbcore_fault_entry *e, const void *data)
{
    void *copy = NULL;
    if (data && e->len) {
        copy = malloc(e->len);
        if (!copy)
            return; /* the log is best effort under memory pressure */
        memcpy(copy, data, e->len);
    }
    pthread_mutex_lock(&fault_mu);
    if (!fault_recording) {
        pthread_mutex_unlock(&fault_mu);
        free(copy);
        return;
    }
    if (fault_log_n == fault_log_cap) {
        size_t cap = fault_log_cap ? fault_log_cap * 2 : 256;
        mdbcore_fault_entry *nl = realloc(fault_log, cap * sizeof *nl);
        if (!nl) {
            pthread_mutex_unlock(&fault_mu);
            free(copy);
            return;
        }
        fault_log = nl;
        fault_log_cap = cap;
    }
    fault_log[fault_log_n] = *e;
    fault_log[fault_log_n].data = copy;
    fault_log_n++;
    pthread_mutex_unlock(&fault_mu);
}

static int recording(void)
{
    return __atomic_load_n(&fault_recording, __ATOMIC_ACQUIRE);
}

static void entry_for_fd(mdbcore_fault_entry *e, int kind, int fd)
{
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->fd = fd;
    if (fd >= 0)
        os_file_identity(fd, &e->dev, &e->ino, &e->dsync);
}

/* While recording: log a call on fd (data: the bytes it wrote, or NULL). */
static void log_fd_call(int kind, int fd, uint64_t offset, size_t len, int result,
                        const void *data)
{
    if (!recording())
        return;
    mdbcore_fault_entry e;
    entry_for_fd(&e, kind, fd);
    e.offset = offset;
    e.len = len;
    e.result = result;
    fault_log_add(&e, data);
}

/* ---- wrappers ---- */

static int fo_open(const char *path, int flags, mode_t mode, int *fd_out)
{
    int err = fault_enter(MDBCORE_FAULT_OPEN);
    return fault_leave(err ? err : fault_inner->open(path, flags, mode, fd_out));
}

static int fo_close(int fd)
{
    int err = fault_enter(MDBCORE_FAULT_CLOSE);
    return fault_leave(err ? err : fault_inner->close(fd));
}

static int fo_pread(int fd, void *buf, size_t len, off_t off, size_t *got)
{
    int err = fault_enter(MDBCORE_FAULT_PREAD);
    if (err) {
        if (got)
            *got = 0;
        return fault_leave(err);
    }
    return fault_leave(fault_inner->pread(fd, buf, len, off, got));
}

static int fo_pwrite(int fd, const void *buf, size_t len, off_t off)
{
    int err = fault_enter(MDBCORE_FAULT_PWRITE);
    if (err && fault_short_len != SHORT_NONE) {
        /* a short rule: the first bytes reach the file (and the log), the call fails */
        size_t part = fault_short_len < len ? fault_short_len : len;
        if (part && fault_inner->pwrite(fd, buf, part, off) == 0)
            log_fd_call(MDBCORE_FAULT_PWRITE, fd, (uint64_t)off, part, 0, buf);
        return fault_leave(err);
    }
    int rc = err ? err : fault_inner->pwrite(fd, buf, len, off);
    log_fd_call(MDBCORE_FAULT_PWRITE, fd, (uint64_t)off, len, rc, rc ? NULL : buf);
    return fault_leave(rc);
}

static int fo_pwritev(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    int err = fault_enter(MDBCORE_FAULT_PWRITEV);
    int rc = err ? err : fault_inner->pwritev(fd, iov, iovcnt, off);
    if (recording()) {
        size_t total = 0;
        for (int i = 0; i < iovcnt; i++)
            total += iov[i].iov_len;
        char *flat = NULL;
        if (!rc && total) {
            flat = malloc(total);
            if (flat) {
                size_t pos = 0;
                for (int i = 0; i < iovcnt; i++) {
                    memcpy(flat + pos, iov[i].iov_base, iov[i].iov_len);
                    pos += iov[i].iov_len;
                }
            }
        }
        log_fd_call(MDBCORE_FAULT_PWRITEV, fd, (uint64_t)off, total, rc, flat);
        free(flat);
    }
    return fault_leave(rc);
}

static int fo_sync(int kind, int fd)
{
    int err = fault_enter(kind);
    int rc = err ? err
                 : (kind == MDBCORE_FAULT_FSYNC ? fault_inner->fsync(fd)
                                                : fault_inner->fdatasync(fd));
    log_fd_call(kind, fd, 0, 0, rc, NULL);
    return fault_leave(rc == FAULT_SKIP ? 0 : rc);
}

static int fo_fsync(int fd)
{
    return fo_sync(MDBCORE_FAULT_FSYNC, fd);
}

static int fo_fdatasync(int fd)
{
    return fo_sync(MDBCORE_FAULT_FDATASYNC, fd);
}

static int fo_ftruncate(int fd, off_t len)
{
    int err = fault_enter(MDBCORE_FAULT_FTRUNCATE);
    int rc = err ? err : fault_inner->ftruncate(fd, len);
    log_fd_call(MDBCORE_FAULT_FTRUNCATE, fd, (uint64_t)len, 0, rc, NULL);
    return fault_leave(rc);
}

static int fo_fsize(int fd, off_t *size_out)
{
    int err = fault_enter(MDBCORE_FAULT_FSIZE);
    return fault_leave(err ? err : fault_inner->fsize(fd, size_out));
}

static void maps_add(void *addr, size_t len, uint64_t off, uint64_t dev, uint64_t ino)
{
    pthread_mutex_lock(&fault_mu);
    if (fault_maps_n == fault_maps_cap) {
        size_t cap = fault_maps_cap ? fault_maps_cap * 2 : 16;
        fault_map *nm = realloc(fault_maps, cap * sizeof *nm);
        if (!nm) {
            pthread_mutex_unlock(&fault_mu);
            return;
        }
        fault_maps = nm;
        fault_maps_cap = cap;
    }
    fault_maps[fault_maps_n++] = (fault_map){addr, len, off, dev, ino};
    pthread_mutex_unlock(&fault_mu);
}

static void maps_del(void *addr)
{
    pthread_mutex_lock(&fault_mu);
    for (size_t i = 0; i < fault_maps_n; i++)
        if (fault_maps[i].addr == addr) {
            fault_maps[i] = fault_maps[--fault_maps_n];
            break;
        }
    pthread_mutex_unlock(&fault_mu);
}

/* Which file does an address belong to?  0 if unknown. */
static int maps_find(const void *addr, uint64_t *dev, uint64_t *ino, uint64_t *off)
{
    int found = 0;
    pthread_mutex_lock(&fault_mu);
    for (size_t i = 0; i < fault_maps_n; i++) {
        const char *b = fault_maps[i].addr;
        if ((const char *)addr >= b && (const char *)addr < b + fault_maps[i].len) {
            *dev = fault_maps[i].dev;
            *ino = fault_maps[i].ino;
            *off = fault_maps[i].off + (uint64_t)((const char *)addr - b);
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&fault_mu);
    return found;
}

static int fo_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
    int err = fault_enter(MDBCORE_FAULT_MMAP);
    int rc = err ? err : fault_inner->mmap(addr, len, prot, flags, fd, off, out);
    if (!rc && fd >= 0) {
        mdbcore_fault_entry e;
        entry_for_fd(&e, MDBCORE_FAULT_MMAP, fd);
        maps_add(*out, len, (uint64_t)off, e.dev, e.ino);
        if (recording()) {
            e.offset = (uint64_t)off;
            e.len = len;
            e.addr = *out;
            fault_log_add(&e, NULL);
        }
    }
    return fault_leave(rc);
}

/* A log entry of `kind` for the mapping at addr (no descriptor): its file and offset. */
static void entry_for_map(mdbcore_fault_entry *e, int kind, void *addr, size_t len)
{
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->fd = -1;
    e->addr = addr;
    e->len = len;
    maps_find(addr, &e->dev, &e->ino, &e->offset);
}

static int fo_munmap(void *addr, size_t len)
{
    int err = fault_enter(MDBCORE_FAULT_MUNMAP);
    int rc = err ? err : fault_inner->munmap(addr, len);
    if (!rc) {
        if (recording()) {
            mdbcore_fault_entry e;
            entry_for_map(&e, MDBCORE_FAULT_MUNMAP, addr, len);
            fault_log_add(&e, NULL);
        }
        maps_del(addr);
    }
    return fault_leave(rc);
}

static int fo_msync(void *addr, size_t len, int flags)
{
    int err = fault_enter(MDBCORE_FAULT_MSYNC);
    int rc = err ? err : fault_inner->msync(addr, len, flags);
    if (recording()) {
        mdbcore_fault_entry e;
        entry_for_map(&e, MDBCORE_FAULT_MSYNC, addr, len);
        e.result = rc;
        e.dsync = !(flags & MS_ASYNC); /* MS_ASYNC only schedules: no durability barrier */
        fault_log_add(&e, NULL);
    }
    return fault_leave(rc == FAULT_SKIP ? 0 : rc);
}

static int fo_madvise(void *addr, size_t len, int advice)
{
    int err = fault_enter(MDBCORE_FAULT_MADVISE);
    return fault_leave(err ? err : fault_inner->madvise(addr, len, advice));
}

/* A copy into the write map is a page write of the file (pages_write), as a pwritev is:
 * counted, failed and logged under that kind, so rules and crash images treat both paths
 * alike (a "short" rule, on pwrite, stays the meta page's). */
static int fo_map_write(int fd, void *map, const void *src, size_t len, off_t off)
{
    int err = fault_enter(MDBCORE_FAULT_PWRITEV);
    int rc = err ? err : fault_inner->map_write(fd, map, src, len, off);
    log_fd_call(MDBCORE_FAULT_PWRITEV, fd, (uint64_t)off, len, rc, rc ? NULL : src);
    return fault_leave(rc);
}

static const os_ops fault_ops = {
    .open = fo_open,
    .close = fo_close,
    .pread = fo_pread,
    .pwrite = fo_pwrite,
    .pwritev = fo_pwritev,
    .fsync = fo_fsync,
    .fdatasync = fo_fdatasync,
    .ftruncate = fo_ftruncate,
    .fsize = fo_fsize,
    .mmap = fo_mmap,
    .munmap = fo_munmap,
    .msync = fo_msync,
    .madvise = fo_madvise,
    .map_write = fo_map_write,
};

/* ---- control API ---- */

int mdbcore_fault_install(void)
{
    pthread_mutex_lock(&fault_mu);
    if (!fault_inner) {
        fault_inner = os_current ? os_current : &os_posix_ops;
        if (fault_inner == &fault_ops)
            fault_inner = &os_posix_ops;
        __atomic_store_n(&os_current, &fault_ops, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&fault_mu);
    return 0;
}

static int valid_kind(int kind)
{
    return (kind >= 0 && kind < MDBCORE_FAULT_NKINDS) || kind == MDBCORE_FAULT_WRITE ||
           kind == MDBCORE_FAULT_SYNC || kind == MDBCORE_FAULT_ANY;
}

static int arm(int kind, unsigned long n, int err, int sticky)
{
    if (!valid_kind(kind) || n == 0 || err == 0 || err < FAULT_SKIP)
        return EINVAL;
    if (err == FAULT_SKIP && kind != MDBCORE_FAULT_FSYNC && kind != MDBCORE_FAULT_FDATASYNC &&
        kind != MDBCORE_FAULT_MSYNC && kind != MDBCORE_FAULT_SYNC)
        return EINVAL;
    mdbcore_fault_install();
    int rc = ENOSPC;
    pthread_mutex_lock(&fault_mu);
    for (int i = 0; i < FAULT_MAX_RULES; i++) {
        if (!fault_rules[i].active) {
            fault_rules[i] = (fault_rule){kind, err, sticky, 1, n, 0, SHORT_NONE};
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&fault_mu);
    return rc;
}

int mdbcore_fault_fail_nth(int kind, unsigned long n, int err)
{
    return err > 0 ? arm(kind, n, err, 0) : EINVAL;
}

int mdbcore_fault_short_nth(unsigned long n, size_t bytes, int err)
{
    if (err <= 0)
        return EINVAL;
    int rc = arm(MDBCORE_FAULT_PWRITE, n, err, 0);
    if (rc)
        return rc;
    pthread_mutex_lock(&fault_mu);
    for (int i = FAULT_MAX_RULES - 1; i >= 0; i--)
        if (fault_rules[i].active && fault_rules[i].kind == MDBCORE_FAULT_PWRITE &&
            fault_rules[i].n == n && fault_rules[i].err == err &&
            fault_rules[i].short_len == SHORT_NONE && fault_rules[i].seen == 0) {
            fault_rules[i].short_len = bytes;
            break;
        }
    pthread_mutex_unlock(&fault_mu);
    return 0;
}

int mdbcore_fault_kill_nth(int kind, unsigned long n, int after)
{
    return arm(kind, n, after ? FAULT_KILL_AFTER : FAULT_KILL_BEFORE, 0);
}

int mdbcore_fault_fail_from(int kind, unsigned long n, int err)
{
    return err > 0 ? arm(kind, n, err, 1) : EINVAL;
}

unsigned long mdbcore_fault_calls(int kind)
{
    unsigned long n = 0;
    pthread_mutex_lock(&fault_mu);
    for (int k = 0; k < MDBCORE_FAULT_NKINDS; k++)
        if (kind_matches(kind, k))
            n += fault_counts[k];
    pthread_mutex_unlock(&fault_mu);
    return n;
}

unsigned long mdbcore_fault_injected(void)
{
    pthread_mutex_lock(&fault_mu);
    unsigned long n = fault_injected_n;
    pthread_mutex_unlock(&fault_mu);
    return n;
}

static void log_clear_locked(void)
{
    for (size_t i = 0; i < fault_log_n; i++)
        free((void *)fault_log[i].data);
    free(fault_log);
    fault_log = NULL;
    fault_log_n = fault_log_cap = 0;
}

void mdbcore_fault_record_start(void)
{
    mdbcore_fault_install();
    pthread_mutex_lock(&fault_mu);
    log_clear_locked();
    __atomic_store_n(&fault_recording, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&fault_mu);
}

void mdbcore_fault_record_stop(void)
{
    __atomic_store_n(&fault_recording, 0, __ATOMIC_RELEASE);
}

size_t mdbcore_fault_log_count(void)
{
    pthread_mutex_lock(&fault_mu);
    size_t n = fault_log_n;
    pthread_mutex_unlock(&fault_mu);
    return n;
}

int mdbcore_fault_log_entry(size_t i, mdbcore_fault_entry *out)
{
    int rc = ERANGE;
    pthread_mutex_lock(&fault_mu);
    if (i < fault_log_n) {
        *out = fault_log[i];
        rc = 0;
    }
    pthread_mutex_unlock(&fault_mu);
    return rc;
}

void mdbcore_fault_reset(void)
{
    pthread_mutex_lock(&fault_mu);
    __atomic_store_n(&fault_recording, 0, __ATOMIC_RELEASE);
    memset(fault_rules, 0, sizeof fault_rules);
    memset(fault_counts, 0, sizeof fault_counts);
    fault_injected_n = 0;
    log_clear_locked();
    free(fault_maps);
    fault_maps = NULL;
    fault_maps_n = fault_maps_cap = 0;
    if (fault_inner) {
        __atomic_store_n(&os_current, fault_inner, __ATOMIC_RELEASE);
        fault_inner = NULL;
    }
    pthread_mutex_unlock(&fault_mu);
}

int mdbcore_fault_file_id(const char *path, uint64_t *dev, uint64_t *ino)
{
    int fd;
    int rc = os_posix_ops.open(path, 0 /* O_RDONLY */, 0, &fd);
    if (rc)
        return rc;
    rc = os_file_identity(fd, dev, ino, NULL);
    os_posix_ops.close(fd);
    return rc;
}

/* ---- crash images ---- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int is_write(int kind)
{
    return kind == MDBCORE_FAULT_PWRITE || kind == MDBCORE_FAULT_PWRITEV;
}

static int is_sync(int kind)
{
    return kind == MDBCORE_FAULT_FSYNC || kind == MDBCORE_FAULT_FDATASYNC ||
           kind == MDBCORE_FAULT_MSYNC;
}

int mdbcore_fault_crash_image(int out_fd, uint64_t dev, uint64_t ino, size_t upto, int mode,
                              uint64_t seed, size_t grain, size_t *kept, size_t *dropped)
{
    size_t nkept = 0, ndropped = 0;
    if (grain == 0)
        grain = 4096;
    if (mode < MDBCORE_CRASH_DROP_UNSYNCED || mode > MDBCORE_CRASH_TORN)
        return EINVAL;

    pthread_mutex_lock(&fault_mu);
    if (upto > fault_log_n)
        upto = fault_log_n;
    /* The last durability point of this file inside the window. */
    size_t last_sync = 0; /* entries before this index are durable */
    for (size_t i = 0; i < upto; i++) {
        const mdbcore_fault_entry *e = &fault_log[i];
        if (is_sync(e->kind) && e->result == 0 && e->dev == dev && e->ino == ino &&
            (e->kind != MDBCORE_FAULT_MSYNC || e->dsync))
            last_sync = i + 1;
    }
    uint64_t rng = seed ^ 0x6d646263726173ull;
    int rc = 0;
    for (size_t i = 0; i < upto && !rc; i++) {
        const mdbcore_fault_entry *e = &fault_log[i];
        if (e->dev != dev || e->ino != ino)
            continue;
        if (e->kind == MDBCORE_FAULT_FTRUNCATE && e->result == 0) {
            rc = os_posix_ops.ftruncate(out_fd, (off_t)e->offset);
            continue;
        }
        if (!is_write(e->kind) || e->result != 0 || !e->data)
            continue;
        if (i < last_sync || e->dsync) {
            rc = os_posix_ops.pwrite(out_fd, e->data, e->len, (off_t)e->offset);
            continue;
        }
        switch (mode) {
        case MDBCORE_CRASH_DROP_UNSYNCED:
            ndropped++;
            break;
        case MDBCORE_CRASH_KEEP_ALL:
            nkept++;
            rc = os_posix_ops.pwrite(out_fd, e->data, e->len, (off_t)e->offset);
            break;
        case MDBCORE_CRASH_SUBSET:
            if (splitmix(&rng) & 1) {
                nkept++;
                rc = os_posix_ops.pwrite(out_fd, e->data, e->len, (off_t)e->offset);
            } else {
                ndropped++;
            }
            break;
        case MDBCORE_CRASH_TORN: {
            /* Pieces are cut at absolute `grain` boundaries of the file, like sectors or
             * pages reaching the disk independently. */
            int any_kept = 0, any_dropped = 0;
            uint64_t pos = e->offset, end = e->offset + e->len;
            while (pos < end && !rc) {
                uint64_t next = (pos / grain + 1) * grain;
                if (next > end)
                    next = end;
                if (splitmix(&rng) & 1) {
                    rc = os_posix_ops.pwrite(out_fd, (const char *)e->data + (pos - e->offset),
                                             (size_t)(next - pos), (off_t)pos);
                    any_kept = 1;
                } else {
                    any_dropped = 1;
                }
                pos = next;
            }
            if (any_kept)
                nkept++;
            if (any_dropped && !any_kept)
                ndropped++;
            break;
        }
        }
    }
    pthread_mutex_unlock(&fault_mu);
    if (kept)
        *kept = nkept;
    if (dropped)
        *dropped = ndropped;
    return rc;
}

/* ---- MDBCORE_FAULT: arming from the environment, for tests that cannot call us ---- */

static const struct {
    const char *name;
    int kind;
} kind_names[] = {
    {"open", MDBCORE_FAULT_OPEN},       {"close", MDBCORE_FAULT_CLOSE},
    {"pread", MDBCORE_FAULT_PREAD},     {"pwrite", MDBCORE_FAULT_PWRITE},
    {"pwritev", MDBCORE_FAULT_PWRITEV}, {"fsync", MDBCORE_FAULT_FSYNC},
    {"fdatasync", MDBCORE_FAULT_FDATASYNC}, {"ftruncate", MDBCORE_FAULT_FTRUNCATE},
    {"fsize", MDBCORE_FAULT_FSIZE},     {"mmap", MDBCORE_FAULT_MMAP},
    {"munmap", MDBCORE_FAULT_MUNMAP},   {"msync", MDBCORE_FAULT_MSYNC},
    {"madvise", MDBCORE_FAULT_MADVISE}, {"write", MDBCORE_FAULT_WRITE},
    {"sync", MDBCORE_FAULT_SYNC},       {"any", MDBCORE_FAULT_ANY},
};

static const struct {
    const char *name;
    int err;
} errno_names[] = {
    {"EIO", EIO},       {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"ENOMEM", ENOMEM},
    {"EACCES", EACCES}, {"EPERM", EPERM},   {"EROFS", EROFS},   {"EFBIG", EFBIG},
    {"EAGAIN", EAGAIN}, {"EBADF", EBADF},   {"EINVAL", EINVAL}, {"ENOENT", ENOENT},
    {"kill", FAULT_KILL_BEFORE}, {"kill-after", FAULT_KILL_AFTER}, {"skip", FAULT_SKIP},
};

int mdbcore_fault_arm_spec(const char *spec)
{
    if (!spec)
        return EINVAL;
    char buf[512];
    if (strlen(spec) >= sizeof buf)
        return EINVAL;
    strcpy(buf, spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ", ", &save); item; item = strtok_r(NULL, ", ", &save)) {
        char *k = item, *n = strchr(k, ':');
        if (!n)
            return EINVAL;
        *n++ = 0;
        char *a = strchr(n, ':');
        if (!a)
            return EINVAL;
        *a++ = 0;
        int kind = -1;
        for (size_t i = 0; i < sizeof kind_names / sizeof kind_names[0]; i++)
            if (!strcasecmp(k, kind_names[i].name))
                kind = kind_names[i].kind;
        char *end;
        unsigned long nth = strtoul(n, &end, 10);
        int sticky = *end == '+';
        if (kind < 0 || end == n || (*end && !sticky) || (sticky && end[1]))
            return EINVAL;
        int err = 0;
        for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
            if (!strcasecmp(a, errno_names[i].name))
                err = errno_names[i].err;
        if (!err) {
            long v = strtol(a, &end, 10);
            if (*end || v <= 0)
                return EINVAL;
            err = (int)v;
        }
        int rc = arm(kind, nth, err, sticky && (err > 0 || err == FAULT_SKIP));
        if (rc)
            return rc;
    }
    return 0;
}

/* MDBCORE_FAULT="fdatasync:2:EIO,write:5+:ENOSPC,msync:1:kill" arms rules before the program
 * runs -- but only where something calls this at load time: the test library's constructor
 * (testlib/fault_env.c).  The production library never reads the variable, so a stray
 * setting cannot make a user's writes fail.  A malformed spec is reported and ignored. */
void fault_arm_from_env(void)
{
    const char *spec = getenv("MDBCORE_FAULT");
    if (spec && *spec && mdbcore_fault_arm_spec(spec) != 0)
        fprintf(stderr, "mdbcore: ignoring malformed MDBCORE_FAULT=%s\n", spec);
}
