"""tests/crash: power-loss images through the fault seam, real SIGKILLs, durability modes
and the mutation checks.  Prints the run's counts at the end (crash points,
workloads, kills); MDB_PROPERTY_PROFILE=ci|long picks the hypothesis profile (harness.py)."""

import time

from crash import harness

_T0 = time.time()


pytest_report_header = harness.pytest_report_header
pytest_collection_modifyitems = harness.skip_unless_core


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    harness.print_counts(terminalreporter, "tests/crash", _T0)
