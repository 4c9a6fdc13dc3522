//! `coopcache node`'s settings, resolved (flags, then the environment, both
//! through clap, then the TOML file, then defaults) and checked. Nothing
//! here binds, dials or writes: `--check-config` prints a [`Settings`]
//! and exits, and the daemon starts from the same one.

use super::NodeArgs;
use super::logs::LogLevel;
use anyhow::{Result, anyhow, bail};
use coopcache_console::args::{parse_duration, parse_size};
use coopcache_core::coop::{AlgorithmKind, ClassPolicies, live_classes, live_policy};
use coopcache_core::policy::PolicyKind;
use coopcache_node::config::FileConfig;
use coopcache_node::gateway::GatewayOptions;
use coopcache_node::join::JoinToken;
use coopcache_node::tls::{self, Identity};
use std::net::{SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the logs go and how much they say: resolved before anything
/// else, so that the rest can log (the gateway's exposure warning).
pub struct Logging {
    pub json: bool,
    pub level: LogLevel,
}

impl Logging {
    pub fn resolve(args: &NodeArgs, file: &FileConfig) -> Result<Logging> {
        let level = match (args.log_level, &file.log_level) {
            (Some(l), _) => l,
            (None, Some(s)) => s
                .parse()
                .map_err(|e| anyhow!("config key log_level: {e}"))?,
            (None, None) => LogLevel::default(),
        };
        Ok(Logging {
            json: args.log_json || file.log_json.unwrap_or(false),
            level,
        })
    }
}

/// Every setting of a node, checked.
pub struct Settings {
    pub origin: String,
    pub origin_delay: Duration,
    pub origin_immutable: bool,
    /// The origin is private (Netcache's private files).
    pub private: bool,
    /// With a private origin: unification's dedup key and critical paths.
    pub unify: Option<Unify>,
    /// Reads stopped this long: the node is idle and lends its memory.
    pub idle_after: Duration,
    pub commit_stable: Duration,
    pub memory: u64,
    /// Of `memory`, the share for pinned files.
    pub max_pinned: u64,
    /// The disk tier's directories (none: memory alone) and size.
    pub disk: Vec<PathBuf>,
    pub disk_size: u64,
    pub block_size: u32,
    /// Blocks the budget holds (checked as the node checks it at start).
    pub capacity: usize,
    pub attr_ttl: Duration,
    pub algorithm: AlgorithmKind,
    pub policy: PolicyKind,
    pub listen: SocketAddr,
    pub advertise: Option<String>,
    pub http: SocketAddr,
    pub gateway: GatewayOptions,
    /// The S3 endpoint's address and options, if one is served.
    pub s3: Option<(SocketAddr, coopcache_node::s3::S3Options)>,
    pub join: Vec<String>,
    pub discover: Option<SocketAddrV4>,
    pub data_dir: PathBuf,
    pub name: String,
    pub id: Option<u32>,
    pub chances: u8,
    /// Size-class policies, with the file they were read from.
    pub classes: Option<(PathBuf, ClassPolicies)>,
    pub mount: Option<PathBuf>,
    pub mount_allow_other: bool,
    pub consistency: coopcache_mount::Consistency,
    pub init: bool,
    /// A join token, for a node with no certificate yet.
    pub token: Option<JoinToken>,
}

/// Unification's settings (`--unify-key`, `--critical`).
pub struct Unify {
    /// Where the dedup key was read from.
    pub path: PathBuf,
    pub key: coopcache_node::seal::DedupKey,
    /// Privacy-critical path patterns (checked globs).
    pub critical: Vec<String>,
}

impl Unify {
    /// The dedup key file and critical patterns given, read and checked;
    /// refused where they would do nothing.
    fn resolve(
        path: Option<PathBuf>,
        critical: Vec<String>,
        private: bool,
    ) -> Result<Option<Unify>> {
        let Some(path) = path else {
            if let Some(p) = critical.first() {
                bail!(
                    "--critical {p}: only unification (--unify-key) shares blocks across owners; without it no file is unified, so no pattern is needed"
                );
            }
            return Ok(None);
        };
        if !private {
            bail!(
                "--unify-key {}: unification stores identical parked blocks of private origins once; it needs --private (a shared origin's blocks are shared already)",
                path.display()
            );
        }
        coopcache_node::critical_paths(&critical)?;
        let key = coopcache_node::dedup::load(&path)?;
        Ok(Some(Unify {
            path,
            key,
            critical,
        }))
    }
}

/// A size from a flag, else from the file's `key`, else `default`.
fn size(flag: Option<u64>, file: &Option<String>, key: &str, default: u64) -> Result<u64> {
    match (flag, file) {
        (Some(v), _) => Ok(v),
        (None, Some(s)) => parse_size(s).map_err(|e| anyhow!("config key {key}: {e}")),
        (None, None) => Ok(default),
    }
}

/// A duration from a flag, else from the file's `key`, else `default`.
fn duration(
    flag: Option<Duration>,
    file: &Option<String>,
    key: &str,
    default: Duration,
) -> Result<Duration> {
    match (flag, file) {
        (Some(v), _) => Ok(v),
        (None, Some(s)) => parse_duration(s).map_err(|e| anyhow!("config key {key}: {e}")),
        (None, None) => Ok(default),
    }
}

fn policy(name: &str) -> Result<PolicyKind> {
    // A knobbed or admitted spec (`s3fifo(small=0.2)`, `lru+bloom`) is
    // refused, not run with its knobs ignored: a node builds its cache by
    // kind.
    if let Ok(spec) = name.parse::<coopcache_core::PolicySpec>()
        && !spec.is_default()
    {
        bail!(
            "policy `{name}`: a node takes a bare policy name (`{}`), not knobs or admission; those apply to `coopcache sim` replays",
            spec.kind()
        );
    }
    let policy = name.parse::<PolicyKind>().map_err(|_| {
        let live: Vec<&str> = PolicyKind::ALL
            .into_iter()
            .filter(|p| live_policy(*p).is_ok())
            .map(PolicyKind::name)
            .collect();
        anyhow!(
            "unknown policy `{name}`: expected one of {}",
            live.join(", ")
        )
    })?;
    Ok(live_policy(policy)?)
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

/// `d` as `Duration`'s Debug writes it (`20s`, `1.5ms`), but 0 as `0s`.
fn seconds(d: Duration) -> String {
    match d.is_zero() {
        true => "0s".into(),
        false => format!("{d:?}"),
    }
}

/// Refuses an identity whose certificate's id is not the one the settings
/// ask for (`--id`, `id =`): a node's id is its certificate's, so that no
/// peer can claim another's; the setting may only repeat it.
fn check_id(given: Option<u32>, identity: &Identity, dir: &std::path::Path) -> Result<()> {
    match given {
        Some(given) if given != identity.id => bail!(
            "--id {given} (or `id` in the config file): node `{name}`'s certificate in {dir} carries id {id}; \
             a node's id is its certificate's, so that no peer can claim another's: remove the setting, \
             or issue the name anew with `coopcache cluster issue` under another name",
            name = identity.name,
            id = identity.id,
            dir = dir.display(),
        ),
        _ => Ok(()),
    }
}

impl Settings {
    /// Merges `args` over `file` over the defaults, checking each value.
    pub fn resolve(args: NodeArgs, file: FileConfig) -> Result<Settings> {
        let http = args
            .http
            .or(file.http)
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 7171)));
        let gateway = args.gateway.options(&file, http)?;
        let consistency: coopcache_mount::Consistency = match (args.consistency, &file.consistency)
        {
            (Some(c), _) => c,
            (None, Some(c)) => c
                .parse()
                .map_err(|e| anyhow!("consistency in the config file: {e}"))?,
            (None, None) => Default::default(),
        };
        let exclusive = consistency == coopcache_mount::Consistency::Exclusive;
        let s3 = args.s3.options(&file, &gateway, exclusive)?;
        let memory = size(args.memory, &file.memory, "memory", 2 << 30)?;
        let overcommit = args.memory_overcommit || file.memory_overcommit.unwrap_or(false);
        if !overcommit
            && let Some((machine, from)) = coopcache_node::budget::machine_memory()
            && memory > machine
        {
            bail!(
                "--memory {}: more than this machine can give ({} of {from}); give at most that, or --memory-overcommit (memory_overcommit = true) to start anyway",
                coopcache_console::output::human_size(memory),
                coopcache_console::output::human_size(machine)
            );
        }
        let block_size = size(args.block_size, &file.block_size, "block_size", 64 << 10)?;
        let block_size = u32::try_from(block_size)
            .map_err(|_| anyhow!("block size {block_size} bytes: expected at most 4 MiB"))?;
        let private = args.private || file.private.unwrap_or(false);
        let max_pinned = size(args.max_pinned, &file.max_pinned, "max_pinned", 0)?;
        let disk = match args.disk.is_empty() {
            true => file.disk.unwrap_or_default(),
            false => args.disk,
        };
        let disk_size = size(args.disk_size, &file.disk_size, "disk_size", 0)?;
        match (disk.is_empty(), disk_size) {
            (false, 0) => bail!(
                "--disk {}: needs --disk-size (disk_size), the bytes the tier takes over all its directories",
                disk[0].display()
            ),
            (true, n) if n > 0 => bail!(
                "--disk-size {n} bytes: needs --disk DIR (disk), a directory to keep the tier in"
            ),
            _ => {}
        }
        let capacity =
            coopcache_node::check_capacity(memory, max_pinned, disk_size, block_size, private)?;
        let algorithm = args
            .algorithm
            .or(file.algorithm)
            .unwrap_or_else(|| "nchance".into());
        let algorithm = AlgorithmKind::parse_live(&algorithm)?;
        if private {
            coopcache_node::check_private(algorithm)?;
        }
        let classes = match args.class_policy.or(file.class_policy) {
            Some(path) => {
                let classes = coopcache_sim::class_file::read_class_policies(&path)?;
                live_classes(algorithm, &classes)
                    .map_err(|e| anyhow!("--class-policy {}: {e}", path.display()))?;
                Some((path, classes))
            }
            None => None,
        };
        let listen = args
            .listen
            .or(file.listen)
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 7170)));
        let advertise = args.advertise.or(file.advertise);
        if listen.ip().is_unspecified() && advertise.is_none() {
            bail!(
                "--listen {listen} is a wildcard address: give --advertise HOST:PORT, the address peers should dial"
            );
        }
        let name = args.name.or(file.name).unwrap_or_else(|| "node".into());
        tls::check_name(&name)?;
        let origin = args.origin.or(file.origin).unwrap_or_else(|| ".".into());
        // The syntax only; whether it answers is `Origin::check`'s to say.
        origin.parse::<coopcache_node::origin::OriginSpec>()?;
        Ok(Settings {
            origin,
            origin_delay: duration(
                args.origin_delay,
                &file.origin_delay,
                "origin_delay",
                Duration::ZERO,
            )?,
            origin_immutable: args.origin_immutable || file.origin_immutable.unwrap_or(false),
            private,
            unify: Unify::resolve(
                args.unify_key.or(file.unify_key),
                match args.critical.is_empty() {
                    true => file.critical.unwrap_or_default(),
                    false => args.critical,
                },
                private,
            )?,
            idle_after: duration(
                args.idle_after,
                &file.idle_after,
                "idle_after",
                Duration::from_micros(coopcache_core::protocol::IDLE_AFTER_US),
            )?,
            commit_stable: duration(
                args.commit_stable,
                &file.commit_stable,
                "commit_stable",
                Duration::from_secs(5),
            )?,
            memory,
            max_pinned,
            disk,
            disk_size,
            block_size,
            capacity,
            attr_ttl: duration(args.attr_ttl, &file.attr_ttl, "attr_ttl", Duration::ZERO)?,
            algorithm,
            policy: policy(&args.policy.or(file.policy).unwrap_or_else(|| "lru".into()))?,
            listen,
            advertise,
            http,
            gateway,
            s3,
            join: match args.join.is_empty() {
                true => file.join.unwrap_or_default(),
                false => args.join,
            },
            discover: (args.discover || file.discover.unwrap_or(false)).then(|| {
                args.discover_group
                    .or(file.discover_group)
                    .unwrap_or(coopcache_node::discovery::DEFAULT_GROUP)
            }),
            data_dir: args
                .data_dir
                .or(file.data_dir)
                .unwrap_or_else(default_data_dir),
            id: args.id.or(file.id),
            name,
            chances: args.chances.or(file.chances).unwrap_or(2),
            classes,
            mount: args.mount.or(file.mount),
            // As root, the mount is open to every user, as an NFS mount
            // is (the kernel checks the modes and owners the origin
            // keeps); the config file's `mount_allow_other = false` keeps
            // others out. Other daemons need `user_allow_other` for it.
            mount_allow_other: args.mount_allow_other
                || file
                    .mount_allow_other
                    .unwrap_or_else(|| rustix::process::geteuid().is_root()),
            consistency,
            init: args.init || file.init.unwrap_or(false),
            token: args
                .token
                .as_deref()
                .map(JoinToken::decode)
                .transpose()
                .map_err(|e| anyhow!("--token: {e}"))?,
        })
    }

    /// What starting would do with the keys in the data directory; refuses
    /// a directory with no cluster CA unless `init` asks for one, so that a
    /// mistyped --data-dir cannot start a new cluster of one by itself.
    pub fn key_plan(&self) -> Result<KeyPlan> {
        let dir = &self.data_dir;
        let cert = dir.join(format!("{}.pem", self.name));
        if self.token.is_some() && !cert.exists() {
            return Ok(KeyPlan::Join);
        }
        if !tls::has_cluster(dir) {
            if self.init {
                return Ok(KeyPlan::CreateCluster);
            }
            bail!(
                "data directory {dir} holds no cluster CA (no ca.pem), so this node would start a new cluster of its own: \
                 if it should join a cluster, point --data-dir at the directory holding that cluster's keys; \
                 to start a new one, create its keys with `coopcache cluster init --dir {dir} --nodes {name}`, \
                 or pass --init (`init = true` in the config file) to have this node create them",
                dir = dir.display(),
                name = self.name,
            );
        }
        Ok(match cert.exists() || !dir.join("ca.key").exists() {
            // Without ca.key, Identity::load says what is missing.
            true => KeyPlan::Load,
            false => KeyPlan::IssueCertificate,
        })
    }

    /// Carries out `plan` (writing keys where it says so) and loads the
    /// node's identity.
    pub fn identity(&self, plan: KeyPlan) -> Result<Identity> {
        let (dir, name) = (&self.data_dir, &self.name);
        match plan {
            KeyPlan::CreateCluster => {
                tls::init_cluster(dir, &[], 365)?;
                tls::issue_as(dir, name, self.id, 365)?;
                tracing::info!(dir = %dir.display(), %name, "--init: created a new cluster CA and a certificate for this node; issue more with `coopcache cluster issue NAME --dir DIR`");
            }
            KeyPlan::IssueCertificate => {
                tls::issue_as(dir, name, self.id, 365)?;
                tracing::info!(%name, "issued a certificate for this node from the cluster CA");
            }
            KeyPlan::Load | KeyPlan::Join => {}
        }
        let identity = Identity::load(dir, name)?;
        check_id(self.id, &identity, dir)?;
        Ok(identity)
    }

    /// The effective settings, one `key: value` per line, for
    /// `--check-config`.
    pub fn summary(&self) -> String {
        let or_none = |o: Option<String>| o.unwrap_or_else(|| "none".into());
        let g = &self.gateway;
        let lines = [
            (
                "name",
                match self.id {
                    Some(id) => format!("{} (id {id}, checked against its certificate)", self.name),
                    None => format!("{} (id from its certificate)", self.name),
                },
            ),
            ("data_dir", self.data_dir.display().to_string()),
            ("algorithm", self.algorithm.to_string()),
            ("policy", self.policy.name().to_string()),
            (
                "memory",
                format!(
                    "{} bytes ({:.1} MiB): {} blocks of {} bytes",
                    self.memory,
                    self.memory as f64 / f64::from(1 << 20),
                    self.capacity,
                    self.block_size
                ),
            ),
            ("max_pinned", format!("{} bytes", self.max_pinned)),
            (
                "disk",
                match self.disk.is_empty() {
                    true => "none (memory alone)".to_owned(),
                    false => format!(
                        "{} bytes in {} (index {} bytes of memory)",
                        self.disk_size,
                        self.disk
                            .iter()
                            .map(|d| d.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        coopcache_node::disk_index_bytes(self.disk_size, self.block_size)
                    ),
                },
            ),
            ("chances", self.chances.to_string()),
            (
                "class_policy",
                or_none(
                    self.classes
                        .as_ref()
                        .map(|(path, c)| format!("{} ({c})", path.display())),
                ),
            ),
            ("attr_ttl", seconds(self.attr_ttl)),
            ("origin_delay", seconds(self.origin_delay)),
            ("origin_immutable", self.origin_immutable.to_string()),
            ("private", self.private.to_string()),
            (
                "unify",
                or_none(self.unify.as_ref().map(|u| {
                    let critical = match u.critical.is_empty() {
                        true => "no critical paths".to_owned(),
                        false => format!("critical: {}", u.critical.join(", ")),
                    };
                    format!("dedup key {} ({critical})", u.path.display())
                })),
            ),
            ("idle_after", seconds(self.idle_after)),
            ("listen", self.listen.to_string()),
            ("advertise", or_none(self.advertise.clone())),
            (
                "join",
                or_none(Some(self.join.join(", ")).filter(|j| !j.is_empty())),
            ),
            ("discover", or_none(self.discover.map(|g| g.to_string()))),
            ("http", self.http.to_string()),
            (
                "s3",
                or_none(self.s3.as_ref().map(|(addr, o)| {
                    let keys = o.keys.as_ref().map_or(0, |k| k.len());
                    let anonymous = match o.anonymous_read {
                        true => ", unsigned reads allowed",
                        false => "",
                    };
                    format!("{addr} ({keys} access keys{anonymous})")
                })),
            ),
            (
                "gateway",
                format!(
                    "token {}, header timeout {}, idle timeout {}, at most {} connections",
                    if g.token.is_some() {
                        "required"
                    } else {
                        "not required"
                    },
                    seconds(g.header_timeout),
                    seconds(g.idle_timeout),
                    g.max_connections
                ),
            ),
            (
                "mount",
                or_none(self.mount.as_ref().map(|m| {
                    let other = if self.mount_allow_other {
                        " (allow_other)"
                    } else {
                        ""
                    };
                    let mode = match self.consistency {
                        coopcache_mount::Consistency::Shared => "shared",
                        coopcache_mount::Consistency::Exclusive => "exclusive",
                    };
                    format!("{}{other}, {mode} consistency", m.display())
                })),
            ),
        ];
        let mut out = String::new();
        for (key, value) in lines {
            out.push_str(&format!("{key:<16} {value}\n"));
        }
        out
    }
}

/// What a node does with its data directory's keys before it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPlan {
    /// No CA, and --init: create the cluster CA and this node's certificate.
    CreateCluster,
    /// A CA with its key but no certificate for this node: issue one.
    IssueCertificate,
    /// Load the node's certificate (Identity::load names what is missing).
    Load,
    /// A join token and no certificate yet: ask the CA node for one.
    Join,
}

impl KeyPlan {
    /// What `--check-config` says about the keys.
    pub fn describe(self, dir: &Path, name: &str) -> String {
        match self {
            KeyPlan::CreateCluster => format!(
                "no cluster CA in {}: --init would create one and a certificate for {name}",
                dir.display()
            ),
            KeyPlan::IssueCertificate => format!(
                "cluster CA in {}: a certificate for {name} would be issued from its ca.key",
                dir.display()
            ),
            KeyPlan::Load => format!("certificate for {name} in {} is valid", dir.display()),
            KeyPlan::Join => format!(
                "no certificate for {name} in {}: would ask the CA node for one with the join token",
                dir.display()
            ),
        }
    }
}
