"""Both backends expose the same API; differences only via backend_features."""

from __future__ import annotations

import inspect

import mdb

PUBLIC = {
    "Environment": [
        "begin",
        "open_db",
        "dbs",
        "close",
        "set_mapsize",
        "copy",
        "copyfd",
        "sync",
        "stat",
        "info",
        "flags",
        "path",
        "max_key_size",
        "max_readers",
        "readers",
        "reader_check",
        "check",
        "__enter__",
        "__exit__",
    ],
    "Transaction": [
        "get",
        "put",
        "putmulti",
        "replace",
        "pop",
        "delete",
        "cursor",
        "stat",
        "drop",
        "id",
        "commit",
        "abort",
        "__enter__",
        "__exit__",
    ],
    "Cursor": [
        "key",
        "value",
        "item",
        "first",
        "last",
        "next",
        "prev",
        "first_dup",
        "last_dup",
        "next_dup",
        "prev_dup",
        "next_nodup",
        "prev_nodup",
        "set_key",
        "set_key_dup",
        "set_range",
        "set_range_dup",
        "get",
        "getmulti",
        "put",
        "putmulti",
        "replace",
        "pop",
        "delete",
        "count",
        "iternext",
        "iternext_dup",
        "iternext_nodup",
        "iterprev",
        "iterprev_dup",
        "iterprev_nodup",
        "_iter_from",
        "close",
        "__enter__",
        "__exit__",
        "__iter__",
    ],
    "_Database": ["flags"],
}


def test_surface(lm):
    for cls, methods in PUBLIC.items():
        obj = getattr(lm, cls)
        for m in methods:
            assert callable(getattr(obj, m, None)), f"{lm.backend}: {cls}.{m} missing"
            assert getattr(obj, m).__doc__, f"{lm.backend}: {cls}.{m} has no docstring"


def test_backend_features_describe_differences(lm):
    f = lm.backend_features
    assert f["backend"] == lm.backend
    assert f["builtin_type_names"] == (lm.Environment.__module__ == "builtins")
    assert set(f) == {
        "backend",
        "engine",
        "check",
        "buffers_type",
        "builtin_type_names",
        "gil_released_per_record",
    }


def test_module_api():
    assert mdb.backend in mdb.BACKENDS
    assert mdb.backend_features["backend"] == mdb.backend
    for name in ("open", "version", "enable_drop_gil", "get_backend"):
        assert callable(getattr(mdb, name)) and getattr(mdb, name).__doc__
    assert inspect.ismodule(mdb.aio)
