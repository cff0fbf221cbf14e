"""Lint: the tables of errors written by hand agree with the one error table,
src/mdbcore/errors.def (see its comment for what is generated and what is checked).

Checked, both ways (a row missing on either side is a failure):
  * python/mdb/errors.py: ``_TABLE`` maps every X row's code and every E row's errno
    to the class the row names, and to no other code;
  * cli/mdb_cli/errors.py: ``_ADVICE`` holds exactly the rows' non-empty advice;
  * src/mdbcore/lmdb.h: its MDB_* return-code #defines are the X rows' names and values,
    and MDB_LAST_ERRCODE names the last code.

Each check is a function returning a list of mismatches, so the negative cases at the
end can show it reports an injected one.
"""

from __future__ import annotations

import errno
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

import mdb
from mdb import errors

ROOT = Path(__file__).resolve().parents[2]
ERRORS_DEF = ROOT / "src" / "mdbcore" / "errors.def"
LMDB_H = ROOT / "src" / "mdbcore" / "lmdb.h"


@dataclass(frozen=True)
class Row:
    kind: str  # "X" (an LMDB return code) or "E" (an errno)
    name: str  # MDB_... or E...
    code: int
    text: str  # mdb_strerror's text after "NAME: " ("" for E rows)
    pyclass: str
    advice: str


_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(-?\w+)|([(),]))')


def _args(src: str, pos: int) -> tuple[list[str], int]:
    """The arguments of the call whose "(" is at ``pos``: identifiers and numbers as
    written, adjacent string literals joined and unquoted.  Returns them and the position
    after the ")"."""
    out: list[str] = []
    cur: str | None = None
    pos += 1
    while True:
        m = _TOKEN.match(src, pos)
        if not m:
            raise ValueError(f"errors.def: cannot read {src[pos : pos + 40]!r}")
        pos = m.end()
        lit, word, punct = m.groups()
        if lit is not None:
            text = bytes(lit[1:-1], "utf-8").decode("unicode_escape")
            cur = text if cur is None else cur + text
        elif word is not None:
            if cur is not None:
                raise ValueError(f"errors.def: two values in one argument near {word!r}")
            cur = word
        elif punct in ",)":
            if cur is None:
                raise ValueError("errors.def: an empty argument")
            out.append(cur)
            cur = None
            if punct == ")":
                return out, pos
        else:
            raise ValueError("errors.def: a nested parenthesis outside a string")


def parse_errors_def(src: str) -> list[Row]:
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    rows: list[Row] = []
    pos = 0
    while True:
        m = re.compile(r"\s*(?:([XE])\(|$)").match(src, pos)
        if not m:
            raise ValueError(f"errors.def: unexpected {src[pos : pos + 40]!r}")
        if m.group(1) is None:
            return rows
        args, pos = _args(src, m.end() - 1)
        if m.group(1) == "X":
            if len(args) != 5:
                raise ValueError(f"errors.def: X needs 5 arguments, got {args}")
            name, value, text, pyclass, advice = args
            rows.append(Row("X", name, int(value), text, pyclass, advice))
        else:
            if len(args) != 3:
                raise ValueError(f"errors.def: E needs 3 arguments, got {args}")
            name, pyclass, advice = args
            rows.append(Row("E", name, getattr(errno, name), "", pyclass, advice))


def python_mismatches(rows: list[Row], table: dict[int, tuple[type, str]]) -> list[str]:
    bad = []
    for r in rows:
        got = table.get(r.code)
        if got is None:
            bad.append(f"{r.name} ({r.code}) is missing from mdb.errors._TABLE")
        elif got[0].__name__ != r.pyclass:
            bad.append(f"{r.name} ({r.code}) raises {got[0].__name__}, errors.def says {r.pyclass}")
    known = {r.code for r in rows}
    bad += [f"mdb.errors._TABLE has {c}, which errors.def lacks" for c in table if c not in known]
    return bad


def cli_mismatches(rows: list[Row], advice: dict[str, str]) -> list[str]:
    want = {r.pyclass: r.advice for r in rows if r.advice}
    bad = []
    for cls in sorted(want.keys() | advice.keys()):
        if want.get(cls) != advice.get(cls):
            bad.append(f"advice for {cls}: errors.def {want.get(cls)!r}, CLI {advice.get(cls)!r}")
    return bad


def header_mismatches(rows: list[Row], header: str) -> list[str]:
    defined = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^#define\s+(MDB_\w+)\s+\(?(-\d+)\)?\s*$", header, re.M)
    }
    want = {r.name: r.code for r in rows if r.kind == "X"}
    bad = [
        f"{name}: errors.def {want.get(name)}, lmdb.h {defined.get(name)}"
        for name in sorted(want.keys() | defined.keys())
        if want.get(name) != defined.get(name)
    ]
    last = re.search(r"^#define\s+MDB_LAST_ERRCODE\s+(\w+)", header, re.M)
    if want and (last is None or last.group(1) != max(want, key=want.__getitem__)):
        bad.append(f"MDB_LAST_ERRCODE is {last and last.group(1)}, not the last code")
    return bad


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    if not ERRORS_DEF.exists():
        pytest.skip("src/mdbcore/errors.def not in this tree")
    return parse_errors_def(ERRORS_DEF.read_text())


@pytest.fixture(scope="module")
def cli_advice() -> dict[str, str]:
    cli = str(ROOT / "cli")
    if cli not in sys.path:
        sys.path.insert(0, cli)
    from mdb_cli import errors as cli_errors

    return cli_errors._ADVICE


def test_errors_def_parses(rows):
    assert [r.kind for r in rows] == ["X"] * 20 + ["E"] * 5
    assert [r.code for r in rows if r.kind == "X"] == list(range(-30799, -30779))
    assert len({r.pyclass for r in rows}) == len(rows), "two rows name one class"


def test_python_table_agrees(rows):
    assert python_mismatches(rows, errors._TABLE) == []


def test_every_class_is_named_once(rows):
    named = {r.pyclass for r in rows}
    exported = {n for n in errors.__all__ if n != "Error"}
    assert named == exported
    for r in rows:
        cls = getattr(mdb, r.pyclass)
        assert cls is getattr(errors, r.pyclass) and issubclass(cls, mdb.Error)


def test_cli_advice_agrees(rows, cli_advice):
    assert cli_mismatches(rows, cli_advice) == []


def test_lmdb_h_codes_agree(rows):
    assert header_mismatches(rows, LMDB_H.read_text()) == []


def test_raised_class_is_the_rows(rows):
    for r in rows:
        exc = errors._from_code("mdb_test", r.code, "reason")
        assert type(exc).__name__ == r.pyclass and exc.code == r.code


# ---- negative cases: each check reports an injected mismatch ----------------------------


def _swap_class(rows, table):
    t = dict(table)
    t[-30792] = (errors.DbsFullError, "")
    return rows, t


def _drop_table_entry(rows, table):
    t = dict(table)
    del t[errno.ENOSPC]
    return rows, t


def _extra_table_code(rows, table):
    return rows, {**table, -30700: (errors.PanicError, "")}


def _new_row(rows, table):
    return [*rows, Row("X", "MDB_NEW", -30779, "new", "NewError", "")], table


@pytest.mark.parametrize(
    "inject",
    [_swap_class, _drop_table_entry, _extra_table_code, _new_row],
    ids=lambda f: f.__name__,
)
def test_python_check_catches(rows, inject):
    assert python_mismatches(*inject(rows, errors._TABLE))


@pytest.mark.parametrize("case", ["changed", "dropped", "added", "row_without_advice"])
def test_cli_check_catches(rows, cli_advice, case):
    advice = dict(cli_advice)
    if case == "changed":
        advice["MapFullError"] += "!"
    elif case == "dropped":
        del advice["DiskError"]
    elif case == "added":
        advice["TlsFullError"] = "too many environments"
    else:
        rows = [replace(r, advice="") if r.pyclass == "LockError" else r for r in rows]
    assert cli_mismatches(rows, advice)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("#define MDB_MAP_FULL (-30792)", "#define MDB_MAP_FULL (-30790)"),
        ("#define MDB_BAD_DBI (-30780)\n", ""),
        (
            "#define MDB_BAD_DBI (-30780)\n",
            "#define MDB_BAD_DBI (-30780)\n#define MDB_X (-30779)\n",
        ),
        ("#define MDB_LAST_ERRCODE MDB_BAD_DBI", "#define MDB_LAST_ERRCODE MDB_BAD_TXN"),
    ],
    ids=["value", "missing", "extra", "last"],
)
def test_header_check_catches(rows, old, new):
    header = LMDB_H.read_text()
    assert old in header
    assert header_mismatches(rows, header.replace(old, new))


@pytest.mark.parametrize(
    "bad",
    [
        'X(MDB_A, -1, "t", AError)',  # a column missing
        'X(MDB_A, -1, "t", AError, "a" b)',  # two values in one argument
        'X(MDB_A, -1, "t", AError, "a"',  # unterminated
        'Y(MDB_A, -1, "t", AError, "")',  # unknown macro
    ],
)
def test_parser_rejects(bad):
    with pytest.raises(ValueError):
        parse_errors_def(bad)


def test_parser_reads_joined_strings_and_parentheses():
    (r,) = parse_errors_def('/* c */ E(EAGAIN, LockError, "a (b, c) " /* x */ "d")\n')
    assert (r.name, r.code, r.pyclass, r.advice) == (
        "EAGAIN",
        errno.EAGAIN,
        "LockError",
        "a (b, c) d",
    )
