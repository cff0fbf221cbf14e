/*
 * fuzz_apidiff.c -- libFuzzer harness, API differential against upstream LMDB 0.9.36
 * (issue 12, fuzzer 3).
 *
 * The input bytes drive the lmdbdiff workload (tests/c/diff/tools/lmdbdiff.c, built with
 * LMDBDIFF_EMBED: every choice is read from the input): eight database kinds (plain,
 * INTEGERKEY, REVERSEKEY, DUPSORT, DUPFIXED, INTEGERKEY+DUPFIXED+INTEGERDUP, REVERSEDUP,
 * one with a dupsort function of ours); puts with every flag (NOOVERWRITE, NODUPDATA,
 * APPEND, APPENDDUP, RESERVE, CURRENT, MULTIPLE), keys and values from empty through the
 * key limit to overflow sizes, deletes of keys and of pairs, cursor sessions with every
 * positioning op, cursor puts and deletes, counts, mdb_drop, calls that must fail, nested
 * txns two deep, commits and aborts, a long reader reset/renewed, and after every commit
 * a digest of every database.  It prints a transcript: each call's return code and data.
 *
 * The workload runs here, in process, on our core (instrumented: coverage guides the
 * fuzzer), and the same input goes to build-fuzz/apidiff_ref, the same workload on 0.9.36
 * (fuzz/apidiff_ref.c, a server that forks per input).  Any difference between the two
 * transcripts is a finding: the harness prints where they part and aborts.  When 0.9.36
 * itself crashes or stops on an input, there is nothing to compare (counted, not a
 * finding).  The workload steers clear only of what makes 0.9.36 crash or damage its own
 * data (docs/compat.md); the input's first byte picks the environment flags (WRITEMAP,
 * MAPASYNC, no NOTLS, NOSUBDIR, NOLOCK, NORDAHEAD, NOMEMINIT, FIXEDMAP, a read-only
 * reopen).
 *
 * Value lifetimes: every key and value our library returns is kept with a copy and
 * compared before its txn's next write and at its end (lmdbdiff.c); a changed value is a
 * finding.  The counts (by database kind and by returning call) are printed every 5,000
 * inputs and at exit.
 *
 * One open difference of ours is counted, not a finding: a transcript that first differs
 * right after an MDB_MULTIPLE cursor put (compatlib.KNOWN_BUGS, docs/compat.md).
 * MDB_APIDIFF_KNOWN_AFTER="" makes it a finding too.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LMDBDIFF_EMBED 1
#include "../tests/c/diff/tools/lmdbdiff.c"
#undef main
#undef printf
#undef putchar

#include "fuzz_common.h"

static char g_work[512], g_dir[600];
static pid_t g_ref = -1;
static int g_to_ref = -1, g_from_ref = -1;
static unsigned long g_runs, g_ref_gone;
static unsigned long g_known;
static const char *g_known_after;

/* Whether the transcripts first differ right after a line containing g_known_after. */
static int known_difference(const char *ours, const char *ref)
{
    if (!*g_known_after)
        return 0;
    const char *a = ours, *b = ref, *line = ref, *prev = NULL;
    while (*a && *a == *b) {
        if (*a == '\n') {
            prev = line;
            line = b + 1;
        }
        a++;
        b++;
    }
    if (!prev)
        return 0;
    size_t n = (size_t)(line - prev);
    char *l = strndup(prev, n);
    int hit = l && strstr(l, g_known_after) != NULL;
    free(l);
    return hit;
}

static void start_ref(void)
{
    const char *exe = getenv("MDB_APIDIFF_REF");
    if (!exe)
        exe = "build-fuzz/apidiff_ref";
    int in[2], out[2];
    if (pipe(in) || pipe(out)) {
        perror("pipe");
        exit(2);
    }
    g_ref = fork();
    if (g_ref == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execl(exe, exe, g_work, (char *)NULL);
        perror(exe);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    g_to_ref = in[1];
    g_from_ref = out[0];
}

static void print_lifetime(void)
{
    fprintf(stderr, "fuzz_apidiff: %lu inputs, %lu without a reference transcript, %lu known "
            "differences; ", g_runs, g_ref_gone, g_known);
    lifetime_report(stderr);
}

static void stop_ref(void)
{
    if (g_ref > 0) {
        close(g_to_ref);
        close(g_from_ref);
        kill(g_ref, SIGKILL);
        waitpid(g_ref, NULL, 0);
        g_ref = -1;
    }
}

/* The reference transcript of `data`, or NULL when the server could not give one. */
static char *run_ref(const uint8_t *data, size_t size, int *status, size_t *len)
{
    if (g_ref < 0)
        start_ref();
    uint32_t n = (uint32_t)size, olen;
    int32_t st;
    if (fuzz_io_full(g_to_ref, &n, 4, 1) || fuzz_io_full(g_to_ref, (void *)data, size, 1) ||
        fuzz_io_full(g_from_ref, &st, 4, 0) || fuzz_io_full(g_from_ref, &olen, 4, 0)) {
        stop_ref();
        return NULL;
    }
    char *out = malloc(olen + 1);
    if (!out || fuzz_io_full(g_from_ref, out, olen, 0)) {
        free(out);
        stop_ref();
        return NULL;
    }
    out[olen] = 0;
    *status = st;
    *len = olen;
    return out;
}

/* Ours, in process: 0 when the workload ran to its end, 3 after a fatal error. */
static int run_ours(const uint8_t *data, size_t size, char **text, size_t *len)
{
    char path[700];
    snprintf(path, sizeof path, "%s/data.mdb", g_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/lock.mdb", g_dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/db", g_dir); /* MDB_NOSUBDIR */
    unlink(path);
    snprintf(path, sizeof path, "%s/db-lock", g_dir);
    unlink(path);
    tout = open_memstream(text, len);
    feed = data;
    feed_len = size;
    feed_pos = 0;
    char *args[] = {"lmdbdiff", g_dir, NULL};
    int status = 0;
    if (setjmp(fatal_jmp)) {
        /* The workload stopped inside a txn: the environment is left open (closing it
         * under a live txn would hand back memory the txn still uses). */
        status = 3;
    } else {
        lmdbdiff_main(2, args);
    }
    fclose(tout);
    return status;
}

/* Print the first line where the transcripts part (and, with MDB_APIDIFF_DUMP=DIR, write
 * both whole transcripts there as ours.txt and ref.txt). */
static void report(const char *ours, const char *ref)
{
    const char *a = ours, *b = ref;
    size_t line = 1;
    while (*a && *a == *b) {
        if (*a == '\n')
            line++;
        a++;
        b++;
    }
    while (a > ours && a[-1] != '\n') {
        a--;
        b--;
    }
    int la = (int)(strchr(a, '\n') ? strchr(a, '\n') - a : (long)strlen(a));
    int lb = (int)(strchr(b, '\n') ? strchr(b, '\n') - b : (long)strlen(b));
    fprintf(stderr, "fuzz_apidiff: transcripts differ at line %zu\n  ours:   %.*s\n  0.9.36: %.*s\n",
            line, la, a, lb, b);
    const char *dump = getenv("MDB_APIDIFF_DUMP");
    if (dump) {
        char path[4200];
        const char *names[2] = {"ours.txt", "ref.txt"};
        const char *texts[2] = {ours, ref};
        for (int i = 0; i < 2; i++) {
            snprintf(path, sizeof path, "%s/%s", dump, names[i]);
            FILE *f = fopen(path, "w");
            if (f) {
                fputs(texts[i], f);
                fclose(f);
            }
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_work_path(g_work, sizeof g_work, "apidiff", "");
    snprintf(g_dir, sizeof g_dir, "%s/ours", g_work);
    mkdir(g_work, 0700);
    mkdir(g_dir, 0700);
    signal(SIGPIPE, SIG_IGN);
    /* changed values are counted here, not printed into the transcripts */
    setenv("LMDBDIFF_LIFETIME_SOFT", "1", 1);
    const char *known = getenv("MDB_APIDIFF_KNOWN_AFTER");
    g_known_after = known ? known : "c-put-multiple";
    atexit(print_lifetime);
    start_ref();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *ours = NULL;
    size_t ours_len = 0;
    unsigned long long changed_before[16];
    memcpy(changed_before, lt_kind_changed, sizeof changed_before);
    int ours_status = run_ours(data, size, &ours, &ours_len);
    for (int k = 0; k < K_NKINDS; k++) {
        if (lt_kind_changed[k] != changed_before[k]) {
            fprintf(stderr, "fuzz_apidiff: %llu value(s) of database %s changed before their "
                    "txn's next write or end\n", lt_kind_changed[k] - changed_before[k],
                    kind_name[k]);
            print_lifetime();
            abort();
        }
    }
    int ref_status = -1;
    size_t ref_len = 0;
    char *ref = run_ref(data, size, &ref_status, &ref_len);
    g_runs++;
    if (!ref || ref_status != 0) {
        /* 0.9.36 crashed or stopped: nothing to compare with */
        g_ref_gone++;
    } else if (ours_status != 0 || ours_len != ref_len || memcmp(ours, ref, ours_len) != 0) {
        if (ours_status == 0 && known_difference(ours, ref)) {
            if (g_known++ == 0)
                fprintf(stderr, "fuzz_apidiff: known open difference after '%s' (counted)\n",
                        g_known_after);
        } else {
            report(ours, ref);
            abort();
        }
    }
    free(ours);
    free(ref);
    if (g_runs % 5000 == 0)
        print_lifetime();
    return 0;
}
