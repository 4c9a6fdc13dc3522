//! Size-class policy files (TOML): what the cluster does with each class of
//! documents.
//!
//! ```toml
//! # Every option a class does not set (these are the defaults).
//! [default]
//! cooperative = true          # look for the block in peers' memory
//! forward_evictions = true    # forward evicted singlets (N-Chance)
//! discard_cache = false       # blocks let go of go to the storage node's memory
//! exclusive = false           # the storage node keeps no copy of what it reads
//! replica = false             # read local misses from the node's own disk
//!
//! # The classes, smallest first; without any, WebStone's four
//! # (class0 < 1 KiB, class1 < 10 KiB, class2 < 100 KiB, class3).
//! [[class]]
//! name = "small"
//! below = "10KiB"             # bytes, or a size with a unit
//! cooperative = false
//!
//! [[class]]
//! name = "large"              # the last class takes every larger size
//! ```

use crate::size::parse_bytes;
use coopcache_core::coop::{ClassError, ClassPolicies, ClassPolicy, SizeClass};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A policy file could not be used. Each message names the file and the key
/// or class at fault, and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ClassFileError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The TOML is malformed or has an unknown key or a wrongly typed value.
    #[error("{}: {message}", path.display())]
    Toml {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line, column and key.
        message: String,
    },
    /// A `below` value is not a size.
    #[error("{}: class {index}: below = `{value}`: expected bytes like 1024 or a size like \"1KiB\"", path.display())]
    Size {
        /// The file.
        path: PathBuf,
        /// 0-based class.
        index: usize,
        /// The value given.
        value: String,
    },
    /// The classes do not form a valid set.
    #[error("{}: {source}", path.display())]
    Classes {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: ClassError,
    },
}

/// The options of a class, each optional (unset: the `[default]` table's,
/// then the built-in default).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    cooperative: Option<bool>,
    forward_evictions: Option<bool>,
    discard_cache: Option<bool>,
    exclusive: Option<bool>,
    replica: Option<bool>,
}

impl Options {
    /// These options over `base`.
    fn over(self, base: ClassPolicy) -> ClassPolicy {
        ClassPolicy {
            cooperative: self.cooperative.unwrap_or(base.cooperative),
            forward_evictions: self.forward_evictions.unwrap_or(base.forward_evictions),
            discard_cache: self.discard_cache.unwrap_or(base.discard_cache),
            exclusive: self.exclusive.unwrap_or(base.exclusive),
            replica: self.replica.unwrap_or(base.replica),
        }
    }
}

/// A size: bytes, or text with a unit.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

/// A `[[class]]` table. Its options repeat [`Options`]'s fields because
/// serde cannot flatten a struct into one that denies unknown fields, and
/// a misspelt key must be refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Class {
    name: Option<String>,
    below: Option<Size>,
    cooperative: Option<bool>,
    forward_evictions: Option<bool>,
    discard_cache: Option<bool>,
    exclusive: Option<bool>,
    replica: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    default: Options,
    #[serde(default)]
    class: Vec<Class>,
}

/// Parses a policy file's text; `path` names it in errors.
pub fn parse_class_policies(text: &str, path: &Path) -> Result<ClassPolicies, ClassFileError> {
    let file: File = toml::from_str(text).map_err(|e| ClassFileError::Toml {
        path: path.to_path_buf(),
        message: e.to_string().trim_end().to_string(),
    })?;
    let base = file.default.over(ClassPolicy::default());
    if file.class.is_empty() {
        return Ok(ClassPolicies::webstone(base));
    }
    let mut classes = Vec::with_capacity(file.class.len());
    for (index, c) in file.class.into_iter().enumerate() {
        let below = match c.below {
            None => None,
            Some(Size::Bytes(b)) => Some(b),
            Some(Size::Text(t)) => {
                Some(parse_bytes(t.trim()).ok_or_else(|| ClassFileError::Size {
                    path: path.to_path_buf(),
                    index,
                    value: t.clone(),
                })?)
            }
        };
        let options = Options {
            cooperative: c.cooperative,
            forward_evictions: c.forward_evictions,
            discard_cache: c.discard_cache,
            exclusive: c.exclusive,
            replica: c.replica,
        };
        classes.push(SizeClass {
            name: c.name.unwrap_or_else(|| format!("class{index}")),
            below,
            policy: options.over(base),
        });
    }
    ClassPolicies::new(classes).map_err(|source| ClassFileError::Classes {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a policy file.
pub fn read_class_policies(path: &Path) -> Result<ClassPolicies, ClassFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ClassFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_class_policies(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ClassPolicies, String> {
        parse_class_policies(text, Path::new("p.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn an_empty_file_is_webstone_with_the_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c, ClassPolicies::webstone(ClassPolicy::default()));
        let c = parse("[default]\nexclusive = true\n").unwrap();
        assert!(
            c.classes()
                .iter()
                .all(|k| k.policy.exclusive && k.policy.cooperative)
        );
    }

    #[test]
    fn classes_override_the_defaults() {
        let c = parse(
            "[default]\nforward_evictions = false\n\n[[class]]\nbelow = \"10KiB\"\ncooperative = false\n\n[[class]]\nname = \"big\"\nreplica = true\nforward_evictions = true\n",
        )
        .unwrap();
        let k = c.classes();
        assert_eq!((k[0].name.as_str(), k[0].below), ("class0", Some(10 << 10)));
        assert!(!k[0].policy.cooperative && !k[0].policy.forward_evictions);
        assert_eq!((k[1].name.as_str(), k[1].below), ("big", None));
        assert!(k[1].policy.replica && k[1].policy.forward_evictions && k[1].policy.cooperative);
        let c = parse("[[class]]\nbelow = 1000\n[[class]]\n").unwrap();
        assert_eq!(c.class_of_size(999), 0);
    }

    #[test]
    fn errors_name_the_file_the_key_and_the_form() {
        let err = parse("[default]\ncooprative = true\n").unwrap_err();
        assert!(
            err.starts_with("p.toml:") && err.contains("cooprative") && err.contains("cooperative"),
            "{err}"
        );
        let err = parse("[[class]]\nbelow = \"1Q\"\n[[class]]\n").unwrap_err();
        assert!(err.contains("class 0") && err.contains("`1Q`"), "{err}");
        let err = parse("[[class]]\nreplica = \"yes\"\n").unwrap_err();
        assert!(err.contains("replica") && err.contains("bool"), "{err}");
        let err = parse("[[class]]\nbelow = 10\n[[class]]\nbelow = 5\n[[class]]\n").unwrap_err();
        assert!(
            err.contains("class 1") && err.contains("increasing"),
            "{err}"
        );
        let err = parse("[[class]]\nbelow = 10\n").unwrap_err();
        assert!(err.contains("last class"), "{err}");
    }
}
