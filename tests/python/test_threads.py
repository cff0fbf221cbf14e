"""Threads: closing, resizing and ending transactions while other threads use
them must raise mdb.Error in those threads, never crash the interpreter.

Each scenario runs in a subprocess so that a crash fails the test instead of
killing the test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import sys, threading, tempfile, mdb
lm = mdb.get_backend(sys.argv[1])
path = tempfile.mkdtemp()
env = lm.open(path, map_size=1 << 26, max_dbs=4)
with env.begin(write=True) as t:
    for i in range(2000):
        t.put(b"%06d" % i, b"v" * 200)
errors = []
def guard(fn):
    def run():
        try:
            fn()
        except mdb.Error:
            pass
        except Exception as e:  # anything but mdb.Error is a bug
            errors.append(repr(e))
    return run
def started(fns):
    threads = [threading.Thread(target=guard(fn)) for fn in fns]
    for th in threads: th.start()
    return threads
def end_when_idle(end):  # end() is refused while a call runs, never a crash
    refused = 0
    while True:
        try:
            end()
            return refused
        except mdb.Error as e:
            assert "in use" in str(e), e
            refused += 1
"""

SCENARIOS = {
    "close_during_reads": """
def reader():
    for _ in range(300):
        with env.begin() as t:
            for _ in t.cursor():
                pass
threads = started([reader] * 3)
for _ in range(20):
    env.close()
    env = lm.open(path, map_size=1 << 26, max_dbs=4)
for th in threads: th.join()
""",
    "abort_during_getmulti": """
txn = env.begin()
keys = [b"%06d" % i for i in range(2000)]
def reader():
    for _ in range(200):
        txn.cursor().getmulti(keys)
(th,) = started([reader])
end_when_idle(txn.abort)  # abort races the getmulti pass
th.join()
""",
    "writers_and_close": """
def writer(n):
    for i in range(100):
        with env.begin(write=True) as t:
            t.put(b"w%d-%d" % (n, i), b"x" * 1000)
threads = started([lambda n=n: writer(n) for n in range(3)])
import time; time.sleep(0.05)
env.close()
for th in threads: th.join()
""",
    "abort_during_gets": """
txn = env.begin()
def reader():
    for _ in range(20):
        for i in range(2000):
            assert txn.get(b"%06d" % i) == b"v" * 200
(th,) = started([reader])
end_when_idle(txn.abort)  # the reader then raises mdb.Error
th.join()
""",
    "close_during_write_cursor": """
def writer(n):
    for _ in range(50):
        with env.begin(write=True) as t:
            c = t.cursor()
            c.putmulti([(b"p%d-%04d" % (n, i), b"x" * 100) for i in range(200)])
            for _ in c.iternext():
                pass
            for i in range(200):
                c.set_key(b"p%d-%04d" % (n, i)) and c.item()
threads = started([lambda n=n: writer(n) for n in range(2)])
import time; time.sleep(0.05)
env.close()
for th in threads: th.join()
""",
    "cursor_close_during_reads": """
txn = env.begin()
c = txn.cursor()
def reader():
    for _ in range(50):
        for i in range(2000):
            c.set_key(b"%06d" % i) and c.item() and c.next()
(th,) = started([reader])
end_when_idle(c.close)
th.join()
txn.abort()
""",
    "parent_abort_during_child_calls": """
db = env.open_db(b"sub")
parent = env.begin(write=True)
child = env.begin(write=True, parent=parent)
def worker():  # the slow paths (a memoryview key, db=) and the fast ones
    for i in range(20000):
        child.get(memoryview(b"%06d" % (i % 2000)))
        child.put(b"c%06d" % i, b"x", db=db)
        child.put(b"d%06d" % i, b"x")
(th,) = started([worker])
end_when_idle(parent.abort)  # refused while a call of the child runs
th.join()
""",
    "buffers_after_close": """
views = []
def reader():
    for _ in range(200):
        with env.begin(buffers=True) as t:
            views.append(t.get(b"000001"))
threads = started([reader] * 2)
env.close()
for th in threads: th.join()
assert all(len(bytes(v)) == 200 for v in views)
""",
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_no_crash(lm, scenario):
    code = PRELUDE + textwrap.dedent(SCENARIOS[scenario]) + "\nprint('errors', errors)\n"
    r = subprocess.run(
        [sys.executable, "-c", code, lm.backend], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
    assert r.stdout.strip() == "errors []", r.stdout
