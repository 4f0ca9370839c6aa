"""glyd.sql: DataFusion over record archives, answers equal to pyarrow's over the same rows;
tables joined; the caller's SQL kept to querying."""

import pyarrow.compute as pc
import pytest

import glyd
from conftest import EXAMPLES


@pytest.fixture(scope="module")
def hdfs(tmp_path_factory):
    path = tmp_path_factory.mktemp("sql") / "hdfs.glyd"
    glyd.write_records(path, (EXAMPLES / "HDFS_2k.log_structured.csv").read_bytes())
    return path


def test_group_by_matches_pyarrow(hdfs):
    got = glyd.sql('SELECT "Level" AS level, count(*) AS n FROM hdfs GROUP BY 1 ORDER BY 1', hdfs=hdfs)
    table = glyd.read_table(hdfs)
    want = table.group_by("Level").aggregate([("Level", "count")]).sort_by("Level")
    assert got.column("level").to_pylist() == want.column("Level").to_pylist()
    assert got.column("n").to_pylist() == want.column("Level_count").to_pylist()


def test_filters_and_joins(hdfs):
    n = glyd.sql("SELECT count(*) AS n FROM a JOIN b USING (\"LineId\") WHERE a.\"Level\" = 'WARN'", a=hdfs, b=hdfs)
    table = glyd.read_table(hdfs)
    assert n.column("n")[0].as_py() == pc.sum(pc.equal(table.column("Level"), "WARN")).as_py()


def test_only_queries_are_allowed_and_errors_are_clean(hdfs, tmp_path):
    with pytest.raises(ValueError, match="SQL"):
        glyd.sql("CREATE EXTERNAL TABLE x STORED AS CSV LOCATION '/etc/passwd'", hdfs=hdfs)
    with pytest.raises(ValueError, match="SQL"):
        glyd.sql("SELECT nope FROM hdfs", hdfs=hdfs)
    with pytest.raises(ValueError, match="missing.glyd"):
        glyd.sql("SELECT 1", t=tmp_path / "missing.glyd")
