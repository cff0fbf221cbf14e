"""tests/compat: harnesses that run other people's LMDB programs and tests over our
library.  compatlib.py (next to this file) holds the shared helpers."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
