//! The node's status, as `coopcache status` and `/v1/status` show it.

use super::*;

impl Driver {
    pub(super) fn status(&mut self) -> Status {
        self.sync_metrics();
        let m = &self.metrics;
        let origin = self.origin.counts();
        let bs = self.cfg.block_size;
        let own = self.node.reads().own_status(self.clock.micros());
        let mut members = vec![MemberStatus {
            id: self.cfg.id,
            name: self.cfg.name.clone(),
            listen: self.ctx.listen.clone(),
            rtt_us: None,
            protocol: Some(crate::frame::PROTOCOL_VERSION),
            release: Some(crate::frame::RELEASE.to_string()),
            memory: Some(MemberMemory::of(own, bs)),
            reads: Some(MemberReads::of(own.reads)),
        }];
        let protocol = self.node.reads();
        members.extend(
            self.members
                .view()
                .live_peers()
                .map(|(&id, mm)| MemberStatus {
                    id,
                    name: mm.link.name.clone(),
                    listen: mm.listen.clone(),
                    rtt_us: protocol.rtt_us(id),
                    protocol: Some(mm.link.version),
                    release: Some(mm.link.release.clone()).filter(|r| !r.is_empty()),
                    memory: protocol.peer_status(id).map(|s| MemberMemory::of(s, bs)),
                    reads: protocol.peer_status(id).map(|s| MemberReads::of(s.reads)),
                }),
        );
        let usage = self.node.reads().usage();
        let pinned = self.node.reads().pinned_usage();
        let stats = self.node.reads().stats();
        Status {
            id: self.cfg.id,
            name: self.cfg.name.clone(),
            algorithm: self.node.reads().algorithm().to_string(),
            policy: self.cfg.policy.name().to_string(),
            members,
            cached_bytes: usage.bytes as u64,
            cached_blocks: usage.blocks as u64,
            pinned_bytes: pinned.bytes as u64,
            pinned_blocks: pinned.blocks as u64,
            max_pinned_bytes: self.cfg.max_pinned,
            disk_slots: self.node.reads().disk().map_or(0, |t| u64::from(t.slots())),
            disk_blocks: self.node.reads().disk().map_or(0, |t| t.len() as u64),
            disk_writes: stats.disk_writes,
            disk_failures: stats.disk_failures,
            disk_write_failures: stats.disk_write_failures,
            disk_writes_skipped: stats.disk_writes_skipped,
            disk_given_up: stats.disk_given_up,
            disk_reopened: stats.disk_reopened,
            disk_served: stats.disk_served,
            disk_forwards: stats.disk_forwards,
            budget_bytes: self.cfg.budget,
            reads: Level::ALL
                .iter()
                .map(|&l| (crate::metrics::level_name(l).to_string(), m.reads_at(l)))
                .collect(),
            origin_reads: m.origin_reads.get(),
            origin_requests: m.origin_requests.get(),
            origin_bytes: m.origin_bytes.get(),
            integrity_failures: stats.integrity_failures,
            protocol_violations: stats.violations_total()
                + self.node.commits().counters().violations
                + self.node.locks().counters().violations,
            timeouts: stats.timeouts,
            peer_errors: m.peer_errors.get(),
            private: self.node.reads().is_private(),
            sealed_blocks: stats.sealed,
            opened_blocks: stats.opened,
            unified_blocks: stats.unified,
            unified_hosted: stats.unified_hosted,
            foreign_blocks: u64::from(own.foreign),
            quiet: self.node.is_quiet(),
            origin_stats: m.origin_stats.get(),
            origin_metadata: origin.metadata,
            origin_changes: origin.changes,
            origin_writes: origin.writes,
            origin_written_bytes: origin.written_bytes,
            origin_commits: origin.commits,
            manager_opens: m.manager_opens.get(),
            first_served: m.first_served.get(),
            unrecorded_commits: m.unrecorded_commits.get(),
            commits_stable: self.node.commits().is_stable(self.clock.micros()),
            sent: self.sent.clone(),
            received: self.received.clone(),
        }
    }
}
