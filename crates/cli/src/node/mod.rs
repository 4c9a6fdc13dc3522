//! `coopcache node`: the daemon. Settings come from flags, then the
//! environment (`COOPCACHE_*`), then a TOML file (`--config`), then
//! defaults: with none at all it serves the current directory as a
//! single-node cluster.

mod gateway_args;
mod join;
mod logs;
mod s3_args;
mod settings;

use anyhow::{Context, Result, bail};
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_console::tasks::runtime;
use coopcache_node::NodeOptions;
use coopcache_node::config::FileConfig;
use coopcache_node::origin::Origin;
use logs::{LogLevel, init_logs};
use settings::{KeyPlan, Logging, Settings};
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
    /// Start even if --memory is more than this machine's memory (or its
    /// cgroup's limit): the budget is then a promise the kernel cannot keep.
    #[arg(long, env = "COOPCACHE_MEMORY_OVERCOMMIT")]
    memory_overcommit: bool,
    /// Of --memory, the share set aside for pinned files (`coopcache
    /// pin`), at most half; the cache has the rest. 0 turns pinning off
    /// [default: 0].
    #[arg(long, env = "COOPCACHE_MAX_PINNED", value_parser = parse_size)]
    max_pinned: Option<u64>,
    /// A directory of this node's disk tier: blocks it read are kept there
    /// too (checked by their digest when read back, kept across restarts)
    /// and read before the origin, after the cluster's memory. One per
    /// disk; repeatable, or comma-separated. Needs --disk-size
    /// [default: none, memory alone].
    #[arg(long, env = "COOPCACHE_DISK", value_delimiter = ',')]
    disk: Vec<PathBuf>,
    /// The disk tier's size over all --disk directories, preallocated at
    /// start; its index takes about 0.4% of it from --memory in 64 KiB
    /// blocks.
    #[arg(long, env = "COOPCACHE_DISK_SIZE", value_parser = parse_size)]
    disk_size: Option<u64>,
    /// `exclusive` consistency: how long the members must agree on who is
    /// a member before the files' managers answer opens and listings from
    /// their tables (opens and listings ask the origin meanwhile)
    /// [default: 5s].
    #[arg(long, env = "COOPCACHE_COMMIT_STABLE", value_parser = parse_duration)]
    commit_stable: Option<Duration>,
    /// Cooperation algorithm: nchance, greedy, base, hash or direct [default: nchance].
    #[arg(long, env = "COOPCACHE_ALGORITHM")]
    algorithm: Option<String>,
    /// Replacement policy of the node's own cache: lru, fifo, clock, sieve,
    /// arc, s3fifo, s3fifo-v1, 2q, lfu, lfuda, hyperbolic, qdlp, mq, clockpro, random, lecar
    /// or lhd [default: lru].
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
    /// A one-time join token from `coopcache cluster token`: with no
    /// certificate for --name in --data-dir yet, the node asks the CA node
    /// (at --join, the token's address, or found by --discover) for one
    /// and writes it there; once it has one the token is not needed.
    /// Prefer the environment variable to keep it out of `ps`.
    #[arg(long, env = "COOPCACHE_JOIN_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Multicast group and port for --discover [default: 239.255.70.67:7172].
    #[arg(long, env = "COOPCACHE_DISCOVER_GROUP")]
    discover_group: Option<SocketAddrV4>,
    /// Directory of the cluster's keys (ca.pem, NAME.pem, NAME.key)
    /// [default: ~/.local/share/coopcache]. One without a cluster CA is
    /// refused unless --init is given.
    #[arg(long, env = "COOPCACHE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Create a new cluster CA and this node's certificate in --data-dir if
    /// it holds no CA (harmless if it does). Without it a data directory
    /// with no CA is refused, so that a mistyped --data-dir does not start
    /// a new cluster; `coopcache cluster init` creates the keys for a
    /// whole cluster at once.
    #[arg(long, env = "COOPCACHE_INIT")]
    init: bool,
    /// This node's name, as on its certificate [default: node].
    #[arg(long, env = "COOPCACHE_NAME")]
    name: Option<String>,
    /// The node id its certificate must carry (ids are the CA's: every peer
    /// reads a node's id from its certificate); asked for when this node
    /// issues its own certificate (--init, or ca.key in --data-dir).
    #[arg(long, env = "COOPCACHE_ID")]
    id: Option<u32>,
    /// Block size [default: 64KiB].
    #[arg(long, env = "COOPCACHE_BLOCK_SIZE", value_parser = parse_size)]
    block_size: Option<u64>,
    /// N-Chance recirculation count [default: 2].
    #[arg(long, env = "COOPCACHE_CHANCES")]
    chances: Option<u8>,
    /// Size-class policies (TOML, `coopcache sim --class-policy`'s format,
    /// docs/class-policies.md): per class of file size, whether reads look
    /// in peers' memory and whether evicted singlets are forwarded.
    /// N-Chance only; every member must give the same file, as a file's
    /// blocks are named in its class [default: none, one class].
    #[arg(long, env = "COOPCACHE_CLASS_POLICY", value_name = "FILE")]
    class_policy: Option<PathBuf>,
    /// How long a file's version is trusted before the origin is asked again
    /// [default: 0s: close-to-open, every open asks the origin].
    #[arg(long, env = "COOPCACHE_ATTR_TTL", value_parser = parse_duration)]
    attr_ttl: Option<Duration>,
    /// The origin's files never change: serve an HTTP origin that gives
    /// neither ETag nor Last-Modified (refused otherwise, as a change could
    /// not be seen).
    #[arg(long, env = "COOPCACHE_ORIGIN_IMMUTABLE")]
    origin_immutable: bool,
    /// The origin is private: no other member can read it (this node's
    /// own directory, a bucket only it has credentials for). Its blocks are
    /// never listed in the shared directory nor served to peers; with
    /// `--algorithm direct`, evictions are parked on idle peers encrypted
    /// (XChaCha20-Poly1305, under a key that never leaves this process)
    /// and checked on return. Needs `direct` or `base`.
    #[arg(long, env = "COOPCACHE_PRIVATE")]
    private: bool,
    /// With --private: the cluster's dedup key file (`coopcache cluster
    /// unify-key`). Identical blocks parked by private nodes holding the
    /// same key are stored once on their host (Netcache's unification,
    /// under keyed content ids). A holder of the key can confirm a guess at
    /// a unified block's contents: mark files no member may learn of with
    /// --critical.
    #[arg(long, env = "COOPCACHE_UNIFY_KEY")]
    unify_key: Option<PathBuf>,
    /// With --unify-key: a privacy-critical path pattern, a glob over
    /// paths in the origin (`secrets/**`, `*.key`); such files are never
    /// unified. Repeatable, or comma-separated.
    #[arg(long, env = "COOPCACHE_CRITICAL", value_delimiter = ',')]
    critical: Vec<String>,
    /// How long this node's own reads must have stopped before it calls
    /// itself idle and lends its memory to busy peers (Netcache) [default: 10s].
    #[arg(long, env = "COOPCACHE_IDLE_AFTER", value_parser = parse_duration)]
    idle_after: Option<Duration>,
    /// Emulated delay per origin request, for experiments (this kernel has no netem) [default: 0].
    #[arg(long, env = "COOPCACHE_ORIGIN_DELAY", value_parser = parse_duration)]
    origin_delay: Option<Duration>,
    #[command(flatten)]
    gateway: gateway_args::GatewayArgs,
    #[command(flatten)]
    s3: s3_args::S3Args,
    /// Also mount the origin on this directory through FUSE (see
    /// `coopcache mount`).
    #[arg(long, env = "COOPCACHE_MOUNT")]
    mount: Option<PathBuf>,
    /// Let other users use the mount (FUSE's allow_other; permission bits
    /// still apply). On by default for a daemon run as root, as an NFS
    /// mount is open to every user; `mount_allow_other = false` in the
    /// config file keeps other users out.
    #[arg(long, env = "COOPCACHE_MOUNT_ALLOW_OTHER")]
    mount_allow_other: bool,
    /// How the mount's opens learn a file's version: `shared` (writers
    /// outside the cluster may exist: every open asks the origin) or
    /// `exclusive` (every write goes through the cluster's mounts: an open
    /// asks the file's manager, no origin round trip) [default: shared].
    #[arg(long, env = "COOPCACHE_CONSISTENCY")]
    consistency: Option<coopcache_mount::Consistency>,
    /// Log JSON lines instead of text.
    #[arg(long, env = "COOPCACHE_LOG_JSON")]
    log_json: bool,
    /// How much to log. RUST_LOG, if set, wins (its full syntax, e.g.
    /// `RUST_LOG=info,coopcache_node::link=debug`) [default: info].
    #[arg(long, env = "COOPCACHE_LOG_LEVEL", value_enum)]
    log_level: Option<LogLevel>,
    /// Check the flags, environment and --config file, print the settings
    /// they give and exit: starts nothing and writes nothing (no keys, no
    /// mount); the origin is asked whether it answers.
    #[arg(long)]
    check_config: bool,
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

pub fn run(mut args: NodeArgs) -> Result<()> {
    let file = match &args.config {
        Some(p) => load_file(p)?,
        None => FileConfig::default(),
    };
    let logging = Logging::resolve(&args, &file)?;
    init_logs(logging.json, logging.level)?;
    let check_only = std::mem::take(&mut args.check_config);
    let settings = Settings::resolve(args, file)?;
    match check_only {
        true => check(&settings),
        false => serve(settings),
    }
}

/// The origin, opened with its settings (nothing read yet).
fn open_origin(s: &Settings) -> Result<Origin> {
    let mut origin = Origin::open(&s.origin)?;
    if !s.origin_delay.is_zero() {
        origin = origin.with_delay(s.origin_delay);
    }
    Ok(match s.origin_immutable {
        true => origin.immutable(),
        false => origin,
    })
}

/// `--check-config`: everything a start would check before it binds or
/// writes, then the settings on stdout.
fn check(s: &Settings) -> Result<()> {
    let origin = open_origin(s)?;
    runtime()?
        .block_on(origin.check())
        .with_context(|| format!("origin {} does not answer", origin.describe()))?;
    if let Some(dir) = &s.mount
        && !dir.is_dir()
    {
        bail!("mount point {} is not an existing directory", dir.display());
    }
    let plan = s.key_plan()?;
    if plan == KeyPlan::Load {
        // Reads the keys only: a bad or expired certificate shows now.
        coopcache_node::tls::Identity::load(&s.data_dir, &s.name)?;
    }
    print!("{}", s.summary());
    println!("{:<16} {}: answers", "origin", origin.describe());
    println!("{:<16} {}", "keys", plan.describe(&s.data_dir, &s.name));
    println!("configuration ok");
    Ok(())
}

fn serve(s: Settings) -> Result<()> {
    match coopcache_node::gateway::raise_open_file_limit() {
        Ok((before, after)) if after > before => {
            tracing::info!(before, after, "raised the open-file limit")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not raise the open-file limit"),
    }
    let origin = open_origin(&s)?;
    let rt = runtime()?;
    // The origin first: a mistyped one must not leave a new CA behind.
    rt.block_on(origin.check())?;
    tracing::info!(origin = origin.describe(), "origin reachable");
    if let Some(dir) = &s.mount {
        // Before any key is made, like the origin: a mistyped mount point
        // must not leave a new CA behind.
        coopcache_mount::recover_stale(dir)?;
        if !dir.is_dir() {
            bail!("mount point {} is not an existing directory", dir.display());
        }
    }
    let plan = s.key_plan()?;
    let mut seeds = s.join.clone();
    if plan == KeyPlan::Join {
        let via = rt.block_on(join::obtain(&s))?;
        if !seeds.contains(&via) {
            seeds.push(via);
        }
    }
    let identity = s.identity(plan)?;
    let Settings {
        name,
        algorithm,
        policy,
        memory,
        http,
        attr_ttl,
        mount,
        mount_allow_other,
        consistency,
        ..
    } = s;
    let gateway_opts = s.gateway;
    let s3 = s.s3;

    rt.block_on(async move {
        let mut opts = NodeOptions::new(identity, s.listen, origin);
        opts.algorithm = algorithm;
        opts.policy = policy;
        opts.memory = memory;
        opts.max_pinned = s.max_pinned;
        opts.disk = s.disk.clone();
        opts.disk_size = s.disk_size;
        opts.block_size = s.block_size;
        opts.chances = s.chances;
        opts.classes = s.classes.map(|(_, c)| c).unwrap_or_default();
        opts.attr_ttl = attr_ttl;
        opts.join = seeds;
        opts.advertise = s.advertise;
        opts.discover = s.discover;
        opts.private = s.private;
        opts.unify = s.unify.as_ref().map(|u| u.key);
        opts.critical = s.unify.map(|u| u.critical).unwrap_or_default();
        opts.idle_after = s.idle_after;
        opts.commit_stable = s.commit_stable;
        let node = Arc::new(coopcache_node::start(opts).await?);
        tokio::spawn(report_heap(node.clone()));
        let gateway = tokio::net::TcpListener::bind(http)
            .await
            .with_context(|| format!("cannot listen on --http {http}"))?;
        tracing::info!(peers = %node.listen_addr(), %http, %name, %algorithm, policy = policy.name(), memory, "node serving");
        let s3 = match s3 {
            Some((addr, opts)) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on --s3 {addr}"))?;
                tracing::info!(%addr, keys = opts.keys.as_ref().map_or(0, |k| k.len()), anonymous_read = opts.anonymous_read, "S3 endpoint serving");
                Some((listener, opts))
            }
            None => None,
        };
        let mounted = match &mount {
            Some(dir) => {
                let opts = coopcache_mount::MountOptions {
                    attr_ttl: attr_ttl.max(Duration::from_secs(1)),
                    allow_other: mount_allow_other,
                    consistency,
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
            r = async {
                match s3 {
                    Some((listener, opts)) => coopcache_node::s3::serve(listener, node.clone(), &opts).await,
                    None => std::future::pending().await,
                }
            } => r.context("S3 endpoint")?,
            _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
            _ = term.recv() => tracing::info!("terminated; stopping"),
            // A node that mounts is there for its mount: unmounted from
            // outside, it goes too (as `rclone mount` and `sshfs` do).
            _ = async {
                match &mounted {
                    Some(m) => m.until_ended().await,
                    None => std::future::pending().await,
                }
            } => tracing::info!("the mount was unmounted from outside; stopping"),
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
        // Peers are told before the links close: they drop this node as
        // one that left, not one that failed.
        node.leave().await;
        node.shutdown();
        Ok(())
    })
}
