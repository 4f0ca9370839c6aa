"""Record archives from Python: written from bytes, files and lines; read as Arrow tables equal
to what `glyd cat` prints; rebuilt byte for byte by `glyd -d`; bad archives refused."""

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import glyd
from conftest import EXAMPLES, run


def _logs(corpus_files):
    return [p for p in corpus_files if p.suffix in (".log", ".csv")]


def test_archives_rebuild_byte_for_byte_and_read_as_glyd_cat(tmp_path, corpus_files, glyd_cli):
    for src in _logs(corpus_files):
        data = src.read_bytes()
        archive = tmp_path / (src.name + ".glyd")
        size = glyd.write_records(archive, data)
        assert size == archive.stat().st_size
        assert run(glyd_cli, "-d", "-c", archive) == data, src
        table = glyd.read_table(archive)
        expected = pq.read_table(io.BytesIO(run(glyd_cli, "cat", "--format", "parquet", archive)))
        assert table.num_rows == expected.num_rows, src
        assert table.column_names == expected.column_names, src
        assert table.cast(expected.schema).equals(expected), src


def test_sources_bytes_file_and_lines_give_the_same_archive(tmp_path):
    src = EXAMPLES / "HDFS_2k.log"
    data = src.read_bytes()
    a, b, c, d = (tmp_path / n for n in ("a.glyd", "b.glyd", "c.glyd", "d.glyd"))
    glyd.write_records(a, data)
    with open(src, "rb") as f:
        glyd.write_records(b, f)
    glyd.write_records(c, iter(data.splitlines(keepends=True)))
    glyd.write_records(d, data.decode().splitlines(keepends=True))
    assert a.read_bytes() == b.read_bytes() == c.read_bytes() == d.read_bytes()


def test_columns_tables_and_the_arrow_stream(tmp_path):
    csv = EXAMPLES / "HDFS_2k.log_structured.csv"
    archive = tmp_path / "s.glyd"
    glyd.write_records(archive, csv.read_bytes(), format="csv")
    a = glyd.open_archive(archive)
    assert a.num_rows == 2000
    names = a.columns()
    picked = glyd.read_table(archive, columns=[names[-1], names[0]])
    assert picked.column_names == [names[-1], names[0]]
    assert picked.num_rows == 2000
    whole = pa.table(a)  # the PyCapsule stream interface
    assert whole.column_names == names
    assert whole.select([names[-1], names[0]]).equals(picked)
    with pytest.raises(ValueError, match='no column named "nope"'):
        glyd.read_table(archive, columns=["nope"])


def test_parquet_input_reads_back_as_the_same_table(tmp_path):
    table = pa.table({"id": list(range(10_000)), "name": [f"n{i % 97}" for i in range(10_000)]})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    archive = tmp_path / "p.glyd"
    glyd.write_records(archive, sink.getvalue())
    assert glyd.read_table(archive).equals(table)


def test_bad_archives_and_inputs_are_clean_errors(tmp_path):
    archive = tmp_path / "h.glyd"
    glyd.write_records(archive, (EXAMPLES / "Apache_2k.log").read_bytes())
    data = archive.read_bytes()
    cut = tmp_path / "cut.glyd"
    cut.write_bytes(data[: len(data) - 7])
    with pytest.raises(glyd.CorruptError, match="cut.glyd"):
        glyd.read_table(cut)
    with pytest.raises(FileNotFoundError, match="missing.glyd"):
        glyd.read_table(tmp_path / "missing.glyd")
    with pytest.raises(ValueError, match="unknown format"):
        glyd.write_records(tmp_path / "r.glyd", b"a,b\n1,2\n", format="xml")
    with pytest.raises(TypeError, match="encode text"):
        glyd.write_records(tmp_path / "r.glyd", io.StringIO("a,b\n1,2\n"))
    assert not (tmp_path / "r.glyd").exists()
