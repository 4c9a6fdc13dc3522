//! `coopcache bench classes`'s rows, table and plot.

use crate::classes::Workload;
use crate::common::Counters;
use anyhow::Result;
use coopcache_console::plot::{Segment, grouped_bars};
use std::path::Path;

/// One policy's run, live and predicted.
#[derive(serde::Serialize)]
pub(crate) struct Row {
    bench: &'static str,
    policy: String,
    nodes: u32,
    documents: u64,
    read_bytes: u64,
    seconds: f64,
    documents_per_s: f64,
    mb_per_s: f64,
    /// Block reads from the origin, live and in the simulator.
    origin_reads: u64,
    predicted_origin_reads: u64,
    /// Live against predicted, percent (+: more live).
    origin_difference_pct: f64,
    origin_bytes: u64,
    /// Block reads served from a peer's memory, live and predicted.
    peer_reads: u64,
    predicted_peer_reads: u64,
    local_reads: u64,
    timeouts: u64,
    /// Messages a node dropped (a peer's queue full, too many blocks
    /// awaiting their digest).
    dropped_messages: u64,
    /// Forwarded singlets shed because their peer's link was busy.
    forwards_shed: u64,
    integrity_failures: u64,
    pub(crate) wrong_bytes: u64,
}

impl Row {
    pub(crate) fn new(
        policy: &str,
        w: &Workload,
        read_bytes: u64,
        c: &Counters,
        seconds: f64,
        wrong_bytes: u64,
        (predicted_origin, predicted_peer): (u64, u64),
    ) -> Row {
        let documents = w.reads.len() as u64;
        let per_s = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
        Row {
            bench: "classes",
            policy: policy.into(),
            nodes: w.nodes,
            documents,
            read_bytes,
            seconds,
            documents_per_s: per_s(documents as f64),
            mb_per_s: per_s(read_bytes as f64 / 1e6),
            origin_reads: c.origin_reads,
            predicted_origin_reads: predicted_origin,
            origin_difference_pct: 100.0 * (c.origin_reads as f64 - predicted_origin as f64)
                / (predicted_origin.max(1) as f64),
            origin_bytes: c.origin_bytes,
            peer_reads: c.at("peer") + c.at("manager"),
            predicted_peer_reads: predicted_peer,
            local_reads: c.at("local"),
            timeouts: c.timeouts,
            dropped_messages: c.dropped_messages,
            forwards_shed: c.forwards_shed,
            integrity_failures: c.integrity_failures,
            wrong_bytes,
        }
    }
}

pub(crate) fn print_table(rows: &[Row]) {
    let header = [
        "policy",
        "documents",
        "time s",
        "docs/s",
        "MB/s",
        "origin blocks",
        "predicted",
        "live - predicted %",
        "origin MiB",
        "peer blocks",
        "predicted",
        "local blocks",
        "timeouts",
        "dropped",
        "forwards shed",
        "wrong bytes",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.policy.clone(),
                r.documents.to_string(),
                format!("{:.2}", r.seconds),
                format!("{:.0}", r.documents_per_s),
                format!("{:.1}", r.mb_per_s),
                r.origin_reads.to_string(),
                r.predicted_origin_reads.to_string(),
                format!("{:+.1}", r.origin_difference_pct),
                format!("{:.1}", r.origin_bytes as f64 / 1048576.0),
                r.peer_reads.to_string(),
                r.predicted_peer_reads.to_string(),
                r.local_reads.to_string(),
                r.timeouts.to_string(),
                r.dropped_messages.to_string(),
                r.forwards_shed.to_string(),
                r.wrong_bytes.to_string(),
            ]
        })
        .collect();
    coopcache_console::table::print(&header, &cells, 0);
}

/// Origin block reads per policy, live beside predicted.
pub(crate) fn plot(path: &Path, rows: &[Row]) -> Result<()> {
    let groups: Vec<String> = rows.iter().map(|r| r.policy.clone()).collect();
    grouped_bars(
        path,
        "Size-class policies: origin block reads, live and simulated",
        "origin block reads",
        &groups,
        &[
            Segment {
                name: "live",
                values: rows.iter().map(|r| r.origin_reads as f64).collect(),
            },
            Segment {
                name: "simulator",
                values: rows
                    .iter()
                    .map(|r| r.predicted_origin_reads as f64)
                    .collect(),
            },
        ],
    )
}
