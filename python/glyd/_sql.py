"""SQL over record archives, on DataFusion."""

import os

from . import _glyd


def sql(query, **tables):
    """Runs ``query`` over record archives and returns a ``pyarrow.Table``.

    Each keyword names a table; its value is the path of an archive or of a folder of archives
    (read as one table). Only the columns and row groups the query needs are decoded. The SQL is
    a caller's: it may query the tables given, not create tables or name files.

    >>> glyd.sql("SELECT level, count(*) AS n FROM logs GROUP BY level", logs="app.glyd")
    """
    import pyarrow as pa

    stream = _glyd.sql(query, [(name, os.fspath(path)) for name, path in tables.items()])
    return pa.RecordBatchReader._import_from_c_capsule(stream).read_all()
