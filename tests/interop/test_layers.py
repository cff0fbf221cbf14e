"""The engine's layer map (core.h's layer list) checked by tools/check_layers.py.

The real tree must be clean; a copy of it with an injected call into a higher layer, a
local prototype, a misnamed function or an unlisted file must fail, naming what is wrong.
The injected calls are compiled for real (one object recompiled into a temporary object
directory), so these also show that nm sees calls made through core.h's inline helpers.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src", "mdbcore")
OBJ = os.path.join(ROOT, "build", "obj")
TOOL = os.path.join(ROOT, "tools", "check_layers.py")
CFLAGS = ["-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-pthread"]
CFLAGS += ["-D_GNU_SOURCE"]

spec = importlib.util.spec_from_file_location("check_layers", TOOL)
check_layers = importlib.util.module_from_spec(spec)
sys.modules["check_layers"] = check_layers  # dataclasses look their module up there
spec.loader.exec_module(check_layers)


@pytest.fixture(scope="module")
def objects():
    """The core's objects, as `make lib` (and `make lint`) build them."""
    stems = sorted(f[:-2] for f in os.listdir(SRC) if f.endswith(".c"))
    targets = [os.path.join("build", "obj", s + ".o") for s in stems]
    r = subprocess.run(
        ["make", "-s", "--no-print-directory", *targets], cwd=ROOT, text=True, capture_output=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return OBJ


def run_tool(src, obj):
    r = subprocess.run(
        [sys.executable, TOOL, "--src", src, "--obj", obj], capture_output=True, text=True
    )
    return r.returncode, r.stdout + r.stderr


@pytest.fixture
def tree(tmp_path, objects):
    """A copy of src/mdbcore and of its objects, to break."""
    src, obj = tmp_path / "src", tmp_path / "obj"
    src.mkdir()
    obj.mkdir()
    for f in os.listdir(SRC):
        if f.endswith((".c", ".h", ".def")):
            shutil.copy(os.path.join(SRC, f), src / f)
    for f in os.listdir(objects):
        if f.endswith(".o"):
            shutil.copy(os.path.join(objects, f), obj / f)
    return src, obj


def inject(src, obj, stem, code):
    """Append `code` to stem.c of the copy and recompile its object."""
    path = src / (stem + ".c")
    path.write_text(path.read_text() + "\n" + code)
    r = subprocess.run(
        [
            os.environ.get("CC", "cc"),
            *CFLAGS,
            "-I",
            str(src),
            "-c",
            str(path),
            "-o",
            str(obj / (stem + ".o")),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_real_tree_is_clean(objects):
    rc, out = run_tool(SRC, objects)
    assert rc == 0, out
    assert "no upward call" in out
    assert check_layers.check(SRC, objects) == []


def test_layer_list_names_every_file():
    lm = check_layers.parse_layer_list(os.path.join(SRC, "core.h"))
    assert set(lm.layer) == {f[:-2] for f in os.listdir(SRC) if f.endswith(".c")}
    assert lm.headers == {f for f in os.listdir(SRC) if f.endswith(".h")}
    assert lm.layer["page"] == 2 and lm.layer["tree_put"] == 5 and lm.layer["api_misc"] == 7


def test_injected_upward_call_fails(tree):
    src, obj = tree
    inject(
        src,
        obj,
        "page",
        """
int page_probe_upward(MDB_cursor *mc, const MDB_val *key, MDB_val *data)
{
    return tree_put(mc, key, data, 0);
}
""",
    )
    rc, out = run_tool(str(src), str(obj))
    assert rc == 1, out
    assert "layer: page.c (L2) calls tree_put of tree_put.c (L5), a higher layer" in out
    assert out.count("layer:") == 1, out
    # the same call named as an exception passes
    exc = {("page", "tree_put"): "test: allowed on purpose"}
    assert check_layers.check(str(src), str(obj), exceptions=exc) == []


def test_upward_call_through_an_inline_helper_fails(tree):
    src, obj = tree
    # txn_dbi_ready (core.h, static inline) calls txn_dbi_setup (txn.c, L6)
    inject(
        src,
        obj,
        "cursor",
        """
void cursor_probe_dbi(MDB_txn *txn)
{
    txn_dbi_ready(txn, MAIN_DBI);
}
""",
    )
    rc, out = run_tool(str(src), str(obj))
    assert rc == 1, out
    assert "layer: cursor.c (L3) calls txn_dbi_setup of txn.c (L6), a higher layer" in out


def test_unused_or_downward_exception_fails(objects):
    out = check_layers.check(SRC, objects, exceptions={("page", "tree_put"): "stale"})
    assert out == ["layer: exception (page.c, tree_put) is not used any more: remove it"]
    out = check_layers.check(SRC, objects, exceptions={("tree_put", "page_alloc"): "pointless"})
    assert out == ["layer: exception (tree_put.c, page_alloc) does not go up: remove it"]


def test_local_prototype_fails(tree):
    src, obj = tree
    path = src / "dbi.c"
    text = path.read_text()
    i = text.index('#include "core.h"\n') + len('#include "core.h"\n')
    path.write_text(
        text[:i] + "int page_free(MDB_txn *txn, pgno_t pgno, unsigned npages);\n" + text[i:]
    )
    rc, out = run_tool(str(src), str(obj))
    assert rc == 1, out
    assert "prototype: dbi.c:" in out and "declares page_free (defined in page_alloc.c)" in out


def test_misnamed_function_fails(tree):
    src, obj = tree
    inject(src, obj, "dirty", "int tree_probe_misplaced(void) { return 0; }\n")
    rc, out = run_tool(str(src), str(obj))
    assert rc == 1, out
    assert "name: tree_probe_misplaced is defined in dirty.c, whose names begin with dirty_" in out


def test_unlisted_file_fails(tree):
    src, obj = tree
    (src / "extra.c").write_text('#include "core.h"\n')
    (src / "extra.h").write_text("")
    rc, out = run_tool(str(src), str(obj))
    assert rc == 1, out
    assert "list: extra.c is not in core.h's layer list" in out
    assert "list: extra.h is not on core.h's headers line" in out
    os.remove(src / "page_cow.c")
    rc, out = run_tool(str(src), str(obj))
    assert "list: core.h's layer list names page_cow.c, which does not exist" in out


def test_design_source_map_agrees():
    """docs/design.md's Source map gives each .c file the layer core.h's list gives it."""
    lm = check_layers.parse_layer_list(os.path.join(SRC, "core.h"))
    text = open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8").read()
    section = text[text.index("## Source map") :]
    section = section[: section.index("\n## ", 1)]
    doc = {}
    for row in re.finditer(r"^\| L(\d)[^|]*\|([^|]*)\|", section, re.M):
        for name in re.findall(r"`(\w+)\.c`", row.group(2)):
            assert name not in doc, f"{name}.c twice in the Source map"
            doc[name] = int(row.group(1))
    assert doc == lm.layer
