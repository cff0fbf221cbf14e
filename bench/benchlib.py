"""benchlib.py -- shared by the C benchmark drivers in bench/: build one C source twice,
against Debian's liblmdb ("system") and against our build/compat/liblmdb.so ("ours"),
and summarise interleaved rounds as a median ratio with its spread."""

import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.join(ROOT, "build")
OUT = os.path.join(BUILD, "bench")


def build(src, lib, opt="-O2", root=None):
    """Compile bench/<src> linked to `lib` ("ours" or "system"); return (exe, loaded .so).
    root: another checkout whose build/ holds the library linked as "ours" (a baseline)."""
    os.makedirs(OUT, exist_ok=True)
    stem = os.path.splitext(os.path.basename(src))[0]
    exe = os.path.join(OUT, f"{stem}-{lib}" + ("-baseline" if root else ""))
    cc = os.environ.get("CC", "cc")
    path = os.path.join(HERE, src)
    if lib == "system":
        cmd = [cc, opt, "-g", "-Wall", "-Wextra", "-Werror", path, "-llmdb", "-o", exe]
    else:
        b = os.path.join(root, "build") if root else BUILD
        inc, compat = os.path.join(b, "include"), os.path.join(b, "compat")
        if not os.path.exists(os.path.join(compat, "liblmdb.so.0")):
            sys.exit(f"{stem}: build/compat/liblmdb.so.0 missing: run `make lib`")
        cmd = [
            cc,
            opt,
            "-g",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-I" + inc,
            path,
            "-L" + compat,
            "-llmdb",
            "-Wl,-rpath," + compat,
            "-o",
            exe,
        ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{stem}: build for {lib} failed:\n{r.stderr}")
    ldd = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
    loaded = [ln.split("=>")[1].split("(")[0].strip() for ln in ldd.splitlines() if "liblmdb" in ln]
    return exe, os.path.realpath(loaded[0]) if loaded else "?"


def ratio_summary(ratios):
    """'median (min..max)' of per-round ratios."""
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f})"


def print_round(rnd, results):
    """'# round N: name 1.23M 4.56M ...  name ...': a round's operations per second (in
    millions) for each name of results (name -> {operation: ops per second})."""
    print(
        f"# round {rnd + 1}: "
        + "  ".join(
            f"{name} " + " ".join(f"{v / 1e6:.2f}M" for v in ops.values())
            for name, ops in results.items()
        ),
        flush=True,
    )
