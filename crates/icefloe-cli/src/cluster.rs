//! `icefloe scheduler` and `icefloe executor`: the processes of an Apache DataFusion Ballista
//! cluster that knows Icefloe's tables and scans (Ballista loads no plug-ins, so these are
//! Ballista's scheduler and executor built into this binary with Icefloe's codecs,
//! `icefloe_datafusion::codec`), and the client side of `icefloe sql --cluster`.
//!
//! Every process opens tables with its own storage configuration: its `AWS_*`, `AZURE_*`,
//! `GOOGLE_*` variables (and AWS profile) and `--storage-option`s; plans carry no credential.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use ballista::datafusion::execution::session_state::SessionStateBuilder;
use ballista::datafusion::prelude::{SessionConfig, SessionContext};
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use icefloe_datafusion::codec::{IcefloeLogicalCodec, IcefloePhysicalCodec};
use icefloe_datafusion::{ExtraColumns, IcefloeSession, TableOpener};

use crate::args::StorageArgs;

/// Arguments of `icefloe scheduler`.
#[derive(clap::Args, Debug)]
pub struct SchedulerArgs {
    /// Address to listen on (clients and executors connect here); 0.0.0.0:50050 for every
    /// interface
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
    pub bind: String,
    /// Seconds without a heartbeat after which an executor is taken for lost and its tasks
    /// run elsewhere
    #[arg(long, value_name = "SECONDS", default_value_t = 180)]
    pub executor_timeout: u64,
    /// A URL prefix of storage endpoints that plans may name when this process sets no
    /// endpoint of its own (repeatable; e.g. http://minio.internal:9000/). A plan naming
    /// another endpoint fails: it would send this process's requests, signed with its
    /// credentials, wherever the client says
    #[arg(long = "allowed-endpoint", value_name = "URL")]
    pub allowed_endpoints: Vec<String>,
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// Arguments of `icefloe executor`.
#[derive(clap::Args, Debug)]
pub struct ExecutorArgs {
    /// The scheduler to register with
    #[arg(long, value_name = "HOST:PORT")]
    pub scheduler: String,
    /// Address of this executor's Arrow Flight service (the scheduler, other executors and
    /// clients fetch results here); 0.0.0.0:PORT for every interface
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50051")]
    pub bind: String,
    /// Port of this executor's gRPC service (the scheduler sends tasks here), on the host of
    /// --bind (default: the --bind port plus one)
    #[arg(long, value_name = "PORT")]
    pub grpc_port: Option<u16>,
    /// The host name others reach this executor at (default: the --bind host)
    #[arg(long, value_name = "HOST")]
    pub external_host: Option<String>,
    /// Tasks run at once (default: the cores)
    #[arg(long, value_name = "N")]
    pub concurrent_tasks: Option<usize>,
    /// Directory for shuffle files (default: a new temporary directory)
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<std::path::PathBuf>,
    /// Seconds between heartbeats to the scheduler
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub heartbeat_interval: u64,
    /// A URL prefix of storage endpoints that plans may name when this process sets no
    /// endpoint of its own (repeatable; e.g. http://minio.internal:9000/). A plan naming
    /// another endpoint fails: it would send this process's requests, signed with its
    /// credentials, wherever the client says
    #[arg(long = "allowed-endpoint", value_name = "URL")]
    pub allowed_endpoints: Vec<String>,
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// `HOST:PORT` split, the host checked to resolve.
fn host_port(text: &str, what: &str) -> Result<(String, u16)> {
    let (host, port) = text
        .rsplit_once(':')
        .with_context(|| format!("{what} {text:?} is not HOST:PORT"))?;
    let port: u16 = port
        .parse()
        .with_context(|| format!("{what} {text:?}: {port:?} is not a port number"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        bail!("{what} {text:?} names no host");
    }
    Ok((host.to_string(), port))
}

/// The opener and codecs of a process with storage `storage`, taking endpoints plans name
/// under the `allowed` URL prefixes.
fn codecs(
    storage: &StorageArgs,
    allowed: &[String],
) -> Result<(IcefloeLogicalCodec, IcefloePhysicalCodec)> {
    let opener = Arc::new(
        TableOpener::new(storage.config_for(None)?).with_allowed_endpoints(allowed.to_vec()),
    );
    Ok((
        IcefloeLogicalCodec::new(
            Arc::new(BallistaLogicalExtensionCodec::default()),
            opener.clone(),
        ),
        IcefloePhysicalCodec::new(Arc::new(BallistaPhysicalExtensionCodec::default()), opener),
    ))
}

/// Runs `icefloe scheduler` until interrupted.
pub async fn scheduler(a: SchedulerArgs) -> Result<()> {
    use ballista_scheduler::cluster::BallistaCluster;
    use ballista_scheduler::config::SchedulerConfig;
    let (host, port) = host_port(&a.bind, "--bind")?;
    let addr: SocketAddr = (host.as_str(), port)
        .to_socket_addrs()
        .with_context(|| format!("--bind {}", a.bind))?
        .next()
        .with_context(|| format!("--bind {}: no address", a.bind))?;
    let (logical, physical) = codecs(&a.storage, &a.allowed_endpoints)?;
    let config = SchedulerConfig {
        bind_host: host.clone(),
        bind_port: port,
        external_host: host,
        executor_timeout_seconds: a.executor_timeout,
        expire_dead_executor_interval_seconds: a.executor_timeout.clamp(1, 15),
        no_executors_grace_period_seconds: a.executor_timeout,
        override_logical_codec: Some(Arc::new(logical)),
        override_physical_codec: Some(Arc::new(physical)),
        ..Default::default()
    };
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| anyhow::anyhow!("cannot start the scheduler: {e}"))?;
    eprintln!("icefloe scheduler listening on {addr}");
    ballista_scheduler::scheduler_process::start_server(cluster, addr, Arc::new(config))
        .await
        .map_err(|e| anyhow::anyhow!("scheduler on {addr}: {e}"))
}

/// Runs `icefloe executor` until interrupted.
pub async fn executor(a: ExecutorArgs) -> Result<()> {
    use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
    let (scheduler_host, scheduler_port) = host_port(&a.scheduler, "--scheduler")?;
    let (bind_host, port) = host_port(&a.bind, "--bind")?;
    let grpc_port = match a.grpc_port {
        Some(p) => p,
        None => port
            .checked_add(1)
            .context("--bind port 65535 leaves no port for gRPC: give --grpc-port")?,
    };
    // Ballista logs a port it cannot bind and goes on without it: say so and stop instead.
    for (p, what) in [(port, "--bind"), (grpc_port, "--grpc-port")] {
        std::net::TcpListener::bind((bind_host.as_str(), p))
            .with_context(|| format!("{what}: cannot listen on {bind_host}:{p}"))?;
    }
    let (logical, physical) = codecs(&a.storage, &a.allowed_endpoints)?;
    let work_dir = a
        .work_dir
        .map(|d| {
            d.to_str()
                .map(str::to_string)
                .with_context(|| format!("--work-dir {}: not UTF-8", d.display()))
        })
        .transpose()?;
    let external_host = a
        .external_host
        .or_else(|| (bind_host != "0.0.0.0" && bind_host != "::").then(|| bind_host.clone()));
    let config = ExecutorProcessConfig {
        bind_host,
        external_host,
        port,
        grpc_port,
        scheduler_host,
        scheduler_port,
        vcores: a.concurrent_tasks.unwrap_or(0),
        work_dir,
        executor_heartbeat_interval_seconds: a.heartbeat_interval,
        print_thread_info: false,
        override_logical_codec: Some(Arc::new(logical)),
        override_physical_codec: Some(Arc::new(physical)),
        ..Default::default()
    };
    eprintln!(
        "icefloe executor on {}:{} (gRPC {}), scheduler {}",
        config.bind_host, config.port, config.grpc_port, a.scheduler
    );
    start_executor_process(Arc::new(config))
        .await
        .map_err(|e| anyhow::anyhow!("executor: {e}"))
}

/// A session whose queries the cluster at `scheduler` (`HOST:PORT`) runs; tables are
/// planned here with `storage` and re-opened by the scheduler and executors with theirs.
pub async fn remote_session(
    scheduler: &str,
    storage: &StorageArgs,
    extra: ExtraColumns,
) -> Result<IcefloeSession> {
    let (host, port) = host_port(scheduler, "--cluster")?;
    let (logical, physical) = codecs(storage, &[])?;
    let config = SessionConfig::new_with_ballista()
        .with_information_schema(true)
        .with_ballista_logical_extension_codec(Arc::new(logical))
        .with_ballista_physical_extension_codec(Arc::new(physical));
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .build();
    let ctx = <SessionContext as ballista::prelude::SessionContextExt>::remote_with_state(
        &format!("df://{host}:{port}"),
        state,
    )
    .await
    .with_context(|| format!("--cluster {scheduler}"))?;
    Ok(IcefloeSession::for_cluster(ctx, extra))
}
