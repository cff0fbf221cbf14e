/*
 * fault_env.c -- linked only into test builds (build/libmdbcore-test.so, the unit tests of
 * the fault seam), never into the production library or the Python package: it sits outside
 * the core source globs (Makefile, CMakeLists.txt) on purpose.  Its constructor lets a test arm the seam from the
 * MDBCORE_FAULT environment variable before the program under test runs (os_fault.c).
 */
#include "os.h"

__attribute__((constructor)) static void fault_env_at_load(void)
{
    fault_arm_from_env();
}
