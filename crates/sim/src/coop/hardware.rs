//! Cluster throughput from the busy time of its disks and links
//! (`request-distribution-aware-cluster-caching.txt`, Figures 2-6).
//!
//! The cost profile gives each read a latency; a web server cluster is
//! judged by throughput instead, and that is set by its busiest resource.
//! Each disk read costs a seek unless it continues the disk's last read
//! (the next block of the same document), plus the block over the disk's
//! bandwidth; the storage node's disk serves the manager's origin reads,
//! and each serving node's own disk its replica reads, independently. Each
//! block crossing the cluster network occupies the sender's and the
//! receiver's link, each message adds a fixed cost to both ends, and the
//! documents served cross the front-end link to the clients. Throughput is
//! the document bytes served over the busiest resource's busy time.

use coopcache_core::coop::{Addr, MAX_CLASSES, SizeClassed};
use std::fmt;
use std::str::FromStr;

/// The resources' speeds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hardware {
    /// Name in reports.
    pub name: &'static str,
    /// Average seek and rotational delay of a disk, microseconds.
    pub seek_us: f64,
    /// Disk transfer rate, bytes per microsecond (MB/s).
    pub disk_mb_s: f64,
    /// Cluster network (SAN) bandwidth per machine, MB/s.
    pub san_mb_s: f64,
    /// Cluster network cost per message at each end, microseconds.
    pub san_message_us: f64,
    /// Front-end link to the clients, shared by the serving nodes, MB/s.
    pub front_mb_s: f64,
}

impl Hardware {
    /// The paper's cluster (section 4.1): IBM DCAS-34330W disks (8.5 ms
    /// average seek plus 5.6 ms half a turn at 5,400 rpm, about 10 MB/s),
    /// Myrinet with LANai 7 cards on 64-bit/66 MHz PCI (about 125 MB/s a
    /// machine after protocol costs, 20 us a message), and the clients
    /// behind a 100 Mb/s Ethernet router.
    pub const WEBSTONE_1999: Hardware = Hardware {
        name: "webstone-1999",
        seek_us: 14_100.0,
        disk_mb_s: 10.0,
        san_mb_s: 125.0,
        san_message_us: 20.0,
        front_mb_s: 12.5,
    };

    /// A present-day cluster: NVMe drives (about 80 us a random read,
    /// 3 GB/s), a 25 Gb/s network (about 2.5 GB/s, 10 us a message), and a
    /// 100 Gb/s front end.
    pub const DC_2026: Hardware = Hardware {
        name: "dc-2026",
        seek_us: 80.0,
        disk_mb_s: 3_000.0,
        san_mb_s: 2_500.0,
        san_message_us: 10.0,
        front_mb_s: 12_500.0,
    };

    /// Every built-in profile.
    pub const ALL: [Hardware; 2] = [Hardware::WEBSTONE_1999, Hardware::DC_2026];
}

impl fmt::Display for Hardware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (seek {} us, disk {} MB/s, network {} MB/s + {} us a message, front end {} MB/s)",
            self.name,
            self.seek_us,
            self.disk_mb_s,
            self.san_mb_s,
            self.san_message_us,
            self.front_mb_s
        )
    }
}

const HARDWARE_FORM: &str = "webstone-1999 or dc-2026, optionally followed by comma-separated \
     overrides seek_us, disk_mb_s, san_mb_s, san_message_us, front_mb_s (e.g. webstone-1999,seek_us=0)";

impl FromStr for Hardware {
    type Err = crate::error::OptionError;

    /// A profile by name, with optional `key=value` overrides.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let error = || crate::error::OptionError {
            what: "hardware",
            value: s.to_string(),
            expected: HARDWARE_FORM.into(),
        };
        let mut parts = s.split(',').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let mut hw = Hardware::ALL
            .into_iter()
            .find(|h| h.name == name)
            .ok_or_else(error)?;
        for part in parts {
            let (key, value) = part.split_once('=').ok_or_else(error)?;
            let value: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(error)?;
            let positive = value > 0.0;
            match key.trim() {
                "seek_us" => hw.seek_us = value,
                "san_message_us" => hw.san_message_us = value,
                "disk_mb_s" if positive => hw.disk_mb_s = value,
                "san_mb_s" if positive => hw.san_mb_s = value,
                "front_mb_s" if positive => hw.front_mb_s = value,
                _ => return Err(error()),
            }
        }
        Ok(hw)
    }
}

/// What each resource did (measured requests only).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Busy {
    /// Disk busy time, microseconds: the storage node's first, then each
    /// serving node's replica disk.
    pub disk_us: Vec<f64>,
    /// Block reads per disk.
    pub disk_reads: Vec<u64>,
    /// Seeks per disk.
    pub seeks: Vec<u64>,
    /// Disk busy time by the size class of the block (all disks).
    pub class_disk_us: [f64; MAX_CLASSES],
    /// Cluster link busy time per machine, microseconds: the manager
    /// (storage node) first, then each node.
    pub link_us: Vec<f64>,
    /// Front-end link busy time, microseconds.
    pub front_us: f64,
    /// Document bytes served to clients.
    pub bytes_served: u64,
}

impl Busy {
    /// The busiest resource's name and busy time.
    pub fn bottleneck(&self) -> (String, f64) {
        let mut best = ("front-end link".to_string(), self.front_us);
        let named = |i: usize, what: &str| {
            if i == 0 {
                format!("storage {what}")
            } else {
                format!("node {} {what}", i - 1)
            }
        };
        for (i, &t) in self.disk_us.iter().enumerate() {
            if t > best.1 {
                best = (named(i, "disk"), t);
            }
        }
        for (i, &t) in self.link_us.iter().enumerate() {
            if t > best.1 {
                best = (named(i, "link"), t);
            }
        }
        best
    }

    /// Document megabytes served per second of the busiest resource.
    pub fn throughput_mb_s(&self) -> f64 {
        let (_, us) = self.bottleneck();
        if us > 0.0 {
            self.bytes_served as f64 / us
        } else {
            0.0
        }
    }
}

/// The resources of a cluster of `nodes` serving nodes, and their
/// accounting as messages go by.
#[derive(Clone, Debug)]
pub struct Resources {
    hw: Hardware,
    block_bytes: f64,
    /// Each disk's last block read, for sequential detection.
    last: Vec<Option<u64>>,
    busy: Busy,
}

impl Resources {
    /// Resources for `nodes` nodes moving blocks of `block_bytes`.
    pub fn new(hw: Hardware, nodes: usize, block_bytes: u64) -> Self {
        Resources {
            hw,
            block_bytes: block_bytes as f64,
            last: vec![None; nodes + 1],
            busy: Busy {
                disk_us: vec![0.0; nodes + 1],
                disk_reads: vec![0; nodes + 1],
                seeks: vec![0; nodes + 1],
                link_us: vec![0.0; nodes + 1],
                ..Busy::default()
            },
        }
    }

    /// The machine index of `addr` (0 the storage node), or `None` for the
    /// origin.
    fn machine(addr: Addr) -> Option<usize> {
        match addr {
            Addr::Manager => Some(0),
            Addr::Node(n) => Some(n as usize + 1),
            Addr::Origin => None,
        }
    }

    /// A disk access to `block` by `from` (the manager uses the storage
    /// disk, a node its own replica).
    pub fn disk_access(&mut self, from: Addr, block: u64) {
        let Some(disk) = Self::machine(from).filter(|&d| d < self.last.len()) else {
            return;
        };
        let sequential = self.last[disk] == block.checked_sub(1);
        self.last[disk] = Some(block);
        let b = &mut self.busy;
        b.disk_reads[disk] += 1;
        let mut us = self.block_bytes / self.hw.disk_mb_s;
        if !sequential {
            b.seeks[disk] += 1;
            us += self.hw.seek_us;
        }
        b.disk_us[disk] += us;
        b.class_disk_us[block.size_class().min(MAX_CLASSES - 1)] += us;
    }

    /// A message between two machines over the cluster network, carrying a
    /// block or not.
    pub fn message(&mut self, from: Addr, to: Addr, carries_block: bool) {
        let (Some(a), Some(b)) = (Self::machine(from), Self::machine(to)) else {
            return;
        };
        let cost = self.hw.san_message_us
            + if carries_block {
                self.block_bytes / self.hw.san_mb_s
            } else {
                0.0
            };
        for m in [a, b] {
            if let Some(t) = self.busy.link_us.get_mut(m) {
                *t += cost;
            }
        }
    }

    /// `bytes` of a document served to a client.
    pub fn served(&mut self, bytes: u64) {
        self.busy.bytes_served += bytes;
        self.busy.front_us += bytes as f64 / self.hw.front_mb_s;
    }

    /// What was measured.
    pub fn busy(&self) -> &Busy {
        &self.busy
    }

    /// Consumes the accounting.
    pub fn into_busy(self) -> Busy {
        self.busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_blocks_skip_the_seek_and_replicas_are_separate_disks() {
        let mut r = Resources::new(Hardware::WEBSTONE_1999, 2, 4096);
        r.disk_access(Addr::Manager, 10);
        r.disk_access(Addr::Manager, 11);
        r.disk_access(Addr::Manager, 13);
        r.disk_access(Addr::Node(1), 14);
        let b = r.busy();
        assert_eq!(b.seeks, vec![2, 0, 1]);
        assert_eq!(b.disk_reads, vec![3, 0, 1]);
        let transfer = 4096.0 / 10.0;
        assert!((b.disk_us[0] - (2.0 * 14_100.0 + 3.0 * transfer)).abs() < 1e-6);
        assert_eq!(r.busy().bottleneck().0, "storage disk");
    }

    #[test]
    fn profiles_parse_with_overrides() {
        let hw: Hardware = "webstone-1999, seek_us=0 ,disk_mb_s=20".parse().unwrap();
        assert_eq!((hw.seek_us, hw.disk_mb_s, hw.san_mb_s), (0.0, 20.0, 125.0));
        for bad in [
            "ibm",
            "webstone-1999,seek_us",
            "dc-2026,disk_mb_s=0",
            "dc-2026,rpm=5400",
        ] {
            let err = bad.parse::<Hardware>().unwrap_err().to_string();
            assert!(err.contains(bad) && err.contains("seek_us"), "{err}");
        }
    }

    #[test]
    fn throughput_is_bytes_over_the_busiest_resource() {
        let mut r = Resources::new(Hardware::WEBSTONE_1999, 2, 4096);
        r.served(1_250_000);
        // 1.25 MB over 12.5 MB/s: 100 ms on the front end.
        assert!((r.busy().throughput_mb_s() - 12.5).abs() < 1e-9);
        r.message(Addr::Node(0), Addr::Node(1), true);
        assert!(
            r.busy().link_us[1] > 0.0 && r.busy().link_us[2] > 0.0 && r.busy().link_us[0] == 0.0
        );
        for b in 0..10 {
            r.disk_access(Addr::Manager, b * 2);
        }
        assert_eq!(r.busy().bottleneck().0, "storage disk");
        assert!(r.busy().throughput_mb_s() < 12.5);
    }
}
