/*
 * mdbtest.h -- the assertion macros of every C test under tests/c (one header for all).
 *
 * Two families.  Fatal ones end the program at the first failure (exit status
 * MDBTEST_FATAL_EXIT, 1 unless the test defines it before including this header); use
 * them where nothing after the failure would mean anything:
 *   CHECK(call)             the call must return 0 (MDB_SUCCESS); else its mdb_strerror
 *   CHECK_RC(call, rc)      the call must return exactly rc
 *   REQUIRE(cond)           cond must hold
 *   FAIL(fmt, ...)          an unconditional failure with a printf-style message
 * Counted ones print the failure, count it and go on, so that one run reports every
 * broken check; the program ends with TEST_DONE() (or returns TEST_STATUS()):
 *   EXPECT(cond)            cond must hold
 *   EXPECT_EQ(a, b)         two integers must be equal (both printed on failure)
 *   EXPECT_MSG(cond, fmt, ...)  cond must hold; the message says what was seen
 *   EXPECT_RC(call, rc)     the call must return exactly rc
 *   EXPECT_OK(call)         the call must return 0
 *   MUST(call)              the call must return 0, else the failure is counted and the
 *                           current (void) function returns: the steps after it depend on it
 *   TEST_RUN(fn)            run a void test function; prints its name with ok or FAILED
 *   TEST_DONE()             print "N checks, M failed" and return the exit status from main
 * And helpers:
 *   PATHF(buf, fmt, ...)    snprintf into a char array; a truncated result stops the program
 *   mdbtest_xorshift(&s)    the next number of Marsaglia's xorshift64 stream in s (the tests'
 *                           deterministic generator; MDBTEST_XORSHIFT_SEED is its usual seed)
 *   mdbtest_unlink_env(dir) remove dir's data.mdb and lock.mdb (a missing one is no error)
 *   mdbtest_env(mapsize, maxdbs)  a created, not yet opened environment with that map size
 *                           and number of named DBs (0: the default); fatal on an error
 *   mdbtest_open_dir(dir, mapsize, maxdbs, flags)  mdbtest_env opened in dir (created if
 *                           missing) with MDB_NOSYNC | flags; fatal on an error
 *   mdbtest_begin_main(env, &txn)  a write txn begun on env; returns its main DB's handle
 *                           (fatal on an error)
 *   mdbtest_read_main(env, &txn)  the same for a read-only txn
 *
 * Every failure names its file and line (counted ones also the function).  Failures go
 * to stderr, which is unbuffered, so a forked child never repeats its parent's.
 * The macros that print an error code call mdb_strerror, and mdbtest_env opens through
 * the API: this header includes <lmdb.h>, found on the include path the test is built
 * with (ours with -Isrc/mdbcore, Debian's for the harness programs), as the test's own.
 */
#ifndef MDBTEST_H
#define MDBTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

#ifndef MDBTEST_FATAL_EXIT
#define MDBTEST_FATAL_EXIT 1
#endif

/* ---- fatal ---- */

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        if (rc_) {                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    mdb_strerror(rc_));                                                    \
            exit(MDBTEST_FATAL_EXIT);                                                      \
        }                                                                                  \
    } while (0)

#define CHECK_RC(call, want)                                                               \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        if (rc_ != (want)) {                                                               \
            fprintf(stderr, "%s:%d: %s: got %d (%s), want %s\n", __FILE__, __LINE__,       \
                    #call, rc_, mdb_strerror(rc_), #want);                                 \
            exit(MDBTEST_FATAL_EXIT);                                                      \
        }                                                                                  \
    } while (0)

#define REQUIRE(cond)                                                                      \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);            \
            exit(MDBTEST_FATAL_EXIT);                                                      \
        }                                                                                  \
    } while (0)

#define FAIL(...)                                                                          \
    do {                                                                                   \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                    \
        fprintf(stderr, __VA_ARGS__);                                                      \
        fprintf(stderr, "\n");                                                             \
        exit(MDBTEST_FATAL_EXIT);                                                          \
    } while (0)

/* ---- counted ---- */

__attribute__((unused)) static int mdbtest_checks, mdbtest_failures;

/* The start of a counted failure's line: "FAIL file:line in function: " */
#define MDBTEST_FAILED_()                                                                  \
    (mdbtest_failures++, fprintf(stderr, "FAIL %s:%d in %s: ", __FILE__, __LINE__, __func__))

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        mdbtest_checks++;                                                                  \
        if (!(cond)) {                                                                     \
            MDBTEST_FAILED_();                                                             \
            fprintf(stderr, "%s\n", #cond);                                                \
        }                                                                                  \
    } while (0)

#define EXPECT_EQ(a, b)                                                                    \
    do {                                                                                   \
        long long a_ = (long long)(a), b_ = (long long)(b);                                \
        mdbtest_checks++;                                                                  \
        if (a_ != b_) {                                                                    \
            MDBTEST_FAILED_();                                                             \
            fprintf(stderr, "%s == %lld, %s == %lld\n", #a, a_, #b, b_);                   \
        }                                                                                  \
    } while (0)

#define EXPECT_MSG(cond, ...)                                                              \
    do {                                                                                   \
        mdbtest_checks++;                                                                  \
        if (!(cond)) {                                                                     \
            MDBTEST_FAILED_();                                                             \
            fprintf(stderr, "%s: ", #cond);                                                \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
        }                                                                                  \
    } while (0)

#define EXPECT_RC(call, want)                                                              \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        mdbtest_checks++;                                                                  \
        if (rc_ != (want)) {                                                               \
            MDBTEST_FAILED_();                                                             \
            fprintf(stderr, "%s returned %d (%s), want %d\n", #call, rc_,                  \
                    mdb_strerror(rc_), (want));                                            \
        }                                                                                  \
    } while (0)

#define EXPECT_OK(call) EXPECT_RC(call, 0)

#define MUST(call)                                                                         \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        mdbtest_checks++;                                                                  \
        if (rc_ != 0) {                                                                    \
            MDBTEST_FAILED_();                                                             \
            fprintf(stderr, "%s: %s (stopped)\n", #call, mdb_strerror(rc_));               \
            return;                                                                        \
        }                                                                                  \
    } while (0)

#define TEST_RUN(fn)                                                                       \
    do {                                                                                   \
        int before_ = mdbtest_failures;                                                    \
        fn();                                                                              \
        printf("%-44s %s\n", #fn, mdbtest_failures == before_ ? "ok" : "FAILED");          \
        fflush(stdout);                                                                    \
    } while (0)

#define TEST_STATUS() (mdbtest_failures ? 1 : 0)

#define TEST_DONE()                                                                        \
    do {                                                                                   \
        printf("%d checks, %d failed\n", mdbtest_checks, mdbtest_failures);                \
        return TEST_STATUS();                                                              \
    } while (0)

/* ---- helpers ---- */

#define PATHF(buf, ...)                                                                    \
    do {                                                                                   \
        if (snprintf((buf), sizeof(buf), __VA_ARGS__) >= (int)sizeof(buf)) {              \
            fprintf(stderr, "%s:%d: string too long\n", __FILE__, __LINE__);               \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

#define MDBTEST_XORSHIFT_SEED 88172645463325252ULL

static inline unsigned long long mdbtest_xorshift(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline void mdbtest_unlink_env(const char *dir)
{
    char p[4200];
    PATHF(p, "%s/data.mdb", dir);
    unlink(p);
    PATHF(p, "%s/lock.mdb", dir);
    unlink(p);
}

static inline MDB_env *mdbtest_env(size_t mapsize, unsigned maxdbs)
{
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    if (mapsize)
        CHECK(mdb_env_set_mapsize(env, mapsize));
    if (maxdbs)
        CHECK(mdb_env_set_maxdbs(env, maxdbs));
    return env;
}

/* mdbtest_env, opened (MDB_NOSYNC | flags) in dir, which is created if missing. */
static inline MDB_env *mdbtest_open_dir(const char *dir, size_t mapsize, unsigned maxdbs,
                                        unsigned flags)
{
    MDB_env *env = mdbtest_env(mapsize, maxdbs);
    mkdir(dir, 0755);
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC | flags, 0644));
    return env;
}

static inline MDB_dbi mdbtest_begin_main_flags(MDB_env *env, unsigned flags, MDB_txn **txn)
{
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, flags, txn));
    CHECK(mdb_dbi_open(*txn, NULL, 0, &dbi));
    return dbi;
}

static inline MDB_dbi mdbtest_begin_main(MDB_env *env, MDB_txn **txn)
{
    return mdbtest_begin_main_flags(env, 0, txn);
}

static inline MDB_dbi mdbtest_read_main(MDB_env *env, MDB_txn **txn)
{
    return mdbtest_begin_main_flags(env, MDB_RDONLY, txn);
}

#endif
