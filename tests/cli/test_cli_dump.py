"""mdb-cli dump (cli/mdb_cli/commands/dump.py): byte-identical to LMDB's mdb_dump."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import fill, make_data, put_main, real


@pytest.mark.parametrize(
    "opts",
    [[], ["-a"], ["-s", "plain"], ["-s", "dups"], ["-s", "ints"], ["-s", "fixed"]],
    ids=["main", "all", "plain", "dupsort", "integerkey", "dupfixed"],
)
def test_bytevalue_matches_mdb_dump(run, full_env: Path, opts: list[str]) -> None:
    res = run("dump", *opts, str(full_env))
    assert res.exit_code == 0, res.stderr
    assert res.stdout_bytes == real("mdb_dump", *opts, str(full_env))


@pytest.mark.parametrize("opts", [["-p"], ["-p", "-a"], ["-p", "-s", "ints"]])
def test_print_matches_mdb_dump(run, printable_env: Path, opts: list[str]) -> None:
    # No backslashes in this data: there mdb_dump 0.9.24 and we differ on purpose.
    res = run("dump", *opts, str(printable_env))
    assert res.exit_code == 0, res.stderr
    assert res.stdout_bytes == real("mdb_dump", *opts, str(printable_env))


def test_print_escapes_backslash_so_mdb_load_reads_it(run, tmp_path: Path) -> None:
    src = put_main(tmp_path / "src", [(b"a\\b", b"\\"), (b"c\\\\", b"x\\0ay")])
    res = run("dump", "-p", str(src))
    assert b" a\\\\b\n \\\\\n" in res.stdout_bytes
    dst = tmp_path / "dst"
    dst.mkdir()
    real("mdb_load", str(dst), input=res.stdout_bytes)
    assert real("mdb_dump", str(dst)) == real("mdb_dump", str(src))


def test_nosubdir(run, tmp_path: Path) -> None:
    data = make_data(n=40)
    path = fill(tmp_path / "file.mdb", data, subdir=False)
    res = run("dump", "-n", "-s", "dups", str(path))
    assert res.exit_code == 0, res.stderr
    assert res.stdout_bytes == real("mdb_dump", "-n", "-s", "dups", str(path))
    # Without -n the file is refused with a hint.
    res = run("dump", str(path))
    assert res.exit_code == 1
    assert "use -n" in res.stderr


def test_output_file(run, full_env: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.dump"
    res = run("dump", "-a", "-o", str(out), str(full_env))
    assert res.exit_code == 0
    assert res.stdout == ""
    assert out.read_bytes() == real("mdb_dump", "-a", str(full_env))


def test_list(run, full_env: Path) -> None:
    res = run("dump", "-l", str(full_env))
    assert res.stdout.splitlines() == ["dups", "fixed", "ints", "plain"]


def test_all_without_named_databases_is_empty(run, tmp_path: Path) -> None:
    env = put_main(tmp_path / "e", [(b"k", b"v")])
    res = run("dump", "-a", str(env))
    assert res.exit_code == 0
    assert res.stdout_bytes == real("mdb_dump", "-a", str(env)) == b""


def test_missing_database(run, full_env: Path) -> None:
    res = run("dump", "-s", "nope", str(full_env))
    assert res.exit_code == 1
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1
    assert "database 'nope' does not exist" in res.stderr
    assert "mdb-cli stat -a" in res.stderr


def test_key_that_is_not_a_database(run, full_env: Path) -> None:
    res = run("dump", "-s", "~main-record", str(full_env))
    assert res.exit_code == 1
    assert "not a database" in res.stderr


def test_missing_environment(run, tmp_path: Path) -> None:
    res = run("dump", str(tmp_path / "nothing"))
    assert res.exit_code == 1
    assert "no such environment" in res.stderr
    assert "Traceback" not in res.stderr


def test_directory_without_data_file(run, tmp_path: Path) -> None:
    res = run("dump", str(tmp_path))
    assert res.exit_code == 1
    assert "has no data.mdb" in res.stderr


def test_not_a_database(run, tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "data.mdb").write_bytes(b"this is not a database" * 400)
    res = run("dump", str(junk))
    assert res.exit_code == 1
    assert "is not an LMDB database" in res.stderr
    assert res.stderr.count("\n") == 1


def test_usage_errors_exit_2(run, full_env: Path) -> None:
    assert run("dump", "-a", "-s", "x", str(full_env)).exit_code == 2
    assert run("dump").exit_code == 2
    assert run("dump", "--bogus", str(full_env)).exit_code == 2
    assert run("dump", "--format", "jsonl", "-a", str(full_env)).exit_code == 2


def test_jsonl_output(run, tmp_path: Path) -> None:
    env = put_main(tmp_path / "e", [(b"text", b"caf\xc3\xa9"), (b"\xff\x00", b"\x80")])
    res = run("dump", "--format", "jsonl", str(env))
    assert res.stdout.splitlines() == [
        '{"key": "text", "value": "café"}',
        '{"key_b64": "/wA=", "value_b64": "gA=="}',
    ]


def test_dump_runs_as_a_process_into_a_pipe(cli_proc, full_env: Path) -> None:
    res = cli_proc("dump", "-s", "ints", str(full_env))
    assert res.returncode == 0
    assert res.stdout == real("mdb_dump", "-s", "ints", str(full_env))


def test_closed_pipe_is_not_an_error(full_env: Path) -> None:
    import sys

    from conftest import proc_env

    p = subprocess.run(
        f"{sys.executable} -m mdb_cli dump -s plain {full_env} | head -c 10",
        shell=True,
        capture_output=True,
        env=proc_env(),
    )
    assert p.stdout == b"VERSION=3\n"
    assert b"Traceback" not in p.stderr


def test_failed_dump_leaves_no_output_file(
    run, full_env: Path, tmp_path: Path, monkeypatch
) -> None:
    from mdb_cli import engine
    from mdb_cli.commands import dump as dump_cmd

    def broken(out, records, printable):
        out.write(" 00\n")
        raise engine.get().CorruptedError(
            "mdb_cursor_get: MDB_CORRUPTED: Located page was wrong type"
        )

    monkeypatch.setattr(dump_cmd, "write_records", broken)
    out = tmp_path / "out.dump"
    res = run("dump", "-a", "-o", str(out), str(full_env))
    assert res.exit_code == 1
    assert "damaged" in res.stderr and "mdb-cli check" in res.stderr
    assert not out.exists()


def test_database_names_that_are_not_utf8(run, tmp_path: Path) -> None:
    from conftest import proc_env  # noqa: F401  (same helpers as the other tests)
    from mdb_cli import engine

    src = tmp_path / "src"
    src.mkdir()
    env = engine.get().open(str(src), max_dbs=4)
    db = env.open_db(b"caf\xe9 \xff")
    with env.begin(write=True) as txn:
        txn.put(b"k", b"v", db=db)
    env.close()
    assert run("dump", "-l", str(src)).stdout_bytes == b"caf\xe9 \xff\n"
    res = run("dump", "-a", str(src))
    assert res.stdout_bytes == real("mdb_dump", "-a", str(src))
    assert b"database=caf\xe9 \xff\n" in res.stdout_bytes
    dst = tmp_path / "dst"
    assert run("load", str(dst), input=res.stdout_bytes).exit_code == 0
    assert real("mdb_dump", "-a", str(dst)) == res.stdout_bytes
    stat = run("stat", "-a", str(src))
    assert stat.stdout_bytes == real("mdb_stat", "-a", str(src))
