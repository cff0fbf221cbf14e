/*
 * lockfile.c -- lock.mdb: open, first-opener initialisation, the two process-shared robust
 * mutexes, and the fcntl lock on byte 0 that tells the first user of an environment from
 * the others (layer L1).  The protocol is LMDB 0.9's on Linux/glibc, so one environment
 * can be shared by processes running real LMDB and processes running mdb.
 *
 * Layout (format.h): a 128-byte head -- magic, format, reader-table mutex at 8, last
 * committed txnid at 48, reader high-water mark at 56, writer mutex at 64 -- followed by
 * one 64-byte reader slot per reader.  The file is 128 + 64 * maxreaders bytes long.
 *
 * Who may do what:
 *  - only the process holding F_WRLCK on byte 0 initialises the head (nobody else can have
 *    the file mapped, since every user holds at least F_RDLCK on byte 0 while open);
 *  - joiners wait for F_RDLCK, which is granted only after the first opener downgrades,
 *    i.e. after the head is initialised;
 *  - a dead mutex owner is detected by the robust mutex (EOWNERDEAD): we mark the mutex
 *    consistent and hand owner_died = 1 to the caller, who repairs the shared state while
 *    still holding the mutex.
 *
 * Calls: os.h only (no direct system calls), pthread for the mutexes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lmdb.h"
#include "lockfile.h"
#include "os.h"

_Static_assert(sizeof(pthread_mutex_t) <= 40, "glibc x86-64 mutex fits the 40-byte field");

static pthread_mutex_t *lf_rmutex(const lock_region *lr)
{
    return (pthread_mutex_t *)(void *)lr->head->rmutex;
}

static pthread_mutex_t *lf_wmutex(const lock_region *lr)
{
    return (pthread_mutex_t *)(void *)lr->head->wmutex;
}

/* Initialise one shared robust mutex in place. */
static int lf_mutex_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (rc)
        return rc;
    rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (!rc)
        rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (!rc) {
        memset((void *)m, 0, 40);
        rc = pthread_mutex_init(m, &a);
    }
    pthread_mutexattr_destroy(&a);
    return rc;
}

/* glibc's robust mutex keeps its owner's thread id in the low bits of the lock word, and
 * the kernel sets the owner-died bit when that thread dies holding it */
#define LF_FUTEX_TID_MASK 0x3fffffff
#define LF_FUTEX_OWNER_DIED 0x40000000
/* the kind glibc gives a robust (16), process-shared (128) mutex: what lf_mutex_init makes
 * and what LMDB 0.9 makes on Linux */
#define LF_ROBUST_SHARED_KIND 0x90

/* The kind glibc records in a robust process-shared mutex, read once from a mutex made
 * here with those attributes.  A shared mutex of another kind is not one of this protocol
 * (damaged bytes): glibc may even abort on some kinds, so it is refused before any
 * pthread call. */
static int lf_expected_kind(void)
{
    static int kind = -1;
    if (kind < 0) {
        pthread_mutex_t probe;
        if (lf_mutex_init(&probe) == 0) {
            kind = probe.__data.__kind;
            pthread_mutex_destroy(&probe);
        } else {
            kind = LF_ROBUST_SHARED_KIND;
        }
    }
    return kind;
}

/* Wait for a shared mutex a second at a time.  A mutex held by a live thread is waited for
 * as long as it takes (a writer may hold the lock for hours).  One whose bytes cannot
 * belong to a mutex of this protocol -- another kind, or locked by no thread that exists --
 * is a damaged lock file: nobody would ever wake us, so we give up with MDB_PANIC rather
 * than hang.  (A thread of another PID namespace looks dead here; LMDB's own reader-pid
 * checks share that limit.) */
/* Whether a locked mutex's word cannot be a real lock: it names a thread that does not
 * exist (a real owner's death sets the owner-died bit first, so a dead owner without it is
 * damaged bytes), or this very thread (waiting would never end), or no thread at all while
 * other bits are set (glibc only ever sets the waiters bit beside an owner, and waits for
 * ever on a word that has it alone).  The word is read again after the test, so an owner
 * that just unlocked and exited is not taken for damage. */
static int lf_word_impossible(pthread_mutex_t *m)
{
    int word = __atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE);
    int tid = word & LF_FUTEX_TID_MASK;
    if (!word || (word & LF_FUTEX_OWNER_DIED))
        return 0;
    if (tid && tid != os_thread_self() && os_thread_exists(tid))
        return 0;
    return __atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) == word;
}

static int lf_mutex_wait(pthread_mutex_t *m)
{
    if (__atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) != lf_expected_kind())
        return MDB_PANIC;
    /* damaged bytes fail at once: each call on a damaged lock file would otherwise wait its
     * second, and a writer makes many (the fuzz_lockfile campaign found a write txn taking
     * over ten seconds to fail this way) */
    if (lf_word_impossible(m))
        return MDB_PANIC;
    /* uncontended, the usual case for a writer: no clock read, no timed wait (a try
     * reports a dead owner or an unrecoverable mutex just as the timed lock does) */
    int rc = pthread_mutex_trylock(m);
    if (rc != EBUSY)
        return rc;
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        rc = pthread_mutex_timedlock(m, &until);
        if (rc != ETIMEDOUT)
            return rc;
        int kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
        if ((kind & LF_ROBUST_SHARED_KIND) != LF_ROBUST_SHARED_KIND || lf_word_impossible(m))
            return MDB_PANIC;
    }
}

/* Lock a shared robust mutex; a dead owner is reported, never hidden. */
static int lf_mutex_lock(pthread_mutex_t *m, int *owner_died)
{
    if (owner_died)
        *owner_died = 0;
    int rc = lf_mutex_wait(m);
    if (rc == EOWNERDEAD) {
        /* We own it now; the protected state may be half-updated.  Make the mutex usable
         * again and let the caller repair the state before it unlocks. */
        rc = pthread_mutex_consistent(m);
        if (rc) {
            pthread_mutex_unlock(m);
            return MDB_PANIC;
        }
        if (owner_died)
            *owner_died = 1;
        return 0;
    }
    if (rc == ENOTRECOVERABLE)
        return MDB_PANIC;
    return rc;
}

static void lf_release(lock_region *lr)
{
    if (lr->head)
        os_current->munmap(lr->head, lr->map_len);
    if (lr->fd >= 0)
        os_current->close(lr->fd);
    free(lr);
}

int lockfile_open(lock_region **out, const char *path, mode_t mode, int readonly,
                  unsigned *maxreaders, int *first_out)
{
    *out = NULL;
    if (first_out)
        *first_out = 0;

    lock_region *lr = calloc(1, sizeof *lr);
    if (!lr)
        return ENOMEM;
    lr->fd = -1;

    int rc = os_open_file(path, OS_OPEN_RDWR | OS_OPEN_CREATE, mode, &lr->fd);
    if (rc) {
        free(lr);
        /* A read-only env on a read-only filesystem runs without locks (as LMDB). */
        if (rc == EROFS && readonly)
            return 0;
        return rc;
    }

    /* Exclusive on byte 0 means nobody else has the environment open. */
    int excl = 0;
    for (;;) {
        rc = os_lock(lr->fd, OS_LOCK_EXCL, 0, 0, 1);
        if (rc == 0) {
            excl = 1;
            break;
        }
        if (rc != EAGAIN)
            goto fail;
        rc = os_lock(lr->fd, OS_LOCK_SHARED, 1, 0, 1);
        if (rc == 0)
            break;
        if (rc != EAGAIN)
            goto fail;
    }

    off_t size = 0;
    rc = os_current->fsize(lr->fd, &size);
    if (rc)
        goto fail;

    unsigned want = (maxreaders && *maxreaders) ? *maxreaders : 126u;
    size_t need = LOCK_HEADER_SIZE + (size_t)want * sizeof(reader_slot);
    size_t len;
    if (excl && (size_t)size < need) {
        rc = os_current->ftruncate(lr->fd, (off_t)need);
        if (rc)
            goto fail;
        len = need;
    } else {
        /* The table size is fixed by whoever sized the file; adopt it. */
        if ((size_t)size < LOCK_HEADER_SIZE + sizeof(reader_slot)) {
            rc = MDB_INVALID;
            goto fail;
        }
        len = (size_t)size;
    }
    unsigned nslots = (unsigned)((len - LOCK_HEADER_SIZE) / sizeof(reader_slot));

    void *map = NULL;
    rc = os_map_file(lr->fd, len, 0, 1, NULL, &map);
    if (rc)
        goto fail;
    lr->head = map;
    lr->slots = (reader_slot *)((char *)map + LOCK_HEADER_SIZE);
    lr->map_len = len;
    lr->maxreaders = nslots;

    if (excl) {
        lock_header *h = lr->head;
        rc = lf_mutex_init(lf_rmutex(lr));
        if (!rc)
            rc = lf_mutex_init(lf_wmutex(lr));
        if (rc)
            goto fail;
        h->txnid = 0;
        h->numreaders = 0;
        /* Slots past numreaders are never read, but leave no stale pids behind anyway. */
        memset((void *)lr->slots, 0, (size_t)nslots * sizeof(reader_slot));
        h->magic = MDB_LOCK_MAGIC;
        h->format = MDB_LOCK_FORMAT;
        lr->exclusive = 1;
    } else {
        if (lr->head->magic != MDB_LOCK_MAGIC) {
            rc = MDB_INVALID;
            goto fail;
        }
        if (lr->head->format != MDB_LOCK_FORMAT) {
            rc = MDB_VERSION_MISMATCH;
            goto fail;
        }
    }

    if (maxreaders)
        *maxreaders = nslots;
    if (first_out)
        *first_out = excl;
    *out = lr;
    return 0;

fail:
    lr->exclusive = 0;
    lf_release(lr);
    return rc;
}

int lockfile_share(lock_region *lr, txnid_t last_txnid)
{
    if (!lr || !lr->exclusive)
        return 0;
    lr->head->txnid = last_txnid;
    /* Downgrading our own lock never conflicts, so it does not block. */
    int rc = os_lock(lr->fd, OS_LOCK_SHARED, 0, 0, 1);
    if (rc)
        return rc;
    lr->exclusive = 0;
    return 0;
}

void lockfile_close(lock_region *lr, pid_t pid)
{
    if (!lr)
        return;
    if (lr->head) {
        unsigned n = lr->head->numreaders;
        if (n > lr->maxreaders)
            n = lr->maxreaders;
        for (unsigned i = 0; i < n; i++)
            if (lr->slots[i].pid == (uint32_t)pid)
                lr->slots[i].pid = 0;
    }
    /* Closing the descriptor drops every fcntl lock we hold on the file (byte 0 and the
     * pid byte). */
    lf_release(lr);
}

int lockfile_writer_lock(lock_region *lr, int *owner_died)
{
    return lf_mutex_lock(lf_wmutex(lr), owner_died);
}

void lockfile_writer_unlock(lock_region *lr)
{
    pthread_mutex_unlock(lf_wmutex(lr));
}

int lockfile_table_lock(lock_region *lr, int *owner_died)
{
    return lf_mutex_lock(lf_rmutex(lr), owner_died);
}

void lockfile_table_unlock(lock_region *lr)
{
    pthread_mutex_unlock(lf_rmutex(lr));
}
