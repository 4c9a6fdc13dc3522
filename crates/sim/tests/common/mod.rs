//! What the sim crate's tests on the shared traces have in common.

use std::path::PathBuf;

/// The shared traces (`../shared/traces` beside the checkout, or
/// `$COOPCACHE_TRACES`) if `needed` is among them. Without it the test
/// fails saying where they go, unless `COOPCACHE_ALLOW_SKIP=1` asks for a
/// skip (then `None`, and a message).
pub(crate) fn traces_dir(needed: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("COOPCACHE_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces")
        });
    if dir.join(needed).exists() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("COOPCACHE_ALLOW_SKIP").is_some(),
        "{} has no {needed}: the shared traces must be beside the checkout (../shared, or COOPCACHE_TRACES), or set COOPCACHE_ALLOW_SKIP=1 to skip",
        dir.display()
    );
    eprintln!(
        "skipping: no traces at {} (set COOPCACHE_TRACES)",
        dir.display()
    );
    None
}
