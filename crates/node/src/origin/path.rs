//! Checking user-supplied paths before they reach the origin.
//!
//! A path arrives from a client (the HTTP gateway, the CLI) and names a file
//! relative to the origin's root. It must never name anything outside it.
//! `object_store` already refuses `.` and `..` parts, but its message is
//! about "illegal character sequences"; checking here first gives the user a
//! message naming the path and the rule, and also refuses forms that are
//! harmless to `object_store` but dangerous to anything downstream that
//! decodes them again (`%2e%2e`, backslashes).

use object_store::path::Path;

use super::OriginError;

/// Checks a user-supplied relative path and turns it into a store path.
///
/// Refused: the empty path, absolute paths (`/etc/passwd`), empty parts
/// (`a//b`, a trailing `/`), `.` and `..` parts, NUL and other control
/// characters, backslashes (a Windows separator or an escape), and parts that
/// percent-decode to `.`, `..` or contain a separator (`%2e%2e`, `a%2fb`).
/// The error names the path and says it must stay inside the origin.
///
/// Other characters (spaces, `%` not forming a dangerous escape, non-ASCII)
/// are kept literally: the file `100% done.txt` is the path `100% done.txt`.
pub fn check_path(path: &str) -> Result<Path, OriginError> {
    refuse_whole(path).map_err(|why| bad(path, why))?;
    for part in path.split('/') {
        refuse_part(part).map_err(|why| bad(path, why))?;
    }
    Path::parse(path).map_err(|e| bad(path, e.to_string()))
}

fn bad(path: &str, why: impl Into<String>) -> OriginError {
    OriginError::BadPath {
        path: path.to_owned(),
        why: why.into(),
        too_long: false,
    }
}

/// Rules about the path as a whole.
fn refuse_whole(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("it is empty".into());
    }
    if path.starts_with('/') {
        return Err("it is absolute".into());
    }
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return Err(format!("it contains the control character {c:?}"));
    }
    if path.contains('\\') {
        return Err("it contains a backslash".into());
    }
    Ok(())
}

/// Rules about one `/`-separated part, literally and percent-decoded.
fn refuse_part(part: &str) -> Result<(), String> {
    if part.is_empty() {
        return Err("it has an empty part (`//` or a trailing `/`)".into());
    }
    let decoded = percent_decode(part);
    if part != decoded && decoded.contains(['/', '\\', '\0']) {
        return Err(format!("its part {part:?} decodes to a separator"));
    }
    match decoded.as_str() {
        "." | ".." => Err(format!("its part {part:?} walks the directory tree")),
        _ => Ok(()),
    }
}

/// Decodes `%XX` escapes, leaving malformed ones as they are.
fn percent_decode(part: &str) -> String {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = bytes
            .get(i + 1..i + 3)
            .filter(|hex| bytes[i] == b'%' && hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
