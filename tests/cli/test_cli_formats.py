"""Unit tests of the text formats (cli/mdb_cli/formats.py)."""

from __future__ import annotations

import io

import pytest

from mdb_cli.formats import (
    DumpReader,
    InputError,
    dump_header,
    encode_print,
    jsonl_record,
    read_jsonl,
    read_text_pairs,
)


def test_print_encoding() -> None:
    assert encode_print(b"ab ~") == "ab ~"
    assert encode_print(b"\x00\n\x7f\xff") == "\\00\\0a\\7f\\ff"
    assert encode_print(b"a\\b") == "a\\\\b"


def test_header_flag_order() -> None:
    flags = {
        "reverse_dup": True,
        "dupsort": True,
        "integerkey": True,
        "reverse_key": True,
        "dupfixed": True,
        "integerdup": True,
    }
    text = dump_header(printable=False, name="x", mapsize=1, maxreaders=2, flags=flags, psize=3)
    assert text.splitlines() == [
        "VERSION=3",
        "format=bytevalue",
        "database=x",
        "type=btree",
        "mapsize=1",
        "maxreaders=2",
        "duplicates=1",
        "reversekey=1",
        "dupsort=1",
        "integerkey=1",
        "dupfixed=1",
        "integerdup=1",
        "reversedup=1",
        "db_pagesize=3",
        "HEADER=END",
    ]


def test_reader_round_trip_both_formats() -> None:
    items = [(b"\x00\\\n", b""), (b"k", b"\xff" * 3)]
    for printable in (False, True):
        from mdb_cli.formats import write_records

        out = io.StringIO()
        out.write(
            dump_header(
                printable=printable, name=None, mapsize=1, maxreaders=1, flags={}, psize=4096
            )
        )
        write_records(out, iter(items), printable)
        r = DumpReader(io.BytesIO(out.getvalue().encode()), "x")
        sec = r.next_section()
        assert sec is not None and sec.printable is printable
        assert [(k, v) for _n, k, v in r.records()] == items
        assert r.next_section() is None


def test_unknown_header_warns() -> None:
    seen: list[str] = []
    text = b"VERSION=3\nfuture=1\nHEADER=END\nDATA=END\n"
    r = DumpReader(io.BytesIO(text), "f", warn=seen.append)
    r.next_section()
    assert seen == ["f, line 2: unknown header 'future' ignored"]


def test_text_pairs() -> None:
    got = list(read_text_pairs(io.BytesIO(b"a\nb\\\\c\n\\41\n\n"), "t"))
    assert got == [(2, b"a", b"b\\c"), (4, b"A", b"")]
    with pytest.raises(InputError, match="t, line 1: unexpected end"):
        list(read_text_pairs(io.BytesIO(b"lonely\n"), "t"))


def test_jsonl_record_round_trip() -> None:
    for key, value in [(b"k", b"v"), (b"\xff", b"\x00"), ("é".encode(), b"")]:
        line = jsonl_record(key, value).encode()
        assert list(read_jsonl(io.BytesIO(line), "j")) == [(1, key, value)]
