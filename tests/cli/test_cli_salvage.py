"""``mdb-cli dump --salvage`` (issue 13 part 4): what a damaged file still holds, in mdb_dump's
format, with what was lost reported on stderr and a non-zero exit.

The damage is made here, on files written by the engine: a zeroed leaf page (the issue's
case, 50,000 records), a zeroed branch page, a zeroed page of a named DUPSORT database,
the newest meta page zeroed (the older one is walked), both metas gone, a foreign file.
Every record of the pages left intact must come back, byte for byte; nothing that was not
in the file may appear; the output must load back with real mdb_load.
"""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import fill, put_main, real

PSIZE = 4096
P_BRANCH, P_LEAF, P_OVERFLOW, P_META, P_LEAF2 = 0x01, 0x02, 0x04, 0x08, 0x20


def pages(path: Path) -> bytes:
    return (path / "data.mdb").read_bytes()


def page_flags(buf: bytes, pgno: int) -> int:
    return struct.unpack_from("<H", buf, pgno * PSIZE + 10)[0]


def leaf_keys(buf: bytes, pgno: int) -> list[bytes]:
    """The keys of a plain leaf page (the node layout of LMDB 0.9)."""
    base = pgno * PSIZE
    lower = struct.unpack_from("<H", buf, base + 12)[0]
    out = []
    for i in range((lower - 16) // 2):
        off = struct.unpack_from("<H", buf, base + 16 + 2 * i)[0]
        ksize = struct.unpack_from("<H", buf, base + off + 6)[0]
        out.append(buf[base + off + 8 : base + off + 8 + ksize])
    return out


def zero_page(path: Path, pgno: int) -> None:
    with open(path / "data.mdb", "r+b") as f:
        f.seek(pgno * PSIZE)
        f.write(b"\0" * PSIZE)


def parse_dump(text: bytes) -> dict[bytes | None, list[tuple[bytes, bytes]]]:
    """database name (None: main) -> records, from mdb_dump text (hex form)."""
    out: dict[bytes | None, list[tuple[bytes, bytes]]] = {}
    name: bytes | None = None
    in_data = False
    pending: bytes | None = None
    for line in text.splitlines():
        if not in_data:
            if line.startswith(b"database="):
                name = line[len(b"database=") :]
            elif line == b"HEADER=END":
                in_data, pending = True, None
                out.setdefault(name, [])
            continue
        if line == b"DATA=END":
            in_data, name = False, None
            continue
        if pending is None:
            pending = bytes.fromhex(line[1:].decode())
        else:
            out[name].append((pending, bytes.fromhex(line[1:].decode())))
            pending = None
    return out


def salvage(cli_proc, path: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return cli_proc("dump", "--salvage", *extra, str(path))


@pytest.fixture
def big_main(tmp_path: Path) -> tuple[Path, list[tuple[bytes, bytes]]]:
    recs = [(b"key%08d" % i, b"value-%d-" % i + b"x" * 40) for i in range(50_000)]
    return put_main(tmp_path / "big", recs, map_size=256 << 20), recs


def test_zeroed_leaf_every_other_record_comes_back(cli_proc, big_main) -> None:
    path, recs = big_main
    buf = pages(path)
    leaves = [p for p in range(2, len(buf) // PSIZE) if page_flags(buf, p) == P_LEAF]
    victim = leaves[len(leaves) // 2]
    lost = set(leaf_keys(buf, victim))
    assert 20 < len(lost) < 100
    zero_page(path, victim)
    res = salvage(cli_proc, path)
    assert res.returncode == 1, res.stderr
    got = parse_dump(res.stdout)[None]
    want = [(k, v) for k, v in recs if k not in lost]
    assert got == want
    err = res.stderr.decode()
    assert f"page {victim}" in err
    assert f"about {len(lost)} lost" in err
    # the engine's checker says so too, and points at --salvage
    chk = cli_proc("check", str(path))
    assert chk.returncode != 0
    assert b"--salvage" in chk.stderr


def test_zeroed_branch_page_loses_only_its_subtree(cli_proc, big_main) -> None:
    path, recs = big_main
    buf = pages(path)
    branches = [p for p in range(2, len(buf) // PSIZE) if page_flags(buf, p) == P_BRANCH]
    assert len(branches) >= 3  # root + children: 50,000 records need depth 3
    zero_page(path, branches[0])
    res = salvage(cli_proc, path)
    assert res.returncode == 1
    got = parse_dump(res.stdout).get(None, [])
    have = dict(recs)
    assert all(have.get(k) == v for k, v in got), "a record that was not in the file"
    assert got == sorted(got)
    assert b"lost" in res.stderr


def test_intact_file_is_plain_dump_and_exit_0(cli_proc, tmp_path: Path, data) -> None:
    path = fill(tmp_path / "ok", data)
    plain = cli_proc("dump", "-a", str(path))
    res = salvage(cli_proc, path, "-a")
    assert res.returncode == 0, res.stderr
    assert res.stdout == plain.stdout
    assert res.stderr == b""


def test_damage_in_a_named_dupsort_database(cli_proc, tmp_path: Path, data) -> None:
    path = fill(tmp_path / "named", data)
    before = parse_dump(cli_proc("dump", "-a", str(path)).stdout)
    buf = pages(path)
    # a leaf of the dupsort database: a leaf page holding one of its keys
    dup_keys = {k for k in data.dups}
    victim = next(
        p
        for p in range(2, len(buf) // PSIZE)
        if page_flags(buf, p) == P_LEAF and dup_keys & set(leaf_keys(buf, p))
    )
    zero_page(path, victim)
    res = salvage(cli_proc, path, "-a")
    assert res.returncode == 1
    after = parse_dump(res.stdout)
    # every other database comes back whole; the damaged one partly, nothing invented
    for name, recs in before.items():
        if name == b"dups":
            assert set(after.get(name, [])) <= set(recs)
            assert len(after.get(name, [])) < len(recs)
        else:
            assert after[name] == recs, name
    # what came back loads with real mdb_load
    out = tmp_path / "reloaded"
    out.mkdir()
    real(
        "mdb_load",
        "-f",
        "/dev/stdin",
        "-s",
        "plain",
        str(out),
        input=_section(res.stdout, b"plain"),
    )
    assert parse_dump(real("mdb_dump", "-s", "plain", str(out)))[b"plain"] == before[b"plain"]


def _section(dump: bytes, name: bytes) -> bytes:
    """One database's section of a dump -a output."""
    lines = dump.splitlines(keepends=True)
    out: list[bytes] = []
    take = False
    header: list[bytes] = []
    for line in lines:
        if line.startswith(b"VERSION="):
            header = [line]
            take = False
            continue
        if not take and line.strip() == b"database=" + name:
            take = True
            out.extend(header)
        if take:
            out.append(line)
            if line.strip() == b"DATA=END":
                break
        elif header and line != b"HEADER=END\n":
            header.append(line)
    return b"".join(out)


def test_newest_meta_zeroed_the_older_snapshot_is_read(cli_proc, tmp_path: Path) -> None:
    path = put_main(tmp_path / "m", [(b"a%03d" % i, b"v1") for i in range(100)])
    put_main(path, [(b"b%03d" % i, b"v2") for i in range(100)])  # a second commit
    buf = pages(path)
    txn = [struct.unpack_from("<Q", buf, p * PSIZE + 16 + 128)[0] for p in (0, 1)]
    newest = 0 if txn[0] > txn[1] else 1
    zero_page(path, newest)
    res = salvage(cli_proc, path)
    got = parse_dump(res.stdout)[None]
    keys = {k for k, _ in got}
    assert {b"a%03d" % i for i in range(100)} <= keys
    assert all(v in (b"v1", b"v2") for _, v in got)


def test_no_usable_meta_or_a_foreign_file_is_one_readable_error(cli_proc, tmp_path: Path) -> None:
    for name, content in (
        ("zeros", b"\0" * (PSIZE * 4)),
        ("text", b"this is not a database\n" * 400),
        ("empty", b""),
    ):
        d = tmp_path / name
        d.mkdir()
        (d / "data.mdb").write_bytes(content)
        res = salvage(cli_proc, d)
        assert res.returncode not in (0, 1) or res.stdout.strip() == b"", name
        assert res.returncode != 0, name
        err = res.stderr.decode().strip()
        assert err and "Traceback" not in err, (name, err)
        assert len(err.splitlines()) <= 3, (name, err)


def test_missing_environment(cli_proc, tmp_path: Path) -> None:
    res = salvage(cli_proc, tmp_path / "nothing-here")
    assert res.returncode != 0
    assert b"Traceback" not in res.stderr
    assert not os.path.exists(tmp_path / "nothing-here" / "data.mdb")
