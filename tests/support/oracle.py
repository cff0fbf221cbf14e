"""oracle -- Debian's statically linked LMDB tools (mdb_dump, mdb_stat) as format oracles.

They embed real LMDB 0.9.24 and import no mdb_* symbol, so nothing we build can leak into
them: a file they read correctly is in LMDB's format.  This module runs them and parses
their text output (our own parser of the documented dump format: a header of name=value
lines up to HEADER=END, then one line per key and one per value, each starting with a
space and hex-encoded in the default "bytevalue" format, up to DATA=END).
"""

import shutil
import subprocess


def have_tools():
    return all(shutil.which(t) for t in ("mdb_dump", "mdb_stat"))


def run(argv, timeout=120):
    p = subprocess.run(argv, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def parse_dump(text):
    """Parse one or more dumped databases: {name or "": {"header": {...}, "pairs": [...]}}."""
    dbs = {}
    lines = text.split(b"\n")
    i = 0
    while i < len(lines):
        if not lines[i].startswith(b"VERSION="):
            i += 1
            continue
        header = {}
        while lines[i] != b"HEADER=END":
            k, _, v = lines[i].decode().partition("=")
            header[k] = v
            i += 1
        i += 1
        pairs = []
        while lines[i] != b"DATA=END":
            k = bytes.fromhex(lines[i][1:].decode())
            v = bytes.fromhex(lines[i + 1][1:].decode())
            pairs.append((k, v))
            i += 2
        i += 1
        dbs[header.get("database", "")] = {"header": header, "pairs": pairs}
    return dbs


def dump(path, name=None):
    """mdb_dump of one database (the main one when name is None): (rc, parsed, stderr)."""
    argv = ["mdb_dump"] + (["-s", name] if name else []) + [path]
    rc, so, se = run(argv)
    return rc, (parse_dump(so) if rc == 0 else None), se


def dump_all(path):
    """mdb_dump -a: every named database."""
    rc, so, se = run(["mdb_dump", "-a", path])
    return rc, (parse_dump(so) if rc == 0 else None), se


def stat_entries(text):
    """From `mdb_stat -efa` output: {section title: entries} (e.g. "Main DB", "plain")."""
    out = {}
    section = None
    for line in text.decode().splitlines():
        if line.startswith("Status of "):
            section = line[len("Status of ") :]
        elif line.startswith("Freelist Status"):
            section = "Freelist"
        elif line.strip().startswith("Entries:") and section:
            out[section] = int(line.split(":")[1])
    return out
