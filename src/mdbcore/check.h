/*
 * check.h -- internal helpers of the structural checker (check.c).  The public interface
 * (snapshot, report, mdbcore_check_*) is in mdbcore.h.
 */
#ifndef MDBCORE_CHECK_H
#define MDBCORE_CHECK_H

#include "mdbcore.h"

/* "bounds", "page", "node", ... for MDBCORE_P_* codes; "?" for others. */
const char *check_problem_name(int code);

#endif
