"""``mdb-cli load``: read mdb_dump text, mdb_load -T text or JSON lines into ENV.

How a load runs:
- The input is parsed into batches (``--batch-size`` records). A batch is checked
  completely (syntax, key sizes) before its write transaction begins, and is
  committed as one transaction; a failure aborts that transaction, so nothing of
  the failed batch is stored, while the batches before it stay committed.
- While the records arrive in the database's order and above its last record, the
  batch is written with the append fast path (MDB_APPEND / APPENDDUP). The first
  record out of order turns it off for the rest of the load.
- When the target database is empty (and not DUPSORT) and the first batch is in its
  order, that batch is bulk-loaded: the engine builds its pages bottom-up
  (``Transaction.load_sorted``, the mdb core). With ``--batch-size 0`` that is the
  whole load.
- With --grow (the default) the map grows by itself, in place, up to GROW_BOUND
  (``max_map_size``, docs/beyond.md). A map that is full (with --no-grow, or at that
  bound) stops the load; nothing of the batch in progress is kept.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any, Callable, Iterator, Optional

import click

from mdb_cli import engine
from mdb_cli.commands import format_option
from mdb_cli.context import App, name_bytes
from mdb_cli.errors import EXIT_USAGE
from mdb_cli.formats import DumpReader, InputError, read_jsonl, read_text_pairs
from mdb_cli.output import Progress, SizeType, binary_stdin, human_size, stderr_is_tty

HELP = """Load records into ENV (created if missing) from FILE or standard input.

\b
Input formats:
  dump   (default) LMDB's mdb_dump format, as written by 'mdb-cli dump' or by
         LMDB's mdb_dump; one or more sections. A section's database= line
         names its target, as with mdb_load; -s names the target of a section
         without one.
  -T     mdb_load's plain text: lines pair up as key, value; '\\\\' is a
         backslash and '\\XX' a byte in hex.
  jsonl  one JSON object per line: {"key": "text", "value": "text"}, with
         "key_b64" / "value_b64" (standard base64) instead for binary data.

Records are committed in batches of --batch-size. If the load stops (bad input,
an engine error, Ctrl-C), the batches before the failing one stay committed and
nothing of the failing batch is: the message gives the file and line, so fix the
input and load again (with -N to skip what is already there), or use
--batch-size 0 to load everything in one transaction (all or nothing).

\b
Examples:
  mdb-cli load -f db.dump ./db
  mdb_dump ./old | mdb-cli load ./new
  mdb-cli load --format jsonl -s users -f users.jsonl ./db
  mdb-cli load -T -f pairs.txt -N ./db
  mdb-cli load --format jsonl --db-flag dupsort -s tags -f tags.jsonl ./db
"""

_DB_FLAG_CHOICES = {
    "reversekey": "reverse_key",
    "dupsort": "dupsort",
    "integerkey": "integerkey",
    "dupfixed": "dupfixed",
    "integerdup": "integerdup",
    "reversedup": "reverse_dup",
}


@click.command(help=HELP)
@click.argument("env", metavar="ENV")
@click.option("-s", "--subdb", "name", metavar="NAME", help="Target database (default: main).")
@click.option(
    "-f",
    "--file",
    "input_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    metavar="FILE",
    help="Read FILE instead of standard input.",
)
@click.option("-T", "--text", is_flag=True, help="Input is mdb_load -T plain text.")
@click.option("-N", "--no-overwrite", is_flag=True, help="Keep existing records; skip those.")
@click.option("-n", "--nosubdir", is_flag=True, help="ENV is a data file, not a directory.")
@format_option("Input format (-T selects the plain text format).")
@click.option(
    "--batch-size",
    type=click.IntRange(min=0),
    default=50_000,
    show_default=True,
    help="Records per transaction; 0 = one transaction for the whole load.",
)
@click.option(
    "--map-size",
    type=SizeType(),
    default=None,
    help="Map size for the environment (e.g. 1G); default: the dump's mapsize or the file's.",
)
@click.option(
    "--grow/--no-grow",
    default=True,
    show_default=True,
    help="Let the map grow by itself, in place, when it is full.",
)
@click.option(
    "--db-flag",
    "db_flags",
    multiple=True,
    type=click.Choice(list(_DB_FLAG_CHOICES)),
    help="Flag for a database created from -T or JSON input (repeatable).",
)
@click.pass_obj
def load(
    app: App,
    env: str,
    name: Optional[str],
    input_file: str,
    text: bool,
    no_overwrite: bool,
    nosubdir: bool,
    fmt: str,
    batch_size: int,
    map_size: Optional[int],
    grow: bool,
    db_flags: tuple[str, ...],
) -> None:
    if text and fmt != "dump":
        app.abort("-T and --format jsonl do not go together: pick one input format", EXIT_USAGE)
    if fmt == "dump" and not text and db_flags:
        app.abort(
            "--db-flag is for -T and jsonl input; a dump's header carries its flags", EXIT_USAGE
        )
    source = "<stdin>" if input_file == "-" else input_file
    stream, total = _open_input(app, input_file)
    progress_on = stderr_is_tty() and not app.quiet
    loader: Optional[Loader] = None

    def new_loader(map_bytes: int, maxreaders: Optional[int]) -> Loader:
        """The target environment opened (map_bytes, maxreaders) and its Loader."""
        environment = _open_target(app, env, nosubdir, map_bytes, maxreaders, grow)
        return Loader(
            app,
            environment,
            env,
            source,
            batch_size,
            no_overwrite,
            grow,
            stream,
            total,
            progress_on,
        )

    try:
        if fmt == "dump" and not text:
            reader = DumpReader(stream, source, warn=app.warn)
            try:
                section = reader.next_section()
            except InputError as exc:
                app.abort(f"bad input: {exc}")
            want_map = max(map_size or 0, (section.mapsize or 0) if section else 0)
            loader = new_loader(want_map, section.maxreaders if section else None)
            while section is not None:
                target = section.database if section.database is not None else name
                if section.database is not None and name is not None and name != section.database:
                    app.warn(
                        f"{source}, line {section.header_line}: the section names database "
                        f"{section.database!r}, which wins over -s {name!r} (as in mdb_load)"
                    )
                loader.load(target, section.flags, reader.records())
                section = reader.next_section()
        else:
            loader = new_loader(map_size or 0, None)
            flags = {_DB_FLAG_CHOICES[f]: True for f in db_flags}
            pairs = read_text_pairs(stream, source) if text else read_jsonl(stream, source)
            loader.load(name, flags, pairs)
        loader.finish()
    except KeyboardInterrupt:
        committed = loader.committed if loader else 0
        if loader:
            loader.progress.finish()
        app.abort(
            f"interrupted: {committed:,} records committed in earlier batches, nothing of "
            "the batch in progress; load again with -N to skip what is there",
            130,
        )
    except InputError as exc:
        committed = loader.committed if loader else 0
        if loader:
            loader.progress.finish()
        app.abort(
            f"bad input: {exc}; {committed:,} records committed before the failing batch "
            "(see 'mdb-cli load --help')"
        )
    finally:
        if stream is not sys.stdin.buffer and input_file != "-":
            stream.close()
        if loader is not None:
            loader.env.close()


def _open_input(app: App, input_file: str) -> tuple[IO[bytes], Optional[int]]:
    if input_file == "-":
        return binary_stdin(), None
    try:
        stream = open(input_file, "rb", buffering=1 << 20)
    except OSError as exc:
        app.abort(f"{input_file}: cannot read the input: {exc.strerror}")
    try:
        total = os.fstat(stream.fileno()).st_size or None
    except OSError:
        total = None
    return stream, total


#: upper bound of a target's map that grows by itself (address space, not disk)
GROW_BOUND = 1 << 40


def _open_target(
    app: App, path: str, nosubdir: bool, map_size: int, maxreaders: Optional[int], grow: bool
) -> Any:
    bound = None
    if grow and engine.on_core():
        bound = max(GROW_BOUND, map_size)
    return app.open_env(
        path,
        nosubdir=nosubdir,
        readonly=False,
        create=True,
        map_size=map_size,
        max_readers=maxreaders,
        max_map_size=bound,
    )


class Loader:
    """Writes records into one environment in batches; see the module docstring."""

    def __init__(
        self,
        app: App,
        env: Any,
        path: str,
        source: str,
        batch_size: int,
        no_overwrite: bool,
        grow: bool,
        stream: IO[bytes],
        total: Optional[int],
        progress_on: bool,
    ):
        self.app = app
        self.env = env
        self.path = path
        self.source = source
        self.batch_size = batch_size or (1 << 62)
        self.no_overwrite = no_overwrite
        self.grow = grow
        self.stream = stream
        self.committed = 0
        self.skipped = 0
        self.appended_batches = 0
        self.bulk_batches = 0
        self.batches = 0
        self.max_key = env.max_key_size()
        self.progress = Progress("loading", total, progress_on, unit="items")
        self._pending: list[tuple[Any, list[tuple[bytes, bytes]], int, int, bool]] = []

    # -- per database ------------------------------------------------------------------

    def _open_db(self, name: Optional[str], flags: dict[str, bool]) -> tuple[Any, dict[str, bool]]:
        """Open or create the target; return it with the flags it really has."""
        app, env = self.app, self.env
        eng = app.engine
        kwargs = {k: True for k, v in flags.items() if v}
        if name is None and kwargs:
            kwargs_text = ", ".join(sorted(kwargs))
            try:
                with app.begin_write(env, self.path) as txn:
                    db = env.open_db(None, txn=txn, create=True, **kwargs)
                    return db, engine.db_flags(db, txn)
            except (eng.Error, TypeError, ValueError) as exc:
                app.abort(f"cannot give the main database the flags {kwargs_text}: {exc}")
        try:
            with app.begin_write(env, self.path) as txn:
                db = env.open_db(
                    None if name is None else name_bytes(name), txn=txn, create=True, **kwargs
                )
                have = engine.db_flags(db, txn)
        except eng.Error as exc:
            kind = type(exc).__name__
            if kind == "IncompatibleError":
                app.abort(
                    f"{name!r} in {self.path} is a plain key of the main database, "
                    "or a database with other flags; load into another name"
                )
            app.abort(f"{self.path}: cannot open database {name!r}: {exc}")
        wanted = {k: bool(flags.get(k)) for k in engine.FLAG_NAMES}
        if any(wanted[k] != have[k] for k in wanted):
            diff = ", ".join(f"{k}={int(have[k])}" for k in have if wanted[k] != have[k])
            app.warn(
                f"database {name or '(main)'!r} already exists with other flags ({diff}); "
                "its own flags are kept"
            )
        return db, have

    def load(
        self,
        name: Optional[str],
        flags: dict[str, bool],
        records: Iterator[tuple[int, bytes, bytes]],
    ) -> None:
        db, have = self._open_db(name, flags)
        dupsort = have["dupsort"]
        sort_key = _sort_key(have["integerkey"], have["reverse_key"])
        dup_key = _sort_key(have["integerdup"], have["reverse_dup"])
        last = self._last_record(db, dupsort, sort_key, dup_key)
        # an empty target: its first batch, if in order, is built bottom-up
        bulk = last is None and not dupsort
        appendable = True
        max_key = self.max_key
        max_dup = max_key if dupsort else None
        intsize = 0
        batch: list[tuple[bytes, bytes]] = []
        append = batch.append
        first_line = 0
        lineno = 0
        limit = self.batch_size
        integerkey = have["integerkey"]
        for lineno, key, value in records:
            if not first_line:
                first_line = lineno
            klen = len(key)
            if klen == 0 or klen > max_key:
                raise InputError(
                    self.source,
                    lineno,
                    f"a key of {klen} bytes: keys must be 1 to {max_key} bytes",
                )
            if max_dup is not None and len(value) > max_dup:
                raise InputError(
                    self.source,
                    lineno,
                    f"a value of {len(value)} bytes in a dupsort database: at most {max_dup}",
                )
            if integerkey:
                if klen not in (4, 8) or (intsize and klen != intsize):
                    raise InputError(
                        self.source,
                        lineno,
                        f"an integerkey key of {klen} bytes: all keys must be 4 or 8 bytes, "
                        "the same size",
                    )
                intsize = klen
            append((key, value))
            if len(batch) >= limit:
                appendable, last = self._check_order(
                    batch, appendable, last, dupsort, sort_key, dup_key
                )
                self._write(db, batch, first_line, lineno, appendable, dupsort, bulk)
                bulk = False
                batch = []
                append = batch.append
                first_line = 0
        if batch:
            appendable, last = self._check_order(
                batch, appendable, last, dupsort, sort_key, dup_key
            )
            self._write(db, batch, first_line, lineno, appendable, dupsort, bulk)

    def _last_record(
        self,
        db: Any,
        dupsort: bool,
        sort_key: Callable[[bytes], Any],
        dup_key: Callable[[bytes], Any],
    ) -> Any:
        with self.env.begin() as txn, txn.cursor(db=db) as cur:
            if not cur.last():
                return None
            key = bytes(cur.key())
            if dupsort:
                return (sort_key(key), dup_key(bytes(cur.value())))
            return sort_key(key)

    @staticmethod
    def _check_order(
        batch: list[tuple[bytes, bytes]],
        appendable: bool,
        last: Any,
        dupsort: bool,
        sort_key: Callable[[bytes], Any],
        dup_key: Callable[[bytes], Any],
    ) -> tuple[bool, Any]:
        """Is the batch in order and above ``last``? Returns (appendable, new last)."""
        keys: list[Any]
        if dupsort:
            keys = [(sort_key(k), dup_key(v)) for k, v in batch]
        elif sort_key is _identity:
            keys = [k for k, _v in batch]
        else:
            keys = [sort_key(k) for k, _v in batch]
        new_last = keys[-1] if (last is None or keys[-1] > last) else last
        if not appendable:
            return False, new_last
        if last is not None and not keys[0] > last:
            return False, new_last
        ok = all(a < b for a, b in zip(keys, keys[1:]))
        return ok, new_last

    def _write(
        self,
        db: Any,
        batch: list[tuple[bytes, bytes]],
        first_line: int,
        last_line: int,
        append: bool,
        dupsort: bool,
        bulk: bool = False,
    ) -> None:
        app, env = self.app, self.env
        eng = app.engine
        overwrite = not (self.no_overwrite and not dupsort)
        dupdata = not (self.no_overwrite and dupsort)
        bulk = bulk and append and engine.on_core()
        while True:
            txn = app.begin_write(env, self.path)
            try:
                if bulk:
                    try:
                        added = txn.load_sorted(batch, db=db)
                    except eng.KeyExistsError:
                        # our idea of the order differs from the engine's: put them
                        txn.abort()
                        bulk = append = False
                        continue
                else:
                    bulk = False
                    with txn.cursor(db=db) as cur:
                        _consumed, added = cur.putmulti(
                            batch, dupdata=dupdata, overwrite=overwrite, append=append
                        )
                if append and added != len(batch):
                    # Our idea of the order differs from the engine's: write it again.
                    txn.abort()
                    append = False
                    continue
                txn.commit()
            except eng.MapFullError:
                txn.abort()
                size = env.info()["map_size"]
                if self.grow and engine.on_core():
                    advice = f"--grow lets it grow to {human_size(GROW_BOUND)} at most"
                else:
                    advice = f"load again with --map-size {2 * size}" + (
                        "" if self.grow else " (or --grow)"
                    )
                app.abort(
                    f"{self.path}: the map is full at {size} bytes ({human_size(size)}) "
                    f"while loading lines {first_line}-{last_line}; nothing of that batch "
                    f"was committed; {advice}"
                )
            except eng.Error as exc:
                txn.abort()
                from mdb_cli.errors import describe

                app.abort(
                    f"lines {first_line}-{last_line}: "
                    + describe(exc, self.path)
                    + f"; nothing of that batch was committed ({self.committed:,} records were)"
                )
            except BaseException:
                txn.abort()
                raise
            break
        self.batches += 1
        if bulk:
            self.bulk_batches += 1
        elif append:
            self.appended_batches += 1
        self.committed += added
        self.skipped += len(batch) - added
        try:
            pos = self.stream.tell()
        except (OSError, ValueError):
            pos = None
        self.progress.advance(len(batch), pos)

    def finish(self) -> None:
        self.progress.finish()
        fast = self.appended_batches + self.bulk_batches
        if self.batches and self.bulk_batches == self.batches:
            mode = "bulk"
        elif self.batches and fast == self.batches:
            mode = "bulk+append" if self.bulk_batches else "append"
        else:
            mode = "mixed" if fast else "insert"

        skipped = f", {self.skipped:,} skipped (already present)" if self.skipped else ""
        self.app.info(
            f"loaded {self.committed:,} records in {self.batches} batch(es), "
            f"{self.progress.elapsed:.2f}s, {mode} mode{skipped}"
        )


def _identity(b: bytes) -> bytes:
    return b


def _reversed(b: bytes) -> bytes:
    return b[::-1]


def _native_int(b: bytes) -> int:
    return int.from_bytes(b, sys.byteorder)


def _sort_key(integer: bool, reverse: bool) -> Callable[[bytes], Any]:
    """The engine's order of keys (or of dups) as a Python sort key."""
    if integer:
        return _native_int
    if reverse:
        return _reversed
    return _identity
