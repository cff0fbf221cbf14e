"""harness -- what the issue-6 suites (tests/property, tests/crash) share.

* Hypothesis profiles:
      ci    (default)  small example counts; the whole issue's tests in well under 5 min
      long             deep search: MDB_PROPERTY_PROFILE=long (see docs/durability.md)
  Both save failing examples in the example database at .hypothesis/crash (repository
  root, git-ignored), and every run replays what is stored there first.
* COUNTS: crash points, workloads, kills, state-machine steps, ... counted by the tests
  and printed at session end by the suites' conftest.py (`print_counts`), so a run's
  numbers can be quoted.
"""

import collections
import json
import os
import time

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DB_DIR = os.path.join(ROOT, ".hypothesis", "crash")

PROFILE = os.environ.get("MDB_PROPERTY_PROFILE", "ci")
LONG = PROFILE == "long"

_common = dict(
    database=DirectoryBasedExampleDatabase(DB_DIR),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,
    ],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    print_blob=True,
)
settings.register_profile("ci", **_common)
settings.register_profile("long", **_common)
settings.load_profile("long" if LONG else "ci")

# Per-test example counts: (ci, long)
SIZES = {
    "crash_workloads": (20, 400),  # per durability mode
    "crash_seeds": (2, 4),  # random seeds per crash point for subset/torn
    "mutation_workloads": (4, 12),
    "state_machine": (40, 600),  # state-machine runs
    "state_machine_steps": (40, 80),  # max steps per run
    "snapshot": (40, 300),
    "snapshot_proc": (6, 40),
    "kills": (6, 120),  # kill rounds per mode
}


def size(name):
    ci, long = SIZES[name]
    return long if LONG else ci


COUNTS = collections.Counter()


def count(name, n=1):
    COUNTS[name] += n


_PRINTED = []


def pytest_report_header(config):
    """The hypothesis profile and example database, for both suites' conftests."""
    return [
        f"crash-safety hypothesis profile: {PROFILE} (MDB_PROPERTY_PROFILE), "
        f"example database {DB_DIR}"
    ]


def skip_unless_core(config, items):
    """pytest_collection_modifyitems of both suites: they drive the mdb core's fault seam,
    checker and test library, so with MDB_TEST_IMPL=system every test is skipped."""
    import pytest

    if os.environ.get("MDB_TEST_IMPL") == "system":
        skip = pytest.mark.skip(
            reason="drives the mdb core's fault seam / checker / test "
            "library: not in LMDB_IMPL=system"
        )
        for item in items:
            item.add_marker(skip)


def print_counts(terminalreporter, suite, t0):
    """Once per session (both suites' conftests call it when run together)."""
    if _PRINTED:
        return
    _PRINTED.append(1)
    args = [a for a in terminalreporter.config.args if not a.startswith("-")]
    suite = " ".join(args) or suite
    tr = terminalreporter
    tr.write_sep("=", f"crash-safety counts ({suite}, profile {PROFILE})")
    for k in sorted(COUNTS):
        tr.write_line(f"  {k:<34} {COUNTS[k]:>10,}")
    tr.write_line(f"  {'elapsed seconds':<34} {time.time() - t0:>10.1f}")
    out = os.environ.get("MDB_COUNTS_FILE")
    if out:
        with open(out, "a") as f:
            f.write(
                json.dumps(
                    {
                        "suite": suite,
                        "profile": PROFILE,
                        "counts": dict(COUNTS),
                        "seconds": round(time.time() - t0, 1),
                    }
                )
                + "\n"
            )
