"""Record archives: records written as typed columns, read back as Arrow tables."""

import os

from . import _glyd


def write_records(path, source, format=None, *, level=None, threads=0, year=None):
    """Writes ``source`` as a record archive at ``path``; returns the archive's size in bytes.

    ``source`` is bytes (any buffer), a binary file object, or an iterable of lines (``str`` or
    ``bytes``; a line without its newline gets one). ``format`` is detected when ``None``, else
    ``"csv"``, ``"tsv"``, ``"jsonl"``, ``"log"``, ``"sql"`` or ``"parquet"``. ``year`` is the
    year of log times spelled without one (default: this year). ``glyd -d`` rebuilds the input
    byte for byte; a Parquet input rebuilds as a Parquet file of the same Arrow data.
    """
    if hasattr(source, "read"):
        data = source.read()
    elif isinstance(source, (bytes, bytearray, memoryview)) or _has_buffer(source):
        data = source
    else:
        data = b"".join(_line_bytes(line) for line in source)
    if isinstance(data, str):
        raise TypeError("write_records takes bytes or a binary file: encode text first")
    return _glyd.write_records(os.fspath(path), data, format, level, threads, year)


def _has_buffer(obj):
    try:
        memoryview(obj)
        return True
    except TypeError:
        return False


def _line_bytes(line):
    if isinstance(line, str):
        line = line.encode()
    return line if line.endswith(b"\n") else line + b"\n"


class Archive:
    """An open record archive: its tables, columns and metadata, and its rows as Arrow.

    Implements the Arrow PyCapsule stream interface (``__arrow_c_stream__``) for its only
    table, so ``pyarrow.table(archive)``, ``polars.from_arrow`` and DuckDB take it directly.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self._native = _glyd.Archive(self.path)

    @property
    def tables(self):
        return self._native.tables()

    @property
    def num_rows(self):
        return self._native.rows

    def columns(self, table=None):
        return self._native.columns(table)

    @property
    def metadata(self):
        return dict(self._native.metadata())

    def stream(self, columns=None, *, table=None):
        """The rows as a ``pyarrow.RecordBatchReader``, a row group at a time."""
        import pyarrow as pa

        return pa.RecordBatchReader._import_from_c_capsule(self._native.stream(table, columns))

    def read(self, columns=None, *, table=None):
        """The rows as a ``pyarrow.Table`` (Arrow memory, no copy on the way)."""
        return self.stream(columns, table=table).read_all()

    def __arrow_c_stream__(self, requested_schema=None):
        return self._native.stream(None, None)

    def __repr__(self):
        return f"glyd.Archive({self.path!r}, tables={self.tables}, rows={self.num_rows})"


def open_archive(path):
    """Opens the record archive at ``path``."""
    return Archive(path)


def read_table(path, columns=None, *, table=None):
    """The archive at ``path`` as a ``pyarrow.Table``: ``columns`` (all when ``None``) of
    ``table`` (the only one when ``None``; SQL dumps hold several)."""
    return Archive(path).read(columns, table=table)
