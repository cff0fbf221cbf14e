"""lmdb_src.py -- the `lmdb-src` lab engine: upstream LMDB 0.9.29 built here, with symbols.

Stock slapd's LMDB is inside the stripped back_mdb.so, so a profile cannot tell its
functions from back-mdb's.  The same upstream release (0.9.29, the version back-mdb
demands from mdb_version()) is bundled unpatched, as lib/mdb.c and lib/midl.c, in the
published source archive of py-lmdb 1.2.1 on PyPI (py-lmdb applies its own patch only
while building itself, to a copy).  This module fetches that archive with pip, checks its
SHA-256 and the version in lib/lmdb.h, and compiles the two files with LMDB's own default
flags (-O2 -g) into build/lmdb-src/liblmdb.so.  Nothing of it is committed: it is built
on demand (`make lmdb-src`, or a test that needs it) and the lab preloads it exactly as
it preloads our engine, with the same binding check.

    python -m lab.lmdb_src [--force]     build it (prints the library's path)
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "build", "lmdb-src")
LIB = os.path.join(OUT_DIR, "liblmdb.so")
PYLMDB_VERSION = "1.2.1"
SDIST = f"lmdb-{PYLMDB_VERSION}.tar.gz"
SDIST_SHA256 = "5f76a90ebd08922acca11948779b5055f7a262687178e9e94f4e804b9f8465bc"
LMDB_VERSION = (0, 9, 29)
SOURCES = ("lmdb.h", "midl.h", "mdb.c", "midl.c")
CFLAGS = ["-O2", "-g", "-fPIC", "-pthread", "-W", "-Wall", "-Wno-unused-parameter"]


class BuildError(Exception):
    """The archive could not be fetched, did not match, or did not compile."""


def _fetch(dest: str, python: str) -> str:
    r = subprocess.run(
        [python, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         f"lmdb=={PYLMDB_VERSION}", "-d", dest],
        capture_output=True, text=True,
    )  # fmt: skip
    path = os.path.join(dest, SDIST)
    if r.returncode != 0 or not os.path.exists(path):
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BuildError(f"pip download lmdb=={PYLMDB_VERSION} failed: {tail[0]}")
    with open(path, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    if got != SDIST_SHA256:
        raise BuildError(f"{SDIST} has SHA-256 {got}, expected {SDIST_SHA256}")
    return path


def header_version(lmdb_h: str) -> tuple[int, int, int]:
    with open(lmdb_h) as f:
        text = f.read()
    parts = []
    for name in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"#define\s+MDB_VERSION_{name}\s+(\d+)", text)
        if not m:
            raise BuildError(f"{lmdb_h} does not define MDB_VERSION_{name}")
        parts.append(int(m.group(1)))
    return parts[0], parts[1], parts[2]


def build(python: str = sys.executable, force: bool = False, cc: str | None = None) -> str:
    """build/lmdb-src/liblmdb.so, fetched and compiled unless it is already there."""
    if os.path.exists(LIB) and not force:
        return LIB
    cc = cc or os.environ.get("CC") or "cc"
    os.makedirs(OUT_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lmdb-src-") as tmp:
        archive = _fetch(tmp, python)
        src = os.path.join(OUT_DIR, "src")
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(src)
        with tarfile.open(archive) as tf:
            for name in SOURCES:
                member = tf.getmember(f"lmdb-{PYLMDB_VERSION}/lib/{name}")
                data = tf.extractfile(member)
                if data is None:
                    raise BuildError(f"{SDIST} has no file lib/{name}")
                with open(os.path.join(src, name), "wb") as out:
                    out.write(data.read())
    got = header_version(os.path.join(src, "lmdb.h"))
    if got != LMDB_VERSION:
        raise BuildError(f"{SDIST} bundles LMDB {got}, not {LMDB_VERSION}")
    tmp_lib = LIB + ".tmp"
    r = subprocess.run(
        [cc, *CFLAGS, "-shared", "-Wl,-soname,liblmdb.so.0", "-o", tmp_lib,
         os.path.join(src, "mdb.c"), os.path.join(src, "midl.c")],
        capture_output=True, text=True,
    )  # fmt: skip
    if r.returncode != 0:
        raise BuildError(f"compiling LMDB failed: {r.stderr.strip()[-400:]}")
    os.replace(tmp_lib, LIB)
    return LIB


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        print(build(force="--force" in args))
    except BuildError as e:
        print(f"lmdb-src: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
