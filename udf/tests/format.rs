//! Record archives as a DataFusion `FileFormat`: `CREATE EXTERNAL TABLE ... STORED AS GLYD`
//! over an object-store prefix (DataFusion's in-memory object store, the same trait every
//! store implements) gives what `GlydTable` gives over the same rows; files of different
//! columns merge; a damaged object is an error that names it.

use std::sync::Arc;

use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::memory::InMemory;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::object_store::{ObjectStore, ObjectStoreExt};
use datafusion::prelude::SessionContext;
use glyd_columnar::sniff;
use glyd_udf::GlydContext;

mod common;
use common::{example, table_text};

fn archive(src: &[u8]) -> Vec<u8> {
    common::archive(src, sniff(src, true).unwrap(), 16 << 10)
}

/// A session with an in-memory object store at `memory://` holding `objects`.
async fn with_store(objects: &[(&str, Vec<u8>)]) -> SessionContext {
    let store = Arc::new(InMemory::new());
    for (name, bytes) in objects {
        store
            .put(&ObjectPath::from(*name), bytes.clone().into())
            .await
            .unwrap();
    }
    let ctx = SessionContext::new();
    ctx.enable_glyd_tables();
    let url = ObjectStoreUrl::parse("memory://").unwrap();
    ctx.register_object_store(url.as_ref(), store as Arc<dyn ObjectStore>);
    ctx
}

#[tokio::test]
async fn an_object_store_prefix_reads_like_glyd_table() {
    let csv = std::fs::read(example("HDFS_2k.log_structured.csv")).unwrap();
    // The CSV as two archives (each with the header) under one prefix, beside a stray file.
    let text = String::from_utf8(csv.clone()).unwrap();
    let (header, rows) = text.split_once('\n').unwrap();
    let rows: Vec<&str> = rows.lines().collect();
    let half = |r: &[&str]| archive(format!("{header}\n{}\n", r.join("\n")).as_bytes());
    let ctx = with_store(&[
        ("logs/a.glyd", half(&rows[..1000])),
        ("logs/b.glyd", half(&rows[1000..])),
        ("logs/notes.txt", b"not an archive".to_vec()),
    ])
    .await;
    ctx.sql("CREATE EXTERNAL TABLE remote STORED AS GLYD LOCATION 'memory:///logs/'")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("hdfs.glyd");
    std::fs::write(&local, archive(&csv)).unwrap();
    ctx.register_glyd("local", &local).unwrap();
    for q in [
        "SELECT \"Level\", count(*) AS n FROM {t} GROUP BY \"Level\" ORDER BY \"Level\"",
        "SELECT \"LineId\", \"Component\" FROM {t} WHERE \"Pid\" > 30000 ORDER BY \"LineId\" LIMIT 5",
        "SELECT count(*) AS n, sum(\"LineId\") AS s, max(\"Content\") AS m FROM {t}",
    ] {
        let remote = table_text(&ctx, &q.replace("{t}", "remote")).await;
        let local = table_text(&ctx, &q.replace("{t}", "local")).await;
        assert_eq!(remote, local, "{q}");
    }
    let n = table_text(&ctx, "SELECT count(*) AS n FROM remote").await;
    assert!(n.contains("| 2000 |"), "{n}");
}

#[tokio::test]
async fn files_of_different_columns_merge() {
    let ctx = with_store(&[
        ("t/a.glyd", archive(b"id,name\n1,x\n3,z\n")),
        ("t/b.glyd", archive(b"id,score\n2,5\n")),
    ])
    .await;
    ctx.sql("CREATE EXTERNAL TABLE t STORED AS GLYD LOCATION 'memory:///t/'")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let got = table_text(&ctx, "SELECT id, name, score FROM t ORDER BY id").await;
    let want = "\
+----+------+-------+
| id | name | score |
+----+------+-------+
| 1  | x    |       |
| 2  |      | 5     |
| 3  | z    |       |
+----+------+-------+";
    assert_eq!(got, want);
}

#[tokio::test]
async fn a_damaged_object_is_an_error_that_names_it() {
    let mut bytes = archive(b"id,name\n1,x\n2,y\n");
    bytes.truncate(bytes.len() - 7);
    let ctx = with_store(&[("bad/broken.glyd", bytes)]).await;
    let result = match ctx
        .sql("CREATE EXTERNAL TABLE b STORED AS GLYD LOCATION 'memory:///bad/'")
        .await
    {
        Ok(df) => df.collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    let e = result.unwrap_err().to_string();
    assert!(e.contains("broken.glyd"), "{e}");
}
