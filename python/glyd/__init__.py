"""glyd: lossless compression for the data pipelines move.

- ``compress`` / ``decompress`` / ``open``: the glyd codec on bytes and files (a binary file
  object that streams, like ``gzip.open`` or ``zstandard.open``).
- ``write_records`` / ``read_table`` / ``open_archive``: record archives (logs, CSV, JSON lines,
  SQL dumps, Parquet) shredded into typed columns, read back as ``pyarrow`` tables; ``sql``
  queries them (DataFusion), decoding only what the query needs.
- ``glyd.torch`` / ``glyd.numpy`` / ``glyd.tensors``: a drop-in for ``safetensors``'s file API
  whose files are coded near the entropy floor of the weights.
- ``glyd.kv``: KV-cache pages coded and decoded one page at a time.

Every call releases the GIL while it codes.
"""

from ._glyd import (
    __version__,
    CorruptError,
    GlydError,
    compress,
    decompress,
    decompressed_size,
)
from ._io import GlydFile, open
from ._records import Archive, open_archive, read_table, write_records
from ._sql import sql
from . import kv, tensors

__all__ = [
    "__version__",
    "Archive",
    "CorruptError",
    "GlydError",
    "GlydFile",
    "compress",
    "decompress",
    "decompressed_size",
    "kv",
    "open",
    "open_archive",
    "read_table",
    "sql",
    "tensors",
    "write_records",
]
