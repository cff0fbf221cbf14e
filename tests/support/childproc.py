"""childproc -- child processes as the tests and the benchmarks that mirror them run them.

Standard library only: bench/ scripts import it too (with tests/ put on sys.path).

  run_on_tty(cmd, env)   run cmd with its stderr on a pseudo-terminal (stdin and stdout
                         /dev/null); returns (exit status, everything it showed there)
  killed_at_exit(p)      a context manager for a Popen: leaving it SIGKILLs p (if it still
                         runs) and reaps it
"""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
from collections.abc import Iterator


def run_on_tty(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, bytes]:
    master, slave = pty.openpty()
    p = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env
    )
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO once the child has closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(), out


@contextlib.contextmanager
def killed_at_exit(p: subprocess.Popen) -> Iterator[subprocess.Popen]:
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(10)
