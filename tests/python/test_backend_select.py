"""MDB_BACKEND picks the backend at import; auto falls back to cffi."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ)
    e.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=e
    )


@pytest.mark.parametrize("name", ["cext", "cffi"])
def test_env_var_selects(name):
    r = _run("import mdb; print(mdb.backend, mdb.Environment.__module__)", MDB_BACKEND=name)
    assert r.returncode == 0, r.stderr
    backend, module = r.stdout.split()
    assert backend == name
    assert (module == "builtins") == (name == "cext")


def test_auto_falls_back_to_cffi_when_cext_cannot_load():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'mdb._cext':\n"
        "            raise ImportError('blocked for the test')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import mdb; print(mdb.backend)\n"
    )
    r = _run(code, MDB_BACKEND="auto")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "cffi"


def test_unknown_backend_is_an_error():
    r = _run("import mdb", MDB_BACKEND="nope")
    assert r.returncode != 0 and "unknown mdb backend" in r.stderr
