/* unit.h -- the few macros our C unit tests share.  Each test file is its own program:
 * it prints one line per failed check and exits non-zero if any check failed. */
#ifndef MDB_UNIT_H
#define MDB_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_failures, unit_checks;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        unit_checks++;                                                                   \
        if (!(cond)) {                                                                   \
            unit_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
        }                                                                                \
    } while (0)

#define CHECK_EQ(a, b)                                                                   \
    do {                                                                                 \
        long long a_ = (long long)(a), b_ = (long long)(b);                              \
        unit_checks++;                                                                   \
        if (a_ != b_) {                                                                  \
            unit_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", __FILE__, \
                    __LINE__, #a, a_, #b, b_);                                           \
        }                                                                                \
    } while (0)

#define UNIT_RUN(fn)                                                                     \
    do {                                                                                 \
        int before_ = unit_failures;                                                     \
        fn();                                                                            \
        printf("%-44s %s\n", #fn, unit_failures == before_ ? "ok" : "FAILED");           \
        fflush(stdout);                                                                  \
    } while (0)

#define UNIT_DONE()                                                                      \
    do {                                                                                 \
        printf("%d checks, %d failed\n", unit_checks, unit_failures);                    \
        return unit_failures ? 1 : 0;                                                    \
    } while (0)

#endif
