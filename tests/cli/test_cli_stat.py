"""mdb-cli stat (cli/mdb_cli/commands/stat.py): mdb_stat's layout, and --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import real


@pytest.mark.parametrize(
    "opts", [[], ["-a"], ["-s", "dups"], ["-s", "ints"]], ids=["main", "all", "dupsort", "intkey"]
)
def test_matches_mdb_stat(run, full_env: Path, opts: list[str]) -> None:
    res = run("stat", *opts, str(full_env))
    assert res.exit_code == 0, res.stderr
    assert res.stdout_bytes == real("mdb_stat", *opts, str(full_env))


def _without_readers_used(text: bytes) -> list[bytes]:
    # "Number of readers used" is the reader table's high-water mark: it depends on
    # how many transactions the opening library itself ran, not on the file.
    return [line for line in text.splitlines() if b"Number of readers used" not in line]


def test_env_info_matches_mdb_stat(run, full_env: Path) -> None:
    res = run("stat", "-e", "-a", str(full_env))
    assert _without_readers_used(res.stdout_bytes) == _without_readers_used(
        real("mdb_stat", "-e", "-a", str(full_env))
    )


def test_readers_section_matches_mdb_stat(run, full_env: Path) -> None:
    # mdb_stat 0.9.24 exits 1 after -r even when all went well; we exit 0.
    res = run("stat", "-r", str(full_env))
    assert res.exit_code == 0
    assert res.stdout_bytes == real("mdb_stat", "-r", str(full_env), check=False)
    res = run("stat", "-rr", str(full_env))
    assert res.stdout_bytes == real("mdb_stat", "-rr", str(full_env), check=False)


def test_json(run, full_env: Path) -> None:
    res = run("stat", "-e", "-r", "-a", "--json", str(full_env))
    assert res.exit_code == 0
    report = json.loads(res.stdout)
    names = [d["name"] for d in report["databases"]]
    assert names == [None, "dups", "fixed", "ints", "plain"]
    dups = report["databases"][1]
    assert dups["entries"] == sum(len(v) for v in __import__("conftest").make_data().dups.values())
    env = report["environment"]
    assert env["page_size"] * env["max_pages"] == env["map_size"]
    assert env["pages_used"] > 2
    assert report["readers"]["readers"] == []


@pytest.mark.parametrize("opts", [["-f"], ["-ff"], ["-fff"], ["-e", "-f", "-a"]])
def test_freelist_matches_mdb_stat(run, full_env: Path, opts: list[str]) -> None:
    # Free many pages (overflow values included) so the free DB is not trivial.
    assert run("drop", "-s", "plain", str(full_env)).exit_code == 0
    assert run("drop", "-s", "ints", "--delete", str(full_env)).exit_code == 0
    res = run("stat", *opts, str(full_env))
    assert res.exit_code == 0, res.stderr
    assert _without_readers_used(res.stdout_bytes) == _without_readers_used(
        real("mdb_stat", *opts, str(full_env))
    )


def test_freelist_json(run, full_env: Path) -> None:
    assert run("drop", "-s", "plain", str(full_env)).exit_code == 0
    report = json.loads(run("stat", "-f", "--json", str(full_env)).stdout)["freelist"]
    assert report["free_pages"] == sum(len(t["pages"]) for t in report["txns"]) > 0
    assert report["entries"] == len(report["txns"])


def test_freelist_of_damaged_file_is_one_line(run, tmp_path: Path) -> None:
    from conftest import put_main

    env = put_main(tmp_path / "e", [(b"k%d" % i, b"v" * 3000) for i in range(50)])
    put_main(env, [(b"k%d" % i, b"w") for i in range(50)])  # frees the overflow pages
    text = real("mdb_stat", "-ff", str(env))
    assert b"Free pages: 0" not in text
    data = env / "data.mdb"
    raw = bytearray(data.read_bytes())
    # Break the newest meta's free DB root: its first node's offset past the page.  (A
    # broken root page header is found when the metas are judged at open: the open then
    # falls back to the older meta, whose free DB is sound -- see the end.)
    import struct

    metas = [(struct.unpack_from("<Q", raw, 4096 * m + 144)[0], m) for m in (0, 1)]
    _txn, m = max(metas)
    root = struct.unpack_from("<Q", raw, 4096 * m + 40 + 40)[0]
    sound = bytes(raw)
    struct.pack_into("<H", raw, 4096 * root + 16, 4096 + 2)
    data.write_bytes(bytes(raw))
    res = run("stat", "-f", str(env))
    assert res.exit_code == 1
    # the file opens; env.freelist()'s walker finds the bad page: one line naming it
    assert res.stderr.count("\n") == 1
    assert f"{env}: cannot read the free list: page {root}: " in res.stderr
    assert f"run 'mdb-cli check {env}'" in res.stderr
    assert run("stat", str(env)).exit_code == 0  # without -f the free DB is not read

    # the root's header broken (its lower bound past the page): the older meta is used
    raw = bytearray(sound)
    struct.pack_into("<H", raw, 4096 * root + 12, 4096 + 2)
    data.write_bytes(bytes(raw))
    res = run("stat", "-f", str(env))
    assert res.exit_code == 0
    assert f"meta page {m} is damaged" in res.stderr and "previous snapshot" in res.stderr


def test_usage_and_missing(run, full_env: Path, tmp_path: Path) -> None:
    assert run("stat", "-a", "-s", "x", str(full_env)).exit_code == 2
    res = run("stat", "-s", "nope", str(full_env))
    assert res.exit_code == 1 and "does not exist" in res.stderr
    res = run("stat", str(tmp_path / "none"))
    assert res.exit_code == 1 and "no such environment" in res.stderr
