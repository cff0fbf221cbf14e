"""``python -m mdb_cli`` runs the same entry point as the ``mdb-cli`` script."""

from mdb_cli.main import main

main()
