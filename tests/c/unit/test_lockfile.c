/*
 * test_lockfile.c -- lock.mdb and the reader table (lockfile.c, readers.c), alone and
 * shared with processes running the REAL LMDB (Debian's liblmdb, through lmdb_helper).
 *
 * Usage: test_lockfile [path-to-lmdb_helper]   (default build/tests/unit/lmdb_helper)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockfile.h"
#include "mdbcore.h"
#include "os.h"
#include "readers.h"
#include "mdbtest.h"

static const char *helper = "build/tests/unit/lmdb_helper";

/* ---- small process utilities ---- */

static char *mkdir_tmp(void)
{
    char *d = strdup("/tmp/mdb-lockXXXXXX");
    if (!mkdtemp(d)) {
        perror("mkdtemp");
        exit(2);
    }
    return d;
}

static char *lockpath(const char *dir)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 512, "%s/lock.mdb", dir);
    return p;
}

/* Remove a directory of mkdir_tmp's and free its name. */
static void rmdir_all(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", dir);
    free(dir);
}

typedef struct child {
    pid_t pid;
    int in;  /* write end: the child's stdin (close = EOF) */
    int out; /* read end: the child's stdout */
} child;

/* Run lmdb_helper CMD DIR [ARG] with pipes on stdin/stdout. */
static child spawn_helper(const char *cmd, const char *dir, const char *arg)
{
    int pin[2], pout[2];
    if (pipe(pin) || pipe(pout)) {
        perror("pipe");
        exit(2);
    }
    child c = {fork(), pin[1], pout[0]};
    if (c.pid == 0) {
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        close(pin[0]);
        close(pin[1]);
        close(pout[0]);
        close(pout[1]);
        execl(helper, helper, cmd, dir, arg, (char *)NULL);
        perror("exec lmdb_helper");
        _exit(127);
    }
    close(pin[0]);
    close(pout[1]);
    return c;
}

/* Read the child's output up to EOF or `max-1` bytes or, with `line`, one line. */
static size_t read_out(int fd, char *buf, size_t max, int line)
{
    size_t n = 0;
    while (n + 1 < max) {
        ssize_t r = read(fd, buf + n, 1);
        if (r <= 0)
            break;
        n++;
        if (line && buf[n - 1] == '\n')
            break;
    }
    buf[n] = 0;
    return n;
}

static int reap(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run a helper to completion, capturing stdout; returns its exit status. */
static int run_helper(const char *cmd, const char *dir, const char *arg, char *out, size_t max)
{
    child c = spawn_helper(cmd, dir, arg);
    close(c.in);
    char tmp[4096];
    read_out(c.out, out ? out : tmp, out ? max : sizeof tmp, 0);
    close(c.out);
    return reap(c.pid);
}

typedef struct strbuf {
    char s[8192];
    size_t n;
} strbuf;

static int collect(const char *msg, void *ctx)
{
    strbuf *b = ctx;
    size_t l = strlen(msg);
    if (b->n + l < sizeof b->s) {
        memcpy(b->s + b->n, msg, l + 1);
        b->n += l;
    }
    return 0;
}

static reader_slot *find_slot(lock_region *lr, pid_t pid)
{
    for (unsigned i = 0; i < lr->head->numreaders && i < lr->maxreaders; i++)
        if (lr->slots[i].pid == (uint32_t)pid)
            return &lr->slots[i];
    return NULL;
}

/* A forked child of our own that runs `fn` and then waits for EOF on its stdin pipe. */
typedef int (*child_fn)(const char *dir, int report_fd);

static child fork_ours(child_fn fn, const char *dir)
{
    int pin[2], pout[2];
    if (pipe(pin) || pipe(pout))
        exit(2);
    child c = {fork(), pin[1], pout[0]};
    if (c.pid == 0) {
        close(pin[1]);
        close(pout[0]);
        int rc = fn(dir, pout[1]);
        char b[8];
        while (read(pin[0], b, sizeof b) > 0)
            ;
        _exit(rc);
    }
    close(pin[0]);
    close(pout[1]);
    return c;
}

static void say(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) < 0)
        _exit(3);
}

/* Does the child's next line of output begin with `want`? */
static int says(child c, const char *want)
{
    char line[128];
    read_out(c.out, line, sizeof line, 1);
    return strncmp(line, want, strlen(want)) == 0;
}

/* SIGKILL the child, reap it and close its pipes. */
static void kill_child(child c)
{
    kill(c.pid, SIGKILL);
    reap(c.pid);
    close(c.in);
    close(c.out);
}

/* Open (or create) DIR's lock file as this process, expecting success. */
static lock_region *open_lock(const char *dir, unsigned *mr, int *first)
{
    lock_region *lr = NULL;
    EXPECT_EQ(lockfile_open(&lr, lockpath(dir), 0644, 0, mr, first), 0);
    return lr;
}

/* Join the lock file another process holds (not as its first opener); NULL if not. */
static lock_region *join_lock(const char *dir)
{
    lock_region *lr = NULL;
    unsigned mr = 0;
    int first;
    if (lockfile_open(&lr, lockpath(dir), 0644, 0, &mr, &first) || first)
        return NULL;
    return lr;
}

/* A test's own lock file: a fresh directory and the lock file opened in it by this
 * process (mr: the reader slots asked for, then those in force; first: whether this
 * process was its first opener).  lr is NULL, and the failure counted, if the open failed. */
typedef struct fresh {
    char *dir;
    lock_region *lr;
    unsigned mr;
    int first;
} fresh;

static fresh open_fresh(unsigned maxreaders)
{
    fresh f = {mkdir_tmp(), NULL, maxreaders, -1};
    f.lr = open_lock(f.dir, &f.mr, &f.first);
    return f;
}

/* Close the lock file and remove its directory. */
static void close_fresh(fresh *f)
{
    lockfile_close(f->lr, getpid());
    rmdir_all(f->dir);
}

/* Our reader list's text, afresh in `b`. */
static void list_into(lock_region *lr, strbuf *b)
{
    b->n = 0;
    b->s[0] = 0;
    readers_list(lr, collect, b);
}

/* Our reader list (left in `ours`) reads as LMDB's own mdb_reader_list of DIR. */
static void expect_list_as_lmdb(lock_region *lr, const char *dir, strbuf *ours)
{
    list_into(lr, ours);
    char theirs[8192];
    EXPECT_EQ(run_helper("list", dir, NULL, theirs, sizeof theirs), 0);
    EXPECT(strcmp(ours->s, theirs) == 0);
    if (strcmp(ours->s, theirs))
        fprintf(stderr, "ours:\n%stheirs:\n%s", ours->s, theirs);
}

/* LMDB's reader check of DIR finds no dead reader. */
static void expect_lmdb_check_clean(const char *dir)
{
    char out[128];
    EXPECT_EQ(run_helper("check", dir, NULL, out, sizeof out), 0);
    EXPECT(strcmp(out, "dead 0\n") == 0);
}

/* The writer mutex is taken (reporting a dead owner or not: `owner_died`) and freed. */
static void expect_writer_lock(lock_region *lr, int owner_died)
{
    int od = -1;
    EXPECT_EQ(lockfile_writer_lock(lr, &od), 0);
    EXPECT_EQ(od, owner_died);
    lockfile_writer_unlock(lr);
}

/* The table mutex is taken with no dead owner, and freed. */
static void expect_table_lock(lock_region *lr)
{
    int od = -1;
    EXPECT_EQ(lockfile_table_lock(lr, &od), 0);
    EXPECT_EQ(od, 0);
    lockfile_table_unlock(lr);
}

/* Our reader check sweeps `swept` dead readers' slots. */
static void expect_swept(lock_region *lr, int swept)
{
    int dead = -1;
    EXPECT_EQ(readers_check(lr, getpid(), &dead), 0);
    EXPECT_EQ(dead, swept);
}

/* ---- tests ---- */

static void t_first_opener(void)
{
    fresh f = open_fresh(126);
    EXPECT(f.lr != NULL);
    if (!f.lr)
        return;
    EXPECT_EQ(f.first, 1);
    EXPECT_EQ(f.mr, 126);
    EXPECT_EQ(f.lr->maxreaders, 126);
    EXPECT_EQ(f.lr->exclusive, 1);
    struct stat st;
    EXPECT_EQ(stat(lockpath(f.dir), &st), 0);
    EXPECT_EQ(st.st_size, 128 + 64 * 126);
    const uint8_t *b = (const uint8_t *)f.lr->head;
    EXPECT_EQ(f.lr->head->magic, 0xBEEFC0DE);
    EXPECT_EQ(f.lr->head->format, 0x00010001);
    EXPECT_EQ(b[8 + 16], 0x90);  /* rmutex kind: robust | process-shared */
    EXPECT_EQ(b[64 + 16], 0x90); /* wmutex kind */
    EXPECT_EQ(f.lr->head->txnid, 0);
    EXPECT_EQ(f.lr->head->numreaders, 0);

    EXPECT_EQ(lockfile_share(f.lr, 7), 0);
    EXPECT_EQ(f.lr->exclusive, 0);
    EXPECT_EQ(f.lr->head->txnid, 7);

    /* A second process joins: it adopts the table size and sees the txnid. */
    pid_t p = fork();
    if (p == 0) {
        lock_region *l2 = NULL;
        unsigned m2 = 10;
        int f2 = -1;
        int rc = lockfile_open(&l2, lockpath(f.dir), 0644, 0, &m2, &f2);
        int ok = rc == 0 && f2 == 0 && m2 == 126 && l2->head->txnid == 7 && !l2->exclusive;
        lockfile_close(l2, getpid());
        _exit(ok ? 0 : 1);
    }
    EXPECT_EQ(reap(p), 0);

    /* The writer and table mutexes work and report no dead owner. */
    expect_writer_lock(f.lr, 0);
    expect_table_lock(f.lr);
    lockfile_close(f.lr, getpid());

    /* Alone again: the next opener is first and re-initialises. */
    f.mr = 50;
    f.lr = open_lock(f.dir, &f.mr, &f.first);
    EXPECT_EQ(f.first, 1);
    EXPECT_EQ(f.mr, 126); /* the file is never shrunk */
    if (f.lr) {
        EXPECT_EQ(f.lr->head->txnid, 0);
        lockfile_close(f.lr, getpid());
    }
    rmdir_all(f.dir);
}

/* Our fresh head is byte-identical to the one real LMDB writes (except txnid/numreaders). */
static void t_layout_matches_lmdb(void)
{
    char *d1 = mkdir_tmp(), *d2 = mkdir_tmp();
    /* A fresh environment opened by LMDB without any txn: its mutexes are as initialised. */
    EXPECT_EQ(run_helper("list", d1, NULL, NULL, 0), 0);
    unsigned mr = 126;
    int first;
    lock_region *lr = open_lock(d2, &mr, &first);
    EXPECT_EQ(lockfile_share(lr, 0), 0);
    lockfile_close(lr, getpid());
    uint8_t a[8192], b[8192];
    int fa = open(lockpath(d1), O_RDONLY), fb = open(lockpath(d2), O_RDONLY);
    EXPECT_EQ(read(fa, a, sizeof a), 8192);
    EXPECT_EQ(read(fb, b, sizeof b), 8192);
    close(fa);
    close(fb);
    EXPECT(memcmp(a, b, 48) == 0);          /* magic, format, rmutex */
    EXPECT(memcmp(a + 64, b + 64, 64) == 0); /* wmutex and padding */
    rmdir_all(d1);
    rmdir_all(d2);
}

/* A real LMDB reader is visible to us; we can write while it reads; its slot is swept
 * after it is killed. */
static void t_join_lmdb_reader(void)
{
    fresh f = {mkdir_tmp(), NULL, 0, -1}; /* opened once LMDB has a reader in it */
    EXPECT_EQ(run_helper("put", f.dir, "5", NULL, 0), 0);
    child c = spawn_helper("reader", f.dir, NULL);
    EXPECT(says(c, "ready 1"));

    f.lr = open_lock(f.dir, &f.mr, &f.first);
    if (!f.lr)
        return;
    EXPECT_EQ(f.first, 0);
    EXPECT_EQ(f.mr, 126);
    EXPECT_EQ(f.lr->head->txnid, 1);
    reader_slot *s = find_slot(f.lr, c.pid);
    EXPECT(s != NULL);
    if (s)
        EXPECT_EQ(s->txnid, 1);
    EXPECT_EQ(readers_oldest(f.lr, 100), 1);

    /* Same list text as LMDB's own mdb_reader_list. */
    strbuf ours;
    expect_list_as_lmdb(f.lr, f.dir, &ours);
    char expect[64];
    snprintf(expect, sizeof expect, "%10d ", (int)c.pid);
    EXPECT(strstr(ours.s, "    pid     thread     txnid\n") == ours.s);
    EXPECT(strstr(ours.s, expect) != NULL);

    /* The reader does not block the writer mutex. */
    expect_writer_lock(f.lr, 0);
    expect_swept(f.lr, 0);

    kill_child(c);
    EXPECT(find_slot(f.lr, c.pid) != NULL); /* still there: nobody swept yet */
    expect_swept(f.lr, 1);
    EXPECT(find_slot(f.lr, c.pid) == NULL);
    EXPECT_EQ(readers_oldest(f.lr, 100), 100);
    /* LMDB agrees there is nothing left to sweep. */
    expect_lmdb_check_clean(f.dir);
    close_fresh(&f);
}

/* Real LMDB joins a lock file WE created, uses our mutexes, sees our reader, and a killed
 * LMDB writer leaves the writer mutex for us to recover. */
static void t_lmdb_joins_ours(void)
{
    fresh f = open_fresh(126);
    if (!f.lr)
        return;
    EXPECT_EQ(f.first, 1);
    EXPECT_EQ(lockfile_share(f.lr, 0), 0);

    EXPECT_EQ(run_helper("put", f.dir, "3", NULL, 0), 0);
    EXPECT_EQ(f.lr->head->txnid, 1); /* LMDB published its commit in our table */

    EXPECT_EQ(readers_pidlock(f.lr, getpid()), 0);
    reader_slot *s = NULL;
    EXPECT_EQ(readers_acquire(f.lr, getpid(), pthread_self(), &s), 0);
    EXPECT(s != NULL);
    if (!s)
        return;
    EXPECT_EQ(s->txnid, (txnid_t)-1);
    EXPECT_EQ(s->pid, getpid());

    /* Idle slot: '-' in both lists. */
    strbuf ours;
    expect_list_as_lmdb(f.lr, f.dir, &ours);
    char expect[96];
    snprintf(expect, sizeof expect, "    pid     thread     txnid\n%10d %zx -\n", (int)getpid(),
             (size_t)pthread_self());
    EXPECT(strcmp(ours.s, expect) == 0);

    s->txnid = 1;
    expect_list_as_lmdb(f.lr, f.dir, &ours);

    /* LMDB's reader check sees our pid lock and leaves our slot alone. */
    expect_lmdb_check_clean(f.dir);
    EXPECT(find_slot(f.lr, getpid()) == s);
    readers_release(s);
    EXPECT(find_slot(f.lr, getpid()) == NULL);

    /* An LMDB writer dies holding the writer mutex. */
    child w = spawn_helper("writer", f.dir, NULL);
    EXPECT(says(w, "ready 2"));
    kill_child(w);
    expect_writer_lock(f.lr, 1);
    expect_writer_lock(f.lr, 0);
    /* And LMDB can write again afterwards. */
    EXPECT_EQ(run_helper("put", f.dir, "4", NULL, 0), 0);
    EXPECT_EQ(f.lr->head->txnid, 2);

    /* While we hold the writer mutex, an LMDB writer waits for it. */
    int od = -1;
    EXPECT_EQ(lockfile_writer_lock(f.lr, &od), 0);
    child p = spawn_helper("put", f.dir, "5");
    close(p.in);
    usleep(300 * 1000);
    int st = 0;
    EXPECT_EQ(waitpid(p.pid, &st, WNOHANG), 0); /* still blocked */
    EXPECT_EQ(f.lr->head->txnid, 2);
    lockfile_writer_unlock(f.lr);
    EXPECT_EQ(reap(p.pid), 0);
    close(p.out);
    EXPECT_EQ(f.lr->head->txnid, 3);

    close_fresh(&f);
}

static int child_reader(const char *dir, int report)
{
    lock_region *lr = join_lock(dir);
    reader_slot *s;
    if (!lr || readers_pidlock(lr, getpid()) ||
        readers_acquire(lr, getpid(), pthread_self(), &s))
        return 1;
    s->txnid = 3;
    say(report, "ready\n");
    return 0;
}

static int child_writer(const char *dir, int report)
{
    lock_region *lr = join_lock(dir);
    int od;
    if (!lr || lockfile_writer_lock(lr, &od))
        return 1;
    say(report, "ready\n");
    return 0;
}

static int child_table_holder(const char *dir, int report)
{
    lock_region *lr = join_lock(dir);
    int od;
    if (!lr || readers_pidlock(lr, getpid()))
        return 1;
    reader_slot *s;
    if (readers_acquire(lr, getpid(), pthread_self(), &s))
        return 1;
    s->txnid = 9;
    if (lockfile_table_lock(lr, &od)) /* dies holding the reader-table mutex */
        return 1;
    say(report, "ready\n");
    return 0;
}

/* Our own processes: a killed reader is swept, a killed writer is detected. */
static void t_dead_processes_ours(void)
{
    fresh f = open_fresh(126);
    if (!f.lr)
        return;
    EXPECT_EQ(lockfile_share(f.lr, 3), 0);
    EXPECT_EQ(readers_pidlock(f.lr, getpid()), 0);

    child r = fork_ours(child_reader, f.dir);
    EXPECT(says(r, "ready\n"));
    EXPECT(find_slot(f.lr, r.pid) != NULL);
    EXPECT_EQ(readers_oldest(f.lr, 50), 3);
    expect_swept(f.lr, 0);
    kill_child(r);
    expect_swept(f.lr, 1);
    EXPECT(find_slot(f.lr, r.pid) == NULL);

    child w = fork_ours(child_writer, f.dir);
    EXPECT(says(w, "ready\n"));
    kill_child(w);
    expect_writer_lock(f.lr, 1);

    /* A process dies holding the table mutex: the next claimer recovers it and sweeps. */
    child t = fork_ours(child_table_holder, f.dir);
    EXPECT(says(t, "ready\n"));
    EXPECT(find_slot(f.lr, t.pid) != NULL);
    kill_child(t);
    reader_slot *s = NULL;
    EXPECT_EQ(readers_acquire(f.lr, getpid(), pthread_self(), &s), 0);
    EXPECT(find_slot(f.lr, t.pid) == NULL);
    readers_release(s);
    expect_table_lock(f.lr);

    close_fresh(&f);
}

static void t_readers_full(void)
{
    struct stat st;
    fresh f = open_fresh(2);
    if (!f.lr)
        return;
    EXPECT_EQ(f.mr, 2);
    stat(lockpath(f.dir), &st);
    EXPECT_EQ(st.st_size, 128 + 2 * 64);
    reader_slot *a, *b, *c;
    EXPECT_EQ(readers_acquire(f.lr, getpid(), 1, &a), 0);
    EXPECT_EQ(readers_acquire(f.lr, getpid(), 2, &b), 0);
    EXPECT(a != b);
    EXPECT_EQ(readers_acquire(f.lr, getpid(), 3, &c), MDB_READERS_FULL);
    EXPECT_EQ(f.lr->head->numreaders, 2);
    a->txnid = 5;
    b->txnid = 4;
    EXPECT_EQ(readers_oldest(f.lr, 10), 4);
    readers_release(b);
    EXPECT_EQ(readers_oldest(f.lr, 10), 5);
    EXPECT_EQ(readers_acquire(f.lr, getpid(), 3, &c), 0);
    EXPECT(c == b);
    EXPECT_EQ(f.lr->head->numreaders, 2);
    /* Closing clears every slot of this pid. */
    lockfile_close(f.lr, getpid());
    f.mr = 2;
    pid_t p = fork(); /* hold the file open elsewhere so we join rather than re-init */
    if (p == 0) {
        lock_region *l2;
        unsigned m2 = 0;
        int f2;
        int rc = lockfile_open(&l2, lockpath(f.dir), 0644, 0, &m2, &f2);
        _exit(rc == 0 && f2 == 1 && l2->slots[0].pid == 0 && l2->slots[1].pid == 0 ? 0 : 1);
    }
    EXPECT_EQ(reap(p), 0);
    rmdir_all(f.dir);
}

static int child_spoiler(const char *dir, int report)
{
    lock_region *lr = NULL;
    unsigned mr = 126;
    int first;
    if (lockfile_open(&lr, lockpath(dir), 0644, 0, &mr, &first) || !first)
        return 1;
    lockfile_share(lr, 0);
    lr->head->format = 0x00010002; /* what a different lock version would write */
    say(report, "format\n");
    /* wait for the parent's go-ahead (one byte on stdin is read by fork_ours's loop) */
    lr->head->magic = 0xBEEFC0DE;
    return 0;
}

static void t_bad_magic_or_format(void)
{
    char *dir = mkdir_tmp();
    child c = fork_ours(child_spoiler, dir);
    EXPECT(says(c, "format\n"));
    lock_region *lr = NULL;
    unsigned mr = 0;
    int first;
    EXPECT_EQ(lockfile_open(&lr, lockpath(dir), 0644, 0, &mr, &first), MDB_VERSION_MISMATCH);
    EXPECT(lr == NULL);
    /* Now spoil the magic directly in the file (the child still holds its shared lock). */
    int fd = open(lockpath(dir), O_RDWR);
    uint32_t bad[2] = {0x12345678, 0x00010001};
    EXPECT_EQ(pwrite(fd, bad, 8, 0), 8);
    close(fd);
    EXPECT_EQ(lockfile_open(&lr, lockpath(dir), 0644, 0, &mr, &first), MDB_INVALID);
    close(c.in);
    reap(c.pid);
    close(c.out);
    rmdir_all(dir);
}

/* Several processes claim and release slots and take the writer mutex concurrently:
 * slots are never shared, the high-water mark stays at the number of processes, and the
 * writer mutex excludes (a shared counter incremented non-atomically under it is exact). */
static void t_concurrency(void)
{
    enum { PROCS = 4, ITERS = 1500 };
    fresh f = open_fresh(126);
    if (!f.lr)
        return;
    EXPECT_EQ(lockfile_share(f.lr, 1), 0);
    volatile long *counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    EXPECT(counter != MAP_FAILED);
    *counter = 0;
    pid_t kids[PROCS];
    for (int k = 0; k < PROCS; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            lock_region *l2 = NULL;
            unsigned m2 = 0;
            int f2, bad = 0;
            if (lockfile_open(&l2, lockpath(f.dir), 0644, 0, &m2, &f2) ||
                readers_pidlock(l2, getpid()))
                _exit(2);
            for (int i = 0; i < ITERS; i++) {
                reader_slot *s;
                if (readers_acquire(l2, getpid(), pthread_self(), &s))
                    _exit(3);
                s->txnid = (txnid_t)i;
                sched_yield();
                if (s->pid != (uint32_t)getpid() || s->txnid != (txnid_t)i)
                    bad = 1;
                readers_release(s);
                if (i % 10 == 0) {
                    int od;
                    if (lockfile_writer_lock(l2, &od) || od)
                        _exit(4);
                    long v = *counter;
                    sched_yield();
                    *counter = v + 1;
                    lockfile_writer_unlock(l2);
                }
            }
            lockfile_close(l2, getpid());
            _exit(bad);
        }
    }
    for (int k = 0; k < PROCS; k++)
        EXPECT_EQ(reap(kids[k]), 0);
    EXPECT_EQ(*counter, PROCS * (ITERS / 10));
    EXPECT(f.lr->head->numreaders <= PROCS);
    EXPECT_EQ(readers_oldest(f.lr, 99999), 99999);
    munmap((void *)counter, 4096);
    close_fresh(&f);
}

/* A read-only env on a read-only filesystem runs without locks; a writable one fails.
 * (EROFS is injected through the fault seam.) */
static void t_erofs(void)
{
    char *dir = mkdir_tmp();
    lock_region *lr = (lock_region *)1;
    unsigned mr = 126;
    int first = -1;
    EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_OPEN, 1, EROFS), 0);
    EXPECT_EQ(lockfile_open(&lr, lockpath(dir), 0644, 1, &mr, &first), 0);
    EXPECT(lr == NULL);
    EXPECT_EQ(first, 0);
    EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_OPEN, 1, EROFS), 0);
    EXPECT_EQ(lockfile_open(&lr, lockpath(dir), 0644, 0, &mr, &first), EROFS);
    EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_OPEN, 1, EACCES), 0);
    EXPECT_EQ(lockfile_open(&lr, lockpath(dir), 0644, 1, &mr, &first), EACCES);
    /* a failing map of the lock file is reported and leaves nothing behind */
    EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_MMAP, 1, ENOMEM), 0);
    EXPECT_EQ(lockfile_open(&lr, lockpath(dir), 0644, 0, &mr, &first), ENOMEM);
    mdbcore_fault_reset();
    EXPECT_EQ(lockfile_open(&lr, lockpath(dir), 0644, 0, &mr, &first), 0);
    EXPECT_EQ(first, 1); /* the failed attempt kept no lock */
    lockfile_close(lr, getpid());
    /* without a lock region the reader functions are harmless */
    EXPECT_EQ(readers_pidlock(NULL, getpid()), 0);
    EXPECT_EQ(readers_oldest(NULL, 42), 42);
    expect_swept(NULL, 0);
    rmdir_all(dir);
}

static void t_list_text(void)
{
    strbuf b;
    list_into(NULL, &b);
    EXPECT(strcmp(b.s, "(no reader locks)\n") == 0);
    fresh f = open_fresh(4);
    if (!f.lr)
        return;
    list_into(f.lr, &b);
    EXPECT(strcmp(b.s, "(no active readers)\n") == 0);
    reader_slot *s;
    EXPECT_EQ(readers_acquire(f.lr, 4242, (pthread_t)0xabc, &s), 0);
    s->txnid = 17;
    list_into(f.lr, &b);
    EXPECT(strcmp(b.s, "    pid     thread     txnid\n      4242 abc 17\n") == 0);
    lockfile_close(f.lr, 4242);
    rmdir_all(f.dir);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        helper = argv[1];
    if (access(helper, X_OK) != 0) {
        fprintf(stderr, "test_lockfile: helper %s not found (build it with -llmdb)\n", helper);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    TEST_RUN(t_first_opener);
    TEST_RUN(t_layout_matches_lmdb);
    TEST_RUN(t_join_lmdb_reader);
    TEST_RUN(t_lmdb_joins_ours);
    TEST_RUN(t_dead_processes_ours);
    TEST_RUN(t_readers_full);
    TEST_RUN(t_bad_magic_or_format);
    TEST_RUN(t_concurrency);
    TEST_RUN(t_erofs);
    TEST_RUN(t_list_text);
    TEST_DONE();
}
