"""Fixtures shared by the mdb Python tests.

Every test that takes ``lm`` runs once per backend (cext, cffi): ``lm`` is the
namespace returned by ``mdb.get_backend(name)``.  A backend that is not built
is skipped, not failed, unless MDB_REQUIRE_BACKENDS=1.
"""

from __future__ import annotations

import os
import random
import sys

import pytest

import mdb


def pytest_report_header(config):
    seed = os.environ.get("MDB_TEST_SEED") or str(random.randrange(1 << 30))
    os.environ["MDB_TEST_SEED"] = seed
    engine = mdb.backend_features["engine"]
    return f"mdb backend default: {mdb.backend}; engine: {engine}; seed: {seed}"


@pytest.fixture(params=mdb.BACKENDS)
def lm(request):
    name = request.param
    try:
        return mdb.get_backend(name)
    except ImportError as exc:
        if os.environ.get("MDB_REQUIRE_BACKENDS") == "1":
            raise
        pytest.skip(f"backend {name} not available: {exc}")


@pytest.fixture
def env(lm, tmp_path):
    e = lm.open(str(tmp_path / "db"), max_dbs=8, map_size=64 << 20)
    yield e
    e.close()


@pytest.fixture
def rng():
    return random.Random(int(os.environ.get("MDB_TEST_SEED", "1")))


PY = sys.executable


# The cursor moves without an argument other than first()/last(), for the differential
# tests against py-lmdb (test_vs_pylmdb.py, test_vs_pylmdb_api.py).
CURSOR_STEPS = (
    "next",
    "prev",
    "next_dup",
    "prev_dup",
    "next_nodup",
    "prev_nodup",
    "first_dup",
    "last_dup",
)
CURSOR_ITERS = (
    "iternext",
    "iterprev",
    "iternext_dup",
    "iterprev_dup",
    "iternext_nodup",
    "iterprev_nodup",
)
