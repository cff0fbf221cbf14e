"""The reader table across processes: a killed reader is cleared by reader_check()."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap


def test_stale_reader_cleared(lm, env, tmp_path):
    with env.begin(write=True) as t:
        t.put(b"k", b"v")
    code = textwrap.dedent(f"""
        import sys, time, mdb
        lm = mdb.get_backend({lm.backend!r})
        env = lm.open({str(tmp_path / "db")!r}, max_dbs=8, map_size=64 << 20)
        txn = env.begin()
        txn.get(b"k")
        print("ready", flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert str(p.pid) in env.readers()
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        assert env.reader_check() == 1
        assert str(p.pid) not in env.readers()
        assert env.reader_check() == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
