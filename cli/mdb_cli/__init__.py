"""mdb-cli: look at, move and repair mdb/LMDB environments from the command line.

The console script ``mdb-cli`` runs :func:`mdb_cli.main.main`. The package imports
the storage engine only through :mod:`mdb_cli.engine`.
"""

__version__ = "0.1.0"
