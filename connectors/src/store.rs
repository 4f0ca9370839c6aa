//! Objects named by URL: `s3://bucket/key`, `gs://`, `az://` (also `abfs://`, `azure://`) and
//! `http(s)://`, on stores configured the way their own tools are (`AWS_ACCESS_KEY_ID`,
//! `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP` for a local endpoint; `GOOGLE_*`;
//! `AZURE_*`), so MinIO, Ceph, R2 and the like work by endpoint. Requests are retried with
//! backoff on 5xx, throttling and timeouts (`object_store`'s retry policy; `GLYD_STORE_RETRIES`
//! sets how many times, 10 unless set; `GLYD_STORE_TIMEOUT` how long one request may stall, 30 s
//! unless set); past that, the error names the object and status. Objects are written as multipart uploads, which become visible
//! under their name only when complete.

use std::io::{self, Read, Write};
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{ClientConfigKey, ObjectStore, ObjectStoreExt, RetryConfig, WriteMultipart};
use url::Url;

/// Bytes of an upload's parts (S3's least part is 5 MiB).
const PART: usize = 8 << 20;
/// Parts uploading at once.
const PARTS_IN_FLIGHT: usize = 4;

/// An error reaching an object: which, and why.
#[derive(Debug, thiserror::Error)]
#[error("{url}: {detail}")]
pub struct StoreError {
    pub url: String,
    pub detail: String,
}

impl StoreError {
    fn new(url: &Url, e: impl std::fmt::Display) -> Self {
        Self {
            url: url.to_string(),
            detail: e.to_string(),
        }
    }
}

impl From<StoreError> for io::Error {
    fn from(e: StoreError) -> Self {
        io::Error::other(e.to_string())
    }
}

/// Whether `s` names an object by URL (a scheme this module knows, then `://`) rather than
/// a local path.
pub fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        matches!(
            scheme,
            "s3" | "s3a" | "gs" | "az" | "abfs" | "abfss" | "azure" | "adl" | "http" | "https"
        )
    })
}

/// An object (or a prefix, ending in `/`) on a store.
#[derive(Clone, Debug)]
pub struct Location {
    pub url: Url,
    pub store: Arc<dyn ObjectStore>,
    /// The object's path within the store.
    pub path: ObjectPath,
}

impl Location {
    /// The store's own URL (`s3://bucket`), which DataFusion registers stores under.
    pub fn store_url(&self) -> String {
        format!("{}://{}", self.url.scheme(), self.url.authority())
    }

    /// The location `name` under this prefix.
    pub fn join(&self, name: &str) -> Result<Location, StoreError> {
        let mut url = self.url.clone();
        if !url.path().ends_with('/') {
            url.set_path(&format!("{}/", url.path()));
        }
        let url = url.join(name).map_err(|e| StoreError::new(&self.url, e))?;
        Ok(Location {
            path: object_path(&url)?,
            url,
            store: Arc::clone(&self.store),
        })
    }
}

fn object_path(url: &Url) -> Result<ObjectPath, StoreError> {
    ObjectPath::from_url_path(url.path()).map_err(|e| StoreError::new(url, e))
}

/// The store and path `url` names, the store configured from the environment.
pub fn locate(url: &str) -> Result<Location, StoreError> {
    let parsed = Url::parse(url).map_err(|e| StoreError {
        url: url.to_string(),
        detail: format!("not a URL: {e}"),
    })?;
    let fail = |e: object_store::Error| StoreError::new(&parsed, e);
    let store: Arc<dyn ObjectStore> = match parsed.scheme() {
        "s3" | "s3a" => {
            let mut b = AmazonS3Builder::from_env()
                .with_retry(retry())
                .with_url(url);
            if let Some(t) = timeout() {
                b = b.with_config(AmazonS3ConfigKey::Client(ClientConfigKey::Timeout), t);
            }
            Arc::new(b.build().map_err(fail)?)
        }
        "gs" => {
            let mut b = GoogleCloudStorageBuilder::from_env()
                .with_retry(retry())
                .with_url(url);
            if let Some(t) = timeout() {
                b = b.with_config(GoogleConfigKey::Client(ClientConfigKey::Timeout), t);
            }
            Arc::new(b.build().map_err(fail)?)
        }
        "az" | "abfs" | "abfss" | "azure" | "adl" => {
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_retry(retry())
                .with_url(url);
            if let Some(t) = timeout() {
                b = b.with_config(AzureConfigKey::Client(ClientConfigKey::Timeout), t);
            }
            Arc::new(b.build().map_err(fail)?)
        }
        "http" | "https" => {
            let mut b = HttpBuilder::new().with_retry(retry()).with_url(format!(
                "{}://{}",
                parsed.scheme(),
                parsed.authority()
            ));
            if let Some(t) = timeout() {
                b = b.with_config(ClientConfigKey::Timeout, t);
            }
            Arc::new(b.build().map_err(fail)?)
        }
        other => {
            return Err(StoreError::new(
                &parsed,
                format!("unknown scheme {other}: use s3://, gs://, az:// or https://"),
            ))
        }
    };
    Ok(Location {
        path: object_path(&parsed)?,
        url: parsed,
        store,
    })
}

/// The retry policy: `object_store`'s, with `GLYD_STORE_RETRIES` retries where it is set.
fn retry() -> RetryConfig {
    let mut r = RetryConfig::default();
    if let Some(n) = std::env::var("GLYD_STORE_RETRIES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        r.max_retries = n;
    }
    r
}

/// `GLYD_STORE_TIMEOUT` (`30s`, `500ms`): how long one request may take before it is
/// abandoned and retried (object_store's default, 30 s, where unset).
fn timeout() -> Option<String> {
    std::env::var("GLYD_STORE_TIMEOUT").ok()
}

/// A runtime for the blocking adapters below (object stores are async).
fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// The size of the object at `loc`.
pub async fn size(loc: &Location) -> Result<u64, StoreError> {
    let meta = loc
        .store
        .head(&loc.path)
        .await
        .map_err(|e| StoreError::new(&loc.url, e))?;
    Ok(meta.size)
}

/// Whether an object exists at `loc`.
pub fn exists(loc: &Location) -> Result<bool, StoreError> {
    let rt = runtime().map_err(|e| StoreError::new(&loc.url, e))?;
    match rt.block_on(loc.store.head(&loc.path)) {
        Ok(_) => Ok(true),
        Err(object_store::Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(StoreError::new(&loc.url, e)),
    }
}

/// The bytes of `range` of the object at `loc`.
pub async fn get_range(loc: &Location, range: Range<u64>) -> Result<Bytes, StoreError> {
    loc.store
        .get_range(&loc.path, range)
        .await
        .map_err(|e| StoreError::new(&loc.url, e))
}

/// An object read as a stream of bytes, for code that reads files.
pub struct ObjectReader {
    rt: tokio::runtime::Runtime,
    url: Url,
    stream: BoxStream<'static, object_store::Result<Bytes>>,
    piece: Bytes,
    /// The object's size.
    pub len: u64,
}

impl ObjectReader {
    /// Starts reading the object at `loc`.
    pub fn open(loc: &Location) -> Result<Self, StoreError> {
        let rt = runtime().map_err(|e| StoreError::new(&loc.url, e))?;
        let got = rt
            .block_on(loc.store.get(&loc.path))
            .map_err(|e| StoreError::new(&loc.url, e))?;
        let len = got.meta.size;
        Ok(Self {
            rt,
            url: loc.url.clone(),
            stream: got.into_stream(),
            piece: Bytes::new(),
            len,
        })
    }
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.piece.is_empty() {
            match self.rt.block_on(self.stream.next()) {
                None => return Ok(0),
                Some(Ok(b)) => self.piece = b,
                Some(Err(e)) => return Err(StoreError::new(&self.url, e).into()),
            }
        }
        let n = buf.len().min(self.piece.len());
        buf[..n].copy_from_slice(&self.piece.split_to(n));
        Ok(n)
    }
}

/// An object written as a multipart upload: nothing is visible under its name until
/// [`Upload::complete`] returns; dropped unfinished (an error, a signal), the upload is
/// aborted. It blocks (driving a runtime of its own): use it from threads that are not
/// running async tasks, as [`ObjectReader`] too.
pub struct Upload {
    rt: tokio::runtime::Runtime,
    url: Url,
    writer: Option<WriteMultipart>,
    /// Bytes written so far.
    len: u64,
}

impl Upload {
    /// Starts uploading the object at `loc`.
    pub fn start(loc: &Location) -> Result<Self, StoreError> {
        let rt = runtime().map_err(|e| StoreError::new(&loc.url, e))?;
        let upload = rt
            .block_on(loc.store.put_multipart(&loc.path))
            .map_err(|e| StoreError::new(&loc.url, e))?;
        Ok(Self {
            rt,
            url: loc.url.clone(),
            writer: Some(WriteMultipart::new_with_chunk_size(upload, PART)),
            len: 0,
        })
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Uploads what is left and completes the upload: the object is then visible, whole.
    pub fn complete(mut self) -> Result<(), StoreError> {
        let writer = self.writer.take().expect("completed once");
        self.rt
            .block_on(writer.finish())
            .map(drop)
            .map_err(|e| StoreError::new(&self.url, e))
    }
}

impl Write for Upload {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let writer = self.writer.as_mut().expect("not completed");
        self.rt
            .block_on(writer.wait_for_capacity(PARTS_IN_FLIGHT))
            .map_err(|e| StoreError::new(&self.url, e))?;
        // A full part starts uploading on the runtime's tasks.
        let _in_runtime = self.rt.enter();
        writer.write(buf);
        self.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        if let Some(w) = self.writer.take() {
            // Best effort: an upload never completed is invisible either way, and stores
            // expire the parts of abandoned ones.
            let _ = self.rt.block_on(w.abort());
        }
    }
}
