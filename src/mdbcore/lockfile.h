/*
 * lockfile.h -- lock.mdb: its layout (format.h), first-opener initialisation, the
 * process-shared robust writer and reader-table mutexes, and the fcntl locks that tell
 * the first and last users of an environment apart (layer L1).
 *
 * Protocol (LMDB 0.9 compatible, so real LMDB and mdb can share one environment):
 *  - open/create the file; try F_WRLCK on byte 0.  Success: we are the only user, so
 *    size the file for maxreaders, initialise magic, format, both mutexes (PROCESS_SHARED
 *    + ROBUST), txnid 0, numreaders 0; later lockfile_share() downgrades to F_RDLCK.
 *    Failure: wait for F_RDLCK, then check magic (MDB_INVALID) and format
 *    (MDB_VERSION_MISMATCH) and adopt maxreaders from the file size.
 *  - a robust mutex whose owner died returns EOWNERDEAD: we mark it consistent and report
 *    owner_died=1 so the caller can repair state (reset txnid from the newest meta, run the
 *    reader check).
 */
#ifndef MDBCORE_LOCKFILE_H
#define MDBCORE_LOCKFILE_H

#include <sys/types.h>
#include "format.h"

typedef struct lock_region {
    int fd;
    lock_header *head;    /* the mapped file */
    reader_slot *slots;   /* == (reader_slot *)((char *)head + LOCK_HEADER_SIZE) */
    size_t map_len;
    unsigned maxreaders;
    int exclusive;        /* 1 while we hold F_WRLCK on byte 0 (first opener, before share) */
} lock_region;

/* Open (creating if allowed) the lock file at `path`.  *maxreaders is the wanted table size
 * in, the actual size out.  *first_out is 1 if we initialised the table.  On EROFS with
 * readonly != 0 returns ENOENT-free success with *out = NULL: the caller runs without locks. */
int lockfile_open(lock_region **out, const char *path, mode_t mode, int readonly,
                  unsigned *maxreaders, int *first_out);
/* First opener: publish txnid and downgrade byte 0 to a shared lock. */
int lockfile_share(lock_region *lr, txnid_t last_txnid);
/* Clear this pid's reader slots, unmap, close (drops our fcntl locks). */
void lockfile_close(lock_region *lr, pid_t pid);

/* Writer mutex for the whole write txn.  Returns 0 or an errno/MDB code. */
int lockfile_writer_lock(lock_region *lr, int *owner_died);
void lockfile_writer_unlock(lock_region *lr);
/* Reader-table mutex, held only while claiming or clearing slots. */
int lockfile_table_lock(lock_region *lr, int *owner_died);
void lockfile_table_unlock(lock_region *lr);

#endif
