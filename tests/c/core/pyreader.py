"""Reader half of the two-process test: real LMDB (py-lmdb) reads while our writer commits.
Every snapshot must hold one generation across all g??? keys, with intact filler bytes.
Some snapshots are held across many writer commits, so page reuse must respect them."""

import sys
import time

import lmdb

path, seconds = sys.argv[1], float(sys.argv[2])
env = lmdb.open(path, readonly=True, lock=True, map_size=512 << 20)
end = time.time() + seconds
snaps = 0
held = []
while time.time() < end:
    txn = env.begin()
    gens = set()
    for k, v in txn.cursor():
        g = int(v[:8])
        if v[8:] != bytes([ord("a") + g % 26]) * (len(v) - 8):
            sys.exit(f"torn value in {k!r}")
        gens.add(g)
    if len(gens) > 1:
        sys.exit(f"mixed generations in one snapshot: {sorted(gens)[:5]}")
    snaps += 1
    held.append(txn)
    if len(held) > 3:
        old = held.pop(0)
        # an old snapshot must still read back the same generation
        gs = {int(v[:8]) for _, v in old.cursor()}
        if len(gs) > 1:
            sys.exit("old snapshot changed under us")
        old.abort()
    time.sleep(0.002)
for t in held:
    t.abort()
print(f"reader: {snaps} snapshots consistent")
