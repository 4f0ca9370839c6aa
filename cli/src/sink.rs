//! `glyd sink`: the streaming sink of `glyd-connectors` as a service. Logs go to standard
//! error (`RUST_LOG` filters them); SIGTERM or SIGINT stops it cleanly: no new connections,
//! requests in flight answered, every log sealed into archives, exit status 0.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use glyd_connectors::event::check_stream;
use glyd_connectors::fluent::{self, FluentConfig};
use glyd_connectors::http::{serve, HttpLimits};
use glyd_connectors::{Sink, SinkConfig};
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// What `glyd sink` was asked to run.
pub struct SinkOptions {
    pub http: Vec<String>,
    pub fluent: Vec<String>,
    pub fluent_config: FluentConfig,
    pub config: SinkConfig,
    pub max_connections: usize,
}

impl SinkOptions {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        http: &[String],
        fluent: &[String],
        shared_key: Option<String>,
        routes: &[String],
        out: &std::path::Path,
        wal: Option<&std::path::Path>,
        roll_size: usize,
        roll_age: u64,
        memory: Option<u64>,
        max_record_size: usize,
        max_body: usize,
        max_connections: usize,
    ) -> Result<SinkOptions> {
        let defaults = SinkConfig::default();
        let routes = routes
            .iter()
            .map(|r| {
                let (prefix, stream) = r
                    .split_once('=')
                    .with_context(|| format!("--fluent-route {r}: expected PREFIX=STREAM"))?;
                check_stream(stream).map_err(|e| anyhow::anyhow!("--fluent-route {r}: {e}"))?;
                Ok((prefix.to_string(), stream.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SinkOptions {
            http: http.to_vec(),
            fluent: fluent.to_vec(),
            fluent_config: FluentConfig {
                shared_key,
                routes,
                connections: max_connections,
                hostname: hostname(),
                ..FluentConfig::default()
            },
            config: SinkConfig {
                out: out.to_path_buf(),
                wal: wal.map(PathBuf::from),
                roll_bytes: roll_size as u64,
                roll_age: Duration::from_secs(roll_age),
                memory: memory.unwrap_or(defaults.memory),
                max_record: max_record_size,
                max_body,
                ..defaults
            },
            max_connections,
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
        let sink = Arc::new(
            Sink::open(opts.config)
                .with_context(|| format!("opening the lake {}", out.display()))?,
        );
        let (stop_tx, stop_rx) = watch::channel(false);
        let limits = HttpLimits {
            connections: opts.max_connections,
            ..HttpLimits::default()
        };
        let mut servers = tokio::task::JoinSet::new();
        for addr in &opts.http {
            let listener = TcpListener::bind(addr)
                .await
                .with_context(|| format!("--http {addr}: cannot listen there"))?;
            let local = listener.local_addr()?;
            tracing::info!(address = %local, lake = %out.display(), "http listening on {local}");
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
        let mut term = signal(SignalKind::terminate()).context("watching SIGTERM")?;
        let mut int = signal(SignalKind::interrupt()).context("watching SIGINT")?;
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: stopping"),
            _ = int.recv() => tracing::info!("SIGINT: stopping"),
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
