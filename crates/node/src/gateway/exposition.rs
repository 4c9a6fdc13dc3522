//! `/metrics` in the format the scraper asks for: OpenMetrics 1.0 (what
//! `prometheus_client` writes) or the Prometheus text format 0.0.4 (what
//! `promtool check metrics`, older scrapers and people with curl read).
//!
//! The two differ only where this node's metrics use them: in 0.0.4 a
//! counter's `HELP` and `TYPE` lines carry its sample name (`x_total`),
//! where OpenMetrics names the family (`x`); 0.0.4 has no `UNIT` lines and
//! no `# EOF`.

/// An exposition format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
    /// `text/plain; version=0.0.4`.
    Text004,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text004 => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// The format an `Accept` header prefers: the supported type with the
/// highest `q` (OpenMetrics on a tie, as Prometheus lists it first); the
/// 0.0.4 text format when neither is named (no header, `*/*`, `text/*`).
pub fn negotiate(accept: Option<&str>) -> Format {
    let (mut open, mut text) = (None::<f32>, None::<f32>);
    for range in accept.unwrap_or("").split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.strip_prefix("q="))
            .find_map(|q| q.parse::<f32>().ok())
            .unwrap_or(1.0);
        let slot = match media.as_str() {
            "application/openmetrics-text" => &mut open,
            "text/plain" => &mut text,
            _ => continue,
        };
        *slot = Some(slot.map_or(q, |s| s.max(q)));
    }
    match (open, text) {
        (Some(o), t) if o > 0.0 && o >= t.unwrap_or(0.0) => Format::OpenMetrics,
        _ => Format::Text004,
    }
}

/// OpenMetrics text as `prometheus_client` writes it, rewritten in the
/// 0.0.4 text format.
pub fn to_text_004(openmetrics: &str) -> String {
    let mut counters = std::collections::HashSet::new();
    for line in openmetrics.lines() {
        if let Some(name) = line
            .strip_prefix("# TYPE ")
            .and_then(|t| t.strip_suffix(" counter"))
        {
            counters.insert(name);
        }
    }
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| Some((p, line.strip_prefix(p)?)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                out.push_str(prefix);
                out.push_str(name);
                if counters.contains(name) {
                    out.push_str("_total");
                }
                out.push(' ');
                out.push_str(tail);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scrapers_preference_wins() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(
            negotiate(Some(
                "text/plain;version=0.0.4;q=0.9, application/openmetrics-text;q=0.5"
            )),
            Format::Text004
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text; q=0")),
            Format::Text004
        );
        for plain in [None, Some("*/*"), Some("text/*"), Some("text/plain")] {
            assert_eq!(negotiate(plain), Format::Text004, "{plain:?}");
        }
    }

    #[test]
    fn counters_are_named_by_their_samples_in_text_004() {
        let open = "# HELP x_reads Reads.\n# TYPE x_reads counter\n# UNIT x_reads reads\nx_reads_total{level=\"local\"} 3\n# HELP x_members Live members.\n# TYPE x_members gauge\nx_members 2\n# EOF\n";
        assert_eq!(
            to_text_004(open),
            "# HELP x_reads_total Reads.\n# TYPE x_reads_total counter\nx_reads_total{level=\"local\"} 3\n# HELP x_members Live members.\n# TYPE x_members gauge\nx_members 2\n"
        );
    }
}
