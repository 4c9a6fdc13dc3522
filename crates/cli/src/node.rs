//! `coopcache node`: the daemon. Settings come from flags, then the
//! environment (`COOPCACHE_*`), then a TOML file (`--config`), then
//! defaults: with none at all it serves the current directory as a
//! single-node cluster.

use crate::live::{init_logs, parse_duration, parse_size, runtime};
use anyhow::{Context, Result, bail};
use coopcache_core::coop::{AlgorithmKind, live_policy};
use coopcache_core::policy::PolicyKind;
use coopcache_node::NodeOptions;
use coopcache_node::config::FileConfig;
use coopcache_node::origin::Origin;
use coopcache_node::tls::{self, Identity};
use std::net::{SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args, Debug, Default)]
pub struct NodeArgs {
    /// TOML file with any of the settings below (names as the flags, with
    /// `_` for `-`); unknown keys are refused.
    #[arg(long, env = "COOPCACHE_CONFIG")]
    config: Option<PathBuf>,
    /// The origin: a directory (default: the current one), s3://bucket/prefix
    /// (credentials and endpoint from AWS_* variables) or http(s)://host/prefix.
    #[arg(long, env = "COOPCACHE_ORIGIN")]
    origin: Option<String>,
    /// Memory budget for cached blocks and metadata [default: 2GiB].
    #[arg(long, env = "COOPCACHE_MEMORY", value_parser = parse_size)]
    memory: Option<u64>,
    /// Cooperation algorithm: nchance, greedy, base, hash or direct [default: nchance].
    #[arg(long, env = "COOPCACHE_ALGORITHM")]
    algorithm: Option<String>,
    /// Replacement policy of the node's own cache: lru, fifo, clock, sieve,
    /// arc, s3fifo or 2q [default: lru].
    #[arg(long, env = "COOPCACHE_POLICY")]
    policy: Option<String>,
    /// Address to accept peers on [default: 127.0.0.1:7170].
    #[arg(long, env = "COOPCACHE_LISTEN")]
    listen: Option<SocketAddr>,
    /// Address peers should dial, if not the listen address.
    #[arg(long, env = "COOPCACHE_ADVERTISE")]
    advertise: Option<String>,
    /// HTTP gateway address (local access, status, metrics) [default: 127.0.0.1:7171].
    #[arg(long, env = "COOPCACHE_HTTP")]
    http: Option<SocketAddr>,
    /// Peers to join (host:port), comma-separated or repeated.
    #[arg(long, env = "COOPCACHE_JOIN", value_delimiter = ',')]
    join: Vec<String>,
    /// Find members on this subnet by UDP multicast (no --join needed).
    /// Off by default: announcements are unauthenticated traffic on the
    /// LAN (TLS still decides who is a member).
    #[arg(long, env = "COOPCACHE_DISCOVER")]
    discover: bool,
    /// Multicast group and port for --discover [default: 239.255.70.67:7172].
    #[arg(long, env = "COOPCACHE_DISCOVER_GROUP")]
    discover_group: Option<SocketAddrV4>,
    /// Directory of the cluster's keys (ca.pem, NAME.pem, NAME.key)
    /// [default: ~/.local/share/coopcache].
    #[arg(long, env = "COOPCACHE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// This node's name, as on its certificate [default: node].
    #[arg(long, env = "COOPCACHE_NAME")]
    name: Option<String>,
    /// This node's id, unique in the cluster [default: derived from the name].
    #[arg(long, env = "COOPCACHE_ID")]
    id: Option<u32>,
    /// Block size [default: 64KiB].
    #[arg(long, env = "COOPCACHE_BLOCK_SIZE", value_parser = parse_size)]
    block_size: Option<u64>,
    /// N-Chance recirculation count [default: 2].
    #[arg(long, env = "COOPCACHE_CHANCES")]
    chances: Option<u8>,
    /// How long a file's version is trusted before the origin is asked again
    /// [default: 0s: close-to-open, every open asks the origin].
    #[arg(long, env = "COOPCACHE_ATTR_TTL", value_parser = parse_duration)]
    attr_ttl: Option<Duration>,
    /// The origin's files never change: serve an HTTP origin that gives
    /// neither ETag nor Last-Modified (refused otherwise, as a change could
    /// not be seen).
    #[arg(long, env = "COOPCACHE_ORIGIN_IMMUTABLE")]
    origin_immutable: bool,
    /// Emulated delay per origin request, for experiments (this kernel has no netem) [default: 0].
    #[arg(long, env = "COOPCACHE_ORIGIN_DELAY", value_parser = parse_duration)]
    origin_delay: Option<Duration>,
    #[command(flatten)]
    gateway: crate::gateway_args::GatewayArgs,
    /// Also mount the origin on this directory through FUSE (see
    /// `coopcache mount`).
    #[arg(long, env = "COOPCACHE_MOUNT")]
    mount: Option<PathBuf>,
    /// Let other users use the mount (FUSE's allow_other; permission bits
    /// still apply).
    #[arg(long, env = "COOPCACHE_MOUNT_ALLOW_OTHER")]
    mount_allow_other: bool,
    /// Log JSON lines instead of text.
    #[arg(long, env = "COOPCACHE_LOG_JSON")]
    log_json: bool,
}

/// `coopcache mount DIR [node options]`.
#[derive(clap::Args, Debug)]
pub struct MountArgs {
    /// The mount point (an existing directory).
    dir: PathBuf,
    #[command(flatten)]
    node: NodeArgs,
}

impl MountArgs {
    /// The node's arguments with the mount point set.
    pub fn into_node(self) -> NodeArgs {
        NodeArgs {
            mount: Some(self.dir),
            ..self.node
        }
    }
}

fn load_file(path: &std::path::Path) -> Result<FileConfig> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("config file {}", path.display()))?;
    FileConfig::parse(&text).map_err(|e| {
        anyhow::anyhow!(
            "config file {}: {}",
            path.display(),
            e.to_string().trim_end()
        )
    })
}

fn default_data_dir() -> PathBuf {
    match std::env::var_os("XDG_DATA_HOME").or_else(|| std::env::var_os("HOME")) {
        Some(base) if std::env::var_os("XDG_DATA_HOME").is_some() => {
            PathBuf::from(base).join("coopcache")
        }
        Some(home) => PathBuf::from(home).join(".local/share/coopcache"),
        None => PathBuf::from(".coopcache"),
    }
}

/// A node id from its name, when none is given.
fn id_of(name: &str) -> u32 {
    let h = blake3::hash(name.as_bytes());
    u32::from_le_bytes([
        h.as_bytes()[0],
        h.as_bytes()[1],
        h.as_bytes()[2],
        h.as_bytes()[3],
    ])
}

/// Sets the node's `heap_allocated_bytes` every second, for `/metrics`
/// beside resident memory (`coopcache bench rss` reads both).
async fn report_heap(node: Arc<coopcache_node::NodeHandle>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        if let Some(b) = crate::heap_allocated() {
            node.metrics()
                .heap_allocated_bytes
                .set(i64::try_from(b).unwrap_or(i64::MAX));
        }
    }
}

pub fn run(args: NodeArgs) -> Result<()> {
    init_logs(args.log_json)?;
    let file = match &args.config {
        Some(p) => load_file(p)?,
        None => FileConfig::default(),
    };
    let size = |flag: Option<u64>, file: &Option<String>, key: &str, default: u64| -> Result<u64> {
        match (flag, file) {
            (Some(v), _) => Ok(v),
            (None, Some(s)) => parse_size(s).map_err(|e| anyhow::anyhow!("config key {key}: {e}")),
            (None, None) => Ok(default),
        }
    };
    let duration = |flag: Option<Duration>,
                    file: &Option<String>,
                    key: &str,
                    default: Duration|
     -> Result<Duration> {
        match (flag, file) {
            (Some(v), _) => Ok(v),
            (None, Some(s)) => {
                parse_duration(s).map_err(|e| anyhow::anyhow!("config key {key}: {e}"))
            }
            (None, None) => Ok(default),
        }
    };
    let http = args
        .http
        .or(file.http)
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 7171)));
    let gateway_opts = args.gateway.options(&file, http)?;
    let memory = size(args.memory, &file.memory, "memory", 2 << 30)?;
    let block_size = size(args.block_size, &file.block_size, "block_size", 64 << 10)?;
    let block_size = u32::try_from(block_size).context("block size too large")?;
    let attr_ttl = duration(args.attr_ttl, &file.attr_ttl, "attr_ttl", Duration::ZERO)?;
    let origin_delay = duration(
        args.origin_delay,
        &file.origin_delay,
        "origin_delay",
        Duration::ZERO,
    )?;
    let algorithm = AlgorithmKind::parse_live(
        &args
            .algorithm
            .or(file.algorithm)
            .unwrap_or_else(|| "nchance".into()),
    )?;
    let policy = args.policy.or(file.policy).unwrap_or_else(|| "lru".into());
    let policy = policy.parse::<PolicyKind>().map_err(|_| {
        let live: Vec<&str> = PolicyKind::ALL
            .into_iter()
            .filter(|p| live_policy(*p).is_ok())
            .map(PolicyKind::name)
            .collect();
        anyhow::anyhow!(
            "unknown policy `{policy}`: expected one of {}",
            live.join(", ")
        )
    })?;
    let policy = live_policy(policy)?;
    let origin_spec = args.origin.or(file.origin).unwrap_or_else(|| ".".into());
    let listen = args
        .listen
        .or(file.listen)
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 7170)));
    let name = args.name.or(file.name).unwrap_or_else(|| "node".into());
    let data_dir = args
        .data_dir
        .or(file.data_dir)
        .unwrap_or_else(default_data_dir);
    let join = if args.join.is_empty() {
        file.join.unwrap_or_default()
    } else {
        args.join
    };
    let advertise = args.advertise.or(file.advertise);
    let mount = args.mount.or(file.mount);
    let mount_allow_other = args.mount_allow_other || file.mount_allow_other.unwrap_or(false);
    let discover = (args.discover || file.discover.unwrap_or(false)).then(|| {
        args.discover_group
            .or(file.discover_group)
            .unwrap_or(coopcache_node::discovery::DEFAULT_GROUP)
    });
    if listen.ip().is_unspecified() && advertise.is_none() {
        bail!(
            "--listen {listen} is a wildcard address: give --advertise HOST:PORT, the address peers should dial"
        );
    }

    match coopcache_node::gateway::raise_open_file_limit() {
        Ok((before, after)) if after > before => {
            tracing::info!(before, after, "raised the open-file limit")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not raise the open-file limit"),
    }

    let mut origin = Origin::open(&origin_spec)?.with_delay(origin_delay);
    if args.origin_immutable || file.origin_immutable.unwrap_or(false) {
        origin = origin.immutable();
    }
    let rt = runtime()?;
    // The origin first: a mistyped one must not leave a new CA behind.
    rt.block_on(origin.check())?;
    tracing::info!(origin = origin.describe(), "origin reachable");
    if let Some(dir) = &mount {
        // Before any key is made, like the origin: a mistyped mount point
        // must not leave a new CA behind.
        coopcache_mount::recover_stale(dir)?;
        if !dir.is_dir() {
            bail!("mount point {} is not an existing directory", dir.display());
        }
    }

    if !tls::has_cluster(&data_dir) {
        tls::init_cluster(&data_dir, std::slice::from_ref(&name), 365)?;
        tracing::info!(dir = %data_dir.display(), %name, "no cluster keys found: created a new cluster CA and a certificate for this node; issue more with `coopcache cluster issue NAME --dir DIR`");
    } else if !data_dir.join(format!("{name}.pem")).exists() && data_dir.join("ca.key").exists() {
        tls::issue(&data_dir, &name, 365)?;
        tracing::info!(%name, "issued a certificate for this node from the cluster CA");
    }
    let identity = Identity::load(&data_dir, &name)?;

    rt.block_on(async move {
        let mut opts = NodeOptions::new(args.id.or(file.id).unwrap_or_else(|| id_of(&name)), identity, listen, origin);
        opts.algorithm = algorithm;
        opts.policy = policy;
        opts.memory = memory;
        opts.block_size = block_size;
        opts.chances = args.chances.or(file.chances).unwrap_or(2);
        opts.attr_ttl = attr_ttl;
        opts.join = join;
        opts.advertise = advertise;
        opts.discover = discover;
        let node = Arc::new(coopcache_node::start(opts).await?);
        tokio::spawn(report_heap(node.clone()));
        let gateway = tokio::net::TcpListener::bind(http)
            .await
            .with_context(|| format!("cannot listen on --http {http}"))?;
        tracing::info!(peers = %node.listen_addr(), %http, %name, %algorithm, policy = policy.name(), memory, "node serving");
        let mounted = match &mount {
            Some(dir) => {
                let opts = coopcache_mount::MountOptions {
                    attr_ttl: attr_ttl.max(Duration::from_secs(1)),
                    allow_other: mount_allow_other,
                };
                let rt = tokio::runtime::Handle::current();
                let m = coopcache_mount::mount(dir, node.clone(), rt, &opts)?;
                tracing::info!(dir = %dir.display(), "origin mounted");
                Some(m)
            }
            None => None,
        };
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        tokio::select! {
            r = coopcache_node::gateway::serve(gateway, node.clone(), &gateway_opts) => r.context("gateway")?,
            _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
            _ = term.recv() => tracing::info!("terminated; stopping"),
        }
        if let Some(m) = mounted {
            let dir = m.dir().to_owned();
            match tokio::task::spawn_blocking(move || m.unmount()).await {
                Ok(Ok(coopcache_mount::Unmounted::Clean)) => {
                    tracing::info!(dir = %dir.display(), "unmounted")
                }
                Ok(Ok(coopcache_mount::Unmounted::Detached)) => tracing::warn!(
                    dir = %dir.display(),
                    "files were still open in the mount: detached it lazily; programs holding them now get errors"
                ),
                Ok(Err(e)) => tracing::warn!(dir = %dir.display(), error = %e, "unmount failed"),
                Err(e) => tracing::warn!(error = %e, "unmount task failed"),
            }
        }
        node.shutdown();
        Ok(())
    })
}
