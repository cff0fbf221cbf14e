"""Output helpers: JSON, aligned key/value blocks, sizes, and the progress display.

Owns how things look; commands decide what to show. Progress goes to stderr and
only when stderr is a terminal (and -q was not given), so pipes and logs stay clean.
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import IO, Any, Optional

import click

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtKMGT]?)(i?[bB]?)\s*$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``"10G"`` -> bytes. Suffixes K, M, G, T are powers of 1024; B/iB are optional."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a size (examples: 1048576, 64M, 10G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


class SizeType(click.ParamType):  # type: ignore[type-arg,unused-ignore]
    name = "SIZE"

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Any) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def binary_stdout() -> IO[bytes]:
    """The byte stream under sys.stdout (also under click's CliRunner)."""
    sys.stdout.flush()
    return sys.stdout.buffer


def binary_stdin() -> IO[bytes]:
    return sys.stdin.buffer


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False))


def stderr_is_tty() -> bool:
    stream = sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """Items done, items/s and ETA on stderr, for work measured in input bytes.

    ``total`` is the input size in bytes when known (a file), else None (a pipe):
    then only the count and the rate are shown. Inactive unless ``enabled``.
    """

    def __init__(self, label: str, total: Optional[int], enabled: bool, unit: str = "items"):
        self.enabled = enabled
        self.total = total
        self.unit = unit
        self.items = 0
        self.start = time.monotonic()
        self.done_bytes = 0
        self._last_draw = 0.0
        self._bar: Any = None
        self._file: IO[str] = sys.stderr
        if enabled and total:
            self._bar = click.progressbar(
                length=total,
                label=label,
                file=self._file,
                show_eta=True,
                show_percent=True,
                item_show_func=self._rate_text,
                width=24,
            )
            self._bar.__enter__()
        self.label = label

    def _rate_text(self, _item: Any) -> str:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        return f"{self.items:,} {self.unit}, {self.items / elapsed:,.0f} {self.unit}/s"

    def advance(self, items: int, position: Optional[int] = None) -> None:
        """Record ``items`` more done; ``position`` is the input offset in bytes."""
        self.items += items
        if not self.enabled:
            return
        if self._bar is not None and position is not None:
            delta = position - self.done_bytes
            self.done_bytes = position
            self._bar.update(max(delta, 0), current_item=self.items)
            return
        now = time.monotonic()
        if now - self._last_draw >= 0.2:
            self._last_draw = now
            self._file.write(f"\r{self.label} {self._rate_text(None)}")
            self._file.flush()

    def finish(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            if self.total:
                self._bar.update(max(self.total - self.done_bytes, 0), current_item=self.items)
            self._bar.__exit__(None, None, None)
            self._bar = None
        else:
            self._file.write(f"\r{self.label} {self._rate_text(None)}\n")
            self._file.flush()

    @property
    def rate(self) -> float:
        return self.items / max(time.monotonic() - self.start, 1e-9)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start


def render_key(data: bytes) -> str:
    """Printable rendering for humans: text when it is printable ASCII, else hex."""
    if data and all(0x20 <= b < 0x7F for b in data):
        return data.decode("ascii")
    return "0x" + data.hex()
