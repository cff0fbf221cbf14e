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
 * Liveness: every process that reads holds an fcntl write lock on the lock-file byte at
 * offset = its pid (readers_pidlock).  F_GETLK on that byte from another process tells
 * whether the owner is still alive; the kernel drops the lock when the process dies.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        /* Dead: clear its slots under the table mutex. */
        int locked_here = 0;
        if (!have_mutex) {
            int od = 0;
            rc = lockfile_table_lock(lr, &od);
            if (rc)
                break;
            locked_here = 1;
            /* The pid may have been reused by a new process meanwhile: look again. */
            if (rd_pid_alive(lr, pid, &err)) {
                lockfile_table_unlock(lr);
                if (err) {
                    rc = err;
                    break;
                }
                continue;
            }
        }
        unsigned n2 = rd_count(lr);
        for (unsigned j = i; j < n2; j++) {
            if (lr->slots[j].pid == pid) {
                lr->slots[j].txnid = IDLE_TXNID;
                __atomic_store_n(&lr->slots[j].pid, 0, __ATOMIC_RELEASE);
                cleared++;
            }
        }
        if (locked_here)
            lockfile_table_unlock(lr);
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

/* Test-only mutation switch (mdbcore.h section 3); 0 in every normal run. */
int mdbcore_mutation;

int mdbcore_set_mutation(int bits)
{
    int old = mdbcore_mutation;
    mdbcore_mutation = bits;
    return old;
}

txnid_t readers_oldest(const lock_region *lr, txnid_t upper)
{
    txnid_t oldest = upper;
    if (!lr || (mdbcore_mutation & MDBCORE_MUT_IGNORE_READERS))
        return oldest;
    for (unsigned i = rd_count(lr); i-- > 0;) {
        if (__atomic_load_n(&lr->slots[i].pid, __ATOMIC_ACQUIRE)) {
            txnid_t t = lr->slots[i].txnid;
            if (t < oldest)
                oldest = t;
        }
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
