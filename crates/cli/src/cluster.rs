//! `coopcache cluster init|issue`: the cluster CA and node certificates.

use anyhow::Result;
use coopcache_node::tls;
use std::path::PathBuf;

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
    /// Issues a certificate for another node from the CA in DIR.
    Issue {
        /// The node's name.
        name: String,
        /// Key directory holding ca.pem and ca.key.
        #[arg(long)]
        dir: PathBuf,
        /// Days the certificate is valid.
        #[arg(long, default_value_t = 365)]
        days: u32,
    },
}

pub fn run(cmd: ClusterCmd) -> Result<()> {
    match cmd {
        ClusterCmd::Init { dir, nodes, days } => {
            tls::init_cluster(&dir, &nodes, days)?;
            println!(
                "cluster CA and certificates for {} in {}",
                nodes.join(", "),
                dir.display()
            );
        }
        ClusterCmd::Issue { name, dir, days } => {
            tls::issue(&dir, &name, days)?;
            println!("certificate for {name} in {}", dir.display());
        }
    }
    Ok(())
}
