#!/usr/bin/env python3
"""check_layers.py -- the engine's layer map, checked on the compiled objects.

    python3 tools/check_layers.py [--src src/mdbcore] [--obj build/obj]

The one table is the layer list at the top of src/mdbcore/core.h: every file of
src/mdbcore by layer (L0 lowest), each .c file optionally followed by the name prefixes it
owns in brackets, and a `headers` line.  From it and from `nm` on build/obj/*.o (defined
and undefined global symbols per object; `make lint` builds the objects first) this
reports:

  layer     a file that calls (or references) a symbol defined in a file of a higher
            layer, unless the (caller file, symbol) pair is in EXCEPTIONS below with its
            reason;
  list      a .c or .h file of src/mdbcore missing from the list, or listed but absent;
  name      a global symbol whose name does not begin with its file's first word or one of
            its bracketed prefixes (mdbcore_* extras are exempt; mdb_* only in api_*.c);
  prototype a .c file declaring at file scope a function that another file defines
            (prototypes shared across files belong in core.h or a per-layer header).

Objects, not sources, because the compiler knows every call: those made through macros
and through core.h's static inline helpers too.  A call through a function pointer is
not seen.  Exit status 0 when clean, 1 with one line per finding, 2 on a usage error.
Uses only the standard library (and binutils' nm).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

# Calls allowed to go up a layer: (caller file stem, callee symbol) -> why.  Keep each
# one named and explained; the check fails on any other upward call.
EXCEPTIONS: dict[tuple[str, str], str] = {}

LIST_START = "Layers."
LAYER_LINE = re.compile(r"^\s*\*\s+(L\d)\s+(.*)$")
HEADERS_LINE = re.compile(r"^\s*\*\s+headers\s+(.*)$")
CONT_LINE = re.compile(r"^\s*\*\s{5,}(\S.*)$")
ENTRY = re.compile(r"([A-Za-z0-9_.]+)(?:\[([^\]]*)\])?")
# a file-scope declaration (not static, not a definition): type ... name(args);
PROTO = re.compile(
    r"^(?!static\b|typedef\b|return\b)[A-Za-z_][^;{}()#=:\n]*?\b(\w+)\s*\([^;{}]*\)\s*;", re.M
)


@dataclass
class LayerMap:
    layer: dict[str, int] = field(default_factory=dict)  # .c stem -> layer number
    prefixes: dict[str, list[str]] = field(default_factory=dict)  # stem -> extra prefixes
    headers: set[str] = field(default_factory=set)


def parse_layer_list(core_h: str) -> LayerMap:
    """The layer list of core.h's opening comment."""
    text = open(core_h, encoding="utf-8").read()
    comment = text[: text.index("*/")]
    lm = LayerMap()
    current: int | None = None  # layer being continued, or -1 for headers
    started = False
    for line in comment.splitlines():
        if LIST_START in line:
            started = True
            continue
        if not started:
            continue
        m = LAYER_LINE.match(line)
        h = HEADERS_LINE.match(line)
        c = CONT_LINE.match(line)
        if m:
            current = int(m.group(1)[1:])
            rest = m.group(2)
        elif h:
            current = -1
            rest = h.group(1)
        elif c and current is not None:
            rest = c.group(1)
        else:
            if current is not None:
                break  # the list ended
            continue
        for em in ENTRY.finditer(rest):
            name, pre = em.group(1), em.group(2)
            if current == -1:
                lm.headers.add(name)
                continue
            if name in lm.layer:
                raise ValueError(f"core.h layer list: {name} listed twice")
            lm.layer[name] = current
            lm.prefixes[name] = pre.split() if pre else []
    if not lm.layer:
        raise ValueError(
            f"{core_h}: no layer list found (a comment line containing "
            f"{LIST_START!r}, then lines '*   L<n>  file ...')"
        )
    return lm


def nm_symbols(obj: str) -> tuple[set[str], set[str]]:
    """(defined global symbols, undefined symbols) of one object file."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRCGSVW":
            defined.add(parts[2])
    return defined, undefined


def first_word(stem: str) -> str:
    return stem.split("_", 1)[0]


def check(src: str, obj: str, exceptions: dict[tuple[str, str], str] | None = None) -> list[str]:
    """All findings for the tree at `src` with objects in `obj` (empty list: clean)."""
    if exceptions is None:
        exceptions = EXCEPTIONS
    problems: list[str] = []
    lm = parse_layer_list(os.path.join(src, "core.h"))

    # list: the files on disk and the files listed agree
    c_files = sorted(f[:-2] for f in os.listdir(src) if f.endswith(".c"))
    h_files = sorted(f for f in os.listdir(src) if f.endswith(".h"))
    for stem in c_files:
        if stem not in lm.layer:
            problems.append(f"list: {stem}.c is not in core.h's layer list")
    for stem in sorted(lm.layer):
        if stem not in c_files:
            problems.append(f"list: core.h's layer list names {stem}.c, which does not exist")
    for h in h_files:
        if h not in lm.headers:
            problems.append(f"list: {h} is not on core.h's headers line")
    for h in sorted(lm.headers - set(h_files)):
        problems.append(f"list: core.h's headers line names {h}, which does not exist")

    # symbols per object
    defs: dict[str, set[str]] = {}
    undefs: dict[str, set[str]] = {}
    for stem in c_files:
        path = os.path.join(obj, stem + ".o")
        if not os.path.exists(path):
            problems.append(f"object: {path} is missing (build the objects first: make lib)")
            continue
        defs[stem], undefs[stem] = nm_symbols(path)
    owner: dict[str, str] = {}
    for stem, syms in defs.items():
        for s in syms:
            if s in owner:
                problems.append(f"name: {s} is defined in both {owner[s]}.c and {stem}.c")
            owner[s] = stem

    # layer: no reference to a symbol of a higher layer
    for stem in sorted(undefs):
        lf = lm.layer.get(stem)
        if lf is None:
            continue
        for s in sorted(undefs[stem]):
            callee = owner.get(s)
            if callee is None or lm.layer.get(callee) is None:
                continue
            lc = lm.layer[callee]
            if lc > lf and (stem, s) not in exceptions:
                problems.append(
                    f"layer: {stem}.c (L{lf}) calls {s} of {callee}.c (L{lc}), a higher layer"
                )
    for stem, s in sorted(exceptions):
        callee = owner.get(s)
        if stem in undefs and s not in undefs[stem]:
            problems.append(f"layer: exception ({stem}.c, {s}) is not used any more: remove it")
        elif callee and lm.layer.get(callee, -1) <= lm.layer.get(stem, -1):
            problems.append(f"layer: exception ({stem}.c, {s}) does not go up: remove it")

    # name: prefixes
    for stem in sorted(defs):
        allowed = [first_word(stem) + "_"] + lm.prefixes.get(stem, [])
        for s in sorted(defs[stem]):
            if s.startswith("mdbcore_"):
                continue
            if s.startswith("mdb_"):
                if not stem.startswith("api_"):
                    problems.append(
                        f"name: {s} is an exported mdb_ name outside api_*.c ({stem}.c)"
                    )
                continue
            if stem.startswith("api_"):
                problems.append(f"name: {s} in {stem}.c: api_*.c define only mdb_*/mdbcore_*")
                continue
            if not any(s.startswith(p) for p in allowed):
                problems.append(
                    f"name: {s} is defined in {stem}.c, whose names begin with "
                    + " or ".join(allowed)
                )

    # prototype: no file-scope declaration of another file's function
    for stem in c_files:
        text = open(os.path.join(src, stem + ".c"), encoding="utf-8").read()
        text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
        for m in PROTO.finditer(text):
            name = m.group(1)
            other = owner.get(name)
            if other and other != stem:
                line = text.count("\n", 0, m.start()) + 1
                problems.append(
                    f"prototype: {stem}.c:{line} declares {name} (defined in {other}.c) "
                    "locally: put it in core.h or a per-layer header"
                )
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default="src/mdbcore", help="the engine's sources (core.h there)")
    ap.add_argument("--obj", default="build/obj", help="their objects (make lib builds them)")
    args = ap.parse_args(argv)
    try:
        problems = check(args.src, args.obj)
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    lm = parse_layer_list(os.path.join(args.src, "core.h"))
    if problems:
        print(f"check_layers: {len(problems)} problem(s) in {args.src} (layer list: core.h)")
        return 1
    print(
        f"check_layers: {len(lm.layer)} files in {max(lm.layer.values()) + 1} layers, "
        f"no upward call ({len(EXCEPTIONS)} named exceptions), names and prototypes in place"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
