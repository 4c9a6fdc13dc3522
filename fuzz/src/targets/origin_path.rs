//! A path a client asks for (`GET /v1/files/PATH`, the CLI), checked by
//! `origin::check_path` before it reaches the origin. Beyond not
//! panicking: an accepted path is relative, has no empty, `.` or `..`
//! part, literally or percent-decoded, and no backslash or control
//! character, so it cannot name anything outside the origin.

use coopcache_node::origin::check_path;

/// `%XX` escapes decoded, the rest kept (a second decoder downstream).
fn decode(part: &str) -> Vec<u8> {
    let b = part.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex
            .filter(|_| b[i] == b'%')
            .map(|h| u8::from_str_radix(h, 16))
        {
            Some(Ok(v)) if hex.is_some_and(|h| h.bytes().all(|c| c.is_ascii_hexdigit())) => {
                out.push(v);
                i += 3;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(path) = check_path(text) else {
        return;
    };
    assert_eq!(path.as_ref(), text, "the store path differs from the input");
    assert!(!text.starts_with('/') && !text.contains('\\'), "{text:?}");
    assert!(!text.chars().any(char::is_control), "{text:?}");
    for part in text.split('/') {
        let decoded = decode(part);
        assert!(!part.is_empty(), "{text:?} has an empty part");
        assert!(
            decoded != b"." && decoded != b"..",
            "{text:?} walks the tree"
        );
        assert!(
            !decoded.contains(&b'/') && !decoded.contains(&b'\\') && !decoded.contains(&0),
            "{text:?} decodes to a separator"
        );
    }
}
