"""`make install` as a C programmer meets it: install into a prefix, build programs with
pkg-config against it, and check they run on our engine.

Not the Python package: these tests need only the C library (`make lib`) and cc."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not (shutil.which("pkg-config") and shutil.which("cc") and shutil.which("make")),
    reason="needs pkg-config, cc and make",
)

LMDB_PROGRAM = r"""
#include <lmdb.h>
#include <stdio.h>
#include <string.h>
#define CHECK(x) do { int rc_ = (x); if (rc_) { \
    printf("FAIL %s: %s\n", #x, mdb_strerror(rc_)); return 1; } } while (0)
int main(int argc, char **argv) {
    MDB_env *env; MDB_txn *txn; MDB_dbi dbi; MDB_val k, v;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_open(env, argv[1], 0, 0644));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (int i = 0; i < 100; i++) {
        char kb[16], vb[32];
        snprintf(kb, sizeof kb, "key%03d", i); snprintf(vb, sizeof vb, "value %d", i);
        k.mv_size = strlen(kb); k.mv_data = kb; v.mv_size = strlen(vb); v.mv_data = vb;
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    k.mv_size = 6; k.mv_data = "key042";
    CHECK(mdb_get(txn, dbi, &k, &v));
    printf("%s|%.*s\n", mdb_version(NULL, NULL, NULL), (int)v.mv_size, (char *)v.mv_data);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    (void)argc;
    return 0;
}
"""

EXTRAS_PROGRAM = r"""
#include <mdbcore.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MDB_env *env; mdbcore_check_report rep;
    if (mdb_env_create(&env) || mdbcore_env_set_maxsize(env, (size_t)1 << 30)) return 1;
    if (mdb_env_open(env, argv[1], MDB_RDONLY, 0644)) return 2;
    int rc = mdbcore_check_env(env, &rep);
    printf("maxsize=%zu check=%d problems=%zu\n", mdbcore_env_get_maxsize(env), rc, rep.nproblems);
    mdbcore_check_report_free(&rep);
    mdb_env_close(env);
    (void)argc;
    return rc;
}
"""


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("prefix")
    run(["make", "-s", "-C", str(ROOT), "install", f"PREFIX={p}"])
    return p


def pkg(prefix: Path, name: str, *args: str) -> list[str]:
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    out = run(["pkg-config", *args, name], env=env).stdout.split()
    return out


def build(prefix: Path, tmp: Path, name: str, source: str, pcname: str) -> Path:
    src = tmp / f"{name}.c"
    src.write_text(textwrap.dedent(source))
    exe = tmp / name
    libdir = pkg(prefix, pcname, "--variable=libdir")[0]
    flags = pkg(prefix, pcname, "--cflags", "--libs")
    run(
        [
            "cc",
            "-std=gnu11",
            "-Wall",
            "-Werror",
            str(src),
            *flags,
            f"-Wl,-rpath,{libdir}",
            "-o",
            str(exe),
        ]
    )
    return exe


def test_installed_files(prefix: Path) -> None:
    for rel in (
        "lib/liblmdb.so.0",
        "lib/liblmdb.so",
        "lib/libmdbcore.so.0",
        "lib/libmdbcore.so",
        "include/lmdb.h",
        "include/mdbcore.h",
        "lib/pkgconfig/lmdb.pc",
        "lib/pkgconfig/mdbcore.pc",
    ):
        assert (prefix / rel).exists(), rel
    assert pkg(prefix, "lmdb", "--modversion") == ["0.9.29"]


def test_pkg_config_program_runs_on_our_engine(prefix: Path, tmp_path: Path) -> None:
    exe = build(prefix, tmp_path, "lmdbprog", LMDB_PROGRAM, "lmdb")
    ldd = run(["ldd", str(exe)]).stdout
    line = next(ln for ln in ldd.splitlines() if "liblmdb.so.0" in ln)
    assert str(prefix) in line, ldd  # not Debian's /usr/lib/x86_64-linux-gnu/liblmdb.so.0
    db = tmp_path / "db"
    db.mkdir()
    out = run([str(exe), str(db)]).stdout.strip()
    # Debian's liblmdb says 0.9.24; ours says 0.9.29 (what back-mdb requires)
    assert out.startswith("LMDB 0.9.29") and out.endswith("|value 42"), out
    if shutil.which("mdb_dump"):  # real LMDB reads what the installed engine wrote
        dump = run(["mdb_dump", "-p", str(db)]).stdout
        assert "key042" in dump and "value 42" in dump


def test_drop_in_exports_only_lmdb_api(prefix: Path) -> None:
    syms = run(["nm", "-D", "--defined-only", str(prefix / "lib" / "liblmdb.so.0")]).stdout
    names = {ln.split()[-1] for ln in syms.splitlines() if " T " in ln}
    assert len({n for n in names if n.startswith("mdb_")}) == 56
    assert not {n for n in names if n.startswith("mdbcore_")}
    extras = run(["nm", "-D", "--defined-only", str(prefix / "lib" / "libmdbcore.so.0")]).stdout
    assert "mdbcore_check_env" in extras and "mdbcore_bulk_load" in extras
    assert "mdbcore_fault_install" not in extras  # test hooks stay in the test library


def test_extras_program_through_mdbcore_pc(prefix: Path, tmp_path: Path) -> None:
    db = tmp_path / "db"
    db.mkdir()
    run([str(build(prefix, tmp_path, "lmdbprog", LMDB_PROGRAM, "lmdb")), str(db)])
    exe = build(prefix, tmp_path, "extras", EXTRAS_PROGRAM, "mdbcore")
    out = run([str(exe), str(db)]).stdout
    assert "maxsize=1073741824 check=0 problems=0" in out, out


def test_destdir_stages_without_touching_prefix(tmp_path: Path) -> None:
    stage = tmp_path / "stage"
    run(["make", "-s", "-C", str(ROOT), "install", "PREFIX=/opt/mdb-test", f"DESTDIR={stage}"])
    assert (stage / "opt/mdb-test/lib/liblmdb.so.0").exists()
    assert not Path("/opt/mdb-test").exists()
    pc = (stage / "opt/mdb-test/lib/pkgconfig/lmdb.pc").read_text()
    assert "prefix=/opt/mdb-test" in pc
