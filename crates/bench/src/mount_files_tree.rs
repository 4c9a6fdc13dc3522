//! What the files phase (`mount_files.rs`) writes, and the checks of what
//! it wrote: a tree of small seeded files with its tar archive, a big
//! seeded file in memory (`/dev/shm`) for the sequential writers, and
//! comparisons of a copy with them, byte for byte. A benchmark that wrote
//! wrong bytes must fail, not report a speed: every check fails on the
//! first file that differs, naming it.

use super::common::{rng, wrong_bytes};
use anyhow::{Context, Result, bail};
use rand::Rng;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Directories the small files are spread over.
pub(super) const DIRS: u32 = 30;
/// The small files' sizes: uniform in this range, as a source tree's.
const SMALL_SIZES: std::ops::RangeInclusive<u64> = 100..=8192;
const MIB: usize = 1 << 20;

/// The phase's input, built once for every system and pass.
pub(super) struct Source {
    /// The tree `rsync -a` copies and the archive holds.
    pub tree: PathBuf,
    /// Its files, relative to `tree`.
    pub files: Vec<PathBuf>,
    /// The small files' bytes in all.
    pub tree_bytes: u64,
    /// `tar cf` of the tree's directories (when tar is here).
    pub archive: Option<PathBuf>,
    /// The big file the writers copy, in memory, and its size.
    pub big: PathBuf,
    pub big_size: u64,
    /// Where `big` lives: removed with the source.
    _big_dir: tempfile::TempDir,
}

impl Source {
    /// Writes `files` small files of seeded sizes and bytes in `DIRS`
    /// directories under `dir/src`, their archive if `tar`, and
    /// `big_size` seeded bytes in /dev/shm (else in `dir`), so that the
    /// writers read from memory and time only the writing.
    pub(super) fn build(
        dir: &Path,
        files: u32,
        big_size: u64,
        seed: u64,
        tar: bool,
    ) -> Result<Self> {
        let tree = dir.join("src");
        let mut r = rng(seed, 40);
        let (mut names, mut tree_bytes) = (Vec::new(), 0);
        for i in 0..files {
            let rel = PathBuf::from(format!("d{:02}/f{i:05}.dat", i % DIRS));
            let mut bytes = vec![0u8; usize::try_from(r.random_range(SMALL_SIZES))?];
            r.fill(&mut bytes[..]);
            let path = tree.join(&rel);
            std::fs::create_dir_all(path.parent().context("a file's directory")?)?;
            std::fs::write(&path, &bytes)?;
            tree_bytes += bytes.len() as u64;
            names.push(rel);
        }
        let archive = if tar {
            let archive = dir.join("small.tar");
            let mut cmd = Command::new("tar");
            cmd.arg("cf").arg(&archive).arg("-C").arg(&tree);
            cmd.args((0..DIRS.min(files)).map(|d| format!("d{d:02}")));
            let out = cmd.output().context("running tar")?;
            if !out.status.success() {
                bail!(
                    "tar cf {}: {}",
                    archive.display(),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Some(archive)
        } else {
            None
        };
        let shm = Path::new("/dev/shm");
        let big_dir = tempfile::Builder::new()
            .prefix("coopcache-bench-files-")
            .tempdir_in(if shm.is_dir() { shm } else { dir })?;
        let big = big_dir.path().join("big.bin");
        let mut out = std::io::BufWriter::new(std::fs::File::create(&big)?);
        let mut r = rng(seed, 41);
        let mut chunk = vec![0u8; MIB];
        let mut left = big_size;
        while left > 0 {
            let n = left.min(MIB as u64) as usize;
            r.fill(&mut chunk[..n]);
            out.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        out.flush()?;
        Ok(Source {
            tree,
            files: names,
            tree_bytes,
            archive,
            big,
            big_size,
            _big_dir: big_dir,
        })
    }

    /// Checks that `copy` holds the tree: every file with the source's
    /// bytes and no other file. The bytes checked.
    pub(super) fn check_tree(&self, copy: &Path) -> Result<u64> {
        let found = count_files(copy)?;
        if found != self.files.len() as u64 {
            bail!(
                "{} holds {found} files, the source {}",
                copy.display(),
                self.files.len()
            );
        }
        let mut checked = 0;
        for rel in &self.files {
            let want = std::fs::read(self.tree.join(rel))?;
            let path = copy.join(rel);
            let got =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let wrong = wrong_bytes(&got, &want);
            if wrong > 0 {
                bail!(
                    "{}: {wrong} wrong bytes ({} bytes, the source's {})",
                    path.display(),
                    got.len(),
                    want.len()
                );
            }
            checked += got.len() as u64;
        }
        Ok(checked)
    }

    /// Checks that `copy` holds the big file's bytes. The bytes checked.
    pub(super) fn check_big(&self, copy: &Path) -> Result<u64> {
        let open =
            |p: &Path| std::fs::File::open(p).with_context(|| format!("opening {}", p.display()));
        let (mut want, mut got) = (open(&self.big)?, open(copy)?);
        let (mut a, mut b) = (vec![0u8; MIB], vec![0u8; MIB]);
        let (mut checked, mut wrong) = (0u64, 0u64);
        loop {
            let n = read_full(&mut want, &mut a)?;
            let m = read_full(&mut got, &mut b)
                .with_context(|| format!("reading {}", copy.display()))?;
            wrong += wrong_bytes(&b[..m], &a[..n]);
            checked += m as u64;
            if n == 0 && m == 0 {
                break;
            }
        }
        if wrong > 0 {
            bail!(
                "{}: {wrong} wrong bytes ({checked} bytes, the source's {})",
                copy.display(),
                self.big_size
            );
        }
        Ok(checked)
    }
}

/// Reads until `buf` is full or the file ends: the bytes read.
fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Files (anything not a directory) under `dir`, at any depth.
fn count_files(dir: &Path) -> Result<u64> {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            n += count_files(&entry.path())?;
        } else {
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies `from`'s files to `to` (the tree's two levels).
    fn copy_tree(from: &Path, to: &Path) {
        for d in std::fs::read_dir(from).unwrap() {
            let d = d.unwrap().path();
            let into = to.join(d.file_name().unwrap());
            std::fs::create_dir_all(&into).unwrap();
            for f in std::fs::read_dir(&d).unwrap() {
                let f = f.unwrap().path();
                std::fs::copy(&f, into.join(f.file_name().unwrap())).unwrap();
            }
        }
    }

    #[test]
    fn a_copy_passes_and_one_wrong_byte_or_file_fails_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let src = Source::build(dir.path(), 40, 3 << 20, 7, false).unwrap();
        assert_eq!(src.files.len(), 40);
        let copy = dir.path().join("copy");
        copy_tree(&src.tree, &copy);
        assert_eq!(src.check_tree(&copy).unwrap(), src.tree_bytes);

        let victim = copy.join(&src.files[3]);
        let mut bytes = std::fs::read(&victim).unwrap();
        bytes[0] ^= 1;
        std::fs::write(&victim, &bytes).unwrap();
        let err = format!("{:#}", src.check_tree(&copy).unwrap_err());
        assert!(err.contains("1 wrong bytes"), "{err}");
        assert!(err.contains(&*src.files[3].to_string_lossy()), "{err}");
        std::fs::write(copy.join("d00/extra"), b"x").unwrap();
        assert!(src.check_tree(&copy).is_err(), "an extra file");

        let big = dir.path().join("big");
        std::fs::copy(&src.big, &big).unwrap();
        assert_eq!(src.check_big(&big).unwrap(), 3 << 20);
        let f = std::fs::OpenOptions::new().write(true).open(&big).unwrap();
        f.set_len((3 << 20) - 1).unwrap();
        assert!(src.check_big(&big).is_err(), "a short copy");
    }
}
