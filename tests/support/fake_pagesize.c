/*
 * fake_pagesize.c -- an LD_PRELOAD shim that makes a process see another OS page size.
 *
 * LMDB takes a new data file's page size from sysconf(_SC_PAGESIZE) (capped at 32 KiB),
 * so on a machine with 16 KiB or 64 KiB pages it writes files whose pages are that big.
 * With this shim loaded and FAKE_PAGESIZE=N set, sysconf(_SC_PAGESIZE) and getpagesize()
 * answer N, so real LMDB and ours write such files here.  Nothing else changes: the kernel
 * still maps 4 KiB pages, which LMDB's formats do not care about.
 *   cc -shared -fPIC -o fake_pagesize.so fake_pagesize.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

long sysconf(int name)
{
    static long (*next_sysconf)(int);
    if (name == _SC_PAGESIZE) {
        const char *fake = getenv("FAKE_PAGESIZE");
        if (fake && *fake)
            return atol(fake);
    }
    if (!next_sysconf)
        next_sysconf = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
    return next_sysconf(name);
}

int getpagesize(void)
{
    return (int)sysconf(_SC_PAGESIZE);
}
