"""tests/crash: power-loss images through the fault seam, real SIGKILLs, durability modes
and the mutation checks of issue 6.  Prints the run's counts at the end (crash points,
workloads, kills); MDB_PROPERTY_PROFILE=ci|long picks the hypothesis profile (harness.py)."""

import time

from crash import harness

_T0 = time.time()


def pytest_report_header(config):
    return [
        f"issue 6 hypothesis profile: {harness.PROFILE} (MDB_PROPERTY_PROFILE), "
        f"example database {harness.DB_DIR}"
    ]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    harness.print_counts(terminalreporter, "tests/crash", _T0)


def pytest_collection_modifyitems(config, items):
    import os

    import pytest

    if os.environ.get("MDB_TEST_IMPL") == "system":
        skip = pytest.mark.skip(
            reason="drives the mdb core's fault seam / checker / test "
            "library: not in LMDB_IMPL=system"
        )
        for item in items:
            item.add_marker(skip)
