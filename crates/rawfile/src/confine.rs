//! Paths taken from data stay inside their source's root.
//!
//! A dataset is input: a `results_path` in a parquet summary, a file name in a raw tree or a key
//! on the hub can name anything. Every such path goes through here before it is used: lexically
//! ([`relative_key`]: no absolute path, no `..` above the root, one normal form for local files,
//! object-store keys and hub URLs alike), and for files on this machine once more after symlinks
//! are resolved ([`resolve_local`], [`inside`]), since a link inside the root may point out of it.
//!
//! Imports nothing of the crate; `store`, `rawtree` and `peer` confine their paths with it.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Why a path taken from data is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Escape {
    /// Empty, or nothing but separators and `.`.
    Empty,
    /// Absolute (`/…`, `\…`, `C:…`).
    Absolute,
    /// Its `..` components climb above the root.
    Parent,
    /// A NUL byte (no file system takes it; some truncate at it).
    Nul,
    /// After resolving symlinks it lies outside the root.
    Symlink { resolved: PathBuf },
}

impl fmt::Display for Escape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Escape::Empty => f.write_str("the path is empty"),
            Escape::Absolute => f.write_str("an absolute path leaves the dataset root"),
            Escape::Parent => f.write_str("its '..' components climb above the dataset root"),
            Escape::Nul => f.write_str("the path contains a NUL byte"),
            Escape::Symlink { .. } => {
                f.write_str("a symbolic link on the way resolves outside the dataset root")
            }
        }
    }
}

impl std::error::Error for Escape {}

/// The normal form of a relative path from data: components joined by `/`, with `\` taken as a
/// separator too, empty and `.` components dropped and `..` resolved against the components
/// before it. Refused when it is absolute or its `..` climb above the root.
pub fn relative_key(stored: &str) -> Result<String, Escape> {
    if stored.contains('\0') {
        return Err(Escape::Nul);
    }
    if stored.starts_with(['/', '\\']) {
        return Err(Escape::Absolute);
    }
    let mut parts: Vec<&str> = Vec::new();
    for (i, part) in stored.split(['/', '\\']).enumerate() {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(Escape::Parent);
                }
            }
            // A drive (`C:`) as the first component is a Windows absolute path.
            p if i == 0 && drive(p) => return Err(Escape::Absolute),
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(Escape::Empty);
    }
    // Nor as the first component once `..` are resolved (`x\..\C:\y`): fuzzing found such a
    // normal form, which a Windows join would take as absolute.
    if drive(parts[0]) {
        return Err(Escape::Absolute);
    }
    Ok(parts.join("/"))
}

/// A Windows drive (`C:`).
fn drive(part: &str) -> bool {
    part.len() == 2 && part.ends_with(':') && part.as_bytes()[0].is_ascii_alphabetic()
}

/// Whether `path`, with every symlink resolved, lies inside `root` (also resolved). A path that
/// does not exist yet is judged by its deepest existing ancestor (what it would be created in).
pub fn inside(root: &Path, path: &Path) -> Result<(), Escape> {
    match root.canonicalize() {
        Ok(root) => inside_resolved(&root, path),
        // No root to be inside of: nothing under it exists either.
        Err(_) => Ok(()),
    }
}

/// [`inside`] for a root already resolved (`root.canonicalize()`), for callers that check many
/// paths under one root.
pub fn inside_resolved(root: &Path, path: &Path) -> Result<(), Escape> {
    let mut probe = path;
    let resolved = loop {
        match probe.canonicalize() {
            Ok(r) => break r,
            Err(_) => match probe.parent() {
                Some(p) => probe = p,
                None => return Ok(()),
            },
        }
    };
    if resolved.starts_with(root) {
        Ok(())
    } else {
        Err(Escape::Symlink { resolved })
    }
}

/// `root` joined with the relative data path `stored`, checked lexically and, for what exists,
/// after resolving symlinks.
pub fn resolve_local(root: &Path, stored: &str) -> Result<PathBuf, Escape> {
    let key = relative_key(stored)?;
    let path = root.join(&key);
    inside(root, &path)?;
    Ok(path)
}

/// Whether a path found on disk (by a directory walk, or built from directory names) is inside
/// `root` by its components, before symlinks: no `..`, and under `root`.
pub fn lexically_inside(root: &Path, path: &Path) -> bool {
    path.starts_with(root) && !path.components().any(|c| matches!(c, Component::ParentDir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_keys_are_normalised() {
        assert_eq!(
            relative_key("llm/a/results.json").unwrap(),
            "llm/a/results.json"
        );
        assert_eq!(
            relative_key("./llm//a/./results.json").unwrap(),
            "llm/a/results.json"
        );
        assert_eq!(
            relative_key("llm\\a\\results.json").unwrap(),
            "llm/a/results.json"
        );
        assert_eq!(
            relative_key("llm/x/../a/results.json").unwrap(),
            "llm/a/results.json"
        );
        // Percent signs are file-name characters here; URLs encode them (hub::resolve_url).
        assert_eq!(relative_key("%2e%2e/x").unwrap(), "%2e%2e/x");
    }

    #[test]
    fn escapes_are_refused() {
        assert_eq!(relative_key("../../../../etc/passwd"), Err(Escape::Parent));
        assert_eq!(relative_key("llm/../../etc/passwd"), Err(Escape::Parent));
        assert_eq!(relative_key("llm\\..\\..\\x"), Err(Escape::Parent));
        assert_eq!(relative_key("/etc/passwd"), Err(Escape::Absolute));
        assert_eq!(relative_key("\\\\host\\share\\x"), Err(Escape::Absolute));
        assert_eq!(relative_key("C:\\Windows\\win.ini"), Err(Escape::Absolute));
        assert_eq!(relative_key("c:/x"), Err(Escape::Absolute));
        // A drive that comes first only once `..` are resolved (found by fuzzing).
        assert_eq!(relative_key("x\\..\\C:\\y"), Err(Escape::Absolute));
        assert_eq!(relative_key("a/../c:"), Err(Escape::Absolute));
        assert_eq!(relative_key("a/c:/b").unwrap(), "a/c:/b");
        assert_eq!(relative_key(""), Err(Escape::Empty));
        assert_eq!(relative_key("./"), Err(Escape::Empty));
        assert_eq!(relative_key("a/.."), Err(Escape::Empty));
        assert_eq!(relative_key("a\0b"), Err(Escape::Nul));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_root_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("llm")).unwrap();
        std::fs::write(root.path().join("llm/ok.json"), "{}").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            root.path().join("llm/leak.json"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("dir")).unwrap();
        std::os::unix::fs::symlink(
            root.path().join("llm/ok.json"),
            root.path().join("llm/alias.json"),
        )
        .unwrap();

        assert!(resolve_local(root.path(), "llm/ok.json").is_ok());
        assert!(
            resolve_local(root.path(), "llm/alias.json").is_ok(),
            "a link inside the root"
        );
        assert!(matches!(
            resolve_local(root.path(), "llm/leak.json"),
            Err(Escape::Symlink { .. })
        ));
        assert!(matches!(
            resolve_local(root.path(), "dir/secret"),
            Err(Escape::Symlink { .. })
        ));
        // Not there yet: judged by the directory it would be in.
        assert!(resolve_local(root.path(), "llm/missing.json").is_ok());
        assert!(matches!(
            resolve_local(root.path(), "dir/missing.json"),
            Err(Escape::Symlink { .. })
        ));
    }
}
