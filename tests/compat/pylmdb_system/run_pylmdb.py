#!/usr/bin/env python3
"""run_pylmdb.py -- py-lmdb 3.0.0's own test suite over a system liblmdb: ours or Debian's.

    run_pylmdb.py --impl ours|system [--sdist FILE] [--junit FILE] [-k EXPR]

1. The `lmdb` 3.0.0 sdist: FILE, $MDB_PYLMDB_SDIST, a cached copy in
   build/compat-tests/pylmdb/, or `pip download --no-deps --no-binary :all: lmdb==3.0.0`.
2. Built with LMDB_FORCE_SYSTEM=1 against the chosen header and library
   (ours: LMDB_INCLUDEDIR=build/include LMDB_LIBDIR=build/compat, rpath build/compat;
   system: /usr/include and Debian's liblmdb.so), installed with `pip install --target`
   into build/compat-tests/pylmdb/site-IMPL -- never into the venv, whose real `lmdb`
   wheel other tests use.  PYTHONPATH puts the target dir first when the suite runs.
3. Proof of what is loaded: `ldd` of the extension, and /proc/self/maps of a Python that
   imports it and opens an environment, must show libmdbcore.so (ours) or Debian's
   liblmdb.so.0 (system) -- not the wheel's bundled LMDB.
4. The suite's tests/ and pyproject.toml are copied out of the source tree and run with
   LMDB_FORCE_SYSTEM=1 (the suite skips its patched-LMDB-only cases then) and `-m ""`
   (brings in the mdb_layout tests), with a JUnit report.
5. Failures are matched against exclusions.txt (next to this file; one reason per line).

--strict (or MDB_COMPAT_STRICT=1): only `deselect` and `purpose` entries apply -- not the
known differences still to fix (`ours`) -- so the run fails until our library passes the
whole suite but for the differences we keep on purpose (`make test-compat`).
Exit status: 0 when every failure is listed and applies; 1 otherwise; 2 setup error;
77 when the sdist cannot be had (no network and no cached copy).
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import compatlib  # noqa: E402

VERSION = "3.0.0"
WORK = os.path.join(compatlib.OUT, "pylmdb")
EXCLUSIONS = os.path.join(HERE, "exclusions.txt")
WHENS = ("deselect", "ours", "purpose")


def log(*a):
    print("run_pylmdb:", *a, flush=True)


def read_exclusions(path=EXCLUSIONS):
    """[(nodeid, when, reason)]; raises on a malformed line."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split("|", 2)]
            if len(parts) != 3 or not parts[2] or parts[1] not in WHENS or "::" not in parts[0]:
                raise SystemExit(
                    f"{path}:{n}: expected 'NODEID | WHEN | REASON' with WHEN in {WHENS}: {line!r}"
                )
            out.append(tuple(parts))
    ids = [e[0] for e in out]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise SystemExit(f"{path}: listed twice: {sorted(dup)}")
    return out


def active(when, impl, info):
    return {
        "deselect": True,
        "ours": impl == "ours" and not info.get("strict"),
        "purpose": impl == "ours",
    }[when]


def get_sdist(explicit):
    for cand in (
        explicit,
        os.environ.get("MDB_PYLMDB_SDIST"),
        os.path.join(WORK, f"lmdb-{VERSION}.tar.gz"),
    ):
        if cand and os.path.exists(cand):
            return cand
    os.makedirs(WORK, exist_ok=True)
    log(f"downloading the lmdb {VERSION} sdist from PyPI")
    r = compatlib.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"lmdb=={VERSION}",
            "-d",
            WORK,
        ],
        timeout=300,
    )
    path = os.path.join(WORK, f"lmdb-{VERSION}.tar.gz")
    if r.returncode != 0 or not os.path.exists(path):
        log("cannot download the sdist:", r.stderr.strip()[-500:])
        sys.exit(77)
    return path


def build(sdist, impl):
    src_root = os.path.join(WORK, "src")
    src = os.path.join(src_root, f"lmdb-{VERSION}")
    if not os.path.isdir(src):
        os.makedirs(src_root, exist_ok=True)
        with tarfile.open(sdist) as t:
            t.extractall(src_root, filter="data") if hasattr(
                tarfile, "data_filter"
            ) else t.extractall(src_root)
    site = os.path.join(WORK, f"site-{impl}")
    shutil.rmtree(site, ignore_errors=True)
    env = dict(os.environ, LMDB_FORCE_SYSTEM="1")
    for v in ("LMDB_FORCE_CFFI", "LMDB_PURE", "LDFLAGS"):
        env.pop(v, None)
    if impl == "ours":
        env.update(
            LMDB_INCLUDEDIR=compatlib.OUR_INCLUDE,
            LMDB_LIBDIR=compatlib.OUR_COMPAT_DIR,
            LDFLAGS="-Wl,-rpath," + compatlib.OUR_COMPAT_DIR,
        )
    else:
        env.update(
            LMDB_INCLUDEDIR=os.path.dirname(compatlib.SYSTEM_HDR),
            LMDB_LIBDIR=os.path.dirname(compatlib.SYSTEM_LIB),
        )
    log(f"building py-lmdb {VERSION} over {impl} into {site}")
    # A copy of the source per build: setup.py writes lmdb/_config.py into the tree.
    bsrc = os.path.join(WORK, f"build-src-{impl}")
    shutil.rmtree(bsrc, ignore_errors=True)
    shutil.copytree(src, bsrc)
    r = compatlib.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-cache-dir",
            "--target",
            site,
            bsrc,
        ],
        env=env,
        timeout=600,
    )
    if r.returncode != 0:
        log("build failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
        sys.exit(2)
    shutil.rmtree(bsrc, ignore_errors=True)
    exts = glob.glob(os.path.join(site, "lmdb", "cpython*.so"))
    if not exts:
        log("build produced no C extension (lmdb/cpython*.so)")
        sys.exit(2)
    return site, exts[0]


_MAPS = r"""
import os, shutil, sys, tempfile, lmdb
assert lmdb.__file__.startswith(sys.argv[1]), lmdb.__file__
d = tempfile.mkdtemp(prefix="pylmdb-maps-")
env = lmdb.open(d)
with env.begin(write=True) as t:
    t.put(b"k", b"v")
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if ".so" in l and "/" in l})
env.close()
shutil.rmtree(d)
print(lmdb.__file__)
print(".".join(map(str, lmdb.version())))
print("\n".join(libs))
"""


def verify_loaded(site, ext, impl):
    """The extension must load the intended library, at link time and at run time."""
    want = os.path.realpath(compatlib.OUR_LIB if impl == "ours" else compatlib.SYSTEM_LIB)
    r = compatlib.run(["ldd", ext])
    linked = [ln for ln in r.stdout.splitlines() if "liblmdb" in ln]
    if len(linked) != 1 or os.path.realpath(linked[0].split("=>")[1].split("(")[0].strip()) != want:
        log(f"FAIL: ldd {ext} shows {linked}, wanted {want}")
        return False
    env = dict(os.environ, PYTHONPATH=site, LMDB_FORCE_SYSTEM="1")
    r = compatlib.run([sys.executable, "-c", _MAPS, site], env=env, timeout=60)
    if r.returncode != 0:
        log("FAIL: importing the built module failed:\n" + r.stderr[-2000:])
        return False
    lines = r.stdout.split()
    mapped = [os.path.realpath(p) for p in lines[2:]]
    engines = [p for p in mapped if os.path.basename(p).startswith(("liblmdb", "libmdbcore"))]
    exts = [p for p in mapped if "/lmdb/" in p]  # binding extensions: only the one we built
    log(f"loaded: {lines[0]} reports LMDB {lines[1]}; engine mapped: {engines}; binding: {exts}")
    if engines != [want]:
        log(f"FAIL: /proc/self/maps shows engine libraries {engines}, wanted only {want}")
        return False
    if exts != [os.path.realpath(ext)]:
        log(f"FAIL: /proc/self/maps shows binding extensions {exts}, wanted only {ext}")
        return False
    return True


def run_suite(site, src_tests, impl, excl, info, junit, kexpr):
    run_dir = os.path.join(WORK, f"run-{impl}")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    shutil.copytree(src_tests, os.path.join(run_dir, "tests"))
    shutil.copy(os.path.join(os.path.dirname(src_tests), "pyproject.toml"), run_dir)
    env = dict(os.environ, PYTHONPATH=site, LMDB_FORCE_SYSTEM="1")
    for v in ("LMDB_FORCE_CFFI", "LMDB_PURE", "LMDB_TEST_LARGE", "LMDB_TEST_HUGE"):
        env.pop(v, None)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "",
        "--junitxml",
        junit,
        "-o",
        "junit_family=xunit1",
        "tests/",
    ]
    for nodeid, when, _ in excl:
        if when == "deselect":
            cmd += ["--deselect", nodeid]
    if kexpr:
        cmd += ["-k", kexpr]
    log("running:", " ".join(cmd[1:]), f"(cwd {run_dir}, LMDB_FORCE_SYSTEM=1)")
    r = subprocess.run(cmd, cwd=run_dir, env=env, capture_output=True, text=True, timeout=900)
    tail = [ln for ln in r.stdout.splitlines() if ln.strip()][-1:]
    log("pytest:", tail[0] if tail else "(no output)", f"(exit {r.returncode})")
    if r.returncode not in (0, 1) or not os.path.exists(junit):
        print(r.stdout[-6000:], r.stderr[-3000:])
        log(f"FAIL: pytest did not complete (exit {r.returncode}; a crash of the library?)")
        return None
    return r


def classify(junit, impl, excl, info):
    tree = ET.parse(junit)
    passed, failed, skipped = [], [], []
    for tc in tree.iter("testcase"):
        mod, _, klass = tc.get("classname", "").rpartition(".")
        nodeid = f"{mod.replace('.', '/')}.py::{klass}::{tc.get('name')}"
        bad = tc.findall("failure") + tc.findall("error")
        if bad:
            msg = (bad[0].get("message") or "").strip().splitlines()
            failed.append((nodeid, msg[0][:200] if msg else ""))
        elif tc.findall("skipped"):
            skipped.append(nodeid)
        else:
            passed.append(nodeid)
    listed = {e[0]: e for e in excl}
    expected, unexpected, listed_passed = [], [], []
    for nodeid, msg in failed:
        e = listed.get(nodeid)
        if e and active(e[1], impl, info):
            expected.append((nodeid, e[1], e[2], msg))
        else:
            unexpected.append((nodeid, msg, e))
    for nodeid in passed:
        e = listed.get(nodeid)
        if e and e[1] != "deselect" and active(e[1], impl, info):
            listed_passed.append((nodeid, e[1]))
    return passed, failed, skipped, expected, unexpected, listed_passed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--impl", choices=("ours", "system"), required=True)
    ap.add_argument("--sdist")
    ap.add_argument("--junit")
    ap.add_argument("-k", dest="kexpr")
    ap.add_argument(
        "--strict",
        action="store_true",
        help="excuse no failure for a missing feature (also MDB_COMPAT_STRICT=1)",
    )
    a = ap.parse_args()
    if a.impl == "ours":
        why = compatlib.ours_available()
        if why:
            log("cannot test ours:", why)
            return 2
    lib = compatlib.OUR_LIB if a.impl == "ours" else compatlib.SYSTEM_LIB
    info = dict(compatlib.lib_version(lib))
    log(f"library {lib}: {info['version_string']}")
    if a.strict or compatlib.strict():
        log("strict: no entry applies except 'deselect' and 'purpose' (not the 'ours' ones)")
        info["strict"] = True
    excl = read_exclusions()
    sdist = get_sdist(a.sdist)
    site, ext = build(sdist, a.impl)
    if not verify_loaded(site, ext, a.impl):
        return 1
    junit = a.junit or os.path.join(WORK, f"junit-{a.impl}.xml")
    if os.path.exists(junit):
        os.unlink(junit)
    src_tests = os.path.join(WORK, "src", f"lmdb-{VERSION}", "tests")
    if run_suite(site, src_tests, a.impl, excl, info, junit, a.kexpr) is None:
        return 1
    passed, failed, skipped, expected, unexpected, listed_passed = classify(
        junit, a.impl, excl, info
    )
    n_desel = sum(1 for e in excl if e[1] == "deselect")
    log(
        f"over {a.impl}: {len(passed)} passed, {len(failed)} failed "
        f"({len(expected)} listed in exclusions.txt, {len(unexpected)} not), "
        f"{len(skipped)} skipped, {n_desel} deselected"
    )
    by_when = {}
    for _, when, _, _ in expected:
        by_when[when] = by_when.get(when, 0) + 1
    if by_when:
        log(
            "expected failures by cause: "
            + ", ".join(f"{w}: {n}" for w, n in sorted(by_when.items()))
        )
    for nodeid, when, reason, msg in expected:
        print(f"  expected failure [{when}] {nodeid}: {reason}  ({msg[:90]})")
    for nodeid, when in listed_passed:
        print(f"  listed but passed [{when}] {nodeid}: remove it from exclusions.txt")
    for nodeid, msg, e in unexpected:
        extra = (
            (
                f" (listed as '{e[1]}', which does not apply "
                f"{'in strict mode' if info.get('strict') else 'to this library'})"
            )
            if e
            else ""
        )
        print(f"  UNEXPECTED FAILURE {nodeid}: {msg}{extra}")
    if unexpected:
        log(f"FAIL: {len(unexpected)} failure(s) not covered by exclusions.txt")
        return 1
    if not passed:
        log("FAIL: no test passed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
