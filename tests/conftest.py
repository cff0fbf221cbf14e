"""Shared pytest setup for every Python test suite under tests/.

Kept small on purpose: tests/python, tests/cli and tests/interop each add their own
conftest.py.  What lives here:

  * tests/ goes on sys.path, so any suite can `from support import ...`.
  * The library under test.  The Makefile exports
        MDB_TEST_IMPL = system | mdb
        MDB_TEST_LIB  = the shared library to dlopen (Debian's liblmdb.so.0, or
                        build/libmdbcore.so)
    Run by hand, MDB_TEST_IMPL alone is enough; MDB_TEST_LIB is derived from it.
    The choice is printed in pytest's header.
  * `run_worker`: run tests/support/worker.py in a subprocess with one implementation,
    parse its JSON answer, and fail with its stderr if it crashed or timed out.
"""

import os
import subprocess
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from support.procs import finish_worker, start_worker  # noqa: E402

SYSTEM_LIB = "/usr/lib/x86_64-linux-gnu/liblmdb.so.0"


def _impl_and_lib():
    impl = os.environ.get("MDB_TEST_IMPL", "mdb")
    lib = os.environ.get("MDB_TEST_LIB")
    if not lib:
        lib = SYSTEM_LIB if impl == "system" else os.path.join(ROOT, "build", "libmdbcore.so")
    return impl, os.path.abspath(lib)


def pytest_report_header(config):
    impl, lib = _impl_and_lib()
    return [f"library under test: LMDB_IMPL={impl} MDB_TEST_LIB={lib}"]


@pytest.fixture(scope="session")
def mdb_test_lib():
    """(impl name, path) of the library under test; fails loudly if the file is missing."""
    impl, lib = _impl_and_lib()
    if not os.path.exists(lib):
        pytest.fail(
            f"library under test {lib} does not exist (LMDB_IMPL={impl}); "
            f"run `make lib`, or `make test LMDB_IMPL=system` for bring-up mode"
        )
    return impl, lib


@pytest.fixture
def run_worker(mdb_test_lib):
    """run_worker(impl, command, *args, timeout=...) -> parsed JSON printed by the worker.

    impl: "lib" (library under test) or "wheel" (real LMDB from the lmdb wheel).
    """
    _, lib = mdb_test_lib

    def run(impl, command, *args, timeout=300):
        p = start_worker(lib, impl, command, *args)
        try:
            so, se = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            so, se = p.communicate()
            pytest.fail(
                f"worker {impl} {command} timed out after {timeout}s\n"
                f"stderr:\n{se.decode(errors='replace')[-3000:]}"
            )
        return finish_worker(p, impl, command, so, se)

    return run
