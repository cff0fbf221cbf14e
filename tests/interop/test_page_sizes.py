"""Data files whose pages are not 4 KiB: what LMDB writes on machines with bigger pages.

LMDB sizes a new file's pages by the OS page size, capped at 32 KiB: 16 KiB on arm64
kernels built that way, 32 KiB where the OS page is 64 KiB (ppc64le, some arm64). Such a
file copied to this machine must open here, in both engines, and whichever engine wrote
it. tests/support/fake_pagesize.c, preloaded, makes a process see another page size, so
the real thing is tested: real LMDB (the `lmdb` wheel) and the library under test each
write the interop shape (21,000+ keys, values up to 4 MiB, four named DBs) with 8, 16 and
32 KiB pages; the other engine reads it back (with the real 4 KiB OS page); then each
engine commits puts and deletes (values up to 70,000 bytes: overflow runs) on a file the
other wrote, and the first reads the result.
"""

import contextlib
import json
import os
import shutil
import struct
import subprocess

import pytest

from support import dataset

SEED = 20260521
SHAPE = "base"
PAGE_SIZES = [8192, 16384, 32768]
OTHER = {"lib": "wheel", "wheel": "lib"}


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    cc = shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler to build the page-size shim")
    src = os.path.join(os.path.dirname(dataset.__file__), "fake_pagesize.c")
    so = tmp_path_factory.mktemp("shim") / "fake_pagesize.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(so), src, "-ldl"], check=True)
    return str(so)


@pytest.fixture
def as_if_pages(monkeypatch, shim):
    """as_if_pages(n): a context in which workers see an OS page size of n bytes."""

    @contextlib.contextmanager
    def context(n):
        with monkeypatch.context() as m:
            m.setenv("LD_PRELOAD", shim)
            m.setenv("FAKE_PAGESIZE", str(n))
            yield

    return context


def file_page_size(d):
    """The page size a data file records (meta 0: the free DB's md_pad at byte 40)."""
    with open(d / "data.mdb", "rb") as f:
        head = f.read(44)
    return struct.unpack_from("<I", head, 40)[0]


def write_shape(run_worker, as_if_pages, writer, d, page):
    with as_if_pages(page):
        assert run_worker(writer, "write-shape", d, SHAPE, SEED)["ops"] > 20000
    assert file_page_size(d) == page


def read_listing(run_worker, reader, d, out, spot_checks=True):
    """Every database's listing as `reader` sees it; with spot_checks, mdb_get of sampled
    keys must also give the shape's content (not after churn changed the main DB)."""
    run_worker(reader, "read-all", d, out, SHAPE, *([SEED] if spot_checks else []))
    got = json.loads(out.read_text())
    assert got["get_errors"] == []
    return got["listing"]


def test_shim_changes_the_page_size(run_worker, as_if_pages, tmp_path):
    """Without the shim both engines write 4 KiB pages here; with it, what it says, up to
    LMDB's cap of 32 KiB (a 64 KiB OS page gives 32 KiB pages, in LMDB and in ours)."""
    for writer in ("lib", "wheel"):
        d = tmp_path / f"plain-{writer}"
        run_worker(writer, "write-shape", d, SHAPE, SEED)
        assert file_page_size(d) == 4096
        d = tmp_path / f"cap-{writer}"
        with as_if_pages(65536):
            run_worker(writer, "write-shape", d, SHAPE, SEED)
        assert file_page_size(d) == 32768, f"{writer} with 64 KiB OS pages"


@pytest.mark.parametrize("page", PAGE_SIZES)
@pytest.mark.parametrize("writer", ["wheel", "lib"])
def test_written_with_big_pages_read_by_both(writer, page, run_worker, as_if_pages, tmp_path):
    d = tmp_path / "env"
    write_shape(run_worker, as_if_pages, writer, d, page)
    want = dataset.expected_listing(SEED, SHAPE)
    for reader in ("lib", "wheel"):
        got = read_listing(run_worker, reader, d, tmp_path / f"{reader}.json")
        for name, listing in want.items():
            diff = dataset.first_difference(got[name], listing)
            assert diff is None, f"{reader} reading {writer}'s {page}-byte pages, {name}: {diff}"


@pytest.mark.parametrize("page", PAGE_SIZES)
@pytest.mark.parametrize("writer", ["wheel", "lib"])
def test_other_engine_writes_on_big_pages(writer, page, run_worker, as_if_pages, tmp_path):
    d = tmp_path / "env"
    write_shape(run_worker, as_if_pages, writer, d, page)
    model = tmp_path / "model.json"
    r = run_worker(OTHER[writer], "churn", d, page, 12, model)
    assert r["final_ok"], f"{OTHER[writer]} lost its own writes on {page}-byte pages"
    assert file_page_size(d) == page
    got = read_listing(run_worker, writer, d, tmp_path / "back.json", spot_checks=False)
    diff = dataset.first_difference(got[""], json.loads(model.read_text()))
    assert diff is None, f"{writer} reading {OTHER[writer]}'s changes, main DB: {diff}"
    want = dataset.expected_listing(SEED, SHAPE)
    for name in dataset.SHAPES[SHAPE]:
        diff = dataset.first_difference(got[name], want[name])
        assert diff is None, f"{writer} reading back {name} after the other's commits: {diff}"
