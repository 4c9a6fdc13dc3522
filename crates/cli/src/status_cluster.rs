//! `coopcache status --cluster`: every member at a glance from one node,
//! its memory and its reads as the member last reported them on its
//! pings (once a second), and the cluster's totals: where reads were
//! served, and who reports failures.

use coopcache_node::driver::{MemberStatus, Status};

/// Prints the table of `s`'s members and the cluster's totals.
pub(crate) fn print(s: &Status) {
    let mut members: Vec<&MemberStatus> = s.members.iter().collect();
    members.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
    println!(
        "cluster of {} members seen from {} (each member's figures as it last reported them, once a second):",
        members.len(),
        s.name
    );
    let header = [
        "member",
        "id",
        "release",
        "state",
        "cached MiB",
        "of MiB",
        "reads",
        "local %",
        "cluster %",
        "disk %",
        "origin %",
        "failed",
        "errors",
        "refused",
        "rtt us",
    ];
    let rows: Vec<Vec<String>> = members.iter().map(|m| row(m)).collect();
    coopcache_console::table::print(&header, &rows, 3);
    let heard: Vec<_> = members.iter().filter_map(|m| m.reads.as_ref()).collect();
    let total: u64 = heard.iter().map(|r| r.total()).sum();
    let sum = |names: &[&str]| -> u64 {
        heard
            .iter()
            .map(|r| names.iter().map(|n| r.at(n)).sum::<u64>())
            .sum()
    };
    println!(
        "all: {total} block reads, {} from memory (own {}, peers' {}), {} from disks, {} from the origin",
        percent(sum(&["local", "manager", "peer"]), total),
        percent(sum(&["local"]), total),
        percent(sum(&["manager", "peer"]), total),
        percent(sum(&["disk"]), total),
        percent(sum(&["origin"]), total),
    );
    let silent = members.len() - heard.len();
    if silent > 0 {
        println!("{silent} members not heard from yet (their figures come with their next ping)");
    }
    let troubled: Vec<String> = members
        .iter()
        .filter_map(|m| {
            let r = m.reads.as_ref()?;
            let n = r.failed + r.errors + r.violations;
            (n > 0).then(|| {
                format!(
                    "{} ({} failed, {} errors, {} refused)",
                    m.name, r.failed, r.errors, r.violations
                )
            })
        })
        .collect();
    if !troubled.is_empty() {
        println!("reporting trouble: {}", troubled.join(", "));
    }
}

/// One member's row.
fn row(m: &MemberStatus) -> Vec<String> {
    let mib = |b: u64| format!("{:.1}", b as f64 / 1048576.0);
    let dash = || "-".to_string();
    let (state, cached, capacity) = match &m.memory {
        Some(mm) => (
            if mm.idle { "idle" } else { "busy" }.to_string(),
            mib(mm.cached_bytes),
            mib(mm.capacity_bytes),
        ),
        None => ("not heard".to_string(), dash(), dash()),
    };
    let mut row = vec![
        m.name.clone(),
        m.id.to_string(),
        release(m),
        state,
        cached,
        capacity,
    ];
    match &m.reads {
        Some(r) => {
            let t = r.total();
            row.extend([
                t.to_string(),
                percent(r.at("local"), t),
                percent(r.at("manager") + r.at("peer"), t),
                percent(r.at("disk"), t),
                percent(r.at("origin"), t),
                r.failed.to_string(),
                r.errors.to_string(),
                r.violations.to_string(),
            ]);
        }
        None => row.extend(std::iter::repeat_n(dash(), 8)),
    }
    row.push(m.rtt_us.map_or_else(dash, |r| r.to_string()));
    row
}

/// A member's release and the protocol version this node speaks with it
/// (`0.2.0/15`): during a rolling upgrade, which members are upgraded. A
/// member of protocol 14 does not name its release.
pub(crate) fn release(m: &MemberStatus) -> String {
    let protocol = m
        .protocol
        .map_or_else(|| "-".to_string(), |p| p.to_string());
    let release = m.release.as_deref().unwrap_or("before 0.2");
    format!("{release}/{protocol}")
}

/// `part` of `whole` in percent, one decimal; "-" of nothing.
fn percent(part: u64, whole: u64) -> String {
    match whole {
        0 => "-".to_string(),
        w => format!("{:.1}", part as f64 * 100.0 / w as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_of_nothing_is_a_dash() {
        assert_eq!(percent(0, 0), "-");
        assert_eq!(percent(1, 3), "33.3");
        assert_eq!(percent(3, 3), "100.0");
    }
}
