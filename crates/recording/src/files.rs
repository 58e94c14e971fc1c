//! A recording's files: `FILE` is the newest part, `FILE.1` the one before, up to
//! `FILE.keep`; rotation shifts them up by one.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// `FILE.k` (`FILE` itself for 0).
pub(crate) fn part_path(path: &Path, k: u32) -> PathBuf {
    if k == 0 {
        return path.to_path_buf();
    }
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{k}"));
    PathBuf::from(name)
}

/// Make room for a new `FILE`: `FILE.k` → `FILE.k+1` from the oldest down, `FILE` →
/// `FILE.1`, dropping what would go past `FILE.keep` (with `keep` 0, `FILE` itself).
pub(crate) fn shift(path: &Path, keep: u32) -> io::Result<()> {
    remove_if_there(&part_path(path, keep))?;
    for k in (0..keep).rev() {
        rename_if_there(&part_path(path, k), &part_path(path, k + 1))?;
    }
    Ok(())
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn rename_if_there(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::rename(from, to) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// A new file only its owner can read (mode 0600 on Unix): recordings hold cluster data.
pub(crate) fn create_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifting_keeps_keep_old_parts() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("r.ctrec");
        let write = |p: &Path, s: &str| std::fs::write(p, s).expect("write");
        let read = |k| std::fs::read_to_string(part_path(&file, k)).ok();
        write(&file, "a");
        shift(&file, 2).expect("shift");
        write(&file, "b");
        shift(&file, 2).expect("shift");
        write(&file, "c");
        shift(&file, 2).expect("shift");
        assert_eq!((read(0), read(1), read(2), read(3)), (None, Some("c".into()), Some("b".into()), None));
        write(&file, "d");
        shift(&file, 0).expect("shift");
        assert_eq!(read(0), None);
        assert_eq!(part_path(&file, 3).file_name().and_then(|n| n.to_str()), Some("r.ctrec.3"));
    }

    #[cfg(unix)]
    #[test]
    fn new_files_are_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("r.ctrec");
        drop(create_private(&path).expect("create"));
        let mode = std::fs::metadata(&path).expect("metadata").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(create_private(&path).is_err(), "never over an existing file");
    }
}
