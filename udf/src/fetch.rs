//! Archives read from an object store by ranges, the way Parquet files are: opened from their
//! two ends and row group headers ([`glyd_columnar::RangedOpen`] says what to fetch), their
//! indexes cached per object version, and then only the chunks a read decodes fetched,
//! nearby ranges coalesced into one request. Every request and byte is counted, for
//! `EXPLAIN ANALYZE`.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use datafusion::object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use datafusion::physical_plan::metrics::Count;
use futures::{StreamExt, TryStreamExt};
use glyd_columnar::{ArchiveReader, Error, Fetched, GroupBatches, OpenStep, RangedOpen};

/// Ranges closer than this are fetched as one request: a request costs more than the bytes
/// between two nearby chunks.
pub const COALESCE: u64 = 64 << 10;
/// Requests in flight at once for one fetch.
const IN_FLIGHT: usize = 8;
/// Archives' indexes kept, at most (a lake's listing opens each file once, then its scans).
const CACHED: usize = 4096;
/// Bytes of archives fetched whole kept in the cache, at most.
const CACHED_BYTES: u64 = 256 << 20;

/// Requests and bytes fetched, and the sizes of the objects they came from.
#[derive(Clone, Default)]
pub struct FetchCounts {
    pub requests: Count,
    pub bytes: Count,
}

/// An archive error as a DataFusion error that names the object.
pub fn object_error(location: &impl fmt::Display, e: impl fmt::Display) -> DataFusionError {
    DataFusionError::External(format!("{location}: {e}").into())
}

/// The cache's key: one version of one object of one store (its size and, where the store
/// gives them, its entity tag and modification time).
fn key(store: &dyn ObjectStore, meta: &ObjectMeta) -> String {
    format!(
        "{store}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
        meta.location,
        meta.size,
        meta.e_tag.as_deref().unwrap_or(""),
        meta.last_modified.timestamp_nanos_opt().unwrap_or(0)
    )
}

/// Indexes of archives opened so far, by object version.
fn cache() -> &'static Mutex<HashMap<String, Arc<ArchiveReader>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<ArchiveReader>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Empties the cache of archive indexes (a benchmark's cold start; objects replaced under
/// the same name are told apart by their version already).
pub fn forget_archive_indexes() {
    cache().lock().expect("no panic holds it").clear();
}

/// Fetches `ranges` of `meta`'s object, those within [`COALESCE`] of each other as one
/// request, a few requests at a time; each request's bytes go into `into` as one piece.
pub async fn fetch(
    store: &Arc<dyn ObjectStore>,
    meta: &ObjectMeta,
    ranges: &[Range<u64>],
    counts: &FetchCounts,
    into: &mut Fetched,
) -> Result<()> {
    let mut sorted = ranges.to_vec();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(COALESCE) => {
                last.end = last.end.max(r.end)
            }
            _ => merged.push(r),
        }
    }
    let got: Vec<Bytes> = futures::stream::iter(merged.iter().cloned())
        .map(|r| {
            counts.requests.add(1);
            counts.bytes.add((r.end - r.start) as usize);
            let (store, location) = (Arc::clone(store), meta.location.clone());
            async move { store.get_range(&location, r).await }
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    for (r, bytes) in merged.iter().zip(got) {
        into.insert(r.start, Vec::from(bytes));
    }
    Ok(())
}

/// The archive at `meta`, indexed: from the cache, or opened by ranges.
pub async fn open(
    store: &Arc<dyn ObjectStore>,
    meta: &ObjectMeta,
    counts: &FetchCounts,
) -> Result<Arc<ArchiveReader>> {
    let key = key(store.as_ref(), meta);
    if let Some(r) = cache().lock().expect("no panic holds it").get(&key) {
        return Ok(Arc::clone(r));
    }
    let mut open = RangedOpen::new(meta.size);
    let reader = loop {
        match open.step().map_err(|e| object_error(&meta.location, e))? {
            OpenStep::Open(r) => break Arc::new(*r),
            OpenStep::Fetch(ranges) => {
                let mut got = Fetched::new(meta.size);
                fetch(store, meta, &ranges, counts, &mut got).await?;
                for r in ranges {
                    let bytes = got.get(r.clone()).unwrap_or_default().to_vec();
                    open.add(r.start, bytes);
                }
            }
        }
    };
    let mut cache = cache().lock().expect("no panic holds it");
    let held: u64 = cache.values().map(|r| r.held()).sum();
    if cache.len() >= CACHED || held + reader.held() > CACHED_BYTES {
        cache.clear();
    }
    cache.insert(key, Arc::clone(&reader));
    Ok(reader)
}

/// Columns `projection` of row group `group` of `archive` (at `meta`), as batches of
/// `batch_rows` rows: from the bytes it holds, or from the chunks fetched for them (and, for
/// a column linked to another, that one's, when the read names them).
pub async fn read_group(
    store: &Arc<dyn ObjectStore>,
    meta: &ObjectMeta,
    archive: &ArchiveReader,
    projection: &[usize],
    group: usize,
    batch_rows: usize,
    counts: &FetchCounts,
) -> Result<GroupBatches> {
    let fail = |e: Error| object_error(&meta.location, e);
    if archive.holds_all() {
        return archive
            .read_batches_here(Some(projection), group, batch_rows, false)
            .map_err(fail);
    }
    let mut fetched = Fetched::new(meta.size);
    let mut ranges = archive
        .chunk_ranges(Some(projection), group)
        .map_err(fail)?;
    // Each round fetches a linked column's base; links do not nest deeper than columns.
    for _ in 0..=archive.row_groups()[group].columns.len() {
        fetch(store, meta, &ranges, counts, &mut fetched).await?;
        match archive.read_batches_fetched(&fetched, Some(projection), group, batch_rows, false) {
            Err(Error::Missing { ranges: more }) => ranges = more,
            read => return read.map_err(fail),
        }
    }
    Err(object_error(
        &meta.location,
        format!("row group {group}: chunks still missing after fetching every column's"),
    ))
}
