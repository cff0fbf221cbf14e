/*
 * readers.c -- the reader table of lock.mdb (layer L1).
 *
 * A slot is owned by one thread of one process.  Its life:
 *   free (pid 0) --readers_acquire--> claimed, idle (txnid -1)
 *   idle  --(txn.c stores a snapshot id)--> reading  --(reset/abort)--> idle
 *   any   --readers_release / lockfile_close / readers_check of a dead pid--> free
 *
 * Only slot claiming and the stale-reader sweep take the table mutex.  The writer's oldest
 * reader scan and the reader list read the slots without a lock: a slot seen half-updated
 * can only make a page look in use a little longer.
 *
 * Healing: a writer that finds the oldest snapshot held by another process tests that
 * process's liveness (below) and clears its slots if it died, so a killed reader does not
 * pin freed pages until someone calls mdb_reader_check.  A process found alive is not
 * tested again for READERS_HEAL_INTERVAL_MS.
 *
 * Liveness: every process that reads holds an fcntl write lock on the lock-file byte at
 * offset = its pid (readers_pidlock).  F_GETLK on that byte from another process tells
 * whether the owner is still alive; the kernel drops the lock when the process dies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "readers.h"
#include "mdbcore.h"
#include "os.h"

#define IDLE_TXNID ((txnid_t)-1)

static unsigned rd_count(const lock_region *lr)
{
    unsigned n = lr->head->numreaders;
    return n > lr->maxreaders ? lr->maxreaders : n;
}

int readers_pidlock(lock_region *lr, pid_t pid)
{
    if (!lr)
        return 0;
    return os_lock(lr->fd, OS_LOCK_EXCL, 0, (off_t)pid, 1);
}

/* Is the process `pid` still holding its pid lock?  1 alive, 0 dead, <0 never. */
static int rd_pid_alive(const lock_region *lr, uint32_t pid, int *err)
{
    int locked = 0;
    int rc = os_fcntl_getlk_pid(lr->fd, (off_t)pid, 1, &locked);
    if (rc) {
        *err = rc;
        return 1; /* when in doubt, keep the slot */
    }
    return locked;
}

/* Clear every slot of the dead process `pid`.  Unless the caller holds the table mutex,
 * take it and test the pid again first (it may have been reused meanwhile).  Returns the
 * number of slots cleared (0 if the pid turned out alive) or a negative errno. */
static int rd_clear_pid(lock_region *lr, uint32_t pid, int have_mutex)
{
    int err = 0;
    if (!have_mutex) {
        int od = 0;
        int rc = lockfile_table_lock(lr, &od);
        if (rc)
            return -rc;
        if (rd_pid_alive(lr, pid, &err)) {
            lockfile_table_unlock(lr);
            return err ? -err : 0;
        }
    }
    int cleared = 0;
    unsigned n = rd_count(lr);
    for (unsigned j = 0; j < n; j++) {
        if (lr->slots[j].pid == pid) {
            lr->slots[j].txnid = IDLE_TXNID;
            __atomic_store_n(&lr->slots[j].pid, 0, __ATOMIC_RELEASE);
            cleared++;
        }
    }
    if (!have_mutex)
        lockfile_table_unlock(lr);
    return cleared;
}

/* The sweep proper.  `have_mutex`: the caller already holds the table mutex. */
static int rd_check(lock_region *lr, pid_t self, int have_mutex, int *dead)
{
    int cleared = 0, rc = 0;
    unsigned n = rd_count(lr);
    uint32_t *seen = n ? malloc(n * sizeof *seen) : NULL;
    unsigned nseen = 0;
    if (n && !seen)
        return ENOMEM;

    for (unsigned i = 0; i < n; i++) {
        uint32_t pid = lr->slots[i].pid;
        if (pid == 0 || pid == (uint32_t)self)
            continue;
        int dup = 0;
        for (unsigned k = 0; k < nseen; k++)
            if (seen[k] == pid) {
                dup = 1;
                break;
            }
        if (dup)
            continue;
        seen[nseen++] = pid;

        int err = 0;
        if (rd_pid_alive(lr, pid, &err)) {
            if (err) {
                rc = err;
                break;
            }
            continue;
        }
        int c = rd_clear_pid(lr, pid, have_mutex);
        if (c < 0) {
            rc = -c;
            break;
        }
        cleared += c;
    }
    free(seen);
    if (dead)
        *dead = cleared;
    return rc;
}

int readers_acquire(lock_region *lr, pid_t pid, pthread_t tid, reader_slot **slot_out)
{
    int od = 0;
    int rc = lockfile_table_lock(lr, &od);
    if (rc)
        return rc;
    if (od) {
        /* The previous holder died while claiming or clearing: sweep dead readers now,
         * still under the mutex. */
        rd_check(lr, pid, 1, NULL);
    }
    unsigned nr = rd_count(lr);
    unsigned i;
    for (i = 0; i < nr; i++)
        if (lr->slots[i].pid == 0)
            break;
    if (i == lr->maxreaders) {
        lockfile_table_unlock(lr);
        return MDB_READERS_FULL;
    }
    reader_slot *s = &lr->slots[i];
    /* Fill the slot before publishing it: pid is written last, so a scanner never sees a
     * live pid with a stale txnid. */
    s->pid = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    s->tid = (uint64_t)tid;
    s->txnid = IDLE_TXNID;
    if (i == nr)
        lr->head->numreaders = nr + 1;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&s->pid, (uint32_t)pid, __ATOMIC_RELEASE);
    lockfile_table_unlock(lr);
    *slot_out = s;
    return 0;
}

void readers_release(reader_slot *slot)
{
    if (!slot)
        return;
    slot->txnid = IDLE_TXNID;
    __atomic_store_n(&slot->pid, 0, __ATOMIC_RELEASE);
}

/* The oldest snapshot held by a slot (txnid < upper), its slot index in *at (-1: none). */
static txnid_t rd_oldest_at(const lock_region *lr, txnid_t upper, int *at)
{
    txnid_t oldest = upper;
    *at = -1;
    for (unsigned i = rd_count(lr); i-- > 0;) {
        if (__atomic_load_n(&lr->slots[i].pid, __ATOMIC_ACQUIRE)) {
            txnid_t t = lr->slots[i].txnid;
            if (t < oldest) {
                oldest = t;
                *at = (int)i;
            }
        }
    }
    return oldest;
}

txnid_t readers_oldest(const lock_region *lr, txnid_t upper)
{
    if (!lr || (mdbcore_mutation & MDBCORE_MUT_IGNORE_READERS))
        return upper;
    int at;
    return rd_oldest_at(lr, upper, &at);
}

static uint64_t rd_now_ms(void)
{
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
#endif
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    return 0;
}

txnid_t readers_oldest_heal(lock_region *lr, pid_t self, txnid_t upper, readers_heal_state *h)
{
    if (!lr || (mdbcore_mutation & MDBCORE_MUT_IGNORE_READERS))
        return upper;
    int at;
    txnid_t oldest = rd_oldest_at(lr, upper, &at);
    if (mdbcore_mutation & MDBCORE_MUT_NO_HEAL)
        return oldest;
    /* Each round clears one dead process; the bound keeps a writer's cost finite even if
     * the table is full of dead slots (mdb_reader_check clears the rest). */
    for (int round = 0; round < 8 && at >= 0; round++) {
        uint32_t pid = __atomic_load_n(&lr->slots[at].pid, __ATOMIC_ACQUIRE);
        if (pid == 0 || pid == (uint32_t)self)
            break; /* ours (alive by definition), or freed while we looked */
        uint64_t now = rd_now_ms();
        int cached = 0;
        for (unsigned k = 0; k < READERS_HEAL_CACHE; k++) {
            if (h->alive[k].pid == pid && now - h->alive[k].at_ms < READERS_HEAL_INTERVAL_MS) {
                cached = 1;
                break;
            }
        }
        if (cached)
            break; /* seen alive lately: a live long reader costs one clock read */
        int err = 0;
        h->checks++;
        if (rd_pid_alive(lr, pid, &err)) {
            if (!err) {
                unsigned k = h->next++ % READERS_HEAL_CACHE;
                h->alive[k].pid = pid;
                h->alive[k].at_ms = now;
            }
            break;
        }
        int c = rd_clear_pid(lr, pid, 0);
        if (c <= 0)
            break; /* error, or the pid was reused by a live process: keep its slot */
        h->healed += (uint64_t)c;
        oldest = rd_oldest_at(lr, upper, &at);
    }
    return oldest;
}

int readers_check(lock_region *lr, pid_t self, int *dead)
{
    if (dead)
        *dead = 0;
    if (!lr)
        return 0;
    return rd_check(lr, self, 0, dead);
}

int readers_list(const lock_region *lr, MDB_msg_func *func, void *ctx)
{
    if (!func)
        return EINVAL;
    if (!lr)
        return func("(no reader locks)\n", ctx);

    char buf[64];
    int first = 1, rc = 0;
    unsigned n = rd_count(lr);
    for (unsigned i = 0; i < n; i++) {
        uint32_t pid = lr->slots[i].pid;
        if (!pid)
            continue;
        txnid_t t = lr->slots[i].txnid;
        if (t == IDLE_TXNID)
            snprintf(buf, sizeof buf, "%10d %zx -\n", (int)pid, (size_t)lr->slots[i].tid);
        else
            snprintf(buf, sizeof buf, "%10d %zx %zu\n", (int)pid, (size_t)lr->slots[i].tid,
                     (size_t)t);
        if (first) {
            first = 0;
            rc = func("    pid     thread     txnid\n", ctx);
            if (rc < 0)
                break;
        }
        rc = func(buf, ctx);
        if (rc < 0)
            break;
    }
    if (first)
        rc = func("(no active readers)\n", ctx);
    return rc;
}
