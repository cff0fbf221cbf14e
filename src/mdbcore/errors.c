/*
 * errors.c -- return-code texts (mdb_strerror's engine side) and the corruption breadcrumb.
 * Layer L0.  The code/text table lives only in errors.def (its comment says which other
 * tables are checked against it, and how).
 *
 * Corruption breadcrumb: every "cannot happen on a valid file" path returns through
 * CORRUPT_AT (core.h), which lands here and remembers where it was detected.  Setting the
 * environment variable MDBCORE_DEBUG prints each detection on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef struct err_entry {
    int code;
    const char *text; /* "NAME: description" */
} err_entry;

/* The Python class and CLI advice columns, and the errno (E) rows, are not the engine's. */
#define E(errno_name, pyclass, advice)

static const err_entry err_table[] = {
#define X(name, value, text, pyclass, advice) {value, #name ": " text},
#include "errors.def"
#undef X
};

/* lmdb.h's codes are errors.def's: a row lmdb.h lacks, or gives another value, fails here. */
#define X(name, value, text, pyclass, advice) \
    _Static_assert((name) == (value), #name " in lmdb.h differs from errors.def");
#include "errors.def"
#undef X
#undef E

const char *errors_text(int err)
{
    if (err == 0)
        return "Successful return: 0";
    for (size_t i = 0; i < sizeof(err_table) / sizeof(err_table[0]); i++)
        if (err_table[i].code == err)
            return err_table[i].text;
    if (err < 0)
        return "Invalid error code";
    return NULL; /* an errno: the caller uses strerror() */
}

static __thread corrupt_note last_note;

int errors_corrupt(const char *file, int line, pgno_t pgno)
{
    last_note.file = file;
    last_note.line = line;
    last_note.pgno = pgno;
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("MDBCORE_DEBUG") != NULL;
    if (verbose)
        fprintf(stderr, "mdbcore: corruption detected at %s:%d (page %llu)\n", file, line,
                (unsigned long long)pgno);
    return MDB_CORRUPTED;
}

const corrupt_note *errors_last_corruption(void)
{
    return &last_note;
}
