//! `coopcache cluster init|issue|token|unify-key`: the cluster CA, node
//! certificates, one-time join tokens and the dedup key.

use anyhow::Result;
use coopcache_node::join::{table, token};
use coopcache_node::tls;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Subcommand)]
pub enum ClusterCmd {
    /// Creates a cluster CA in DIR and a certificate for each node named.
    Init {
        /// Key directory (copy NAME.pem, NAME.key and ca.pem to each node's).
        #[arg(long)]
        dir: PathBuf,
        /// Node names, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "node")]
        nodes: Vec<String>,
        /// Days the node certificates are valid.
        #[arg(long, default_value_t = 365)]
        days: u32,
    },
    /// Issues a certificate for another node from the CA in DIR (or renews
    /// one: a name keeps the id it was first issued with).
    Issue {
        /// The node's name.
        name: String,
        /// Key directory holding ca.pem and ca.key.
        #[arg(long)]
        dir: PathBuf,
        /// The node id its certificate carries, if the name is new [default:
        /// the smallest id no issued name has]; refused if taken.
        #[arg(long)]
        id: Option<u32>,
        /// Days the certificate is valid.
        #[arg(long, default_value_t = 365)]
        days: u32,
    },
    /// Revokes every certificate the CA in DIR issued to NAME: writes a new
    /// revocation list there (revoked.crl), which the node running with DIR
    /// as its --data-dir sends to every member within a second; members
    /// close and refuse NAME's links from then on. NAME is never issued
    /// again.
    Revoke {
        /// The node's name.
        name: String,
        /// Key directory holding ca.pem and ca.key.
        #[arg(long)]
        dir: PathBuf,
    },
    /// Prints a one-time join token: a new machine runs `coopcache node
    /// --join HOST:PORT --token TOKEN` and gets its certificate from the node
    /// running with --data-dir DIR (which must hold ca.key), with no files
    /// copied. Only the token's hash is recorded in DIR.
    Token {
        /// Key directory holding ca.pem and ca.key (the CA node's --data-dir).
        #[arg(long)]
        dir: PathBuf,
        /// How long the token is accepted (`90s`, `30m`, `1h`, `2d`).
        #[arg(long, default_value = "1h", value_parser = parse_ttl)]
        ttl: Duration,
        /// The CA node's address (its --listen or --advertise HOST:PORT),
        /// written into the token so that --join is not needed.
        #[arg(long)]
        address: Option<String>,
    },
    /// Writes a new random dedup key to DIR/unify.key (readable by its
    /// owner only): private nodes started with `--unify-key` naming a copy
    /// of it store identical parked blocks once (Netcache's unification).
    /// Whoever holds it can confirm a guess at a unified block's contents:
    /// copy it to the members that unify, and mark files no member may
    /// learn of with `--critical GLOB`.
    UnifyKey {
        /// Directory to write unify.key in (a key already there is kept).
        #[arg(long)]
        dir: PathBuf,
    },
}

/// A token's lifetime: whole hours (`1h`) or days (`2d`), or any duration
/// `--attr-ttl` takes (`90s`, `30m`).
fn parse_ttl(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let hours = |n: &str, per: u64| {
        n.parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(per))
            .map(Duration::from_secs)
            .ok_or_else(|| format!("duration `{s}`: expected a whole number before `h` or `d`"))
    };
    match (t.strip_suffix('h'), t.strip_suffix('d')) {
        (Some(n), _) => hours(n, 3600),
        (_, Some(n)) => hours(n, 86_400),
        _ => coopcache_console::args::parse_duration(t),
    }
}

pub fn run(cmd: ClusterCmd) -> Result<()> {
    match cmd {
        ClusterCmd::Init { dir, nodes, days } => {
            tls::init_cluster(&dir, &nodes, days)?;
            let named = nodes
                .iter()
                .map(|n| Ok(format!("{n} (id {})", tls::Identity::load(&dir, n)?.id)))
                .collect::<Result<Vec<String>>>()?;
            println!(
                "cluster CA and certificates for {} in {}",
                named.join(", "),
                dir.display()
            );
        }
        ClusterCmd::Issue {
            name,
            dir,
            id,
            days,
        } => {
            tls::issue_as(&dir, &name, id, days)?;
            let id = tls::Identity::load(&dir, &name).map(|i| i.id)?;
            println!("certificate for {name} (node id {id}) in {}", dir.display());
        }
        ClusterCmd::Revoke { name, dir } => {
            let r = coopcache_node::revocation::revoke(&dir, &name)?;
            println!(
                "revoked {} certificate(s) of {name}: revocation list {} in {} names {} in all; \
                 the node running with this directory as its --data-dir sends it to every member",
                r.certificates,
                r.number,
                dir.join(coopcache_node::revocation::CRL_FILE).display(),
                r.total
            );
        }
        ClusterCmd::Token { dir, ttl, address } => {
            let now = coopcache_node::join::server::unix_now();
            let t = table::issue(&dir, ttl.as_secs(), address, now)?;
            println!("{}", t.encode());
            let join = match &t.address {
                Some(a) => format!("(the token names {a}, so no --join)"),
                None => "--join CA_NODE_HOST:PORT".to_owned(),
            };
            eprintln!(
                "one-time join token for the cluster in {dir} (CA SHA-256 {}), valid until {}; \
                 on the new machine, with an empty data directory: \
                 COOPCACHE_JOIN_TOKEN=TOKEN coopcache node --name NAME --data-dir DIR {join} \
                 (the node running with --data-dir {dir} answers it)",
                token::hex(&t.fingerprint),
                token::utc(t.expires),
                dir = dir.display(),
            );
        }
        ClusterCmd::UnifyKey { dir } => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
            let path = dir.join("unify.key");
            coopcache_node::dedup::create(&path)?;
            println!("dedup key in {}", path.display());
            eprintln!(
                "copy it to every private node that should unify, and start them with --unify-key {}",
                path.display()
            );
        }
    }
    Ok(())
}
