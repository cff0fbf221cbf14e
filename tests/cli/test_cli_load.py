"""mdb-cli load (cli/mdb_cli/commands/load.py): formats, batches, errors, round trips."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import proc_env, put_main, read_db, real
from mdb_cli import engine
from support.childproc import run_on_tty

DBS = ["plain", "dups", "ints", "fixed"]


# --- interoperability with LMDB's own tools -------------------------------------------


@pytest.mark.parametrize("name", DBS)
def test_real_mdb_dump_output_loads(run, full_env: Path, tmp_path: Path, name: str) -> None:
    text = real("mdb_dump", "-s", name, str(full_env))
    dst = tmp_path / "dst"
    res = run("load", str(dst), input=text)
    assert res.exit_code == 0, res.stderr
    assert real("mdb_dump", "-s", name, str(dst)) == text


@pytest.mark.parametrize("opts", [["-a"], ["-a", "-p"]], ids=["all", "all-print"])
def test_real_mdb_dump_all_loads(run, full_env: Path, printable_env: Path, tmp_path: Path, opts):
    # print format only for data without backslashes: mdb_dump 0.9.24 leaves them bare.
    src = printable_env if "-p" in opts else full_env
    text = real("mdb_dump", *opts, str(src))
    dst = tmp_path / "dst"
    res = run("load", "-f", "-", str(dst), input=text)
    assert res.exit_code == 0, res.stderr
    assert real("mdb_dump", "-a", str(dst)) == real("mdb_dump", "-a", str(src))


def test_bare_backslash_from_old_mdb_dump_is_explained(run, tmp_path: Path) -> None:
    src = put_main(tmp_path / "src", [(b"a\\zz", b"v")])
    text = real("mdb_dump", "-p", str(src))
    assert b" a\\zz\n" in text  # LMDB 0.9.24 writes the backslash bare
    res = run("load", str(tmp_path / "dst"), input=text)
    assert res.exit_code == 1
    assert "line 8" in res.stderr and "bare backslash" in res.stderr


@pytest.mark.parametrize("name", DBS)
def test_our_dump_loads_with_real_mdb_load(run, full_env: Path, tmp_path: Path, name: str) -> None:
    ours = run("dump", "-s", name, str(full_env)).stdout_bytes
    dst = tmp_path / "dst"
    dst.mkdir()
    real("mdb_load", str(dst), input=ours)
    assert real("mdb_dump", "-s", name, str(dst)) == ours


def test_our_print_dump_loads_with_real_mdb_load(run, printable_env: Path, tmp_path: Path) -> None:
    ours = run("dump", "-p", "-a", str(printable_env)).stdout_bytes
    dst = tmp_path / "dst"
    dst.mkdir()
    real("mdb_load", str(dst), input=ours)
    assert real("mdb_dump", "-a", str(dst)) == real("mdb_dump", "-a", str(printable_env))


def test_real_mdb_load_misreads_backslash_after_hex_escape(run, tmp_path: Path) -> None:
    """Why binary data should travel in bytevalue format between LMDB's tools and ours.

    LMDB 0.9.24's mdb_load turns the print item ``\\0f\\\\`` (byte 0x0f, then a
    backslash) into 0f 30; we read it as written. If a newer mdb_load gets it right,
    this test fails and docs/cli.md should drop the warning.
    """
    src = put_main(tmp_path / "src", [(b"k", b"\x0f\\")])
    text = run("dump", "-p", str(src)).stdout_bytes
    assert b" \\0f\\\\\n" in text
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    theirs.mkdir()
    real("mdb_load", str(theirs), input=text)
    assert run("load", str(ours), input=text).exit_code == 0
    assert read_db(ours) == [(b"k", b"\x0f\\")]
    assert read_db(theirs) != [(b"k", b"\x0f\\")]


@pytest.mark.parametrize("fmt", [[], ["-p"]], ids=["bytevalue", "print"])
def test_round_trip_processes_byte_identical(cli_proc, full_env: Path, tmp_path: Path, fmt) -> None:
    """dump -> load -> dump with real processes, every kind of database at once."""
    first = cli_proc("dump", "-a", *fmt, str(full_env))
    assert first.returncode == 0, first.stderr
    loaded = cli_proc("load", str(tmp_path / "copy"), input=first.stdout)
    assert loaded.returncode == 0, loaded.stderr
    second = cli_proc("dump", "-a", *fmt, str(tmp_path / "copy"))
    assert second.stdout == first.stdout
    main1 = cli_proc("dump", *fmt, str(full_env)).stdout
    # The main database holds the named databases' records; only the plain record moves.
    assert b"7e6d61696e2d7265636f7264" in main1 or b"~main-record" in main1


def test_round_trip_main_database(cli_proc, tmp_path: Path) -> None:
    items = [
        (bytes([i % 200, 0, 255 - i % 200, i // 200]) + b"\n\\", bytes(range(i % 256)) * 3)
        for i in range(1, 400)
    ]
    src = put_main(tmp_path / "src", items)
    first = cli_proc("dump", str(src)).stdout
    assert cli_proc("load", "-f", "-", str(tmp_path / "dst"), input=first).returncode == 0
    assert cli_proc("dump", str(tmp_path / "dst")).stdout == first


def test_text_format_matches_mdb_load_T(run, tmp_path: Path) -> None:
    text = b"plain\nvalue\nback\\\\slash\nnew\\0aline\n leading\nspace \nbin\\00\\ff\n\n"
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    theirs.mkdir()
    real("mdb_load", "-T", str(theirs), input=text)
    res = run("load", "-T", str(ours), input=text)
    assert res.exit_code == 0, res.stderr
    assert real("mdb_dump", str(ours)) == real("mdb_dump", str(theirs))
    assert dict(read_db(ours))[b"back\\slash"] == b"new\nline"


# --- JSON lines ------------------------------------------------------------------------


def test_jsonl_text_and_base64(run, tmp_path: Path) -> None:
    lines = [
        {"key": "b", "value": "café"},
        {"key_b64": base64.b64encode(b"\x00\xff").decode(), "value": ""},
        {"key": "a", "value_b64": base64.b64encode(b"\x80\x81").decode(), "extra": 1},
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    res = run("load", "--format", "jsonl", "-s", "j", "-f", str(src), str(tmp_path / "e"))
    assert res.exit_code == 0, res.stderr
    assert read_db(tmp_path / "e", b"j") == [
        (b"\x00\xff", b""),
        (b"a", b"\x80\x81"),
        (b"b", "café".encode()),
    ]


def test_jsonl_round_trip_through_dump(run, full_env: Path, tmp_path: Path) -> None:
    out = run("dump", "--format", "jsonl", "-s", "dups", str(full_env)).stdout_bytes
    res = run(
        "load",
        "--format",
        "jsonl",
        "--db-flag",
        "dupsort",
        "-s",
        "dups",
        str(tmp_path / "e"),
        input=out,
    )
    assert res.exit_code == 0, res.stderr
    assert read_db(tmp_path / "e", b"dups") == read_db(full_env, b"dups")


@pytest.mark.parametrize(
    "line, expected",
    [
        (b"not json", "not valid JSON"),
        (b'["key", "value"]', "expected a JSON object"),
        (b'{"value": "v"}', 'expected "key" or "key_b64"'),
        (b'{"key": "k"}', 'expected "value" or "value_b64"'),
        (b'{"key": 5, "value": "v"}', '"key" must be a string'),
        (b'{"key_b64": "***", "value": "v"}', "not valid base64"),
        (b'{"key": "k", "key_b64": "aw==", "value": "v"}', "not both"),
        (b'{"key": "", "value": "v"}', "keys must be 1 to"),
        (json.dumps({"key": "k" * 600, "value": "v"}).encode(), "a key of 600 bytes"),
    ],
)
def test_jsonl_errors_name_file_and_line(run, tmp_path: Path, line: bytes, expected: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"key": "a", "value": "1"}\n' + line + b"\n")
    res = run("load", "--format", "jsonl", "-f", str(src), str(tmp_path / "e"))
    assert res.exit_code == 1
    assert f"{src}, line 2: " in res.stderr
    assert expected in res.stderr
    assert res.stderr.count("\n") == 1
    assert "Traceback" not in res.stderr


# --- bad dump input --------------------------------------------------------------------

HEADER = b"VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n"


@pytest.mark.parametrize(
    "text, line, expected",
    [
        (b"VERSION=2\n", 1, "expected VERSION=3"),
        (b"VERSION=3\nformat=weird\n", 2, "unknown format"),
        (b"VERSION=3\ntype=hash\n", 2, "expected btree"),
        (b"VERSION=3\nformat=print\n", 2, "expected HEADER=END"),
        (HEADER + b" 61\n 62\n 6g\n 63\nDATA=END\n", 7, "hex digits for the key"),
        (HEADER + b" 61\n 6\n", 6, "hex digits for the value"),
        (HEADER + b" 61\n 62\n", 6, "expected DATA=END"),
        (HEADER + b" 61\n", 5, "a key without a value"),
        (HEADER + b"61\n 62\n", 5, "expected a key line"),
        (HEADER + b" 61\n62\n", 6, "expected a value line"),
        (HEADER.replace(b"bytevalue", b"print") + b" a\\zz\n b\nDATA=END\n", 5, "bad escape"),
    ],
)
def test_dump_errors_name_line(run, tmp_path: Path, text: bytes, line: int, expected: str) -> None:
    src = tmp_path / "bad.dump"
    src.write_bytes(text)
    res = run("load", "-f", str(src), str(tmp_path / "e"))
    assert res.exit_code == 1
    assert f"bad input: {src}, line {line}: " in res.stderr, res.stderr
    assert expected in res.stderr


def test_failed_batch_commits_nothing(run, tmp_path: Path) -> None:
    good = [json.dumps({"key": f"k{i:04d}", "value": str(i)}) for i in range(25)]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(good + ["{broken"] + good) + "\n")
    env = tmp_path / "e"
    res = run("load", "--format", "jsonl", "--batch-size", "10", "-f", str(src), str(env))
    assert res.exit_code == 1
    assert "line 26" in res.stderr
    assert "20 records committed" in res.stderr
    keys = [k for k, _v in read_db(env)]
    assert keys == [f"k{i:04d}".encode() for i in range(20)]


def test_batch_size_zero_is_all_or_nothing(run, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"key": "a", "value": "1"}\n' * 5 + "oops\n")
    env = tmp_path / "e"
    res = run("load", "--format", "jsonl", "--batch-size", "0", "-f", str(src), str(env))
    assert res.exit_code == 1
    assert read_db(env) == []


def test_engine_error_in_a_batch_rolls_it_back(run, tmp_path: Path) -> None:
    # A key that is a named database's record cannot be overwritten with plain data.
    env = tmp_path / "e"
    run("load", "--format", "jsonl", "-s", "sub", str(env), input=b'{"key":"x","value":"y"}\n')
    lines = b'{"key":"a","value":"1"}\n{"key":"sub","value":"2"}\n'
    res = run("load", "--format", "jsonl", str(env), input=lines)
    assert res.exit_code == 1
    assert "lines 1-2" in res.stderr and "nothing of that batch was committed" in res.stderr
    assert read_db(env) == [(b"sub", read_db(env)[0][1])]


# --- options -----------------------------------------------------------------------------


def test_no_overwrite(run, tmp_path: Path) -> None:
    env = put_main(tmp_path / "e", [(b"a", b"old"), (b"c", b"old")])
    lines = b'{"key":"a","value":"new"}\n{"key":"b","value":"new"}\n{"key":"c","value":"new"}\n'
    res = run("load", "--format", "jsonl", "-N", str(env), input=lines)
    assert res.exit_code == 0, res.stderr
    assert "2 skipped" in res.stderr
    assert read_db(env) == [(b"a", b"old"), (b"b", b"new"), (b"c", b"old")]
    res = run("load", "--format", "jsonl", str(env), input=lines)
    assert read_db(env) == [(b"a", b"new"), (b"b", b"new"), (b"c", b"new")]


def test_no_overwrite_dupsort_skips_existing_pairs(run, tmp_path: Path) -> None:
    env = tmp_path / "e"
    args = ("load", "--format", "jsonl", "--db-flag", "dupsort", "-s", "d", str(env))
    run(*args, input=b'{"key":"k","value":"1"}\n')
    res = run(
        *args[:1], "-N", *args[1:], input=b'{"key":"k","value":"1"}\n{"key":"k","value":"2"}\n'
    )
    assert res.exit_code == 0, res.stderr
    assert read_db(env, b"d") == [(b"k", b"1"), (b"k", b"2")]


def test_append_mode_for_sorted_input_and_not_for_unsorted(run, tmp_path: Path) -> None:
    sorted_lines = b"".join(b'{"key":"k%04d","value":"v"}\n' % i for i in range(100))
    res = run(
        "load", "--format", "jsonl", "--batch-size", "30", str(tmp_path / "a"), input=sorted_lines
    )
    assert "append mode" in res.stderr
    unsorted = b"".join(b'{"key":"k%04d","value":"v"}\n' % ((i * 37) % 100) for i in range(100))
    res = run(
        "load", "--format", "jsonl", "--batch-size", "30", str(tmp_path / "b"), input=unsorted
    )
    assert "insert mode" in res.stderr
    assert read_db(tmp_path / "a") == read_db(tmp_path / "b")
    # Appending after existing data: above the last key stays in append mode...
    more = b"".join(b'{"key":"k%04d","value":"w"}\n' % i for i in range(100, 150))
    assert "append mode" in run("load", "--format", "jsonl", str(tmp_path / "a"), input=more).stderr
    # ...below it does not, and the data is still right.
    res = run("load", "--format", "jsonl", str(tmp_path / "a"), input=b'{"key":"a","value":"x"}\n')
    assert "insert mode" in res.stderr
    assert len(read_db(tmp_path / "a")) == 151


def load_integerkey(run: Any, tmp_path: Path, lines: bytes) -> Any:
    """`load --format jsonl --db-flag integerkey -s i` of lines into tmp_path/e."""
    return run(
        "load",
        "--format",
        "jsonl",
        "--db-flag",
        "integerkey",
        "-s",
        "i",
        str(tmp_path / "e"),
        input=lines,
    )


def test_integerkey_append_uses_native_order(run, tmp_path: Path) -> None:
    keys = [i.to_bytes(8, sys.byteorder) for i in (1, 2, 256, 65536, 1 << 40)]
    lines = b"".join(
        json.dumps({"key_b64": base64.b64encode(k).decode(), "value": "v"}).encode() + b"\n"
        for k in keys
    )
    res = load_integerkey(run, tmp_path, lines)
    assert res.exit_code == 0, res.stderr
    # one batch into an empty database: bulk-loaded (on the mdb core), else appended
    assert ("bulk mode" if engine.on_core() else "append mode") in res.stderr
    assert [k for k, _ in read_db(tmp_path / "e", b"i")] == keys


def test_integerkey_rejects_odd_sizes(run, tmp_path: Path) -> None:
    res = load_integerkey(run, tmp_path, b'{"key":"abc","value":"v"}\n')
    assert res.exit_code == 1
    assert "line 1" in res.stderr and "4 or 8 bytes" in res.stderr


def test_map_grows_when_full(run, tmp_path: Path) -> None:
    lines = b"".join(b'{"key":"k%05d","value":"%s"}\n' % (i, b"x" * 500) for i in range(3000))
    res = run("load", "--format", "jsonl", "--map-size", "256K", str(tmp_path / "e"), input=lines)
    assert res.exit_code == 0, res.stderr
    assert len(read_db(tmp_path / "e")) == 3000


def load_into_256k(run: Any, tmp_path: Path, *opts: str, verbose: bool = False) -> Any:
    """3,000 JSON records of 500-byte values loaded into tmp_path/e with a 256 KiB map."""
    lines = b"".join(b'{"key":"k%05d","value":"%s"}\n' % (i, b"x" * 500) for i in range(3000))
    args = ["-v"] if verbose else []
    args += ["load", "--format", "jsonl", "--map-size", "256K", *opts, str(tmp_path / "e")]
    return run(*args, input=lines)


@pytest.mark.skipif(not engine.on_core(), reason="a growing map needs the mdb core")
def test_mdb_map_grows_in_place_without_retrying(run, tmp_path: Path) -> None:
    # 3,000 records of 500 bytes in one batch into a 256 KiB map: no map-full retry (the
    # debug log would say "map full at"), and the grown size is in the file
    res = load_into_256k(run, tmp_path, "--batch-size", "0", verbose=True)
    assert res.exit_code == 0, res.stderr
    assert "map full at" not in res.stderr
    assert len(read_db(tmp_path / "e")) == 3000
    stat = real("mdb_stat", "-e", str(tmp_path / "e")).decode()
    size = int(stat.split("Map size: ")[1].split()[0])
    assert size > 256 * 1024


def test_map_full_without_grow_says_what_size_to_ask_for(run, tmp_path: Path) -> None:
    res = load_into_256k(run, tmp_path, "--no-grow")
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1
    assert "the map is full at 262144 bytes" in res.stderr
    assert "nothing of that batch was committed" in res.stderr
    assert "load again with --map-size 524288 (or --grow)" in res.stderr


@pytest.mark.skipif(not engine.on_core(), reason="a growing map needs the mdb core")
def test_map_full_at_the_grow_bound_stops_the_load(run, tmp_path: Path, monkeypatch) -> None:
    # no doubling and retrying any more: a map full at the bound ends the load
    from mdb_cli.commands import load as load_cmd

    monkeypatch.setattr(load_cmd, "GROW_BOUND", 256 * 1024)
    res = load_into_256k(run, tmp_path, "--batch-size", "0")
    assert res.exit_code == 1
    assert "the map is full at 262144 bytes" in res.stderr
    assert "--grow lets it grow to 256.0 KiB at most" in res.stderr
    assert not (tmp_path / "e" / "data.mdb").exists() or read_db(tmp_path / "e") == []


def test_header_database_wins_over_s_like_mdb_load(run, full_env: Path, tmp_path: Path) -> None:
    text = real("mdb_dump", "-s", "ints", str(full_env))
    res = run("load", "-s", "other", str(tmp_path / "e"), input=text)
    assert res.exit_code == 0
    assert "wins over -s 'other'" in res.stderr
    assert run("dump", "-l", str(tmp_path / "e")).stdout == "ints\n"


def test_usage_errors(run, tmp_path: Path) -> None:
    assert run("load", "-T", "--format", "jsonl", str(tmp_path / "e")).exit_code == 2
    assert run("load", "--db-flag", "dupsort", str(tmp_path / "e")).exit_code == 2
    assert run("load", "--map-size", "lots", str(tmp_path / "e")).exit_code == 2
    res = run("load", "-f", str(tmp_path / "missing"), str(tmp_path / "e"))
    assert res.exit_code == 1 and "cannot read the input" in res.stderr


def test_help_says_what_a_partial_load_leaves(run) -> None:
    out = " ".join(run("load", "--help").stdout.split())
    assert "stay committed" in out and "nothing of the failing batch" in out


# --- progress ------------------------------------------------------------------------------


def _run_on_tty(args: list[str]) -> tuple[int, bytes]:
    """Run mdb-cli with stderr on a pseudo-terminal; return (exit code, what it showed)."""
    return run_on_tty([sys.executable, "-m", "mdb_cli", *args], env=proc_env())


def test_progress_bar_on_a_terminal_only(run, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(b'{"key":"k%06d","value":"v"}\n' % i for i in range(20000)))
    code, shown = _run_on_tty(
        ["load", "--format", "jsonl", "--batch-size", "1000", "-f", str(src), str(tmp_path / "tty")]
    )
    assert code == 0
    assert b"items/s" in shown and b"loading" in shown and b"100%" in shown
    res = run("load", "--format", "jsonl", "-f", str(src), str(tmp_path / "pipe"))
    assert "items/s" not in res.stderr


def test_header_maxreaders_and_mapsize_carry_over(cli_proc, tmp_path: Path) -> None:
    from mdb_cli import engine

    src = tmp_path / "src"
    src.mkdir()
    env = engine.get().open(str(src), map_size=3 << 20, max_readers=200)
    with env.begin(write=True) as txn:
        txn.put(b"k", b"v")
    env.close()
    first = cli_proc("dump", str(src)).stdout
    assert b"mapsize=3145728\nmaxreaders=200\n" in first
    assert cli_proc("load", str(tmp_path / "dst"), input=first).returncode == 0
    assert cli_proc("dump", str(tmp_path / "dst")).stdout == first


def test_load_into_a_file_without_n(run, tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_bytes(b"")
    res = run("load", "--format", "jsonl", str(f), input=b'{"key":"a","value":"b"}\n')
    assert res.exit_code == 1
    assert "use -n" in res.stderr


def test_nosubdir_load(run, tmp_path: Path) -> None:
    f = tmp_path / "data.mdb"
    res = run("load", "-n", "--format", "jsonl", str(f), input=b'{"key":"a","value":"b"}\n')
    assert res.exit_code == 0, res.stderr
    assert read_db(f, subdir=False) == [(b"a", b"b")]


def test_interrupt_reports_what_was_committed(tmp_path: Path) -> None:
    import signal
    import time

    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mdb_cli",
            "load",
            "--format",
            "jsonl",
            "--batch-size",
            "1000",
            str(tmp_path / "e"),
        ],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=proc_env(),
    )
    assert p.stdin is not None
    # 5 full batches and half of a sixth, then the input stalls and we press Ctrl-C.
    p.stdin.write(b"".join(b'{"key":"k%07d","value":"v"}\n' % i for i in range(5500)))
    p.stdin.flush()
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert b"interrupted: 5,000 records committed in earlier batches" in err
    assert len(read_db(tmp_path / "e")) == 5000


def test_wrong_format_gets_a_hint(run, tmp_path: Path) -> None:
    res = run("load", str(tmp_path / "e"), input=b'{"key":"a","value":"b"}\n')
    assert res.exit_code == 1 and "use --format jsonl" in res.stderr
    res = run("load", str(tmp_path / "e"), input=b"key\nvalue\n")
    assert res.exit_code == 1 and "use -T" in res.stderr


@pytest.mark.skipif(not engine.on_core(), reason="bulk loading needs the mdb core")
def test_sorted_input_into_an_empty_database_is_bulk_loaded(run, tmp_path: Path) -> None:
    lines = b"".join(b'{"key":"k%05d","value":"v%d"}\n' % (i, i) for i in range(5000))
    res = run("load", "--format", "jsonl", "--batch-size", "0", str(tmp_path / "a"), input=lines)
    assert res.exit_code == 0, res.stderr
    assert "bulk mode" in res.stderr
    # batches after the first one append
    res = run("load", "--format", "jsonl", "--batch-size", "1000", str(tmp_path / "b"), input=lines)
    assert "bulk+append mode" in res.stderr
    want = [(b"k%05d" % i, b"v%d" % i) for i in range(5000)]
    assert read_db(tmp_path / "a") == want == read_db(tmp_path / "b")
    res = run("check", str(tmp_path / "a"))
    assert res.exit_code == 0, res.stdout + res.stderr
    # not empty any more: the next load does not bulk-load
    more = b'{"key":"k99999","value":"w"}\n'
    assert "append mode" in run("load", "--format", "jsonl", str(tmp_path / "a"), input=more).stderr
