"""Objects left open when the interpreter exits, or collected together as a cycle, end
without crashing: the finalizers of a cycle run in any order, and the engine frees its
transactions with the environment, so whichever object goes first must end the
transactions and cursors before the environment is closed (the cffi backend segfaulted
at exit with a read txn open at module level)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SETUP = """
import gc, mdb
lm = mdb.get_backend({backend!r})
env = lm.open({path!r}, map_size=1 << 24, max_spare_txns=1, max_dbs=2)
with env.begin(write=True) as t:
    for i in range(50):
        t.put(b"k%03d" % i, b"v" * 100)
with env.begin() as t0:  # leaves a spare read txn behind (max_spare_txns=1)
    t0.get(b"k001")
del t, t0  # ended; only what each case opens below refers to env
"""

LEFT_OPEN = {
    "read txn": "t = env.begin()\nt.get(b'k002')",
    "cursor": "t = env.begin()\nc = t.cursor()\nc.first()",
    "iterator": "t = env.begin()\nit = iter(t.cursor())\nnext(it)\nnext(it)",
    "write txn": "t = env.begin(write=True)\nt.put(b'new', b'x')",
    # the engine frees a write txn's cursors with it: the cursor must not close its
    # handle after the txn went first
    "write cursor": "t = env.begin(write=True)\nt.put(b'new', b'x')\nc = t.cursor()\n"
    "c.first()\nc2 = t.cursor()\nc2.last()",
    "nested txn": "p = env.begin(write=True)\nch = env.begin(write=True, parent=p)\n"
    "ch.put(b'new', b'x')\nc = ch.cursor()\nc.first()",
    "named db": "t = env.begin(write=True)\ndb = env.open_db(b'sub', txn=t)\n"
    "t.put(b'a', b'b', db=db)",
}


def run_child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("what", sorted(LEFT_OPEN))
def test_left_open_at_exit(lm, tmp_path, what):
    code = SETUP.format(backend=lm.backend, path=str(tmp_path / "e")) + LEFT_OPEN[what]
    r = run_child(code + "\nprint('ok')\n")
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-2000:])


@pytest.mark.parametrize("what", sorted(LEFT_OPEN))
def test_cycle_collected_then_reopened(lm, tmp_path, what):
    """The same objects dropped as one garbage cycle mid-program: after gc.collect() the
    environment is closed (a write txn's writer lock is free: the next write commits)
    and the path can be opened again."""
    path = str(tmp_path / "e")
    body = textwrap.indent(LEFT_OPEN[what], "    ")
    code = (
        SETUP.format(backend=lm.backend, path=path)
        + "def drop():\n    global env\n"
        + body
        + "\n    box = [env, locals()]\n    box.append(box)  # a cycle holding everything\n"
        + "    env = None\n"
        + textwrap.dedent(f"""
            drop()
            gc.collect()
            env = lm.open({path!r}, map_size=1 << 24, max_dbs=2)
            with env.begin(write=True) as t:
                t.put(b"after", b"1")
            with env.begin() as t:
                print(t.get(b"after").decode(), t.get(b"new"))
            env.close()
        """)
    )
    r = run_child(code)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.split() == ["1", "None"], r.stdout
