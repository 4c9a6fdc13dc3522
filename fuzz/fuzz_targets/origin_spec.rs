//! The origin spec an operator writes (`--origin`, `origin =` in the node
//! config), parsed by `OriginSpec::from_str`. Beyond not panicking: an S3
//! bucket is nonempty and its prefix has no leading or trailing `/`; an
//! HTTP base URL has no trailing `/`, query or fragment; a `file://` spec
//! gives an absolute path.
#![no_main]

use coopcache_node::origin::OriginSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
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
});
