/*
 * readers.h -- the reader table in lock.mdb (layer L1): claim and release slots, the
 * per-process pid lock, the oldest-reader scan, the stale-reader check and the reader list.
 *
 * Readers take no lock to read: a read txn stores its snapshot txnid in its own slot.
 * The writer scans the slots without a lock; a stale value only delays page reuse, never
 * makes it unsafe, because a slot's txnid is published before the reader touches the map
 * and re-checked against the lock file's txnid (txn.c does that loop).
 */
#ifndef MDBCORE_READERS_H
#define MDBCORE_READERS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include "format.h"
#include "lmdb.h"
#include "lockfile.h"

/* Take the fcntl write lock on byte `pid` of the lock file (once per process). */
int readers_pidlock(lock_region *lr, pid_t pid);
/* Claim a free slot (pid 0) under the table mutex; MDB_READERS_FULL when none is left.
 * The slot is returned with txnid = (txnid_t)-1, pid and tid filled in. */
int readers_acquire(lock_region *lr, pid_t pid, pthread_t tid, reader_slot **slot_out);
/* Give a slot back (pid = 0). */
void readers_release(reader_slot *slot);
/* The oldest txnid any live reader holds, or `upper` if none is older. */
txnid_t readers_oldest(const lock_region *lr, txnid_t upper);
/* Writer-side healing state, one per env, touched only under the writer mutex: processes
 * recently found alive, so a live long reader is tested at most once per interval. */
#define READERS_HEAL_CACHE 4
#define READERS_HEAL_INTERVAL_MS 1000u
typedef struct readers_heal_state {
    struct {
        uint32_t pid;
        uint64_t at_ms;
    } alive[READERS_HEAL_CACHE];
    unsigned next;
    uint64_t checks; /* liveness tests made */
    uint64_t healed; /* slots of dead processes cleared */
} readers_heal_state;
/* readers_oldest, but when the oldest snapshot belongs to another process, test whether
 * that process is alive (mdb_reader_check's test) and clear its slots if not, then look
 * again (a few rounds at most).  Rate-limited through *h. */
txnid_t readers_oldest_heal(lock_region *lr, pid_t self, txnid_t upper, readers_heal_state *h);
/* Clear the slots of dead processes; *dead (may be NULL) gets the number of slots cleared. */
int readers_check(lock_region *lr, pid_t self, int *dead);
/* mdb_reader_list's output (header line, one line per slot, or "(no active readers)"). */
int readers_list(const lock_region *lr, MDB_msg_func *func, void *ctx);

#endif
