/*
 * core_test.h -- the assertion macros the engine-core tests (tests/c/core/test_*.c) share.
 * Each failure prints file:line and what failed, then exits 1, so run.sh stops on it.
 *   CHECK(call)        the call must return 0 (MDB_SUCCESS); else its mdb_strerror
 *   EXPECT(call, rc)   the call must return exactly rc
 *   FAIL(fmt, ...)     an unconditional failure with a printf-style message
 */
#ifndef MDB_CORE_TEST_H
#define MDB_CORE_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "lmdb.h"

#define CHECK(x)                                                                           \
    do {                                                                                   \
        int rc_ = (x);                                                                     \
        if (rc_) {                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, mdb_strerror(rc_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define EXPECT(x, want)                                                                    \
    do {                                                                                   \
        int rc_ = (x);                                                                     \
        if (rc_ != (want)) {                                                               \
            fprintf(stderr, "%s:%d: %s: got %d (%s), want %s\n", __FILE__, __LINE__, #x,   \
                    rc_, mdb_strerror(rc_), #want);                                        \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define FAIL(...)                                       \
    do {                                                \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                   \
        fprintf(stderr, "\n");                          \
        exit(1);                                        \
    } while (0)

#endif
