"""mdb-cli copy (cli/mdb_cli/commands/copy.py): plain and compact, under a writer."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import fill, make_data, proc_env, read_db, real
from test_cli_load import _run_on_tty


@pytest.mark.parametrize("opts", [[], ["--compact"]], ids=["plain", "compact"])
def test_copy_has_the_same_data(run, full_env: Path, tmp_path: Path, opts: list[str]) -> None:
    dst = tmp_path / "copy"
    res = run("copy", *opts, str(full_env), str(dst))
    assert res.exit_code == 0, res.stderr
    assert sorted(p.name for p in dst.iterdir()) == ["data.mdb"]
    assert real("mdb_dump", "-a", str(dst)) == real("mdb_dump", "-a", str(full_env))
    if not opts:  # compacting renumbers pages, so the named DBs' records in main change
        assert real("mdb_dump", str(dst)) == real("mdb_dump", str(full_env))


def test_compact_drops_free_pages(run, full_env: Path, tmp_path: Path) -> None:
    # Free some pages first, then compare sizes.
    assert run("drop", "-s", "plain", str(full_env)).exit_code == 0
    run("copy", str(full_env), str(tmp_path / "plain"))
    run("copy", "-c", str(full_env), str(tmp_path / "compact"))
    plain = (tmp_path / "plain" / "data.mdb").stat().st_size
    compact = (tmp_path / "compact" / "data.mdb").stat().st_size
    assert compact < plain
    assert real("mdb_dump", "-a", str(tmp_path / "compact")) == real(
        "mdb_dump", "-a", str(full_env)
    )


def test_nosubdir(run, tmp_path: Path) -> None:
    src = fill(tmp_path / "src.mdb", make_data(n=30), subdir=False)
    res = run("copy", "-n", str(src), str(tmp_path / "dst.mdb"))
    assert res.exit_code == 0, res.stderr
    assert real("mdb_dump", "-n", "-a", str(tmp_path / "dst.mdb")) == real(
        "mdb_dump", "-n", "-a", str(src)
    )


def test_refuses_to_overwrite(run, full_env: Path, tmp_path: Path) -> None:
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "data.mdb").write_bytes(b"precious")
    res = run("copy", str(full_env), str(dst))
    assert res.exit_code == 1
    assert "already exists" in res.stderr
    assert (dst / "data.mdb").read_bytes() == b"precious"
    res = run("copy", str(full_env), str(full_env))
    assert res.exit_code == 1


WRITER = textwrap.dedent(
    """
    import sys
    from mdb_cli import engine
    env = engine.get().open(sys.argv[1], map_size=256 << 20)
    n = 0
    print("ready", flush=True)
    while True:
        n += 1
        with env.begin(write=True) as txn:
            txn.put(b"n", str(n).encode())
            for i in range(50):
                txn.put(b"k%08d-%02d" % (n, i), b"x" * 200)
            if n > 3:
                for i in range(50):
                    txn.delete(b"k%08d-%02d" % (n - 3, i))
    """
)


@pytest.mark.parametrize("opts", [[], ["--compact"]], ids=["plain", "compact"])
def test_consistent_while_a_writer_goes_on(run, tmp_path: Path, opts: list[str]) -> None:
    src = tmp_path / "src"
    src.mkdir()
    w = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(src)], stdout=subprocess.PIPE, env=proc_env()
    )
    try:
        assert w.stdout is not None and w.stdout.readline() == b"ready\n"
        for i in range(4):
            dst = tmp_path / f"copy{i}"
            res = run("copy", *opts, str(src), str(dst))
            assert res.exit_code == 0, res.stderr
            data = dict(read_db(dst))
            n = int(data.pop(b"n", b"0"))
            expect = {
                b"k%08d-%02d" % (m, j) for m in range(max(1, n - 2), n + 1) for j in range(50)
            }
            assert set(data) == expect, f"copy {i} is not a committed state (n={n})"
    finally:
        w.kill()
        w.wait()


def test_progress_on_a_terminal(full_env: Path, tmp_path: Path) -> None:
    code, shown = _run_on_tty(["copy", str(full_env), str(tmp_path / "dst")])
    assert code == 0
    assert b"copying" in shown and b"100%" in shown


def test_copy_to_stdout(cli_proc, full_env: Path, tmp_path: Path) -> None:
    res = cli_proc("copy", "--compact", str(full_env), "-")
    assert res.returncode == 0, res.stderr
    dst = tmp_path / "piped"
    dst.mkdir()
    (dst / "data.mdb").write_bytes(res.stdout)
    assert real("mdb_dump", "-a", str(dst)) == real("mdb_dump", "-a", str(full_env))
