//! A local directory's calls made on the waiting thread, when it may block.
//!
//! A local directory's calls are blocking system calls, which the node's
//! async tasks hand to tokio's blocking pool so as not to stall a runtime
//! worker. A FUSE thread that waits on such a call (`block_on`) is itself
//! a thread that may block, and the hand-off there and back costs two
//! thread wake-ups (about 25 µs on two busy cores), more than the call
//! itself (a `statx`: 5 µs). A `tar xf` of small files makes about ten
//! such calls per file.

use std::cell::Cell;

thread_local! {
    static MAY_BLOCK: Cell<bool> = const { Cell::new(false) };
}

/// Runs `wait` (a `block_on` of origin calls, on a thread that is not a
/// runtime worker) with a local directory's calls made on this thread
/// instead of the blocking pool.
pub fn on_this_thread<R>(wait: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            MAY_BLOCK.set(self.0);
        }
    }
    let _restore = Restore(MAY_BLOCK.replace(true));
    wait()
}

/// Whether this thread's local directory calls are made on it.
pub(super) fn may_block() -> bool {
    MAY_BLOCK.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_set_inside_only_and_restored_after_a_panic() {
        assert!(!may_block());
        assert!(on_this_thread(may_block));
        assert!(on_this_thread(|| on_this_thread(may_block) && may_block()));
        let _ = std::panic::catch_unwind(|| on_this_thread(|| panic!("inside")));
        assert!(!may_block());
    }
}
