//! Attribute cache configurations in the paper's notation.

use super::FileType;
use std::fmt;
use std::str::FromStr;

/// What a sub-cache holds (the paper's cache categories, Figure 2 and
/// section 3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// Inodes and directories, in small blocks.
    Id,
    /// Inodes only (the Unix baseline's inode cache).
    Inode,
    /// Every datafile and executable (two-category caches).
    General,
    /// Datafiles and executables below the size cut-off.
    Temporal,
    /// Datafiles and executables at or above the size cut-off.
    Sequential,
    /// Everything but inodes (the Unix baseline's buffer cache).
    Unix,
}

impl Category {
    fn name(self) -> &'static str {
        match self {
            Category::Id => "ID",
            Category::Inode => "inode",
            Category::General => "General",
            Category::Temporal => "Temporal",
            Category::Sequential => "Sequential",
            Category::Unix => "Unix",
        }
    }

    fn parse(text: &str) -> Option<Category> {
        match text.to_ascii_lowercase().as_str() {
            "id" => Some(Category::Id),
            "inode" => Some(Category::Inode),
            "general" | "gen" => Some(Category::General),
            "temporal" | "temp" => Some(Category::Temporal),
            "sequential" | "seq" => Some(Category::Sequential),
            "unix" => Some(Category::Unix),
            _ => None,
        }
    }

    /// Where requests of `kind` go, in order of preference (large: at or
    /// above the cut-off).
    fn preference(kind: FileType, large: bool) -> &'static [Category] {
        use Category::*;
        match (kind, large) {
            (FileType::Inode, _) => &[Id, Inode, Unix, General],
            (FileType::Directory, _) => &[Id, Unix, General],
            (_, true) => &[Sequential, General, Unix, Temporal],
            (_, false) => &[Temporal, General, Unix],
        }
    }
}

/// A sub-cache's size: fixed, or the rest of the total (`x`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubCacheSize {
    /// This many bytes.
    Bytes(u64),
    /// Whatever the total leaves.
    Rest,
}

/// One sub-cache: `size/block category`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubCacheSpec {
    /// Its size.
    pub size: SubCacheSize,
    /// Its block size in bytes.
    pub block: u64,
    /// What it holds.
    pub category: Category,
}

/// An attribute cache configuration: sub-caches and the file-size cut-off
/// between Temporal and Sequential (512 KiB, as in the paper).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrConfig {
    /// The sub-caches, in the order written.
    pub subcaches: Vec<SubCacheSpec>,
    /// Files of this many bytes or more are large (Sequential).
    pub cutoff: u64,
}

/// The paper's default cut-off.
pub(super) const DEFAULT_CUTOFF: u64 = 512 * 1024;

/// A configuration with every size known, for one total.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// `(category, blocks, block size)` per sub-cache, in order.
    pub subcaches: Vec<(Category, usize, u64)>,
    /// The cut-off.
    pub cutoff: u64,
    /// Total bytes.
    pub total: u64,
    /// Sub-cache index per (type, large), from [`Resolved::route`].
    routes: [[usize; 2]; 4],
}

impl Resolved {
    /// The sub-cache that takes a request of `kind` to a file of
    /// `file_size` bytes.
    pub fn route(&self, kind: FileType, file_size: u64) -> usize {
        self.routes[kind as usize][usize::from(file_size >= self.cutoff)]
    }

    /// The block size of sub-cache `i`.
    pub fn block_size(&self, i: usize) -> u64 {
        self.subcaches[i].2
    }
}

/// A malformed configuration: the part at fault and what is wrong.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("cache configuration `{part}`: {problem}")]
pub struct NotationError {
    /// The offending part (or the whole configuration).
    pub part: String,
    /// What is wrong with it.
    pub problem: String,
}

fn error(part: &str, problem: impl Into<String>) -> NotationError {
    NotationError {
        part: part.trim().to_string(),
        problem: problem.into(),
    }
}

/// Parses `128`, `4K`, `64K`, `2M`, `1G` (binary units, as the paper's K
/// and M; `KB`, `KiB` and so on also accepted).
fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// Formats bytes the paper's way: `128`, `4K`, `2M`.
fn format_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

impl FromStr for AttrConfig {
    type Err = NotationError;

    /// Parses `size/block category, ...`, e.g. `64K/128 ID, x/4K Temporal,
    /// 2M/128K Sequential`, where `x` is the rest of the total; a part
    /// `cutoff=1M` moves the Temporal/Sequential line from 512 KiB.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        const FORM: &str = "`size/block category` with size a byte count like 64K or x, block like 128 or 4K, \
                            category one of ID, inode, General, Temporal, Sequential, Unix";
        let mut subcaches = Vec::new();
        let mut cutoff = DEFAULT_CUTOFF;
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            if let Some((key, value)) = part.split_once('=') {
                if !key.trim().eq_ignore_ascii_case("cutoff") {
                    return Err(error(
                        part,
                        format!("`{}` is not a setting; expected cutoff=SIZE", key.trim()),
                    ));
                }
                cutoff = parse_bytes(value.trim())
                    .filter(|&b| b > 0)
                    .ok_or_else(|| {
                        error(
                            part,
                            format!(
                                "cutoff `{}` is not a positive byte count like 512K",
                                value.trim()
                            ),
                        )
                    })?;
                continue;
            }
            let words: Vec<&str> = part.split_whitespace().collect();
            let [sizes, category] = words[..] else {
                return Err(error(part, format!("expected {FORM}")));
            };
            let (size, block) = sizes.split_once('/').ok_or_else(|| {
                error(
                    part,
                    format!("no `/` between size and block; expected {FORM}"),
                )
            })?;
            let size = if size.eq_ignore_ascii_case("x") {
                SubCacheSize::Rest
            } else {
                SubCacheSize::Bytes(parse_bytes(size).ok_or_else(|| {
                    error(
                        part,
                        format!("size `{size}` is not a byte count like 64K or x"),
                    )
                })?)
            };
            let block = parse_bytes(block).filter(|&b| b > 0).ok_or_else(|| {
                error(
                    part,
                    format!("block `{block}` is not a positive byte count like 128 or 4K"),
                )
            })?;
            let category = Category::parse(category).ok_or_else(|| {
                error(part, format!("category `{category}` is not one of ID, inode, General, Temporal, Sequential, Unix"))
            })?;
            if let SubCacheSize::Bytes(bytes) = size
                && bytes < block
            {
                return Err(error(
                    part,
                    format!("a {bytes}-byte sub-cache cannot hold one {block}-byte block"),
                ));
            }
            if subcaches
                .iter()
                .any(|c: &SubCacheSpec| c.category == category)
            {
                return Err(error(
                    part,
                    format!("category {} appears twice", category.name()),
                ));
            }
            subcaches.push(SubCacheSpec {
                size,
                block,
                category,
            });
        }
        if subcaches.is_empty() {
            return Err(error(
                s,
                format!("no sub-cache; expected {FORM}, comma-separated"),
            ));
        }
        if subcaches
            .iter()
            .filter(|c| c.size == SubCacheSize::Rest)
            .count()
            > 1
        {
            return Err(error(
                s,
                "more than one sub-cache sized `x` (the rest of the total)",
            ));
        }
        let config = AttrConfig { subcaches, cutoff };
        for kind in FileType::ALL {
            for large in [false, true] {
                if config.route_index(kind, large).is_none() {
                    return Err(error(s, format!("no sub-cache takes {}s", kind.name())));
                }
            }
        }
        Ok(config)
    }
}

impl fmt::Display for AttrConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.subcaches.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            let size = match c.size {
                SubCacheSize::Bytes(b) => format_bytes(b),
                SubCacheSize::Rest => "x".into(),
            };
            write!(f, "{size}/{} {}", format_bytes(c.block), c.category.name())?;
        }
        if self.cutoff != DEFAULT_CUTOFF {
            write!(f, ", cutoff={}", format_bytes(self.cutoff))?;
        }
        Ok(())
    }
}

impl AttrConfig {
    /// The paper's baseline (section 3.1): a 32 KiB inode cache in 128-byte
    /// blocks and the rest a Unix buffer cache of 4 KiB blocks.
    pub fn unix_baseline() -> AttrConfig {
        "32K/128 inode, x/4K Unix"
            .parse()
            .expect("the baseline is well formed")
    }

    /// The paper's variable attribute cache scheme (Table 1): the
    /// configuration its table gives for a total of `total` bytes (a total
    /// between two rows takes the smaller row's configuration).
    pub fn variable(total: u64) -> AttrConfig {
        const K: u64 = 1 << 10;
        let notation = match total {
            t if t < 64 * K => "16K/128 ID, x/4K General",
            t if t < 128 * K => "32K/128 ID, x/8K General",
            t if t < 256 * K => "64K/128 ID, x/16K General",
            t if t < 1216 * K => "64K/128 ID, x/4K Temporal, 64K/64K Sequential",
            t if t < 1280 * K => "64K/128 ID, x/4K Temporal, 128K/64K Sequential",
            t if t < 6272 * K => "128K/128 ID, x/4K Temporal, 128K/64K Sequential",
            t if t < 20608 * K => "128K/128 ID, x/4K Temporal, 2M/128K Sequential",
            t if t < 26624 * K => "128K/128 ID, x/4K Temporal, 4M/128K Sequential",
            t if t < 36864 * K => "2M/128 ID, x/4K Temporal, 8M/128K Sequential",
            _ => "4M/128 ID, x/4K Temporal, 16M/128K Sequential",
        };
        notation.parse().expect("Table 1 is well formed")
    }

    /// Every configuration of the paper's Table 1.
    pub const TABLE_1: [&'static str; 10] = [
        "16K/128 ID, x/4K General",
        "32K/128 ID, x/8K General",
        "64K/128 ID, x/16K General",
        "64K/128 ID, x/4K Temporal, 64K/64K Sequential",
        "64K/128 ID, x/4K Temporal, 128K/64K Sequential",
        "128K/128 ID, x/4K Temporal, 128K/64K Sequential",
        "128K/128 ID, x/4K Temporal, 2M/128K Sequential",
        "128K/128 ID, x/4K Temporal, 4M/128K Sequential",
        "2M/128 ID, x/4K Temporal, 8M/128K Sequential",
        "4M/128 ID, x/4K Temporal, 16M/128K Sequential",
    ];

    /// The sub-cache that takes requests of `kind` (to large files or not).
    pub fn route_index(&self, kind: FileType, large: bool) -> Option<usize> {
        Category::preference(kind, large)
            .iter()
            .find_map(|cat| self.subcaches.iter().position(|c| c.category == *cat))
    }

    /// Bytes of the fixed-size sub-caches, saturating at `u64::MAX` (each
    /// size fits a `u64`, their sum need not).
    pub fn fixed_bytes(&self) -> u64 {
        self.subcaches
            .iter()
            .map(|c| match c.size {
                SubCacheSize::Bytes(b) => b,
                SubCacheSize::Rest => 0,
            })
            .fold(0, u64::saturating_add)
    }

    /// Whether one sub-cache takes the rest of the total.
    pub fn has_rest(&self) -> bool {
        self.subcaches.iter().any(|c| c.size == SubCacheSize::Rest)
    }

    /// Every size fixed for a total of `total` bytes (ignored without an
    /// `x` sub-cache). Errors if `x` would not hold one of its blocks.
    pub fn resolve(&self, total: u64) -> Result<Resolved, NotationError> {
        let fixed = self.fixed_bytes();
        let mut subcaches = Vec::with_capacity(self.subcaches.len());
        for c in &self.subcaches {
            let bytes = match c.size {
                SubCacheSize::Bytes(b) => b,
                SubCacheSize::Rest => total.saturating_sub(fixed),
            };
            let blocks = (bytes / c.block) as usize;
            if blocks == 0 {
                return Err(error(
                    &self.to_string(),
                    format!(
                        "a total of {} leaves the {} sub-cache less than one {}-byte block",
                        format_bytes(total),
                        c.category.name(),
                        c.block
                    ),
                ));
            }
            subcaches.push((c.category, blocks, c.block));
        }
        let mut routes = [[0; 2]; 4];
        for kind in FileType::ALL {
            for large in [false, true] {
                routes[kind as usize][usize::from(large)] =
                    self.route_index(kind, large).unwrap_or(0);
            }
        }
        Ok(Resolved {
            total: if self.has_rest() {
                total.max(fixed)
            } else {
                fixed
            },
            subcaches,
            cutoff: self.cutoff,
            routes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_1_configuration_parses_and_prints_back() {
        for row in AttrConfig::TABLE_1 {
            let config: AttrConfig = row.parse().unwrap();
            assert_eq!(config.to_string(), row);
        }
        assert_eq!(
            AttrConfig::unix_baseline().to_string(),
            "32K/128 inode, x/4K Unix"
        );
    }

    #[test]
    fn the_variable_scheme_follows_table_1_by_size() {
        const K: u64 = 1024;
        assert_eq!(
            AttrConfig::variable(32 * K).to_string(),
            AttrConfig::TABLE_1[0]
        );
        assert_eq!(
            AttrConfig::variable(640 * K).to_string(),
            AttrConfig::TABLE_1[3]
        );
        assert_eq!(
            AttrConfig::variable(1216 * K).to_string(),
            AttrConfig::TABLE_1[4]
        );
        assert_eq!(
            AttrConfig::variable(4352 * K).to_string(),
            AttrConfig::TABLE_1[5]
        );
        assert_eq!(
            AttrConfig::variable(18560 * K).to_string(),
            AttrConfig::TABLE_1[6]
        );
        assert_eq!(
            AttrConfig::variable(282_624 * K).to_string(),
            AttrConfig::TABLE_1[9]
        );
    }

    #[test]
    fn x_is_the_rest_and_routes_follow_the_categories() {
        let c: AttrConfig = "64K/128 ID, x/4K Temporal, 2M/128K Sequential"
            .parse()
            .unwrap();
        let r = c.resolve(4 << 20).unwrap();
        assert_eq!(r.subcaches[0], (Category::Id, 512, 128));
        assert_eq!(
            r.subcaches[1],
            (
                Category::Temporal,
                ((4 << 20) - (64 << 10) - (2 << 20)) / 4096,
                4096
            )
        );
        assert_eq!(r.route(FileType::Inode, 128), 0);
        assert_eq!(r.route(FileType::Directory, 512), 0);
        assert_eq!(r.route(FileType::Datafile, 100_000), 1);
        assert_eq!(r.route(FileType::Executable, 600 << 10), 2);
        let unix = AttrConfig::unix_baseline().resolve(1 << 20).unwrap();
        assert_eq!(unix.route(FileType::Inode, 128), 0);
        assert_eq!(unix.route(FileType::Directory, 512), 1);
    }

    /// Found by the fuzz target `attr_notation`: two sub-caches whose sizes
    /// each fit a `u64` overflowed their sum when resolved.
    #[test]
    fn fixed_sizes_whose_sum_overflows_saturate() {
        let c: AttrConfig = "16G/128 ID, 17179869183G/4K General".parse().unwrap();
        assert_eq!(c.fixed_bytes(), u64::MAX);
        let r = c.resolve(4 << 20).unwrap();
        assert_eq!(r.total, u64::MAX);
    }

    #[test]
    fn malformed_strings_name_the_bad_part() {
        let cases = [
            (
                "64K/128 ID, x/4K Temporal, 2M/128K Sequentail",
                "`2M/128K Sequentail`",
            ),
            ("64K ID, x/4K General", "`64K ID`"),
            ("64Q/128 ID, x/4K General", "`64Q/128 ID`"),
            ("64K/0 ID, x/4K General", "`64K/0 ID`"),
            ("64/128 ID, x/4K General", "`64/128 ID`"),
            ("x/128 ID, x/4K General", "more than one"),
            ("64K/128 ID, x/4K General, 1M/4K General", "appears twice"),
            ("64K/128 ID", "no sub-cache takes datafiles"),
            ("", "no sub-cache"),
            ("64K/128 ID, x/4K General, cutoff=big", "cutoff `big`"),
            (
                "64K/128 ID, x/4K General, size=1M",
                "`size` is not a setting",
            ),
        ];
        for (bad, needle) in cases {
            let err = bad.parse::<AttrConfig>().unwrap_err().to_string();
            assert!(err.contains(needle), "{bad}: {err}");
        }
        // The cut-off moves the Temporal/Sequential line and prints back.
        let c: AttrConfig = "x/4K Temporal, 1M/64K Sequential, 64K/128 ID, cutoff=2M"
            .parse()
            .unwrap();
        let r = c.resolve(4 << 20).unwrap();
        assert_eq!(r.route(FileType::Datafile, 1 << 20), 0);
        assert_eq!(r.route(FileType::Datafile, 2 << 20), 1);
        assert_eq!(c.to_string().parse::<AttrConfig>().unwrap(), c);
        assert!(c.to_string().ends_with("cutoff=2M"), "{c}");
        let small = AttrConfig::unix_baseline()
            .resolve(32 << 10)
            .unwrap_err()
            .to_string();
        assert!(small.contains("less than one 4096-byte block"), "{small}");
    }
}
