/*
 * mutation.c -- the test-only mutation switch (layer L0; mdbcore.h section 3): bits that
 * make the engine deliberately wrong, so the crash and snapshot tests can show that they
 * fail (tests/crash/test_mutations.py).  The engine code that honours a bit reads
 * mdbcore_mutation where it acts (readers.c today).
 *
 * Invariant: mdbcore_mutation is 0 in every run that did not set it; only the exported
 * setter changes it.
 */
#include "mdbcore.h"

int mdbcore_mutation;

int mdbcore_set_mutation(int bits)
{
    int old = mdbcore_mutation;
    mdbcore_mutation = bits;
    return old;
}
