"""py-lmdb 3.0.0's own test suite against mdb, both backends (opt-in).

Runs tests/python/pylmdb_shim/run_suite.sh, which downloads the lmdb 3.0.0
sdist with pip and runs its tests/ through the lmdb -> mdb shim; exclusions
and their reasons are in tests/python/pylmdb_shim/EXCLUDES.md.  Takes about
30 s and needs PyPI, so it only runs with MDB_PYLMDB_SUITE=1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import mdb

SCRIPT = Path(__file__).parent / "pylmdb_shim" / "run_suite.sh"


@pytest.mark.skipif(os.environ.get("MDB_PYLMDB_SUITE") != "1", reason="set MDB_PYLMDB_SUITE=1")
@pytest.mark.parametrize("backend", mdb.BACKENDS)
def test_pylmdb_suite(backend):
    env = dict(os.environ, PYTHON=sys.executable)
    r = subprocess.run(
        ["bash", str(SCRIPT), backend], capture_output=True, text=True, timeout=900, env=env
    )
    tail = "\n".join(r.stdout.splitlines()[-40:])
    assert r.returncode == 0, f"py-lmdb suite failed on {backend}:\n{tail}\n{r.stderr[-2000:]}"
