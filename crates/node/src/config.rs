//! The settings a node's TOML file (`coopcache node --config FILE`) may
//! hold, each as the text or value its flag takes; the binary checks and
//! merges them with flags and environment. Here rather than in the binary
//! so that the fuzz target `node_config` parses the real file format.

use std::net::{SocketAddr, SocketAddrV4};
use std::path::PathBuf;

/// A node's TOML file: every key optional, unknown keys refused.
#[derive(serde::Deserialize, Default, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)] // each key is its flag's name: `coopcache node --help`
pub struct FileConfig {
    pub origin: Option<String>,
    pub memory: Option<String>,
    pub memory_overcommit: Option<bool>,
    pub max_pinned: Option<String>,
    pub disk: Option<Vec<PathBuf>>,
    pub disk_size: Option<String>,
    pub algorithm: Option<String>,
    pub policy: Option<String>,
    pub listen: Option<SocketAddr>,
    pub advertise: Option<String>,
    pub http: Option<SocketAddr>,
    pub join: Option<Vec<String>>,
    pub discover: Option<bool>,
    pub discover_group: Option<SocketAddrV4>,
    pub data_dir: Option<PathBuf>,
    pub name: Option<String>,
    pub id: Option<u32>,
    pub block_size: Option<String>,
    pub chances: Option<u8>,
    pub class_policy: Option<PathBuf>,
    pub attr_ttl: Option<String>,
    pub origin_delay: Option<String>,
    pub origin_immutable: Option<bool>,
    pub private: Option<bool>,
    pub idle_after: Option<String>,
    pub unify_key: Option<PathBuf>,
    pub critical: Option<Vec<String>>,
    pub mount: Option<PathBuf>,
    pub mount_allow_other: Option<bool>,
    pub consistency: Option<String>,
    pub commit_stable: Option<String>,
    pub http_token_file: Option<PathBuf>,
    pub http_allow_anonymous: Option<bool>,
    pub http_header_timeout: Option<String>,
    pub http_idle_timeout: Option<String>,
    pub http_max_connections: Option<usize>,
    pub s3: Option<SocketAddr>,
    pub s3_keys: Option<PathBuf>,
    pub s3_allow_anonymous_read: Option<bool>,
    pub log_json: Option<bool>,
    pub log_level: Option<String>,
    pub init: Option<bool>,
}

impl FileConfig {
    /// Parses a file's text; the error names the key or line at fault.
    pub fn parse(text: &str) -> Result<FileConfig, toml::de::Error> {
        toml::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_unknown_keys_are_refused() {
        let c = FileConfig::parse("memory = \"1GiB\"\njoin = [\"a:1\"]\nid = 3\n").unwrap();
        assert_eq!(c.memory.as_deref(), Some("1GiB"));
        assert_eq!(c.join, Some(vec!["a:1".to_string()]));
        assert_eq!(c.id, Some(3));
        let c = FileConfig::parse("log_json = true\nlog_level = \"debug\"\ninit = true\n").unwrap();
        assert_eq!(c.log_json, Some(true));
        assert_eq!(c.log_level.as_deref(), Some("debug"));
        assert_eq!(c.init, Some(true));
        let e = FileConfig::parse("memroy = \"1GiB\"").unwrap_err();
        assert!(e.to_string().contains("memroy"), "{e}");
    }
}
