"""Text formats for moving data in and out: mdb_dump's, mdb_load -T's, JSON lines.

Owns: writing and reading these formats; nothing here touches the engine.

mdb_dump format (an interface fact: LMDB's mdb_load reads what we write and we read
what LMDB's mdb_dump writes). One or more sections, each::

    VERSION=3
    format=bytevalue            (or format=print)
    database=NAME               (named databases only)
    type=btree
    mapsize=N
    maxreaders=N
    duplicates=1                (DUPSORT databases only)
    reversekey=1 ... reversedup=1   (one line per DB flag that is set, in bit order)
    db_pagesize=N
    HEADER=END
     <key>                      (one space, then the item)
     <value>
    ...
    DATA=END

bytevalue items are lower-case hex. print items keep the bytes 0x20..0x7e and write
every other byte as a backslash and two hex digits. One deliberate difference from
Debian's mdb_dump 0.9.24: we write a backslash as two backslashes, which is what
mdb_load reads back as one; 0.9.24 writes it bare, and then cannot load its own dump.

mdb_load -T format: no header; lines pair up as key, value; backslash escapes as in
print items (``\\\\`` is a backslash, ``\\XX`` a byte in hex); a leading space is data.

JSON lines: one object per line with exactly one of ``key`` (a string, stored as its
UTF-8 bytes) or ``key_b64`` (standard base64 of the bytes), and exactly one of
``value`` / ``value_b64``. Other members are ignored; blank lines are skipped. The
writer uses ``key``/``value`` when the bytes are valid UTF-8 and the ``_b64`` form
otherwise, so every record survives a round trip.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import IO, Any, Callable, Iterator, Optional

_orjson: Optional[ModuleType]
try:  # optional: several times faster than json for the loader's hot loop
    _orjson = importlib.import_module("orjson")
except ImportError:  # pragma: no cover - depends on the machine
    _orjson = None

#: DB flag names in the dump header, in LMDB bit order, with the engine's spelling.
DUMP_FLAGS: tuple[tuple[str, str], ...] = (
    ("reversekey", "reverse_key"),
    ("dupsort", "dupsort"),
    ("integerkey", "integerkey"),
    ("dupfixed", "dupfixed"),
    ("integerdup", "integerdup"),
    ("reversedup", "reverse_dup"),
)


class InputError(Exception):
    """Bad input: names the file, the line and what was expected."""

    def __init__(self, source: str, line: int, message: str):
        super().__init__(f"{source}, line {line}: {message}")
        self.source = source
        self.line = line
        self.message = message


# --- writing -------------------------------------------------------------------------

_PRINT_TABLE: list[str] = [
    chr(b) if 0x20 <= b <= 0x7E and b != 0x5C else f"\\{b:02x}" for b in range(256)
]
_PRINT_TABLE[0x5C] = "\\\\"


def encode_print(data: bytes) -> str:
    """An item in print format (without the leading space)."""
    table = _PRINT_TABLE
    return "".join([table[b] for b in data])


def encode_hex(data: bytes) -> str:
    return data.hex()


def dump_header(
    *,
    printable: bool,
    name: Optional[str],
    mapsize: int,
    maxreaders: int,
    flags: dict[str, bool],
    psize: int,
) -> str:
    """The header of one section, through ``HEADER=END\\n``."""
    lines = ["VERSION=3", "format=print" if printable else "format=bytevalue"]
    if name is not None:
        lines.append(f"database={name}")
    lines.append("type=btree")
    lines.append(f"mapsize={mapsize}")
    lines.append(f"maxreaders={maxreaders}")
    if flags.get("dupsort"):
        lines.append("duplicates=1")
    for dump_name, api_name in DUMP_FLAGS:
        if flags.get(api_name):
            lines.append(f"{dump_name}=1")
    lines.append(f"db_pagesize={psize}")
    lines.append("HEADER=END")
    return "\n".join(lines) + "\n"


def write_records(out: IO[str], records: Iterator[tuple[bytes, bytes]], printable: bool) -> int:
    """Write data lines and ``DATA=END``; return the number of records."""
    enc: Callable[[bytes], str] = encode_print if printable else encode_hex
    n = 0
    buf: list[str] = []
    for key, value in records:
        buf.append(f" {enc(key)}\n {enc(value)}\n")
        n += 1
        if len(buf) >= 4096:
            out.write("".join(buf))
            buf.clear()
    buf.append("DATA=END\n")
    out.write("".join(buf))
    return n


def jsonl_record(key: bytes, value: bytes) -> str:
    obj: dict[str, str] = {}
    try:
        obj["key"] = key.decode("utf-8")
    except UnicodeDecodeError:
        obj["key_b64"] = base64.b64encode(key).decode("ascii")
    try:
        obj["value"] = value.decode("utf-8")
    except UnicodeDecodeError:
        obj["value_b64"] = base64.b64encode(value).decode("ascii")
    return json.dumps(obj, ensure_ascii=False) + "\n"


# --- reading -------------------------------------------------------------------------


def _unescape(item: bytes, source: str, lineno: int) -> bytes:
    """Undo print-format escapes (``\\\\`` and ``\\XX``)."""
    if b"\\" not in item:
        return item
    out = bytearray()
    i, n = 0, len(item)
    while i < n:
        c = item[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        if i + 1 < n and item[i + 1] == 0x5C:
            out.append(0x5C)
            i += 2
            continue
        pair = item[i + 1 : i + 3]
        try:
            if len(pair) != 2:
                raise ValueError
            out.append(int(pair, 16))
        except ValueError:
            raise InputError(
                source,
                lineno,
                f"bad escape {item[i : i + 3].decode('latin-1')!r}: expected a backslash "
                "followed by two hex digits or another backslash (LMDB 0.9.24's mdb_dump -p "
                "leaves a bare backslash in data; dump without -p instead)",
            ) from None
        i += 3
    return bytes(out)


@dataclass
class Section:
    """One database's worth of a dump: its header and where its data starts."""

    printable: bool = False
    database: Optional[str] = None
    mapsize: Optional[int] = None
    maxreaders: Optional[int] = None
    psize: Optional[int] = None
    flags: dict[str, bool] = field(default_factory=dict)
    header_line: int = 0


_BOOL_KEYS = {dump: api for dump, api in DUMP_FLAGS}


class DumpReader:
    """Reads mdb_dump text, section by section, tracking line numbers.

    ``stream`` is binary. :meth:`next_section` returns the next header or None at
    the end; :meth:`records` then yields that section's (key, value) pairs and
    consumes its ``DATA=END``.
    """

    def __init__(
        self,
        stream: IO[bytes],
        source: str,
        warn: Optional[Callable[[str], None]] = None,
    ):
        self.stream = stream
        self.source = source
        self.lineno = 0
        self.warn = warn or (lambda _m: None)
        self.section: Optional[Section] = None

    def _readline(self) -> bytes:
        line = self.stream.readline()
        if line:
            self.lineno += 1
        return line

    def error(self, message: str, line: Optional[int] = None) -> InputError:
        return InputError(self.source, self.lineno if line is None else line, message)

    def next_section(self) -> Optional[Section]:
        line = self._readline()
        while line in (b"\n", b"\r\n"):  # tolerate blank lines between sections
            line = self._readline()
        if not line:
            return None
        if line.rstrip(b"\r\n") != b"VERSION=3":
            hint = ""
            if line.lstrip().startswith(b"{"):
                hint = " (JSON lines? use --format jsonl)"
            elif self.lineno == 1:
                hint = " (plain key/value lines? use -T)"
            raise self.error(
                f"expected VERSION=3 at the start of a dump section, found {_show(line)}{hint}"
            )
        sec = Section(header_line=self.lineno)
        while True:
            line = self._readline()
            if not line:
                raise self.error("unexpected end of input: expected HEADER=END")
            text = line.rstrip(b"\r\n").decode("utf-8", "surrogateescape")
            if text == "HEADER=END":
                break
            if "=" not in text:
                raise self.error(f"expected NAME=VALUE in the header, found {text!r}")
            name, value = text.split("=", 1)
            if name == "format":
                if value not in ("print", "bytevalue"):
                    raise self.error(f"unknown format {value!r}: expected print or bytevalue")
                sec.printable = value == "print"
            elif name == "database":
                sec.database = value
            elif name == "type":
                if value != "btree":
                    raise self.error(f"unsupported type {value!r}: expected btree")
            elif name in ("mapsize", "maxreaders", "db_pagesize"):
                try:
                    num = int(value)
                except ValueError:
                    raise self.error(f"{name} must be a number, found {value!r}") from None
                if name == "mapsize":
                    sec.mapsize = num
                elif name == "maxreaders":
                    sec.maxreaders = num
                else:
                    sec.psize = num
            elif name == "mapaddr":
                pass  # FIXEDMAP address: meaningless for a new environment
            elif name == "duplicates":
                if value == "1":
                    sec.flags["dupsort"] = True
            elif name in _BOOL_KEYS:
                if value == "1":
                    sec.flags[_BOOL_KEYS[name]] = True
            else:
                self.warn(f"{self.source}, line {self.lineno}: unknown header {name!r} ignored")
        self.section = sec
        return sec

    def records(self) -> Iterator[tuple[int, bytes, bytes]]:
        """Yield (line of the value, key, value) up to and including DATA=END."""
        sec = self.section
        if sec is None:
            raise RuntimeError("records() before next_section()")
        printable = sec.printable
        readline = self.stream.readline
        source = self.source
        lineno = self.lineno
        try:
            while True:
                kline = readline()
                lineno += 1
                if kline[:1] != b" ":
                    if kline.rstrip(b"\r\n") == b"DATA=END":
                        break
                    raise _not_a_data_line(
                        source,
                        lineno,
                        kline,
                        "expected DATA=END",
                        "a key line (a space, then the key) or DATA=END",
                    )
                vline = readline()
                lineno += 1
                if vline[:1] != b" ":
                    raise _not_a_data_line(
                        source,
                        lineno,
                        vline,
                        "a key without a value",
                        "a value line (a space, then the value)",
                    )
                kraw = kline[1:].rstrip(b"\r\n")
                vraw = vline[1:].rstrip(b"\r\n")
                if printable:
                    key = _unescape(kraw, source, lineno - 1)
                    value = _unescape(vraw, source, lineno)
                else:
                    try:
                        key = binascii.unhexlify(kraw)
                    except (binascii.Error, ValueError):
                        raise InputError(
                            source,
                            lineno - 1,
                            f"expected hex digits for the key, found {_show(kline)}",
                        ) from None
                    try:
                        value = binascii.unhexlify(vraw)
                    except (binascii.Error, ValueError):
                        raise InputError(
                            source,
                            lineno,
                            f"expected hex digits for the value, found {_show(vline)}",
                        ) from None
                yield lineno, key, value
        finally:
            self.lineno = lineno
        self.section = None

    @property
    def line(self) -> int:
        return self.lineno


def read_text_pairs(stream: IO[bytes], source: str) -> Iterator[tuple[int, bytes, bytes]]:
    """mdb_load -T input: yields (line of the value, key, value)."""
    lineno = 0
    key: Optional[bytes] = None
    for raw in stream:
        lineno += 1
        item = _unescape(raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw, source, lineno)
        if key is None:
            key = item
        else:
            yield lineno, key, item
            key = None
    if key is not None:
        raise InputError(source, lineno, "unexpected end of input: a key without a value")


def _b64(obj: dict[str, Any], name: str, source: str, lineno: int) -> bytes:
    text = obj.get(name)
    b64 = obj.get(name + "_b64")
    if text is not None and b64 is not None:
        raise InputError(source, lineno, f'give either "{name}" or "{name}_b64", not both')
    if text is not None:
        if not isinstance(text, str):
            raise InputError(
                source, lineno, f'"{name}" must be a string (use "{name}_b64" for bytes)'
            )
        return text.encode("utf-8")
    if b64 is not None:
        if not isinstance(b64, str):
            raise InputError(source, lineno, f'"{name}_b64" must be a base64 string')
        try:
            return base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise InputError(source, lineno, f'"{name}_b64" is not valid base64') from None
    raise InputError(source, lineno, f'expected "{name}" or "{name}_b64" in the object')


def read_jsonl(stream: IO[bytes], source: str) -> Iterator[tuple[int, bytes, bytes]]:
    """JSON lines: yields (line, key, value)."""
    loads: Callable[[bytes], Any] = _orjson.loads if _orjson is not None else json.loads
    lineno = 0
    for raw in stream:
        lineno += 1
        try:
            obj = loads(raw)
        except ValueError as exc:
            if not raw.strip():
                continue
            raise InputError(
                source,
                lineno,
                f"not valid JSON ({str(exc).splitlines()[0]}); expected an object like "
                '{"key": "...", "value": "..."}',
            ) from None
        if type(obj) is dict:
            key = obj.get("key")
            value = obj.get("value")
            if (
                type(key) is str
                and type(value) is str
                and "key_b64" not in obj
                and "value_b64" not in obj
            ):
                yield lineno, key.encode("utf-8"), value.encode("utf-8")
                continue
            yield lineno, _b64(obj, "key", source, lineno), _b64(obj, "value", source, lineno)
            continue
        raise InputError(
            source, lineno, 'expected a JSON object like {"key": "...", "value": "..."}'
        )


def _show(line: bytes) -> str:
    text = line.rstrip(b"\r\n").decode("utf-8", "replace")
    if len(text) > 40:
        text = text[:40] + "..."
    return repr(text)


def _not_a_data_line(source: str, lineno: int, line: bytes, at_end: str, want: str) -> InputError:
    """The error for `line` (line lineno; b"": the input ended) where a data line belongs:
    at_end says what the end of input cut short, want what was expected."""
    if not line:
        return InputError(source, lineno - 1, f"unexpected end of input: {at_end}")
    return InputError(source, lineno, f"expected {want}, found {_show(line)}")
