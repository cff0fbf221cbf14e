"""tests/property: the state machine and the snapshot-isolation properties of issue 6.
Prints the run's counts at the end (state-machine steps, readers, commits, ...);
MDB_PROPERTY_PROFILE=ci|long picks the hypothesis profile (tests/crash/harness.py)."""

import time

from crash import harness

_T0 = time.time()


pytest_report_header = harness.pytest_report_header
pytest_collection_modifyitems = harness.skip_unless_core


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    harness.print_counts(terminalreporter, "tests/property", _T0)
