//! Aligned text tables: text columns left, numbers right.

/// Prints `rows` under `header`, the first `text_columns` columns left
/// aligned and the rest right aligned.
pub fn print(header: &[&str], rows: &[Vec<String>], text_columns: usize) {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(String::len)
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |fields: &[String]| {
        let mut s = String::new();
        for (i, f) in fields.iter().enumerate() {
            let w = widths[i];
            if i < text_columns {
                s.push_str(&format!("{f:<w$}  "));
            } else {
                s.push_str(&format!("{f:>w$}  "));
            }
        }
        println!("{}", s.trim_end());
    };
    line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for r in rows {
        line(r);
    }
}
