"""dataset -- the seeded "interop shape" every interop test writes and reads back.

The same seed gives the same content in every process, so the expected contents (and the
expected key *order*, from our own model of LMDB's comparators) are computed here without
any LMDB at all.  That model is the oracle: an engine that stores the right pairs in the
wrong order fails.

Shape "base" (issue 2, "What it must show" a): 21,000+ keys, values 0 bytes .. 4 MiB
    main     (no flags)    4,000 keys, values 0..300 bytes, plus 8 larger values
    plain    (no flags)    8,000 random binary keys (1..100 bytes), values mostly small,
                           some 1..9 KB, a few from the big sizes below
    intkey   INTEGERKEY    6,000 keys: native (little-endian) 8-byte unsigned integers
    revkey   REVERSEKEY    3,000 host-name-like keys sharing suffixes
    big      (no flags)    every boundary size from 0 bytes to 4 MiB (overflow pages)
Shape "dupsort" = base plus
    dups     DUPSORT       1,200 keys with 1..400 sorted duplicates each (sub-pages and
                           sub-databases both occur)

The write plan also inserts keys that are later deleted and values that are later
overwritten, and commits every few thousand operations, so the free list is exercised.
"""

import hashlib
import random

from . import lmdbffi as F

DB_FLAGS = {
    None: 0,
    "plain": 0,
    "intkey": F.INTEGERKEY,
    "revkey": F.REVERSEKEY,
    "big": 0,
    "dups": F.DUPSORT,
}
SHAPES = {
    "base": ["plain", "intkey", "revkey", "big"],
    "dupsort": ["plain", "intkey", "revkey", "big", "dups"],
}
ALL_NAMED = SHAPES["dupsort"]
# Sizes that sit on LMDB's boundaries at 4 KiB pages: the node maximum (2038 with header),
# exactly one page, several pages, and the 4 MiB top end.
BIG_SIZES = [
    0,
    1,
    2000,
    2022,
    2023,
    2030,
    2048,
    4080,
    4096,
    4097,
    8192,
    12289,
    65536,
    100000,
    1 << 20,
    (1 << 22) - 1,
    1 << 22,
]


def _value(rng, n):
    return rng.randbytes(n)


def expected(seed, shape="base"):
    """{db_name or None: {key: value}} -- the final content (DUPSORT: {key: set(values)})."""
    rng = random.Random(seed)
    out = {}

    main = {}
    for i in range(4000):
        main[b"main-%06d" % i] = _value(rng, rng.randrange(0, 301))
    for i, n in enumerate(BIG_SIZES[:8]):
        main[b"main-big-%02d" % i] = _value(rng, n)
    out[None] = main

    plain = {}
    while len(plain) < 8000:
        k = rng.randbytes(rng.randrange(1, 101))
        r = rng.random()
        if r < 0.002:
            n = rng.choice(BIG_SIZES)
        elif r < 0.05:
            n = rng.randrange(1000, 9000)
        else:
            n = rng.randrange(0, 200)
        plain[k] = _value(rng, n)
    out["plain"] = plain

    intkey = {}
    while len(intkey) < 6000:
        k = rng.getrandbits(64 if rng.random() < 0.5 else 20).to_bytes(8, "little")
        intkey[k] = _value(rng, rng.randrange(0, 65))
    out["intkey"] = intkey

    revkey = {}
    tlds = [b".com", b".org", b".example.net", b".co.uk", b""]
    while len(revkey) < 3000:
        k = b"h%d.s%d" % (rng.randrange(10**6), rng.randrange(40)) + rng.choice(tlds)
        revkey[k] = _value(rng, rng.randrange(0, 120))
    out["revkey"] = revkey

    big = {}
    for n in BIG_SIZES:  # every boundary size at least once, some twice
        big[b"big-%08d" % n] = _value(rng, n)
        if rng.random() < 0.3:
            big[b"big-%08d-again" % n] = _value(rng, n)
    out["big"] = big

    if shape == "base":
        return out
    dups = {}
    for _ in range(1200):
        k = b"d%05d" % rng.randrange(100000)
        r = rng.random()
        n = 1 if r < 0.5 else (rng.randrange(2, 20) if r < 0.97 else rng.randrange(200, 401))
        vals = dups.setdefault(k, set())
        while len(vals) < n:
            vals.add(rng.randbytes(rng.randrange(1, 60)))
    out["dups"] = {k: v for k, v in dups.items()}
    return out


def sort_key(name):
    """Our model of LMDB's default comparators for each database of the shape."""
    flags = DB_FLAGS[name]
    if flags & F.INTEGERKEY:
        return lambda kv: (int.from_bytes(kv[0], "little"), kv[1])
    if flags & F.REVERSEKEY:
        return lambda kv: (kv[0][::-1], kv[1])
    return lambda kv: kv


def ordered(name, content):
    """The (key, value) pairs of one database in the order a cursor must return them."""
    if DB_FLAGS[name] & F.DUPSORT:
        pairs = [(k, v) for k, vs in content.items() for v in vs]
    else:
        pairs = list(content.items())
    return sorted(pairs, key=sort_key(name))


def plan(seed, shape="base"):
    """The write plan: a list of transactions, each a list of (op, db, key, value).

    op is "put" or "del".  Applying the plan to an empty environment yields
    expected(seed, shape).
    """
    content = expected(seed, shape)
    rng = random.Random(seed ^ 0x5EED)
    ops = []
    for name, c in content.items():
        if DB_FLAGS[name] & F.DUPSORT:
            for k, vs in c.items():
                for v in vs:
                    ops.append(("put", name, k, v))
        else:
            for k, v in c.items():
                if rng.random() < 0.05:  # overwritten later with the final value
                    ops.append(("put", name, k, rng.randbytes(rng.randrange(0, 3000))))
                ops.append(("put", name, k, v))
    rng.shuffle(ops)
    # Keep "put k=v1 ... put k=v_final" order for overwritten keys: re-sort each key's puts
    # so the final value is the last one written.
    last = {}
    for i, (_op, name, k, _v) in enumerate(ops):
        if not (DB_FLAGS[name] & F.DUPSORT):
            last.setdefault((name, k), []).append(i)
    for (name, k), idxs in last.items():
        if len(idxs) > 1:
            final = content[name][k]
            vals = [ops[i][3] for i in idxs]
            vals.remove(final)
            vals.append(final)
            for i, v in zip(idxs, vals):
                ops[i] = ("put", name, k, v)
    # Temporary keys: inserted, then deleted in a later transaction.
    temps = []
    for i in range(1500):
        name = rng.choice([None, "plain", "revkey"])
        k = b"\x00tmp-%05d" % i if name != "intkey" else None
        temps.append(("put", name, k, rng.randbytes(rng.randrange(0, 5000))))
    ops[len(ops) // 4 : len(ops) // 4] = temps
    ops.extend(("del", name, k, None) for (_, name, k, _) in temps)
    txns = []
    step = 4000
    for i in range(0, len(ops), step):
        txns.append(ops[i : i + step])
    return txns


def fingerprint_pairs(pairs):
    """A compact, comparable listing: [key_hex, value_length, sha1(value)] per pair."""
    return [[k.hex(), len(v), hashlib.sha1(v).hexdigest()] for k, v in pairs]


def expected_listing(seed, shape="base"):
    content = expected(seed, shape)
    return {("" if n is None else n): fingerprint_pairs(ordered(n, c)) for n, c in content.items()}


def first_difference(got, want):
    """A one-line description of where two listings of one database diverge, or None."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"item {i}: got {g}, want {w}"
    if len(got) != len(want):
        return f"length: got {len(got)} items, want {len(want)}"
    return None
