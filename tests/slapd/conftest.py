"""tests/slapd: OpenLDAP slapd/back-mdb over stock LMDB and over our library."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for p in (HERE, os.path.join(os.path.dirname(HERE), "compat")):
    if p not in sys.path:
        sys.path.insert(0, p)
