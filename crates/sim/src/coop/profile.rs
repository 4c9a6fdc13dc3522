//! Hardware cost profiles: what a read costs at each level.

use crate::error::OptionError;
use coopcache_core::coop::{Level, Penalties};
use std::fmt;
use std::str::FromStr;

/// Access times that turn a read's level and hops into a read time, as the
/// paper does (section 3): every read pays the local memory copy; data
/// that crossed the network adds one block transfer plus a per-hop
/// overhead for each message on its path; an origin read adds the origin's
/// access time. No queueing is modelled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostProfile {
    /// The name `--profile` takes.
    pub name: &'static str,
    /// Copying a block from local memory, microseconds.
    pub local_us: f64,
    /// Transferring a block over the network once, microseconds.
    pub transfer_us: f64,
    /// Overhead per network message (hop), microseconds.
    pub per_hop_us: f64,
    /// Reading a block at the origin, beyond the network, microseconds.
    pub origin_us: f64,
}

impl CostProfile {
    /// The paper's baseline (section 3 and Figure 1, the 155 Mbit/s ATM
    /// column): 250 us local copy, 400 us transfer, 200 us per hop, 14,800
    /// us disk. Manager memory = 1,050 us (2 hops), remote node = 1,250 us
    /// (3 hops), disk = 15,850 us.
    pub const ATM_1994: CostProfile = CostProfile {
        name: "atm-1994",
        local_us: 250.0,
        transfer_us: 400.0,
        per_hop_us: 200.0,
        origin_us: 14_800.0,
    };

    /// The paper's Figure 1 Ethernet column: 10 Mbit/s makes the 8 KiB
    /// transfer 6,250 us; remote memory = 6,900 us, remote disk = 21,700
    /// us.
    pub const ETHERNET_1994: CostProfile = CostProfile {
        name: "ethernet-1994",
        local_us: 250.0,
        transfer_us: 6_250.0,
        per_hop_us: 200.0,
        origin_us: 14_800.0,
    };

    /// A 2026 data-centre rack in front of NVMe shared storage. Typical
    /// figures, not measurements of one system; measure your own (fio,
    /// a ping-pong RPC) and scale with `--network-us` where they differ.
    /// - local: a page-cache hit of 8 KiB through the kernel's read path
    ///   takes about 2 us (the copy itself, at ~10 GB/s per core, under 1).
    /// - transfer: 8 KiB at 25 Gbit/s is 2.6 us.
    /// - per hop: a kernel-TCP message through one switch takes about
    ///   10 us, the software overhead that dominates a data-centre RPC's
    ///   tens of microseconds (Barroso et al., "Attack of the Killer
    ///   Microseconds", CACM 60(4), 2017).
    /// - origin: a random read of 4-8 KiB from a data-centre TLC NVMe drive
    ///   at queue depth 1 takes about 80 us (vendor datasheets quote
    ///   70-100 us), on a storage server the hops already count.
    pub const DC_2026_NVME: CostProfile = CostProfile {
        name: "dc-2026-nvme",
        local_us: 2.0,
        transfer_us: 2.6,
        per_hop_us: 10.0,
        origin_us: 80.0,
    };

    /// The same rack in front of an object store (S3 in the same region):
    /// AWS puts the median latency of small requests (under 512 KB) "in the
    /// tens of milliseconds" (whitepaper "Best Practices Design Patterns:
    /// Optimizing Amazon S3 Performance", section "Timeouts and Retries for
    /// Latency-Sensitive Applications"); we take 20 ms.
    pub const DC_2026_S3: CostProfile = CostProfile {
        name: "dc-2026-s3",
        local_us: 2.0,
        transfer_us: 2.6,
        per_hop_us: 10.0,
        origin_us: 20_000.0,
    };

    /// Every built-in profile.
    pub const ALL: [CostProfile; 4] = [
        CostProfile::ATM_1994,
        CostProfile::ETHERNET_1994,
        CostProfile::DC_2026_NVME,
        CostProfile::DC_2026_S3,
    ];

    /// The time of a read served at `level` over `hops` network messages.
    pub fn read_time_us(&self, level: Level, hops: u8) -> f64 {
        let mut t = self.local_us;
        if hops > 0 {
            t += self.transfer_us + f64::from(hops) * self.per_hop_us;
        }
        // A node's own disk tier (live only) reads a disk as the origin
        // does, without its wire.
        if matches!(level, Level::Origin | Level::LocalDisk) {
            t += self.origin_us;
        }
        t
    }

    /// The read time of each level on its usual path (manager memory 2
    /// hops, remote node 3, origin 2), for tables and Weighted LRU.
    pub fn nominal_us(&self, level: Level) -> f64 {
        let hops = match level {
            Level::Local => 0,
            Level::RemoteNode => 3,
            // The disk tier is read where the origin would be.
            Level::ManagerMemory | Level::LocalDisk | Level::Origin => 2,
        };
        self.read_time_us(level, hops)
    }

    /// What losing a block costs under this profile (Weighted LRU).
    pub fn penalties(&self) -> Penalties {
        let local = self.nominal_us(Level::Local);
        Penalties {
            duplicate_us: (self.nominal_us(Level::RemoteNode) - local).round() as u64,
            singlet_us: (self.nominal_us(Level::Origin) - local).round() as u64,
        }
    }

    /// This profile with the network block fetch (transfer plus two hops)
    /// scaled to `round_trip_us`, keeping the per-hop share (the paper's
    /// Figure 13 varies exactly this).
    pub fn with_network_us(&self, round_trip_us: f64) -> CostProfile {
        let now = self.transfer_us + 2.0 * self.per_hop_us;
        let scale = round_trip_us / now;
        CostProfile {
            transfer_us: self.transfer_us * scale,
            per_hop_us: self.per_hop_us * scale,
            ..*self
        }
    }
}

impl fmt::Display for CostProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl FromStr for CostProfile {
    type Err = OptionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CostProfile::ALL
            .into_iter()
            .find(|p| p.name.eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| OptionError {
                what: "cost profile",
                value: s.to_string(),
                expected: "one of atm-1994, ethernet-1994, dc-2026-nvme, dc-2026-s3".into(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atm_matches_the_papers_figure_3() {
        let p = CostProfile::ATM_1994;
        assert_eq!(p.read_time_us(Level::Local, 0), 250.0);
        assert_eq!(p.read_time_us(Level::ManagerMemory, 2), 1_050.0);
        assert_eq!(p.read_time_us(Level::RemoteNode, 3), 1_250.0);
        assert_eq!(p.read_time_us(Level::Origin, 2), 15_850.0);
        assert_eq!(p.read_time_us(Level::RemoteNode, 2), 1_050.0);
    }

    #[test]
    fn ethernet_matches_the_papers_figure_1() {
        let p = CostProfile::ETHERNET_1994;
        assert_eq!(p.read_time_us(Level::RemoteNode, 2), 6_900.0);
        assert_eq!(p.read_time_us(Level::Origin, 2), 21_700.0);
    }

    #[test]
    fn network_scaling_keeps_the_rest() {
        let p = CostProfile::ATM_1994.with_network_us(1_600.0);
        assert_eq!(p.read_time_us(Level::ManagerMemory, 2), 1_850.0);
        assert_eq!(p.local_us, 250.0);
        assert_eq!(p.origin_us, 14_800.0);
    }
}
