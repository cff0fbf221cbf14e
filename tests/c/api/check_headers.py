#!/usr/bin/env python3
"""check_headers.py -- our lmdb.h must define every constant of Debian's lmdb.h with the
same value, and lay out the public structs the same way.

    check_headers.py OURS.h [THEIRS.h]      (THEIRS defaults to /usr/include/lmdb.h)

How: the names come from THEIRS (object-like `#define MDB_*` macros and the MDB_cursor_op
enumerators).  For each header in turn we compile a small C program that includes only that
header and prints every name's value as the compiler evaluates it, plus sizeof/offsetof of
MDB_val, MDB_stat and MDB_envinfo; then the two outputs are compared.  Evaluating with the
compiler (rather than reading the text) means `(-30799)` and `0x40000` compare as numbers.

Version macros (MDB_VERSION_*) differ on purpose (we report 0.9.29, Debian ships 0.9.24);
they are printed, not compared.  Names only in OURS are listed for information.
Exit status: 0 when everything matches, 1 otherwise.
"""

import os
import re
import subprocess
import sys
import tempfile

VERSION_MACROS = {"MDB_VERSION_MAJOR", "MDB_VERSION_MINOR", "MDB_VERSION_PATCH", "MDB_VERSION_FULL"}
LAYOUT = {
    "MDB_val": ["mv_size", "mv_data"],
    "MDB_stat": [
        "ms_psize",
        "ms_depth",
        "ms_branch_pages",
        "ms_leaf_pages",
        "ms_overflow_pages",
        "ms_entries",
    ],
    "MDB_envinfo": [
        "me_mapaddr",
        "me_mapsize",
        "me_last_pgno",
        "me_last_txnid",
        "me_maxreaders",
        "me_numreaders",
    ],
}


def names_from(header_text):
    macros = []
    for m in re.finditer(
        r"^[ \t]*#[ \t]*define[ \t]+(MDB_\w+)(?!\()[ \t]+(.*)$", header_text, re.M
    ):
        name, body = m.group(1), m.group(2)
        if '"' in body or name.startswith(("MDB_VERSION_STRING", "MDB_VERSION_DATE")):
            continue
        macros.append(name)
    enum = re.search(r"typedef\s+enum\s+MDB_cursor_op\s*\{(.*?)\}", header_text, re.S)
    enumerators = []
    if enum:
        body = re.sub(r"/\*.*?\*/", "", enum.group(1), flags=re.S)
        enumerators = re.findall(r"\b(MDB_\w+)\b", body)
    return macros, enumerators


def evaluate(header, macros, enumerators, cc):
    lines = [
        "#include <stdio.h>",
        "#include <stddef.h>",
        f'#include "{header}"',
        "int main(void) {",
    ]
    for n in macros:
        lines.append(
            f'#ifdef {n}\n  printf("%s %lld\\n", "{n}", (long long)({n}));\n'
            f'#else\n  printf("%s MISSING\\n", "{n}");\n#endif'
        )
    for n in enumerators:
        lines.append(f'  printf("%s %lld\\n", "{n}", (long long)({n}));')
    for st, fields in LAYOUT.items():
        lines.append(f'  printf("sizeof({st}) %zu\\n", sizeof({st}));')
        for f in fields:
            lines.append(f'  printf("offsetof({st},{f}) %zu\\n", offsetof({st}, {f}));')
    lines.append("  return 0;\n}")
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "h.c"), os.path.join(d, "h")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        p = subprocess.run([cc, "-std=gnu11", "-w", src, "-o", exe], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"check_headers: cannot compile against {header}:\n{p.stderr[-3000:]}")
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    ours = os.path.abspath(argv[1])
    theirs = os.path.abspath(argv[2] if len(argv) > 2 else "/usr/include/lmdb.h")
    cc = os.environ.get("CC", "cc")
    macros, enumerators = names_from(open(theirs).read())
    our_macros, _ = names_from(open(ours).read())
    a = evaluate(theirs, macros, enumerators, cc)
    b = evaluate(ours, macros, enumerators, cc)
    bad = 0
    compared = 0
    for name, want in a.items():
        got = b.get(name)
        if name in VERSION_MACROS:
            print(f"info  {name}: ours {got}, Debian {want}")
            continue
        compared += 1
        if got != want:
            bad += 1
            print(f"FAIL  {name}: ours {got}, Debian {want}")
    extra = sorted(set(our_macros) - set(macros))
    if extra:
        print("info  only in ours: " + " ".join(extra))
    print(
        f"check_headers: {compared} constants and layout facts compared, {bad} differ "
        f"({ours} vs {theirs})"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
