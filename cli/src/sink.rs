//! `glyd sink`: the streaming sink of `glyd-connectors` as a service. Logs go to standard
//! error (`RUST_LOG` filters them); SIGTERM or SIGINT stops it cleanly: no new connections,
//! requests in flight answered, every log sealed into archives, exit status 0.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use glyd_connectors::event::check_stream;
use glyd_connectors::fluent::{self, FluentConfig};
use glyd_connectors::http::{serve, HttpLimits};
use glyd_connectors::kafka::{self, check_topic, KafkaConfig};
use glyd_connectors::{Sink, SinkConfig};
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

use crate::args::{parse_size, SinkArgs};

/// What `glyd sink` was asked to run.
pub struct SinkOptions {
    pub http: Vec<String>,
    pub fluent: Vec<String>,
    pub fluent_config: FluentConfig,
    pub config: SinkConfig,
    pub limits: HttpLimits,
    pub kafka: Option<KafkaConfig>,
}

/// A size in a config file: bytes, or text like `128M`.
#[derive(Deserialize, Debug)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

impl Size {
    fn bytes(&self, key: &str) -> Result<u64> {
        match self {
            Size::Bytes(n) => Ok(*n),
            Size::Text(t) => parse_size(t)
                .map(|n| n as u64)
                .map_err(|e| anyhow::anyhow!("{key}: {e}")),
        }
    }
}

/// A Fluent route in a config file.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Route {
    prefix: String,
    stream: String,
}

/// `--config FILE`: the flags' settings in TOML.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    http: Option<Vec<String>>,
    fluent: Option<Vec<String>>,
    fluent_shared_key: Option<String>,
    fluent_route: Option<Vec<Route>>,
    out: Option<PathBuf>,
    wal: Option<PathBuf>,
    roll_size: Option<Size>,
    roll_age: Option<u64>,
    memory: Option<Size>,
    max_record_size: Option<Size>,
    max_body: Option<Size>,
    max_connections: Option<usize>,
    max_streams: Option<usize>,
    read_timeout: Option<u64>,
    kafka: Option<String>,
    topic: Option<Vec<String>>,
    group: Option<String>,
    value: Option<String>,
    roll_records: Option<u64>,
    kafka_option: Option<Vec<String>>,
}

impl SinkOptions {
    /// The flags over `--config`'s file over the defaults; `memory` is `--memory`.
    pub fn new(a: &SinkArgs, memory: Option<u64>) -> Result<SinkOptions> {
        let file: FileConfig = match &a.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("--config {}", path.display()))?;
                toml::from_str(&text).with_context(|| format!("--config {}", path.display()))?
            }
            None => FileConfig::default(),
        };
        let or_file = |flag: &[String], file: &Option<Vec<String>>| -> Vec<String> {
            if flag.is_empty() {
                file.clone().unwrap_or_default()
            } else {
                flag.to_vec()
            }
        };
        let http = or_file(&a.http, &file.http);
        let fluent = or_file(&a.fluent, &file.fluent);
        let kafka = match a.kafka.clone().or(file.kafka) {
            Some(brokers) => {
                let topics = or_file(&a.topic, &file.topic);
                if topics.is_empty() {
                    bail!("--kafka needs a topic to archive: --topic TOPIC (or topic in --config)");
                }
                for t in &topics {
                    check_topic(t).map_err(|e| anyhow::anyhow!("--topic: {e}"))?;
                }
                let mut options = Vec::new();
                for o in or_file(&a.kafka_option, &file.kafka_option) {
                    let (k, v) = o
                        .split_once('=')
                        .with_context(|| format!("-X {o}: expected KEY=VALUE"))?;
                    options.push((k.to_string(), v.to_string()));
                }
                let value = a
                    .value
                    .clone()
                    .or(file.value)
                    .unwrap_or_else(|| "json".into());
                Some(KafkaConfig {
                    brokers,
                    topics,
                    group: a
                        .group
                        .clone()
                        .or(file.group)
                        .unwrap_or_else(|| "glyd-sink".into()),
                    value: value.parse().map_err(|e: String| anyhow::anyhow!(e))?,
                    roll_records: a.roll_records.or(file.roll_records).unwrap_or(1_000_000),
                    options,
                })
            }
            None => None,
        };
        if http.is_empty() && fluent.is_empty() && kafka.is_none() {
            bail!(
                "glyd sink needs a source: --http ADDR, --fluent ADDR or --kafka BROKERS \
                 (or in --config)"
            );
        }
        let out = a
            .out
            .clone()
            .or(file.out)
            .context("glyd sink needs --out DIR, the lake's folder or s3://bucket/prefix/ (or out in --config)")?;
        let out = glyd_connectors::lake::Lake::parse(&out.to_string_lossy())
            .with_context(|| format!("--out {}", out.display()))?;
        let mut routes = Vec::new();
        if a.fluent_route.is_empty() {
            for r in file.fluent_route.unwrap_or_default() {
                routes.push((r.prefix, r.stream));
            }
        } else {
            for r in &a.fluent_route {
                let (prefix, stream) = r
                    .split_once('=')
                    .with_context(|| format!("--fluent-route {r}: expected PREFIX=STREAM"))?;
                routes.push((prefix.to_string(), stream.to_string()));
            }
        }
        for (prefix, stream) in &routes {
            check_stream(stream).map_err(|e| anyhow::anyhow!("fluent route {prefix}: {e}"))?;
        }
        let size = |flag: Option<usize>, file: &Option<Size>, key: &str| -> Result<Option<u64>> {
            match (flag, file) {
                (Some(n), _) => Ok(Some(n as u64)),
                (None, Some(s)) => s.bytes(key).map(Some),
                (None, None) => Ok(None),
            }
        };
        let defaults = SinkConfig::default();
        let memory = match (memory, &file.memory) {
            (Some(m), _) => m,
            (None, Some(s)) => s.bytes("memory")?,
            (None, None) => defaults.memory,
        };
        let read_timeout = Duration::from_secs(a.read_timeout.or(file.read_timeout).unwrap_or(30));
        let connections = a.max_connections.or(file.max_connections).unwrap_or(1024);
        let config = SinkConfig {
            out,
            wal: a.wal.clone().or(file.wal),
            roll_bytes: size(a.roll_size, &file.roll_size, "roll_size")?
                .unwrap_or(defaults.roll_bytes),
            roll_age: a
                .roll_age
                .or(file.roll_age)
                .map_or(defaults.roll_age, Duration::from_secs),
            memory,
            max_record: size(a.max_record_size, &file.max_record_size, "max_record_size")?
                .map_or(defaults.max_record, |n| n as usize),
            max_body: size(a.max_body, &file.max_body, "max_body")?
                .map_or(defaults.max_body, |n| n as usize),
            max_streams: a
                .max_streams
                .or(file.max_streams)
                .unwrap_or(defaults.max_streams),
            ..defaults
        };
        Ok(SinkOptions {
            http,
            fluent,
            fluent_config: FluentConfig {
                shared_key: a.fluent_shared_key.clone().or(file.fluent_shared_key),
                routes,
                connections,
                read_timeout,
                hostname: hostname(),
            },
            config,
            limits: HttpLimits {
                connections,
                read_timeout,
            },
            kafka,
        })
    }
}

/// This machine's name, for the Fluent handshake.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "glyd".into())
}

fn init_logs() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}

/// Runs the sink until SIGTERM or SIGINT.
pub fn run(opts: SinkOptions) -> Result<()> {
    init_logs();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("glyd-sink")
        .build()
        .context("starting the sink's runtime")?;
    rt.block_on(async move {
        let out = opts.config.out.clone();
        let sink =
            Arc::new(Sink::open(opts.config).with_context(|| format!("opening the lake {out}"))?);
        // Watched before any listener is announced: a stop sent as soon as one is, is clean.
        let mut term = signal(SignalKind::terminate()).context("watching SIGTERM")?;
        let mut int = signal(SignalKind::interrupt()).context("watching SIGINT")?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let limits = opts.limits.clone();
        let mut servers = tokio::task::JoinSet::new();
        for addr in &opts.http {
            let listener = TcpListener::bind(addr)
                .await
                .with_context(|| format!("--http {addr}: cannot listen there"))?;
            let local = listener.local_addr()?;
            tracing::info!(address = %local, lake = %out, "http listening on {local}");
            servers.spawn(serve(
                listener,
                sink.clone(),
                limits.clone(),
                stop_rx.clone(),
            ));
        }
        for addr in &opts.fluent {
            let listener = TcpListener::bind(addr)
                .await
                .with_context(|| format!("--fluent {addr}: cannot listen there"))?;
            let local = listener.local_addr()?;
            let handshake = if opts.fluent_config.shared_key.is_some() {
                "shared key"
            } else {
                "no shared key"
            };
            tracing::info!(address = %local, handshake, "fluent forward listening on {local}");
            servers.spawn(fluent::serve(
                listener,
                sink.clone(),
                opts.fluent_config.clone(),
                stop_rx.clone(),
            ));
        }
        let kafka_stop = Arc::new(AtomicBool::new(false));
        let mut consumer = match opts.kafka {
            Some(k) => {
                let (cfg, metrics, stop) = (
                    sink.config().clone(),
                    sink.metrics.clone(),
                    kafka_stop.clone(),
                );
                Some(tokio::task::spawn_blocking(move || {
                    kafka::run(k, &cfg, metrics, stop)
                }))
            }
            None => None,
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: stopping"),
            _ = int.recv() => tracing::info!("SIGINT: stopping"),
            r = async { consumer.as_mut().expect("a consumer").await }, if consumer.is_some() => {
                match r {
                    Ok(Ok(())) => tracing::error!("the kafka consumer stopped unasked"),
                    Ok(Err(e)) => tracing::error!(error = %e, "the kafka consumer failed"),
                    Err(e) => tracing::error!(error = %e, "the kafka consumer panicked"),
                }
                bail!("the kafka consumer stopped; see the log above");
            }
        }
        kafka_stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(c) = consumer {
            match c.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!(error = %e, "the kafka consumer failed"),
                Err(e) => tracing::error!(error = %e, "the kafka consumer panicked"),
            }
        }
        let _ = stop_tx.send(true);
        while servers.join_next().await.is_some() {}
        let closing = sink.clone();
        tokio::task::spawn_blocking(move || closing.close())
            .await
            .context("sealing the logs")?;
        tracing::info!("stopped: every accepted event is in an archive");
        Ok(())
    })
}
