"""Both backends expose the API stated in mdb/__init__.pyi; differences only
via backend_features."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import mdb

STUB = Path(mdb.__file__).with_name("__init__.pyi")
CLASSES = ("Environment", "Transaction", "Cursor", "_Database")


def _stub_methods() -> dict[str, set[str]]:
    tree = ast.parse(STUB.read_text())
    out: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in CLASSES:
            out[node.name] = {
                n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"
            }
    return out


def test_stub_lists_every_class():
    assert set(_stub_methods()) == set(CLASSES)


def test_backends_match_stub(lm):
    for cls, names in _stub_methods().items():
        obj = getattr(lm, cls)
        for name in names:
            attr = getattr(obj, name, None)
            assert attr is not None, f"{lm.backend}: {cls}.{name} missing"
            assert attr.__doc__, f"{lm.backend}: {cls}.{name} has no docstring"


def test_no_public_method_outside_stub(lm):
    stub = _stub_methods()
    for cls in CLASSES:
        obj = getattr(lm, cls)
        public = {n for n in dir(obj) if not n.startswith("_") and callable(getattr(obj, n))}
        assert public <= stub[cls], f"{lm.backend}: {cls} has unstubbed {public - stub[cls]}"


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
    assert f["check"] == (f["engine"] == "mdbcore")
    assert f["gil_released_per_record"] is False  # (cffi: see test_hot_paths)


def test_module_api():
    assert mdb.backend in mdb.BACKENDS
    assert mdb.backend_features["backend"] == mdb.backend
    for name in ("open", "version", "enable_drop_gil", "get_backend"):
        assert callable(getattr(mdb, name)) and getattr(mdb, name).__doc__
    assert inspect.ismodule(mdb.aio)
    for name in mdb.__all__:
        assert getattr(mdb, name).__doc__ or name in ("version",)
