"""lab/load.py's client frame: what a client process sends its parent, without a server."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from lab import load


class Pipe:
    """Records what a client sends through its end of the pipe, and whether it closed it."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.closed = False

    def send(self, obj: Any) -> None:
        self.sent.append(obj)

    def close(self) -> None:
        self.closed = True


def _closed_port() -> int:
    s = socket.create_server(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return int(port)


def test_a_client_that_cannot_connect_reports_the_error_and_closes_its_pipe() -> None:
    pipe = Pipe()
    load._scan_client(_closed_port(), False, pipe)
    assert pipe.closed
    assert len(pipe.sent) == 1 and pipe.sent[0][0] == "error"
    assert pipe.sent[0][1].startswith("scan client: ConnectionRefusedError")


def test_a_client_body_that_ends_normally_only_closes_its_pipe() -> None:
    pipe = Pipe()
    with load.reporting(pipe, "probe"):
        pipe.send(("ok", 1))
    assert pipe.sent == [("ok", 1)] and pipe.closed


def test_forked_clients_errors_reach_the_parent() -> None:
    with pytest.raises(RuntimeError, match=r"^scan client: ConnectionRefusedError.*; scan client"):
        load.full_scans(_closed_port(), 2, timeout=30)
