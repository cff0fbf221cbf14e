"""Lint: mdb.errors' table agrees with the engine's one error table
(src/mdbcore/errors.def), so a code added to the engine gets a Python class."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mdb
from mdb import errors

ERRORS_DEF = Path(__file__).resolve().parents[2] / "src" / "mdbcore" / "errors.def"


def _engine_codes() -> dict[str, int]:
    if not ERRORS_DEF.exists():
        pytest.skip("src/mdbcore/errors.def not in this tree")
    pat = re.compile(r"^X\((MDB_\w+),\s*(-?\d+),")
    return {
        m.group(1): int(m.group(2))
        for line in ERRORS_DEF.read_text().splitlines()
        if (m := pat.match(line))
    }


def test_every_engine_code_has_a_class():
    codes = _engine_codes()
    assert codes, "errors.def parsed to nothing"
    for name, code in codes.items():
        assert code in errors._TABLE, f"{name} ({code}) missing from mdb.errors._TABLE"
        cls = errors._TABLE[code][0]
        assert issubclass(cls, mdb.Error) and cls is not mdb.Error


def test_no_stale_engine_codes_in_table():
    codes = set(_engine_codes().values())
    stale = {c for c in errors._TABLE if c < 0} - codes
    assert not stale, f"codes in mdb.errors._TABLE unknown to the engine: {sorted(stale)}"


def test_classes_are_distinct():
    classes = [cls for cls, _ in errors._TABLE.values()]
    assert len(classes) == len(set(classes))
