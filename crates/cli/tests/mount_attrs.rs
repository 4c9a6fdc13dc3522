//! A new file's attributes lent to the kernel while only its writer's
//! draft has it (`crates/mount/src/fs/drafted.rs`) are taken back when
//! the draft is committed: a change another node makes right after shows
//! on the writer's node at once (its size to `stat`, its bytes to a read,
//! which the kernel caps at the size it holds), not a second later when
//! the lent attributes would expire.

use crate::mounts::*;
use std::io::Write;

#[test]
fn a_new_files_lent_attributes_go_at_its_commit() {
    let Some(work) = Work::new(&["origin", "a", "b"]) else {
        return;
    };
    let origin = work.join("origin");
    let (a_dir, b_dir) = (work.join("a"), work.join("b"));
    let a = Mount::start_named(work.path(), &origin, &a_dir, "a", None);
    let b = Mount::start_named(work.path(), &origin, &b_dir, "b", Some(&a));
    let longer = b"ten bytes!".as_slice();

    // Committed by the close.
    let mut f = std::fs::File::create(a_dir.join("closed")).unwrap();
    f.write_all(b"abc").unwrap();
    // The kernel asks for the size after the write, and is lent it.
    assert_eq!(f.metadata().unwrap().len(), 3);
    drop(f);
    std::fs::write(b_dir.join("closed"), longer).unwrap();
    assert_eq!(std::fs::metadata(a_dir.join("closed")).unwrap().len(), 10);
    assert_eq!(std::fs::read(a_dir.join("closed")).unwrap(), longer);

    // Committed by a rename while still open (as `mv` of a file being
    // written), then changed on the other node.
    let mut f = std::fs::File::create(a_dir.join("open")).unwrap();
    f.write_all(b"abc").unwrap();
    assert_eq!(f.metadata().unwrap().len(), 3);
    std::fs::rename(a_dir.join("open"), a_dir.join("moved")).unwrap();
    std::fs::write(b_dir.join("moved"), longer).unwrap();
    assert_eq!(std::fs::metadata(a_dir.join("moved")).unwrap().len(), 10);
    assert_eq!(f.metadata().unwrap().len(), 10, "fstat of the writer");
    assert_eq!(std::fs::read(a_dir.join("moved")).unwrap(), longer);
    drop(f);

    // Committed by one of two writers' closes; the other's descriptor
    // holds the inode, so its `fstat` asks no name: only the dropped
    // attributes make the kernel ask again.
    let mut f = std::fs::File::create(a_dir.join("two")).unwrap();
    f.write_all(b"abc").unwrap();
    assert_eq!(f.metadata().unwrap().len(), 3);
    let other = std::fs::File::options()
        .write(true)
        .open(a_dir.join("two"))
        .unwrap();
    drop(f);
    std::fs::write(b_dir.join("two"), longer).unwrap();
    assert_eq!(other.metadata().unwrap().len(), 10, "fstat of the other");
    drop(other);

    // A file `tar` and `rsync` would write: created, written, its time
    // and mode set, closed; read whole on the other node.
    let mut f = std::fs::File::create(a_dir.join("tarred")).unwrap();
    f.write_all(&[7; 5000]).unwrap();
    let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_500_000_000);
    f.set_modified(past).unwrap();
    assert_eq!(f.metadata().unwrap().modified().unwrap(), past);
    drop(f);
    let seen = std::fs::metadata(b_dir.join("tarred")).unwrap();
    assert_eq!((seen.len(), seen.modified().unwrap()), (5000, past));
    assert_eq!(std::fs::read(b_dir.join("tarred")).unwrap(), [7; 5000]);

    assert!(b.terminate().success());
    assert!(a.terminate().success());
}
