"""model -- a plain-Python model of an LMDB environment's named databases, with py-lmdb's
return-value rules, for the state machine (test_state_machine.py).

A database is {key: value} or, for DUPSORT, {key: sorted list of values}; `pairs(db)` is
the cursor order.  Key order: bytes order (LMDB's default memcmp-then-length compare), or
the native unsigned integer for INTEGERKEY.  Duplicates sort as bytes (no INTEGERDUP here).
"""

import bisect
import copy


class DB:
    def __init__(self, name, intkey=False, dupsort=False, dupfixed=False):
        self.name, self.intkey, self.dupsort, self.dupfixed = name, intkey, dupsort, dupfixed
        self.data = {}

    def sortkey(self, k):
        return int.from_bytes(k, "little") if self.intkey else k

    def keys(self):
        return sorted(self.data, key=self.sortkey)

    def pairs(self):
        out = []
        for k in self.keys():
            v = self.data[k]
            if self.dupsort:
                out.extend((k, x) for x in v)
            else:
                out.append((k, v))
        return out

    # ---- py-lmdb Transaction.put / Cursor.put result rules
    def put(self, k, v, dupdata=True, overwrite=True, append=False):
        """Returns py-lmdb's result (True = written, False = KEYEXIST)."""
        if append:
            ks = self.keys()
            if ks and self.sortkey(k) <= self.sortkey(ks[-1]):
                return False
        if not overwrite and k in self.data:
            return False
        if self.dupsort:
            vals = self.data.get(k, [])
            if v in vals:
                return not (not dupdata)  # NODUPDATA -> KEYEXIST, else a no-op success
            self.data[k] = sorted(vals + [v])
            return True
        self.data[k] = v
        return True

    def delete(self, k, v=b""):
        if k not in self.data:
            return False
        if self.dupsort and v:
            vals = self.data[k]
            if v not in vals:
                return False
            vals.remove(v)
            if not vals:
                del self.data[k]
            return True
        del self.data[k]
        return True

    def get(self, k):
        v = self.data.get(k)
        if v is None:
            return None
        return v[0] if self.dupsort else v

    # ---- positions: index into pairs()
    def index_of(self, pos):
        if pos is None:
            return None
        ps = self.pairs()
        i = bisect.bisect_left([self._pk(p) for p in ps], self._pk(pos))
        return i if i < len(ps) and ps[i] == pos else None

    def _pk(self, p):
        return (self.sortkey(p[0]), p[1])


class Model:
    def __init__(self, specs):
        self.dbs = {name: DB(name, **kw) for name, kw in specs.items()}

    def clone(self):
        return copy.deepcopy(self)
