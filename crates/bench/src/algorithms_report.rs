//! What `coopcache bench algorithms` prints and plots.

use crate::algorithms::{Counts, Outcome};
use anyhow::Result;
use coopcache_core::coop::Level;
use std::path::Path;

const LEVELS: [(&str, Level); 4] = [
    ("local", Level::Local),
    ("manager memory", Level::ManagerMemory),
    ("remote node", Level::RemoteNode),
    ("origin", Level::Origin),
];

/// The per-level table (live, the simulated protocol, the paper's
/// simulator) and the agreement.
pub(crate) fn print(outcomes: &[Outcome]) {
    let Some(first) = outcomes.first() else {
        return;
    };
    println!(
        "{}: {} reads, {} x {} blocks of {} KiB, manager without memory\n",
        first.workload,
        first.reads,
        coopcache_console::output::count(first.nodes as u64, "node"),
        first.cache_blocks,
        first.block_size >> 10
    );
    let pct = |n: u64, of: u64| format!("{:.1}%", 100.0 * n as f64 / of.max(1) as f64);
    let mut rows = Vec::new();
    for o in outcomes {
        for (name, l) in LEVELS {
            let (live, proto, sim) = (o.live.get(l), o.protocol.get(l), o.simulated.get(l));
            rows.push(vec![
                o.algorithm.clone(),
                name.to_string(),
                live.to_string(),
                pct(live, o.reads),
                proto.to_string(),
                format!("{:+}", live as i64 - proto as i64),
                sim.to_string(),
                format!("{:+}", live as i64 - sim as i64),
            ]);
        }
    }
    coopcache_console::table::print(
        &[
            "algorithm",
            "level",
            "live",
            "live %",
            "protocol",
            "live - protocol",
            "paper",
            "live - paper",
        ],
        &rows,
        2,
    );
    println!(
        "\n(protocol: the live protocol simulated with the live cluster's block ids; paper: the paper's simulator)"
    );
    let first =
        |i: Option<usize>| i.map_or(String::new(), |i| format!(" (first difference: read {i})"));
    for o in outcomes {
        println!(
            "{}: {} of {} reads served from the simulated protocol's level{}, {} from the paper simulator's{}; origin requests {}, peer timeouts {}, integrity failures {}, {:.1} s live",
            o.algorithm,
            o.same_level_as_protocol,
            o.reads,
            first(o.first_difference_from_protocol),
            o.same_level,
            first(o.first_difference),
            o.live_origin_requests,
            o.timeouts,
            o.integrity_failures,
            o.live_seconds
        );
    }
}

/// One chart per algorithm: reads per level, live against simulated.
pub(crate) fn plot(dir: &Path, outcomes: &[Outcome]) -> Result<()> {
    use coopcache_console::plot::{Segment, grouped_bars};
    std::fs::create_dir_all(dir)?;
    let groups: Vec<String> = LEVELS.iter().map(|(n, _)| n.to_string()).collect();
    for o in outcomes {
        let values = |c: &Counts| LEVELS.iter().map(|&(_, l)| c.get(l) as f64).collect();
        grouped_bars(
            &dir.join(format!("algorithms-{}.png", o.algorithm)),
            &format!(
                "{} on {}: where {} reads were served",
                o.algorithm, o.workload, o.reads
            ),
            "reads",
            &groups,
            &[
                Segment {
                    name: "live",
                    values: values(&o.live),
                },
                Segment {
                    name: "simulated protocol",
                    values: values(&o.protocol),
                },
                Segment {
                    name: "paper simulator",
                    values: values(&o.simulated),
                },
            ],
        )?;
    }
    Ok(())
}
