"""``glyd.open``: glyd frames as binary (or text) file objects that stream."""

import io
import os

from . import _glyd

_CHUNK = 1 << 20


class _RawReader(io.RawIOBase):
    """Decoded bytes of a frame, read from a path or a binary file object."""

    def __init__(self, source, threads):
        self._native = _glyd.FrameReader(source, threads)

    def readable(self):
        return True

    def readinto(self, buffer):
        if self.closed:
            raise ValueError("I/O operation on a closed glyd file")
        return self._native.readinto(buffer)

    def readall(self):
        parts = []
        while True:
            chunk = bytearray(4 * _CHUNK)
            n = self.readinto(chunk)
            if n == 0:
                return b"".join(parts)
            parts.append(memoryview(chunk)[:n])

    def close(self):
        if not self.closed:
            self._native.close()
        super().close()


class _RawWriter(io.RawIOBase):
    """One frame, written to a path (renamed into place when closed) or a file object."""

    def __init__(self, target, level, threads):
        self._native = _glyd.FrameWriter(target, level, threads)

    def writable(self):
        return True

    def write(self, data):
        if self.closed:
            raise ValueError("I/O operation on a closed glyd file")
        return self._native.write(data)

    def close(self):
        if not self.closed:
            try:
                self._native.close()
            finally:
                super().close()


class GlydFile(io.BufferedIOBase):
    """A binary file object over one glyd frame: read (``"rb"``) or written (``"wb"``).

    Works wherever Python takes a binary file: ``shutil.copyfileobj``, ``tarfile`` in stream
    modes (``"r|"``, ``"w|"``), ``pandas.read_csv``, ``io.TextIOWrapper``. A frame written to a
    path appears under its name only when the file is closed, complete.
    """

    def __init__(self, file, mode="rb", *, level=None, threads=0):
        if mode in ("r", "rb"):
            self._buffered = io.BufferedReader(_RawReader(_source(file), threads), _CHUNK)
        elif mode in ("w", "wb"):
            self._buffered = io.BufferedWriter(_RawWriter(_source(file), level, threads), _CHUNK)
        else:
            raise ValueError(f"mode {mode!r}: use 'rb' or 'wb' (or 'rt'/'wt' with glyd.open)")
        self.mode = "rb" if mode.startswith("r") else "wb"
        self.name = file if isinstance(file, (str, bytes, os.PathLike)) else getattr(file, "name", None)

    def readable(self):
        return self.mode == "rb"

    def writable(self):
        return self.mode == "wb"

    def seekable(self):
        return False

    def read(self, size=-1):
        return self._checked().read(size)

    def read1(self, size=-1):
        return self._checked().read1(size)

    def readinto(self, b):
        return self._checked().readinto(b)

    def readline(self, size=-1):
        return self._checked().readline(size)

    def peek(self, size=0):
        return self._checked().peek(size)

    def write(self, data):
        return self._checked().write(data)

    def flush(self):
        if not self.closed and self.mode == "wb":
            self._buffered.flush()

    @property
    def closed(self):
        return self._buffered.closed

    def close(self):
        if not self.closed:
            self._buffered.close()

    def _checked(self):
        if self._buffered.closed:
            raise ValueError("I/O operation on a closed glyd file")
        return self._buffered


def _source(file):
    if isinstance(file, (str, bytes, os.PathLike)):
        return os.fsdecode(file)
    return file


def open(file, mode="rb", *, level=None, threads=0, encoding=None, errors=None, newline=None):
    """Opens a glyd frame at ``file`` (a path or a binary file object) for reading or writing.

    ``mode`` is ``"rb"``/``"wb"`` (binary) or ``"rt"``/``"wt"`` (text, through
    ``io.TextIOWrapper`` with ``encoding``, ``errors`` and ``newline``). ``level`` is ``"fast"``,
    ``"lz"``, ``"max"`` (the default) or ``"ultra"``, or a number 1..19; ``threads=0`` uses
    every core.
    """
    if "t" in mode:
        binary = GlydFile(file, mode.replace("t", "") + "b", level=level, threads=threads)
        return io.TextIOWrapper(binary, encoding=encoding, errors=errors, newline=newline)
    if encoding is not None or errors is not None or newline is not None:
        raise ValueError("encoding, errors and newline are for text modes ('rt', 'wt')")
    return GlydFile(file, mode, level=level, threads=threads)

