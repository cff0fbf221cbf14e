"""procs -- start tests/support/worker.py in a subprocess and collect its JSON answer."""

import json
import os
import subprocess
import sys

import pytest

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")


def start_worker(lib, impl, command, *args):
    env = dict(os.environ, MDB_TEST_LIB=lib, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.Popen(
        [sys.executable, WORKER, impl, command, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def finish_worker(p, impl, command, so, se):
    text = so.decode(errors="replace").strip()
    if p.returncode != 0 or not text:
        pytest.fail(
            f"worker {impl} {command} exited with status {p.returncode}\n"
            f"stdout:\n{text[-2000:]}\nstderr:\n{se.decode(errors='replace')[-3000:]}"
        )
    return json.loads(text.splitlines()[-1])
