//! The HTTP source: `POST /<stream>` with newline-delimited JSON or a JSON array, the
//! Elasticsearch `_bulk` subset shippers write with (`POST /_bulk`, `POST /<index>/_bulk`),
//! bodies plain, gzip or zstd; `GET /metrics` and `GET /health`; and the two read-only
//! Elasticsearch answers shippers ask before they write (`GET /`, `GET /_cluster/health`).
//! A request is answered 200 only once its rows are durable, and is taken or refused whole.

use std::convert::Infallible;
use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::body::{bulk_rows, json_rows, Refused};
use crate::event::{check_stream, now_us, Rows};
use crate::listener::serve_connections;
use crate::sink::{stopped, Refusal, Sink};

/// Limits of the HTTP source.
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// Open connections at most; more are closed at once.
    pub connections: usize,
    /// Time to read a request's head, and then its body.
    pub read_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            connections: 1024,
            read_timeout: Duration::from_secs(30),
        }
    }
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json(status: StatusCode, body: serde_json::Value) -> Reply {
    reply(status, "application/json", body.to_string())
}

/// An error answer: `{"error": reason, ...}` (Elasticsearch's shape on `_bulk`, so shippers
/// log the reason).
fn error(status: StatusCode, reason: &str, line: Option<usize>, bulk: bool) -> Reply {
    let mut body = if bulk {
        serde_json::json!({"error": {"type": "glyd_exception", "reason": reason}, "status": status.as_u16()})
    } else {
        serde_json::json!({"error": reason})
    };
    if let Some(l) = line {
        body["line"] = l.into();
    }
    json(status, body)
}

/// The answer to a refused write: 503 or 429 with `Retry-After`.
fn refused(sink: &Sink, r: &Refusal, bulk: bool) -> Reply {
    sink.metrics.reject(r.reason());
    let status = match r {
        Refusal::Behind => StatusCode::TOO_MANY_REQUESTS,
        Refusal::Streams(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    let mut resp = error(status, &r.to_string(), None, bulk);
    if status != StatusCode::BAD_REQUEST {
        resp.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}

/// Reads at most `limit` bytes decoded from `body` as `encoding` says; `Err` names what
/// went wrong and the status to answer.
fn decode(
    body: Bytes,
    encoding: Option<&str>,
    limit: usize,
) -> Result<Bytes, (StatusCode, String)> {
    let capped = |mut r: Box<dyn Read>, what: &str| {
        let mut out = Vec::new();
        r.by_ref()
            .take(limit as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| {
                (
                    StatusCode::BAD_REQUEST,
                    format!("{what} body does not decode: {e}"),
                )
            })?;
        if out.len() > limit {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the {what} body decodes to more than the limit of {limit} bytes (--max-body)"
                ),
            ));
        }
        Ok(Bytes::from(out))
    };
    match encoding.map(str::trim) {
        None | Some("identity") | Some("") => Ok(body),
        Some("gzip") | Some("x-gzip") => capped(
            Box::new(flate2::read::MultiGzDecoder::new(std::io::Cursor::new(
                body,
            ))),
            "gzip",
        ),
        Some("zstd") => {
            let d = zstd::stream::read::Decoder::new(std::io::Cursor::new(body))
                .map_err(|e| (StatusCode::BAD_REQUEST, format!("zstd body: {e}")))?;
            capped(Box::new(d), "zstd")
        }
        Some(other) => Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("Content-Encoding {other:?} is not taken (send identity, gzip or zstd)"),
        )),
    }
}

/// What a path asks for.
enum Route {
    Rows(String),
    Bulk(Option<String>),
}

fn route(path: &str) -> Option<Route> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        ["_bulk"] => Some(Route::Bulk(None)),
        [index, "_bulk"] => Some(Route::Bulk(Some(index.to_string()))),
        [stream] if !stream.is_empty() => Some(Route::Rows(stream.to_string())),
        _ => None,
    }
}

async fn handle(sink: Arc<Sink>, limits: HttpLimits, req: Request<Incoming>) -> Reply {
    let arrived = Instant::now();
    let path = req.uri().path().to_string();
    match (req.method(), path.as_str()) {
        (&Method::GET, "/health") => return reply(StatusCode::OK, "text/plain", "ok\n"),
        (&Method::GET, "/metrics") => {
            return reply(
                StatusCode::OK,
                "text/plain; version=0.0.4",
                sink.metrics.render(),
            )
        }
        (&Method::GET | &Method::HEAD, "/") => {
            return json(
                StatusCode::OK,
                serde_json::json!({
                    "name": "glyd", "cluster_name": "glyd", "tagline": "glyd sink",
                    "version": {"number": "8.0.0", "build_flavor": "default"}
                }),
            )
        }
        (&Method::GET, "/_cluster/health") => {
            return json(StatusCode::OK, serde_json::json!({"status": "green"}))
        }
        (&Method::POST | &Method::PUT, _) => {}
        _ => return error(StatusCode::NOT_FOUND, "no such resource", None, false),
    }
    let Some(route) = route(&path) else {
        return error(
            StatusCode::NOT_FOUND,
            "POST to /<stream> or /_bulk",
            None,
            false,
        );
    };
    let bulk = matches!(route, Route::Bulk(_));
    let stream_name = match &route {
        Route::Rows(s) | Route::Bulk(Some(s)) => Some(s.clone()),
        Route::Bulk(None) => None,
    };
    if let Some(s) = &stream_name {
        if let Err(e) = check_stream(s) {
            sink.metrics.reject("bad_request");
            return error(StatusCode::BAD_REQUEST, &e, None, bulk);
        }
    }
    if sink.behind() {
        return refused(&sink, &Refusal::Behind, bulk);
    }
    let max_body = sink.config().max_body;
    let length = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if length.is_some_and(|n| n > max_body as u64) {
        sink.metrics.reject("too_large");
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("a body over the limit of {max_body} bytes (--max-body)"),
            None,
            bulk,
        );
    }
    // The body, decoded, and its rows are held at once: three times its limit.
    let _reserved = match sink.reserve(3 * length.unwrap_or(max_body as u64)) {
        Ok(r) => r,
        Err(r) => return refused(&sink, &r, bulk),
    };
    let encoding = req
        .headers()
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let body = Limited::new(req.into_body(), max_body);
    let body = match tokio::time::timeout(limits.read_timeout, body.collect()).await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) => {
            let too_large = e
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            let (status, reason) = if too_large {
                sink.metrics.reject("too_large");
                (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("a body over the limit of {max_body} bytes (--max-body)"),
                )
            } else {
                sink.metrics.reject("bad_request");
                (
                    StatusCode::BAD_REQUEST,
                    format!("the body could not be read: {e}"),
                )
            };
            return error(status, &reason, None, bulk);
        }
        Err(_) => {
            sink.metrics.reject("timeout");
            return error(
                StatusCode::REQUEST_TIMEOUT,
                "the body did not arrive in time",
                None,
                bulk,
            );
        }
    };
    let max_record = sink.config().max_record;
    let parsed = tokio::task::spawn_blocking(move || {
        let body = decode(body, encoding.as_deref(), max_body).map_err(|(s, r)| (s, r, None))?;
        let now = now_us();
        let as_400 = |e: Refused| (StatusCode::BAD_REQUEST, e.to_string(), Some(e.line));
        match route {
            Route::Rows(stream) => json_rows(&stream, &body, max_record, now)
                .map(|r| (vec![r], Vec::new()))
                .map_err(as_400),
            Route::Bulk(index) => {
                bulk_rows(index.as_deref(), &body, max_record, now).map_err(as_400)
            }
        }
    })
    .await
    .unwrap_or_else(|e| {
        // A parser bug: this request fails with the reason, the sink carries on.
        tracing::error!(error = %e, "parsing a request body failed");
        Err((
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the body could not be parsed ({e}); nothing was kept"),
            None,
        ))
    });
    let (rows, items) = match parsed {
        Ok(p) => p,
        Err((status, reason, line)) => {
            sink.metrics.reject(match status {
                StatusCode::BAD_REQUEST => "bad_request",
                StatusCode::INTERNAL_SERVER_ERROR => "internal",
                StatusCode::UNSUPPORTED_MEDIA_TYPE => "encoding",
                _ => "too_large",
            });
            return error(status, &reason, line, bulk);
        }
    };
    let events: u64 = rows.iter().map(|r: &Rows| r.events).sum();
    let writes = rows.into_iter().map(|r| sink.write("http", r));
    for result in futures::future::join_all(writes).await {
        if let Err(r) = result {
            return refused(&sink, &r, bulk);
        }
    }
    sink.metrics.ack.observe(arrived.elapsed());
    if bulk {
        let items: Vec<serde_json::Value> = items
            .iter()
            .map(|i| {
                serde_json::json!({i.action: {"_index": i.index, "status": 201, "result": "created"}})
            })
            .collect();
        let took = arrived.elapsed().as_millis() as u64;
        json(
            StatusCode::OK,
            serde_json::json!({"took": took, "errors": false, "items": items}),
        )
    } else {
        json(StatusCode::OK, serde_json::json!({"accepted": events}))
    }
}

/// Serves HTTP on `listener` until `stop` turns true; then stops accepting and returns once
/// the requests in flight are answered.
pub async fn serve(
    listener: TcpListener,
    sink: Arc<Sink>,
    limits: HttpLimits,
    stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let limit = limits.connections;
    serve_connections(
        listener,
        sink.clone(),
        limit,
        stop,
        move |tcp, peer, mut stop| {
            let (sink, limits) = (sink.clone(), limits.clone());
            async move {
                let service = service_fn(|req| {
                    let (sink, limits) = (sink.clone(), limits.clone());
                    async move { Ok::<_, Infallible>(handle(sink, limits, req).await) }
                });
                let conn = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits.read_timeout)
                    .serve_connection(TokioIo::new(tcp), service);
                let mut conn = std::pin::pin!(conn);
                // On stop, a request in flight is answered, then the connection closes.
                let ended = tokio::select! {
                    r = conn.as_mut() => r,
                    _ = stopped(&mut stop) => {
                        conn.as_mut().graceful_shutdown();
                        conn.await
                    }
                };
                if let Err(e) = ended {
                    tracing::debug!(%peer, error = %e, "connection ended");
                }
            }
        },
    )
    .await
}
