#!/usr/bin/env python3
"""check_exports.py -- the dynamic symbols a shared library defines, against exports.map.

    check_exports.py LIB MAP                 exactly the names listed in MAP, and MAP lists
                                             exactly 56 names (libmdbcore.so)
    check_exports.py LIB MAP --superset      at least the names in MAP (Debian's liblmdb,
                                             which also exports 13 mdb_midl* helpers)
    check_exports.py LIB MAP --test-lib      the names in MAP plus mdbcore_* extras, and
                                             nothing else (libmdbcore-test.so)

Every mode also fails on undefined symbols that no system library supplies: `cc -shared`
links happily with internal functions still missing, so "it links" proves little.

Symbols come from `nm -D --defined-only`; only code and data symbols count (T/W/D/B/R/i,
either case), so linker-generated names such as _init never appear.
"""

import re
import subprocess
import sys

API_COUNT = 56
# A sanitizer build leaves these to the runtime linked into the executable.
SANITIZER_PREFIXES = ("__asan_", "__ubsan_", "__lsan_", "__sanitizer_")


def map_names(path):
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    glob = text.split("global:", 1)[1].split("local:", 1)[0]
    return {n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_*]*", glob)}


def exported(lib):
    out = subprocess.run(
        ["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True
    ).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1].upper() in "TWDBRVI" and parts[1] not in "Aa":
            names.add(parts[2].split("@")[0])
    return names


def unresolved(lib):
    """Undefined symbols that no system library will supply (glibc's are versioned)."""
    out = subprocess.run(
        ["nm", "-D", "--undefined-only", lib], capture_output=True, text=True, check=True
    ).stdout
    bad = []
    for line in out.splitlines():
        parts = line.split()
        if (
            len(parts) == 2
            and parts[0] == "U"
            and "@" not in parts[1]
            and not parts[1].startswith(SANITIZER_PREFIXES)
        ):
            bad.append(parts[1])
    return sorted(bad)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    lib, mapfile = argv[1], argv[2]
    mode = argv[3] if len(argv) > 3 else "--exact"
    want = {n for n in map_names(mapfile) if "*" not in n}
    have = exported(lib)
    problems = []
    if mode == "--exact" and len(want) != API_COUNT:
        problems.append(f"{mapfile} lists {len(want)} names, want {API_COUNT}")
    missing = sorted(want - have)
    if missing:
        problems.append("missing: " + " ".join(missing))
    if mode in ("--exact", "--test-lib"):
        extra = sorted(
            n for n in have - want if not (mode == "--test-lib" and n.startswith("mdbcore_"))
        )
        if extra:
            problems.append("exported but not in the map: " + " ".join(extra))
    undef = unresolved(lib)
    if undef:
        problems.append(
            "undefined symbols (the library would fail to load or crash when "
            "they are first called): " + " ".join(undef)
        )
    for p in problems:
        print(f"FAIL  {lib}: {p}")
    print(
        f"check_exports: {lib}: {len(have)} symbols exported, {len(want)} expected "
        f"({mode[2:]}): {'FAIL' if problems else 'ok'}"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
