#!/usr/bin/env python3
"""check_prefetch.py -- the read path's memory hints are in the built library.

    check_prefetch.py LIB

A prefetch changes no result, so no behavioural test notices when the compiler drops one,
and GCC 12 once deleted page_get_whole's whole prefetch loop (written with pointer
comparisons) after inlining it.  This reads LIB's disassembly (`objdump -d`) and fails
unless page_get_whole asks for a whole page (at least 8 prefetch instructions: the
unrolled loop) and cursor_get holds the scan step's prefetch (at least 1).
"""

import re
import subprocess
import sys

WANT = {"page_get_whole": 8, "cursor_get": 1}


def prefetches(lib):
    """Prefetch instructions per function of lib's disassembly."""
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", lib], capture_output=True, text=True, check=True
    ).stdout
    counts, fn = {}, None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if m:
            fn = m.group(1)
            counts.setdefault(fn, 0)
        elif fn and re.search(r"\tprefetch", line):
            counts[fn] += 1
    return counts


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    counts = prefetches(argv[1])
    bad = [
        f"{fn}: {counts.get(fn, 'absent')} prefetch instruction(s), want at least {n}"
        for fn, n in WANT.items()
        if counts.get(fn, 0) < n
    ]
    for b in bad:
        print(f"check_prefetch: {argv[1]}: {b}")
    if not bad:
        got = ", ".join(f"{fn} {counts[fn]}" for fn in WANT)
        print(f"check_prefetch: {argv[1]}: {got}: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
