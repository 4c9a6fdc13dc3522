//! The origin spec an operator writes (`--origin`, `origin =` in the node
//! config), parsed by `OriginSpec::from_str`. Beyond not panicking: an S3
//! bucket is nonempty and its prefix has no leading or trailing `/`; an
//! HTTP base URL has no trailing `/`, query or fragment; a `file://` spec
//! gives an absolute path.

use coopcache_node::origin::OriginSpec;

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match text.parse::<OriginSpec>() {
        Ok(OriginSpec::S3 { bucket, prefix }) => {
            assert!(!bucket.is_empty());
            assert!(
                !prefix.starts_with('/') && !prefix.ends_with('/'),
                "{prefix:?}"
            );
        }
        Ok(OriginSpec::Http { url }) => {
            assert!(!url.ends_with('/') && !url.contains(['?', '#']), "{url:?}");
        }
        Ok(OriginSpec::Local(path)) => {
            if text.starts_with("file://") {
                assert!(path.is_absolute(), "{path:?}");
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}
