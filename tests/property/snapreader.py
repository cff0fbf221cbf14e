"""snapreader -- a reader in its own process for test_snapshot.py.

    python snapreader.py KIND PATH       (KIND: pkg | ffi, see engines.py)
stdin commands, one per line:  begin -> "TXNID DIGEST" | read -> "DIGEST" | end | quit
"""

import sys

from engines import Eng


def main():
    kind, path = sys.argv[1], sys.argv[2]
    eng = Eng(kind, path) if kind == "ffi" else None
    if eng is None:
        import mdb

        eng = Eng.__new__(Eng)
        eng.kind = "pkg"
        eng.env = mdb.open(path, max_dbs=2, map_size=256 << 20, max_readers=64)
        eng.db = eng.env.open_db(b"snap", create=False)
    r = None
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        try:
            if cmd == "begin":
                r = eng.begin()
                print(f"{r.txnid} {r.read()}", flush=True)
            elif cmd == "read":
                print(r.read(), flush=True)
            elif cmd == "end":
                r.end()
                r = None
                print("ok", flush=True)
            elif cmd == "quit":
                break
        except Exception as e:  # reported to the parent as the answer
            print(f"ERROR {type(e).__name__}: {e}".replace("\n", " "), flush=True)
    eng.close()


if __name__ == "__main__":
    main()
