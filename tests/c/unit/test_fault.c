/*
 * test_fault.c -- the OS seam: os_posix.c's contract and os_fault.c's fault injection,
 * write/sync log and crash images.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mdbcore.h"
#include "os.h"
#include "mdbtest.h"

static char path[256];

static int open_tmp(void)
{
    strcpy(path, "/tmp/mdb-faultXXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    return fd;
}

static void t_posix_basics(void)
{
    int fd = open_tmp();
    close(fd);
    EXPECT(os_current == &os_posix_ops);
    EXPECT_EQ(os_open_file(path, OS_OPEN_RDWR, 0, &fd), 0);
    EXPECT(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    char buf[10000];
    memset(buf, 'x', sizeof buf);
    EXPECT_EQ(os_current->pwrite(fd, buf, sizeof buf, 100), 0);
    off_t sz = 0;
    EXPECT_EQ(os_current->fsize(fd, &sz), 0);
    EXPECT_EQ(sz, 10100);
    size_t got = 0;
    char rd[20000];
    EXPECT_EQ(os_current->pread(fd, rd, sizeof rd, 0, &got), 0);
    EXPECT_EQ(got, 10100); /* short read at EOF is not an error */
    struct iovec iov[3] = {{buf, 10}, {buf, 4096}, {buf, 1}};
    EXPECT_EQ(os_current->pwritev(fd, iov, 3, 20000), 0);
    EXPECT_EQ(os_current->fsize(fd, &sz), 0);
    EXPECT_EQ(sz, 20000 + 4107);
    EXPECT_EQ(os_current->fdatasync(fd), 0);
    EXPECT_EQ(os_current->fsync(fd), 0);
    EXPECT_EQ(os_current->ftruncate(fd, 8192), 0);
    void *m = NULL;
    EXPECT_EQ(os_map_file(fd, 8192, 0, 1, NULL, &m), 0);
    EXPECT(m != NULL);
    if (m) {
        EXPECT_EQ(((char *)m)[100], 'x');
        EXPECT_EQ(os_current->msync(m, 8192, MS_SYNC), 0);
        EXPECT_EQ(os_current->munmap(m, 8192), 0);
    }
    EXPECT_EQ(os_open_file("/nonexistent/dir/x", OS_OPEN_RDWR, 0, &fd), ENOENT);
    EXPECT_EQ(os_current->pwrite(-1, buf, 1, 0), EBADF);
    EXPECT(os_page_size() >= 4096);
    /* byte-range locks: our own locks never conflict with us */
    EXPECT_EQ(os_lock(fd, OS_LOCK_EXCL, 0, 0, 1), 0);
    int locked = -1;
    EXPECT_EQ(os_fcntl_getlk_pid(fd, 0, 1, &locked), 0);
    EXPECT_EQ(locked, 0);
    uint64_t dev = 0, ino = 0, d2 = 0, i2 = 0;
    int ds = -1;
    EXPECT_EQ(os_file_identity(fd, &dev, &ino, &ds), 0);
    EXPECT_EQ(ds, 0);
    EXPECT_EQ(mdbcore_fault_file_id(path, &d2, &i2), 0);
    EXPECT(dev == d2 && ino == i2);
    os_current->close(fd);
    EXPECT_EQ(os_open_file(path, OS_OPEN_RDWR | OS_OPEN_DSYNC, 0, &fd), 0);
    EXPECT_EQ(os_file_identity(fd, NULL, NULL, &ds), 0);
    EXPECT_EQ(ds, 1);
    os_current->close(fd);
    unlink(path);
}

static void t_fail_nth(void)
{
    int fd = open_tmp();
    char b[64] = {0};
    EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_PWRITE, 2, EIO), 0);
    EXPECT(os_current != &os_posix_ops);
    EXPECT_EQ(os_current->pwrite(fd, b, 8, 0), 0);
    EXPECT_EQ(os_current->pwrite(fd, b, 8, 8), EIO);
    EXPECT_EQ(os_current->pwrite(fd, b, 8, 16), 0);
    EXPECT_EQ(mdbcore_fault_calls(MDBCORE_FAULT_PWRITE), 3);
    EXPECT_EQ(mdbcore_fault_injected(), 1);
    off_t sz;
    EXPECT_EQ(os_current->fsize(fd, &sz), 0);
    EXPECT_EQ(sz, 24); /* the failed write never reached the file... */
    /* group kinds and sticky failures */
    EXPECT_EQ(mdbcore_fault_fail_from(MDBCORE_FAULT_SYNC, 2, ENOSPC), 0);
    EXPECT_EQ(os_current->fdatasync(fd), 0);
    EXPECT_EQ(os_current->fsync(fd), ENOSPC);
    EXPECT_EQ(os_current->fdatasync(fd), ENOSPC);
    EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_WRITE, 1, EDQUOT), 0);
    struct iovec iov = {b, 4};
    EXPECT_EQ(os_current->pwritev(fd, &iov, 1, 0), EDQUOT);
    EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_MMAP, 1, ENOMEM), 0);
    void *m;
    EXPECT_EQ(os_map_file(fd, 24, 0, 0, NULL, &m), ENOMEM);
    EXPECT_EQ(mdbcore_fault_fail_nth(99, 1, EIO), EINVAL);
    EXPECT_EQ(mdbcore_fault_fail_nth(MDBCORE_FAULT_OPEN, 0, EIO), EINVAL);
    mdbcore_fault_reset();
    EXPECT(os_current == &os_posix_ops);
    EXPECT_EQ(os_current->fsync(fd), 0);
    close(fd);
    unlink(path);
}

static int file_byte(int fd, off_t off)
{
    unsigned char c = 0;
    if (pread(fd, &c, 1, off) != 1)
        return -1;
    return c;
}

static void t_record_and_crash_image(void)
{
    enum { P = 4096 };
    int fd = open_tmp();
    static char pa[P], pb[2 * P], pc[P];
    memset(pa, 'a', P);
    memset(pb, 'b', 2 * P);
    memset(pc, 'c', P);
    mdbcore_fault_record_start();
    int dfd;
    EXPECT_EQ(os_open_file(path, OS_OPEN_RDWR | OS_OPEN_DSYNC, 0, &dfd), 0);
    EXPECT_EQ(os_current->pwrite(fd, pa, P, 0), 0);      /* 0: durable after the sync */
    EXPECT_EQ(os_current->fdatasync(fd), 0);             /* 1 */
    struct iovec iov[2] = {{pb, P}, {pb + P, P}};
    EXPECT_EQ(os_current->pwritev(fd, iov, 2, P), 0);    /* 2: two pages, unsynced */
    EXPECT_EQ(os_current->pwrite(dfd, pc, P, 3 * P), 0); /* 3: O_DSYNC, durable */
    EXPECT_EQ(os_current->pwrite(fd, pc, 10, 0), 0);     /* 4: unsynced overwrite of page 0 */
    mdbcore_fault_record_stop();
    EXPECT_EQ(os_current->pwrite(fd, pc, 10, 100), 0);   /* not recorded */
    EXPECT_EQ(mdbcore_fault_log_count(), 5);
    mdbcore_fault_entry e;
    EXPECT_EQ(mdbcore_fault_log_entry(2, &e), 0);
    EXPECT_EQ(e.kind, MDBCORE_FAULT_PWRITEV);
    EXPECT_EQ(e.offset, P);
    EXPECT_EQ(e.len, 2 * P);
    EXPECT(e.data && ((const char *)e.data)[P] == 'b');
    EXPECT_EQ(mdbcore_fault_log_entry(3, &e), 0);
    EXPECT_EQ(e.dsync, 1);
    EXPECT_EQ(mdbcore_fault_log_entry(1, &e), 0);
    EXPECT_EQ(e.kind, MDBCORE_FAULT_FDATASYNC);
    EXPECT_EQ(mdbcore_fault_log_entry(5, &e), ERANGE);

    uint64_t dev, ino;
    EXPECT_EQ(mdbcore_fault_file_id(path, &dev, &ino), 0);
    char img[64];
    strcpy(img, "/tmp/mdb-imgXXXXXX");
    int ifd = mkstemp(img); /* the file was empty when recording started */
    size_t kept, dropped;
    EXPECT_EQ(mdbcore_fault_crash_image(ifd, dev, ino, 100, MDBCORE_CRASH_DROP_UNSYNCED, 1, P,
                                       &kept, &dropped), 0);
    EXPECT_EQ(kept, 0);
    EXPECT_EQ(dropped, 2);
    EXPECT_EQ(file_byte(ifd, 0), 'a');
    EXPECT_EQ(file_byte(ifd, P), 0);     /* hole: the unsynced pwritev is lost */
    EXPECT_EQ(file_byte(ifd, 3 * P), 'c'); /* the O_DSYNC write survives */
    EXPECT_EQ(ftruncate(ifd, 0), 0);
    EXPECT_EQ(mdbcore_fault_crash_image(ifd, dev, ino, 100, MDBCORE_CRASH_KEEP_ALL, 1, P, &kept,
                                       &dropped), 0);
    EXPECT_EQ(kept, 2);
    EXPECT_EQ(file_byte(ifd, 0), 'c');
    EXPECT_EQ(file_byte(ifd, 10), 'a');
    EXPECT_EQ(file_byte(ifd, P), 'b');
    EXPECT_EQ(file_byte(ifd, 2 * P), 'b');
    /* Torn: over many seeds both halves of the two-page write are seen kept and lost
     * independently. */
    int seen[2][2] = {{0, 0}, {0, 0}};
    for (uint64_t seed = 1; seed < 40; seed++) {
        EXPECT_EQ(ftruncate(ifd, 0), 0);
        EXPECT_EQ(mdbcore_fault_crash_image(ifd, dev, ino, 100, MDBCORE_CRASH_TORN, seed, P,
                                           NULL, NULL), 0);
        seen[0][file_byte(ifd, P) == 'b']++;
        seen[1][file_byte(ifd, 2 * P) == 'b'] |= 1 << (file_byte(ifd, P) == 'b');
        EXPECT_EQ(file_byte(ifd, 3 * P), 'c');
    }
    EXPECT(seen[0][0] && seen[0][1]);
    EXPECT(seen[1][1] == 3); /* page 2 kept both with and without page 1 */
    /* A window that ends before the sync: the first write is unsynced too. */
    EXPECT_EQ(ftruncate(ifd, 0), 0);
    EXPECT_EQ(mdbcore_fault_crash_image(ifd, dev, ino, 1, MDBCORE_CRASH_DROP_UNSYNCED, 1, P,
                                       &kept, &dropped), 0);
    EXPECT_EQ(dropped, 1);
    EXPECT_EQ(file_byte(ifd, 0), -1);
    close(ifd);
    unlink(img);
    mdbcore_fault_reset();
    EXPECT_EQ(mdbcore_fault_log_count(), 0);
    os_posix_ops.close(dfd);
    close(fd);
    unlink(path);
}

/* Kill rules: the child dies at the chosen call, before or after it reached the file. */
static void t_kill_nth(void)
{
    for (int after = 0; after <= 1; after++) {
        int fd = open_tmp();
        pid_t p = fork();
        if (p == 0) {
            char b[8] = "abcdefg";
            mdbcore_fault_kill_nth(MDBCORE_FAULT_PWRITE, 2, after);
            os_current->pwrite(fd, b, 4, 0);
            os_current->pwrite(fd, b + 4, 4, 4); /* dies here */
            os_current->pwrite(fd, b, 4, 8);
            _exit(0);
        }
        int st = 0;
        waitpid(p, &st, 0);
        EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        struct stat sb;
        fstat(fd, &sb);
        EXPECT_EQ(sb.st_size, after ? 8 : 4);
        close(fd);
        unlink(path);
    }
}

static void t_arm_spec(void)
{
    int fd = open_tmp();
    char b[4] = {0};
    EXPECT_EQ(mdbcore_fault_arm_spec("fdatasync:2:EIO, write:1+:28"), 0);
    EXPECT_EQ(os_current->fdatasync(fd), 0);
    EXPECT_EQ(os_current->fdatasync(fd), EIO);
    EXPECT_EQ(os_current->pwrite(fd, b, 1, 0), ENOSPC);
    EXPECT_EQ(os_current->pwrite(fd, b, 1, 0), ENOSPC);
    mdbcore_fault_reset();
    EXPECT_EQ(mdbcore_fault_arm_spec("bogus:1:EIO"), EINVAL);
    EXPECT_EQ(mdbcore_fault_arm_spec("sync:x:EIO"), EINVAL);
    EXPECT_EQ(mdbcore_fault_arm_spec("sync:1"), EINVAL);
    EXPECT_EQ(mdbcore_fault_arm_spec("sync:1:ENOTANERRNO"), EINVAL);
    EXPECT_EQ(mdbcore_fault_arm_spec("msync:1:kill"), 0);
    mdbcore_fault_reset();
    EXPECT(os_current == &os_posix_ops);
    /* The environment variable arms the seam when the program starts. */
    pid_t p = fork();
    if (p == 0) {
        setenv("MDBCORE_FAULT", "pwrite:1:ENOSPC", 1);
        execl("/proc/self/exe", "test_fault", "--env-child", path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(p, &st, 0);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(fd);
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--env-child")) {
        int fd = open(argv[2], O_RDWR);
        char b[4] = {0};
        int rc = os_current->pwrite(fd, b, 1, 0);
        int rc2 = os_current->pwrite(fd, b, 1, 0);
        return rc == ENOSPC && rc2 == 0 ? 0 : 1;
    }
    TEST_RUN(t_posix_basics);
    TEST_RUN(t_fail_nth);
    TEST_RUN(t_record_and_crash_image);
    TEST_RUN(t_kill_nth);
    TEST_RUN(t_arm_spec);
    TEST_DONE();
}
