#!/usr/bin/env python3
"""test_mdbcheck.py -- the structural checker against files written by REAL LMDB.

1. Builds environments with the py-lmdb module (Debian/PyPI LMDB 0.9): named DBs, DUPSORT
   with sub-pages and sub-DBs, DUPFIXED (LEAF2), INTEGERKEY, INTEGERDUP, REVERSEKEY, big
   values on overflow pages, churn that fills the free DB; plus copies made by mdb_load
   (from mdb_dump output) and by mdb_copy -c.  mdbcheck must report zero problems on each.
2. Corrupts copies in targeted ways and asserts the matching problem is reported:
   a byte flipped in a branch page's key, a page leaked by shortening a free-DB record,
   two trees sharing a page, a wrong entry count, a wrong depth, a bad child pointer,
   a damaged meta.
3. Fuzz: random byte flips and truncations; the checker must never crash (run it on an
   ASan/UBSan build with -a).

Usage: test_mdbcheck.py [-a ASAN_MDBCHECK] [-n FUZZ_CASES] MDBCHECK
"""

import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

import lmdb

P_BRANCH, P_LEAF, P_OVERFLOW, P_META, P_LEAF2 = 1, 2, 4, 8, 0x20
F_BIGDATA, F_SUBDATA, F_DUPDATA = 1, 2, 4
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


# ---------------------------------------------------------------- building real files


def build_env(path, seed, churn=5, delete_heavy=False):
    r = random.Random(seed)
    env = lmdb.open(path, map_size=256 << 20, max_dbs=16)
    plain = env.open_db(b"plain")
    dup = env.open_db(b"dup", dupsort=True)
    dfix = env.open_db(b"dupfixed", dupsort=True, dupfixed=True)
    ikey = env.open_db(b"intkey", integerkey=True)
    idup = env.open_db(b"intdup", dupsort=True, dupfixed=True, integerdup=True)
    rkey = env.open_db(b"revkey", reverse_key=True)
    big = env.open_db(b"big")
    with env.begin(write=True) as t:
        for i in range(3000):
            t.put(b"k%07d" % r.randrange(10**7), b"v" * r.randrange(1, 200))
            if i % 10 == 0:
                t.put(b"main%05d" % i, b"x" * (i % 50))
        for i in range(300):
            t.put(b"k%04d" % i, b"plain%d" % i, db=plain)
        for k in range(60):
            n = [1, 5, 400, 30, 2000][k % 5]
            for j in range(n):
                t.put(b"dk%03d" % k, b"val%05d-%s" % (j, b"y" * (j % 20)), db=dup)
                t.put(b"fk%03d" % k, struct.pack("<Q", j * 7 + k), db=dfix)
                t.put(struct.pack("<I", k), struct.pack("<I", j * 3), db=idup)
        for _ in range(2000):
            t.put(struct.pack("<Q", r.randrange(2**40)), b"i" * 10, db=ikey)
        for _ in range(500):
            t.put(b"%d-rev" % r.randrange(10**6), b"r", db=rkey)
        for i in range(40):
            t.put(b"big%02d" % i, bytes([i]) * r.choice([2100, 3000, 5000, 20000, 100000]), db=big)
    for rnd in range(churn):
        with env.begin(write=True) as t:
            for _ in range(200):
                t.put(b"k%04d" % r.randrange(300), b"upd%d" % rnd * r.randrange(1, 30), db=plain)
            c = t.cursor(db=big)
            for _ in range(3):
                if c.set_key(b"big%02d" % r.randrange(40)):
                    c.delete()
            t.put(b"big%02d" % r.randrange(40), b"z" * r.randrange(1, 50000), db=big)
            for _ in range(50):
                k = b"dk%03d" % r.randrange(60)
                t.delete(k, b"val%05d-%s" % (r.randrange(2000), b"y" * 3), db=dup)
                t.put(k, b"new%d" % r.randrange(10**6), db=dup)
            if delete_heavy:
                c = t.cursor()
                c.set_range(b"k%07d" % r.randrange(10**7))
                for _ in range(400):
                    if not c.key().startswith(b"k") or not c.delete():
                        break
                c = t.cursor(db=dfix)
                if c.set_key(b"fk%03d" % r.randrange(60)):
                    for _ in range(r.randrange(1, 1500)):
                        if not c.delete() or c.key()[:2] != b"fk":
                            break
                c = t.cursor(db=idup)
                if c.set_key(struct.pack("<I", r.randrange(60))):
                    c.delete(dupdata=True)
                for _ in range(700):
                    t.delete(struct.pack("<Q", r.randrange(2**40)), db=ikey)
                c = t.cursor(db=ikey)
                c.first()
                for _ in range(300):
                    if not c.delete():
                        break
    env.close()


def run_check(mdbcheck, path, extra=()):
    p = subprocess.run([mdbcheck, "-q", *extra, path], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


# ---------------------------------------------------------------- raw file helpers


class Image:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self.b = bytearray(f.read())
        self.psize = struct.unpack_from("<I", self.b, 40)[0]
        metas = []
        for i in (0, 1):
            off = i * self.psize
            txnid = struct.unpack_from("<Q", self.b, off + 144)[0]
            metas.append((txnid, i))
        self.meta = max(metas)[1] if metas[1][0] > metas[0][0] else 0

    def save(self):
        with open(self.path, "wb") as f:
            f.write(self.b)

    def dbrec_off(self, dbi):
        return self.meta * self.psize + 40 + 48 * dbi

    def rec(self, off):
        pad, flags, depth, br, lf, ov, ent, root = struct.unpack_from("<IHHQQQQQ", self.b, off)
        return dict(
            flags=flags, depth=depth, branch=br, leaf=lf, overflow=ov, entries=ent, root=root
        )

    def page(self, pg):
        off = pg * self.psize
        pgno, pad, flags, lower, upper = struct.unpack_from("<QHHHH", self.b, off)
        return off, flags, (lower - 16) // 2, upper

    def nodes(self, pg):
        off, flags, n, _ = self.page(pg)
        out = []
        for i in range(n):
            no = struct.unpack_from("<H", self.b, off + 16 + 2 * i)[0]
            lo, hi, fl, ks = struct.unpack_from("<HHHH", self.b, off + no)
            key = bytes(self.b[off + no + 8 : off + no + 8 + ks])
            out.append(
                dict(
                    off=off + no,
                    lo=lo,
                    hi=hi,
                    flags=fl,
                    ksize=ks,
                    key=key,
                    data_off=off + no + 8 + ks,
                    dsize=lo | hi << 16,
                    child=lo | hi << 16 | fl << 32,
                )
            )
        return flags, out

    def tree_pages(self, root):
        """(pgno, flags) of the pages of one tree, breadth first."""
        out, todo = [], [root]
        while todo:
            pg = todo.pop(0)
            flags, nodes = self.nodes(pg)
            out.append((pg, flags))
            if flags & P_BRANCH:
                todo.extend(n["child"] for n in nodes)
        return out

    def named(self):
        """name -> offset of its db_record inside a MAIN leaf."""
        res = {}
        for pg, flags in self.tree_pages(self.rec(self.dbrec_off(1))["root"]):
            if flags & P_LEAF:
                for n in self.nodes(pg)[1]:
                    if n["flags"] == F_SUBDATA:
                        res[n["key"]] = n["data_off"]
        return res


def problems(out):
    return [ln.strip() for ln in out.splitlines() if ln.strip().startswith("problem ")]


def expect(name, mdbcheck, path, kinds, must_pgno=None, must_db=None):
    rc, out = run_check(mdbcheck, path)
    probs = problems(out)
    ok = rc == 1 and any(p.split()[1] in kinds for p in probs)
    if ok and must_pgno is not None:
        ok = any(p.split()[1] in kinds and p.split()[3] == str(must_pgno) for p in probs)
    if ok and must_db is not None:
        ok = any(p.split()[1] in kinds and (f" db {must_db}:") in p for p in probs)
    print(f"{name:<44} {'detected' if ok else 'MISSED'}")
    for p in probs[:4]:
        print("      " + p)
    if not ok:
        fail(f"{name}: expected {kinds} (pgno {must_pgno}, db {must_db}), rc {rc}\n{out}")


# ---------------------------------------------------------------- corruption cases


def corruptions(mdbcheck, src, work):
    def fresh(tag):
        d = os.path.join(work, tag)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        shutil.copy(os.path.join(src, "data.mdb"), d)
        return d, Image(os.path.join(d, "data.mdb"))

    def patch_dbrec(tag, db, field, fmt, change):
        """A fresh copy `tag` in which one field (at offset `field`, struct format `fmt`) of
        a DB record (db: a named DB, or None for the main DB's record in the meta) is
        change(its value)."""
        d, im = fresh(tag)
        off = (im.named()[db] if db else im.dbrec_off(1)) + field
        struct.pack_into(fmt, im.b, off, change(struct.unpack_from(fmt, im.b, off)[0]))
        im.save()
        return d

    # 1. flip a key byte in a branch page of the main DB
    d, im = fresh("branch-key")
    main_root = im.rec(im.dbrec_off(1))["root"]
    br = [pg for pg, fl in im.tree_pages(main_root) if fl & P_BRANCH][0]
    _, nodes = im.nodes(br)
    tgt = nodes[len(nodes) // 2]
    im.b[tgt["off"] + 8] ^= 0xFF  # first key byte: 'k'/'m' -> high byte, breaks order
    im.save()
    expect(f"flipped key byte in branch page {br}", mdbcheck, d, {"order", "range"}, must_pgno=br)

    # 2. flip a byte of a branch page's child pointer
    d, im = fresh("branch-child")
    _, nodes = im.nodes(br)
    im.b[nodes[1]["off"] + 1] ^= 0x40  # child pgno bits 8-15
    im.save()
    expect(
        f"flipped child pgno in branch page {br}", mdbcheck, d, {"bounds", "twice", "leak", "page"}
    )

    # 3. leak a page: shorten a free-DB record by one page
    d, im = fresh("free-leak")
    free = im.rec(im.dbrec_off(0))
    leafpg = [pg for pg, fl in im.tree_pages(free["root"]) if fl & P_LEAF][0]
    _, nodes = im.nodes(leafpg)
    n = nodes[0]
    if n["flags"] & F_BIGDATA:
        ov = struct.unpack_from("<Q", im.b, n["data_off"])[0]
        doff = ov * im.psize + 16
    else:
        doff = n["data_off"]
    count = struct.unpack_from("<Q", im.b, doff)[0]
    last = struct.unpack_from("<Q", im.b, doff + 8 * count)[0]
    struct.pack_into("<Q", im.b, doff, count - 1)
    im.save()
    expect(f"free record shortened (page {last} leaked)", mdbcheck, d, {"leak"}, must_pgno=last)

    # 4. two trees share a page: point 'plain' at 'revkey''s root
    d, im = fresh("shared")
    nm = im.named()
    rk = im.rec(nm[b"revkey"])
    struct.pack_into("<Q", im.b, nm[b"plain"] + 40, rk["root"])
    struct.pack_into("<H", im.b, nm[b"plain"] + 6, rk["depth"])
    im.save()
    expect(
        f"two named DBs share root page {rk['root']}", mdbcheck, d, {"twice"}, must_pgno=rk["root"]
    )

    # 5. wrong entry count in a named DB record
    d = patch_dbrec("entries", b"intkey", 32, "<Q", lambda n: n + 1)
    expect("intkey entry count off by one", mdbcheck, d, {"count"}, must_db="intkey")

    # 6. wrong entry count in the main DB record of the meta
    d = patch_dbrec("main-entries", None, 32, "<Q", lambda n: n - 1)
    expect("main DB entry count off by one", mdbcheck, d, {"count"}, must_db="@main")

    # 7. wrong depth
    d = patch_dbrec("depth", b"dup", 6, "<H", lambda _: 5)
    expect("dup DB depth 5", mdbcheck, d, {"depth"}, must_db="dup")

    # 8. wrong page counts: a plain DB off by one; a DUPSORT DB below its own tree's pages
    d = patch_dbrec("pages", b"revkey", 16, "<Q", lambda n: n + 1)
    expect("revkey leaf-page count off by one", mdbcheck, d, {"count"}, must_db="revkey")
    d = patch_dbrec("dup-pages", b"dupfixed", 16, "<Q", lambda _: 0)
    expect("dupfixed leaf-page count 0", mdbcheck, d, {"count"}, must_db="dupfixed")

    # 9. two keys swapped in a leaf of 'plain' (order)
    d, im = fresh("leaf-order")
    nm = im.named()
    pl = im.rec(nm[b"plain"])
    leaf = [pg for pg, fl in im.tree_pages(pl["root"]) if fl & P_LEAF][0]
    off = leaf * im.psize
    s1, s2 = struct.unpack_from("<HH", im.b, off + 16 + 2 * 3)
    struct.pack_into("<HH", im.b, off + 16 + 2 * 3, s2, s1)
    im.save()
    expect(f"two slots swapped in leaf {leaf}", mdbcheck, d, {"order"}, must_pgno=leaf)

    # 10. overflow page header damaged
    d, im = fresh("overflow")
    nm = im.named()
    bg = im.rec(nm[b"big"])
    ovpg = None
    for pg, fl in im.tree_pages(bg["root"]):
        if fl & P_LEAF:
            for n in im.nodes(pg)[1]:
                if n["flags"] & F_BIGDATA:
                    ovpg = struct.unpack_from("<Q", im.b, n["data_off"])[0]
                    break
        if ovpg:
            break
    struct.pack_into("<I", im.b, ovpg * im.psize + 12, 1)  # run length 1: too short
    im.save()
    expect(f"overflow run length damaged (page {ovpg})", mdbcheck, d, {"page"}, must_pgno=ovpg)

    # 11. a page listed free while in use
    d, im = fresh("free-used")
    free = im.rec(im.dbrec_off(0))
    leafpg = [pg for pg, fl in im.tree_pages(free["root"]) if fl & P_LEAF][0]
    n = im.nodes(leafpg)[1][0]
    doff = (
        struct.unpack_from("<Q", im.b, n["data_off"])[0] * im.psize + 16
        if n["flags"] & F_BIGDATA
        else n["data_off"]
    )
    count = struct.unpack_from("<Q", im.b, doff)[0]
    # replace the smallest listed page (the last: lists are descending) by a used page
    used = im.rec(im.named()[b"revkey"])["root"]
    lost = struct.unpack_from("<Q", im.b, doff + 8 * count)[0]
    if used < struct.unpack_from("<Q", im.b, doff + 8 * (count - 1))[0] if count > 1 else True:
        struct.pack_into("<Q", im.b, doff + 8 * count, used)
        im.save()
        expect(f"used page {used} listed free", mdbcheck, d, {"free"}, must_pgno=used)
        expect(f"... and page {lost} leaked", mdbcheck, d, {"leak"}, must_pgno=lost)

    # 11b. a leaf's upper bound moved down: the node area has a gap
    d, im = fresh("packing")
    nm = im.named()
    leaf = [pg for pg, fl in im.tree_pages(im.rec(nm[b"revkey"])["root"]) if fl & P_LEAF][0]
    off = leaf * im.psize + 14
    struct.pack_into("<H", im.b, off, struct.unpack_from("<H", im.b, off)[0] - 2)
    im.save()
    expect(f"leaf {leaf} upper moved (gap in node space)", mdbcheck, d, {"page"}, must_pgno=leaf)

    # 12. a damaged meta magic on the newest meta: the other meta is picked and checked
    d, im = fresh("meta")
    struct.pack_into("<I", im.b, im.meta * im.psize + 16, 0x12345678)
    im.save()
    rc, out = run_check(mdbcheck, d)
    ok = rc == 1 and any(p.split()[1] == "meta" for p in problems(out))
    print(f"{'newest meta magic damaged':<44} {'detected' if ok else 'MISSED'}")
    if not ok:
        fail(f"meta: rc {rc}\n{out}")

    # 13. truncated file
    d, im = fresh("truncated")
    del im.b[len(im.b) // 2 :]
    im.save()
    expect("file truncated to half", mdbcheck, d, {"bounds", "meta"})


# ---------------------------------------------------------------- fuzz


def fuzz(mdbcheck, srcs, work, cases, seed=12345):
    r = random.Random(seed)
    origs = []
    for src in srcs:
        with open(os.path.join(src, "data.mdb"), "rb") as f:
            origs.append(f.read())
    d = os.path.join(work, "fuzz")
    os.makedirs(d, exist_ok=True)
    target = os.path.join(d, "data.mdb")
    crashes = 0
    env = dict(
        os.environ,
        ASAN_OPTIONS="exitcode=99:detect_leaks=1",
        UBSAN_OPTIONS="halt_on_error=1:exitcode=98:print_stacktrace=1",
    )
    for i in range(cases):
        orig = origs[i % len(origs)]
        psize = struct.unpack_from("<I", orig, 40)[0]
        npages = len(orig) // psize
        b = bytearray(orig)
        kind = r.randrange(4)
        if kind == 0:  # random bytes anywhere in a few pages
            for _ in range(r.randrange(1, 20)):
                b[r.randrange(len(b))] = r.randrange(256)
        elif kind == 1:  # page header fields
            pg = r.randrange(npages)
            off = pg * psize + r.randrange(16)
            b[off] = r.randrange(256)
        elif kind == 2:  # node headers / slots near the page start or end
            pg = r.randrange(2, npages)
            off = pg * psize + r.choice([r.randrange(16, 64), psize - r.randrange(1, 64)])
            b[off] ^= 1 << r.randrange(8)
        else:  # truncation, or a meta field
            if r.randrange(2):
                del b[r.randrange(psize * 2, len(b)) :]
            else:
                off = r.randrange(2) * psize + r.randrange(16, 152)
                b[off] = r.randrange(256)
        with open(target, "wb") as f:
            f.write(b)
        p = subprocess.run([mdbcheck, "-q", d], capture_output=True, text=True, env=env)
        if p.returncode not in (0, 1):
            crashes += 1
            keep = os.path.join(work, f"fuzz-crash-{i}.mdb")
            shutil.copy(target, keep)
            fail(f"fuzz case {i}: exit {p.returncode}, kept {keep}\n{p.stderr[-2000:]}")
    label = f"fuzz: {cases} corrupted files"
    verdict = "no crash" if not crashes else f"{crashes} CRASHES"
    print(f"{label:<44} {verdict}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mdbcheck")
    ap.add_argument("-a", "--asan", help="ASan/UBSan build of mdbcheck for the fuzz pass")
    ap.add_argument("-n", "--fuzz", type=int, default=300)
    ap.add_argument("-s", "--seed", type=int, default=12345, help="fuzz seed")
    ap.add_argument("-k", "--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mdbcheck-")
    try:
        envs = []
        for seed, churn, dh in [(1, 5, False), (2, 12, True), (3, 30, True)]:
            p = os.path.join(work, f"real{seed}")
            build_env(p, seed, churn, dh)
            envs.append(p)
        # mdb_dump | mdb_load: a file written by real mdb_load
        dump = subprocess.run(["mdb_dump", "-a", envs[1]], capture_output=True, check=True).stdout
        p = os.path.join(work, "loaded")
        os.makedirs(p)
        subprocess.run(["mdb_load", p], input=dump, check=True, stderr=subprocess.DEVNULL)
        envs.append(p)
        # mdb_copy -c: a compacted copy by real LMDB
        p = os.path.join(work, "compact")
        os.makedirs(p)
        subprocess.run(["mdb_copy", "-c", envs[2], p], check=True)
        envs.append(p)
        # an empty environment
        p = os.path.join(work, "empty")
        lmdb.open(p).close()
        envs.append(p)
        for p in envs:
            rc, out = run_check(a.mdbcheck, p)
            clean = rc == 0 and "problems: 0" in out
            label = f"real LMDB file {os.path.basename(p)}"
            print(f"{label:<44} {'clean' if clean else 'PROBLEMS'}")
            if not clean:
                fail(f"{p}: rc {rc}\n{out}")
        # the checker's counts agree with mdb_stat
        st = subprocess.run(["mdb_stat", "-a", envs[2]], capture_output=True, text=True).stdout
        rc, out = (
            subprocess.run([a.mdbcheck, envs[2]], capture_output=True, text=True).returncode,
            subprocess.run([a.mdbcheck, envs[2]], capture_output=True, text=True).stdout,
        )
        for line in out.splitlines():
            if line.startswith("dup ") or line.startswith("intkey "):
                name, depth, brn, leaf, ov, ent = line.split()[:6]
                blk = st.split(f"Status of {name}\n")[1]
                want = {
                    k.strip(): v.strip() for k, v in (ln.split(":") for ln in blk.splitlines()[:5])
                }
                if (
                    want["Tree depth"],
                    want["Branch pages"],
                    want["Leaf pages"],
                    want["Overflow pages"],
                    want["Entries"],
                ) != (depth, brn, leaf, ov, ent):
                    fail(f"mdb_stat disagrees for {name}: {want} vs {line}")
        print(f"{'counts agree with mdb_stat':<44} ok")

        corruptions(a.mdbcheck, envs[1], work)
        if a.fuzz:
            fuzz(a.asan or a.mdbcheck, envs[:5], work, a.fuzz, a.seed)
    finally:
        if a.keep or failures:
            print("work directory kept:", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
