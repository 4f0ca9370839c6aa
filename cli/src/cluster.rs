//! `glyd cluster scheduler|executor`: the processes of an Apache DataFusion Ballista cluster
//! that queries lakes of archives, and `glyd sql --cluster`, a client of one.
//!
//! A client registers a [`LakeTable`] per lake on a session connected to the scheduler; its
//! logical plan goes there, the scheduler plans the scans (row groups pruned by statistics,
//! large archives split by byte range) and executors run them, reading the archives by
//! ranges. glyd's codecs wrap Ballista's in every process; every process makes its object
//! stores from its own environment ([`EnvStores`]) and has `glyd sql`'s functions.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use ballista::prelude::{SessionConfigExt, SessionContextExt};
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::error::DataFusionError;
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::object_store::ObjectStore;
use datafusion::prelude::{SessionConfig, SessionContext};
use glyd_connectors::store;
use glyd_udf::{
    register_json_functions, register_log_functions, GlydLogicalCodec, GlydPhysicalCodec,
    LakeTable, SqlPolicy,
};
use url::Url;

use crate::args::ClusterCommand;
use crate::sql::{self, flat, Settings};

/// glyd's codecs around Ballista's.
fn logical_codec() -> Arc<GlydLogicalCodec> {
    Arc::new(GlydLogicalCodec::new(Arc::new(
        BallistaLogicalExtensionCodec::default(),
    )))
}

fn physical_codec() -> Arc<GlydPhysicalCodec> {
    Arc::new(GlydPhysicalCodec::new(Arc::new(
        BallistaPhysicalExtensionCodec::default(),
    )))
}

/// A Ballista session configuration with glyd's codecs.
fn session_config() -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_ballista_logical_extension_codec(logical_codec())
        .with_ballista_physical_extension_codec(physical_codec())
}

/// A runtime whose object stores come from the environment.
fn runtime_env(_config: &SessionConfig) -> datafusion::error::Result<Arc<RuntimeEnv>> {
    RuntimeEnvBuilder::new()
        .with_object_store_registry(Arc::new(EnvStores::default()))
        .build_arc()
}

/// A session on `config` with `glyd sql`'s functions (its read-only policy) and
/// [`runtime_env`]'s stores.
fn session_state(config: SessionConfig) -> datafusion::error::Result<SessionState> {
    let state = SessionStateBuilder::new()
        .with_runtime_env(runtime_env(&config)?)
        .with_config(config)
        .with_default_features()
        .build();
    let mut ctx = SessionContext::new_with_state(state);
    register_json_functions(&mut ctx)?;
    register_log_functions(&ctx, SqlPolicy::default());
    Ok(ctx.state())
}

/// The local file system and every store an `s3://`, `gs://`, `az://` or `http(s)://` URL
/// names, made on first use from this process's environment as the CLI makes them, so a
/// cluster reads whatever lake a client names without stores registered first.
#[derive(Debug, Default)]
struct EnvStores {
    known: DefaultObjectStoreRegistry,
}

impl ObjectStoreRegistry for EnvStores {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.known.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        self.known.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        if let Ok(s) = self.known.get_store(url) {
            return Ok(s);
        }
        if !store::is_url(url.as_str()) {
            return self.known.get_store(url);
        }
        let loc =
            store::locate(url.as_str()).map_err(|e| DataFusionError::External(Box::new(e)))?;
        self.known.register_store(url, Arc::clone(&loc.store));
        Ok(loc.store)
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")
}

/// Runs a scheduler or an executor until it fails or the process is stopped.
pub fn run(process: &ClusterCommand) -> Result<()> {
    let rt = runtime()?;
    match process {
        ClusterCommand::Scheduler { bind } => {
            let config = SchedulerConfig {
                bind_host: bind.ip().to_string(),
                bind_port: bind.port(),
                override_logical_codec: Some(logical_codec()),
                override_physical_codec: Some(physical_codec()),
                override_config_producer: Some(Arc::new(session_config)),
                override_session_builder: Some(Arc::new(session_state)),
                ..Default::default()
            };
            eprintln!("glyd cluster scheduler on {bind}");
            rt.block_on(async {
                let cluster = BallistaCluster::new_from_config(&config).await?;
                start_server(cluster, *bind, Arc::new(config)).await
            })
            .with_context(|| format!("the scheduler on {bind}"))
        }
        ClusterCommand::Executor {
            scheduler,
            bind,
            flight_port,
            grpc_port,
            work_dir,
            tasks,
        } => {
            let Some((host, port)) = scheduler
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
            else {
                bail!("--scheduler {scheduler}: expected HOST:PORT");
            };
            let work_dir = match work_dir {
                Some(d) => Some(d.to_str().context("--work-dir must be UTF-8")?.to_string()),
                None => None,
            };
            let state = session_state(session_config()).map_err(flat)?;
            let defaults = ExecutorProcessConfig::default();
            let config = ExecutorProcessConfig {
                scheduler_host: host,
                scheduler_port: port,
                bind_host: bind.clone(),
                port: *flight_port,
                grpc_port: *grpc_port,
                work_dir,
                vcores: if *tasks == 0 { defaults.vcores } else { *tasks },
                override_logical_codec: Some(logical_codec()),
                override_physical_codec: Some(physical_codec()),
                override_config_producer: Some(Arc::new(session_config)),
                override_runtime_producer: Some(Arc::new(runtime_env)),
                override_function_registry: Some(Arc::new(BallistaFunctionRegistry::from(&state))),
                ..defaults
            };
            eprintln!("glyd cluster executor on {bind}:{flight_port}, scheduler {scheduler}");
            rt.block_on(start_executor_process(Arc::new(config)))
                .with_context(|| format!("the executor on {bind}:{flight_port}"))
        }
    }
}

/// What a cluster reads for `path`: a URL as given; a local path absolute (every executor
/// must see it at the same place), a folder's with a trailing `/`.
fn location(path: &Path) -> Result<String> {
    if let Some(url) = path.to_str().filter(|p| store::is_url(p)) {
        return Ok(url.to_string());
    }
    let abs = std::path::absolute(path)?;
    let text = abs.to_str().context("a path in a query must be UTF-8")?;
    Ok(if abs.is_dir() && !text.ends_with('/') {
        format!("{text}/")
    } else {
        text.to_string()
    })
}

/// Runs `query` on the cluster whose scheduler is at `url` (`df://HOST:PORT`) over `files`
/// (named after themselves) and `tables` (`NAME=LOCATION`), printing as `glyd sql` does.
pub fn query(
    url: &str,
    query: Option<&str>,
    files: &[PathBuf],
    tables: &[String],
    settings: Settings,
) -> Result<()> {
    let Some(query) = query else {
        bail!("glyd sql --cluster runs one query: give it before the lakes");
    };
    let rt = runtime()?;
    let state = session_state(session_config()).map_err(flat)?;
    let mut ctx = rt
        .block_on(SessionContext::remote_with_state(url, state))
        .map_err(flat)
        .with_context(|| format!("connecting to the scheduler at {url}"))?;
    // Ballista's session keeps its own list of scalar functions: glyd's go back on top.
    register_json_functions(&mut ctx).map_err(flat)?;
    register_log_functions(&ctx, SqlPolicy::default());
    let mut named: Vec<(String, PathBuf)> = files
        .iter()
        .map(|f| (sql::table_name(f), f.clone()))
        .collect();
    for t in tables {
        let Some((name, loc)) = t.split_once('=') else {
            bail!("-t {t}: expected NAME=LOCATION");
        };
        named.push((name.to_string(), PathBuf::from(loc)));
    }
    for (name, path) in &named {
        let loc = location(path)?;
        let table = rt
            .block_on(LakeTable::open(&ctx.state(), std::slice::from_ref(&loc)))
            .map_err(flat)
            .with_context(|| format!("opening {loc}"))?;
        ctx.register_table(name.as_str(), Arc::new(table))
            .map_err(flat)?;
    }
    rt.block_on(sql::run_one(&ctx, query, settings))
        .map_err(|e| {
            if format!("{e:#}").contains("connect error") {
                e.context(format!(
                    "no scheduler answers at {url}: start one there with glyd cluster scheduler"
                ))
            } else {
                e.context(format!("the query on the cluster at {url}"))
            }
        })
}
