"""The root group (cli/mdb_cli/main.py), the engine import and the error contract."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import put_main
from mdb_cli import __version__, engine
from mdb_cli.main import COMMANDS


def test_version(run) -> None:
    res = run("--version")
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines[0] == f"mdb-cli {__version__}"
    import mdb

    assert lines[1] == f"engine: mdb {mdb.__version__} (LMDB API 0.9.{mdb.version()[2]})"


def test_help_lists_commands_and_exit_codes(run) -> None:
    out = run("--help").stdout
    for name in COMMANDS:
        assert f"  {name} " in out
    assert "Exit codes:" in out and "2  usage error" in out
    assert "MDB_CLI_VERBOSE" in out and "MDB_CLI_ENGINE" not in out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help_with_examples(run, name: str) -> None:
    res = run(name, "--help")
    assert res.exit_code == 0
    assert "Examples:" in res.stdout
    assert f"mdb-cli {name}" in res.stdout


def test_unknown_command_is_usage(run) -> None:
    res = run("frobnicate")
    assert res.exit_code == 2
    assert "No such command" in res.stderr


def test_commands_load_lazily() -> None:
    import subprocess

    from conftest import proc_env

    code = (
        "import sys; from mdb_cli.main import cli; "
        "cli.main(['dump', '--help'], standalone_mode=False); "
        "print(sorted(m for m in sys.modules if m.startswith('mdb_cli.commands.')))"
        " ; print('lmdb' in sys.modules or 'mdb' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=proc_env()
    ).stdout.splitlines()
    assert out[-2] == "['mdb_cli.commands.dump']"
    assert out[-1] == "False"


def test_engine_is_mdb_whatever_the_environment_says(monkeypatch, run, tmp_path: Path) -> None:
    # the old MDB_CLI_ENGINE switch (py-lmdb) is gone: the variable changes nothing
    import mdb

    env = put_main(tmp_path / "e", [(b"k", b"v")])
    monkeypatch.setattr(engine, "_engine", None)
    monkeypatch.setenv("MDB_CLI_ENGINE", "lmdb")
    res = run("dump", str(env))
    assert res.exit_code == 0, res.stderr
    assert engine.get() is mdb


def test_missing_mdb_is_one_clear_line(monkeypatch, run, tmp_path: Path) -> None:
    env = put_main(tmp_path / "e", [(b"k", b"v")])
    monkeypatch.setattr(engine, "_engine", None)
    monkeypatch.setitem(sys.modules, "mdb", None)  # import mdb -> ImportError
    res = run("dump", str(env))
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1
    assert "the mdb package cannot be imported" in res.stderr
    assert "pip install ." in res.stderr


def test_unexpected_error_is_one_line_and_v_shows_traceback(monkeypatch, run, tmp_path) -> None:
    from mdb_cli.commands import stat as stat_cmd

    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(stat_cmd, "_collect", boom)
    env = put_main(tmp_path / "e", [(b"k", b"v")])
    res = run("stat", str(env))
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1
    assert "internal error: RuntimeError: kaboom" in res.stderr
    assert "run again with -v" in res.stderr
    res = run("-v", "stat", str(env))
    assert "Traceback" in res.stderr and "kaboom" in res.stderr


def test_engine_error_is_translated(monkeypatch, run, tmp_path: Path) -> None:
    from mdb_cli.commands import stat as stat_cmd

    eng = engine.get()

    def full(*a, **k):
        raise eng.MapFullError("mdb_put: MDB_MAP_FULL: Environment mapsize limit reached")

    monkeypatch.setattr(stat_cmd, "_collect", full)
    env = put_main(tmp_path / "e", [(b"k", b"v")])
    res = run("stat", str(env))
    assert res.exit_code == 1
    assert res.stderr.startswith("mdb-cli: error: ")
    assert "the map is full" in res.stderr and "MDB_MAP_FULL" in res.stderr


def test_locked_environment(monkeypatch, run, tmp_path: Path) -> None:
    from mdb_cli import context

    eng = engine.get()
    env = put_main(tmp_path / "e", [(b"k", b"v")])

    def locked(*a, **k):
        raise eng.LockError("mdb_env_open: Resource temporarily unavailable")

    monkeypatch.setattr(context.engine.get(), "open", locked)
    res = run("stat", str(env))
    assert res.exit_code == 1
    assert "is locked by another process" in res.stderr


def test_python_dash_m(cli_proc) -> None:
    res = cli_proc("--version")
    assert res.returncode == 0 and res.stdout.startswith(b"mdb-cli ")
