//! `read_file` and `write_file`, confined to the workspace directory.
//!
//! Resolution ([`resolve_in_workspace`]): relative paths are taken from the
//! workspace; an absolute path is accepted only when it lies inside the
//! workspace; `..` is applied lexically and may not climb above the
//! workspace; then the path is walked component by component from the
//! canonical workspace root, and every symlink met is resolved and must stay
//! inside the workspace (dangling symlinks are refused). The returned path
//! contains no symlink at the time of the check; `read_file` opens it.
//!
//! `write_file` follows no link at all (SPEC §17.2): the same lexical checks,
//! then [`zeroclaw_checkpoint::beneath`] opens every component from a
//! descriptor of the workspace with `O_NOFOLLOW` and creates the file
//! relative to its parent's descriptor. A symlink anywhere in the path — one
//! leading back inside the workspace too — is refused, so a program racing
//! the write by swapping a component for a link gets a refusal, never a
//! write elsewhere.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::{ToolLimits, str_arg};

/// Resolves `input` to a path inside `workspace`, or explains the refusal.
pub fn resolve_in_workspace(workspace: &Path, input: &str) -> Result<PathBuf, String> {
    let (root, parts) = workspace_parts(workspace, input)?;
    let mut cur = root.clone();
    let mut missing = false;
    for part in parts {
        let cand = cur.join(&part);
        if missing {
            cur = cand;
            continue;
        }
        match std::fs::symlink_metadata(&cand) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::canonicalize(&cand).map_err(|_| {
                    format!(
                        "Refused: {input}: the symlink {} cannot be resolved",
                        cand.display()
                    )
                })?;
                if !target.starts_with(&root) {
                    return Err(format!(
                        "Refused: {input}: the symlink {} leads outside the workspace (to {})",
                        cand.display(),
                        target.display()
                    ));
                }
                cur = target;
            }
            Ok(_) => cur = cand,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                missing = true;
                cur = cand;
            }
            Err(e) => return Err(format!("Error: cannot access {}: {e}", cand.display())),
        }
    }
    Ok(cur)
}

/// The canonical workspace root and `input`'s components beneath it (`..` applied
/// lexically, never above the root), or the refusal.
fn workspace_parts(workspace: &Path, input: &str) -> Result<(PathBuf, Vec<OsString>), String> {
    if input.is_empty() {
        return Err("Error: the path is empty".to_string());
    }
    let root = workspace.canonicalize().map_err(|e| {
        format!(
            "Error: the workspace {} is not accessible: {e}",
            workspace.display()
        )
    })?;
    let p = Path::new(input);
    let rel: &Path = if p.is_absolute() {
        match p.strip_prefix(workspace).or_else(|_| p.strip_prefix(&root)) {
            Ok(r) => r,
            Err(_) => {
                return Err(format!(
                    "Refused: {input} is outside the workspace ({}); only paths inside the workspace are allowed",
                    root.display()
                ));
            }
        }
    } else {
        p
    };
    let parts = lexical_parts(input, rel, &root)?;
    Ok((root, parts))
}

fn lexical_parts(input: &str, rel: &Path, root: &Path) -> Result<Vec<OsString>, String> {
    let mut parts: Vec<OsString> = Vec::new();
    for c in rel.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "Refused: {input} uses `..` to leave the workspace ({})",
                        root.display()
                    ));
                }
            }
            Component::Normal(s) => parts.push(s.to_os_string()),
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("Refused: {input} is not a workspace path"));
            }
        }
    }
    Ok(parts)
}

/// `read_file {path}`.
pub async fn read_file(workspace: &Path, args: &Value, limits: &ToolLimits) -> String {
    let path = match str_arg(args, "path", "read_file") {
        Ok(p) => p.to_string(),
        Err(e) => return e,
    };
    let workspace = workspace.to_path_buf();
    let cap = limits.read_file_cap;
    run_blocking(move || read_blocking(&workspace, &path, cap)).await
}

fn read_blocking(workspace: &Path, path: &str, cap: usize) -> String {
    use std::io::Read;
    let full = match resolve_in_workspace(workspace, path) {
        Ok(p) => p,
        Err(e) => return e,
    };
    if full.is_dir() {
        return format!("Error: {path} is a directory");
    }
    let file = match std::fs::File::open(&full) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return format!("Error: {path} does not exist");
        }
        Err(e) => return format!("Error: cannot read {path}: {e}"),
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut buf = Vec::new();
    if let Err(e) = file.take(cap as u64).read_to_end(&mut buf) {
        return format!("Error: cannot read {path}: {e}");
    }
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if size > buf.len() as u64 {
        text.push_str(&format!(
            "\n[file truncated: showing the first {} of {size} bytes]",
            buf.len()
        ));
    }
    text
}

/// `write_file {path, content}`.
pub async fn write_file(workspace: &Path, args: &Value) -> String {
    let path = match str_arg(args, "path", "write_file") {
        Ok(p) => p.to_string(),
        Err(e) => return e,
    };
    let content = match str_arg(args, "content", "write_file") {
        Ok(c) => c.to_string(),
        Err(e) => return e,
    };
    let workspace = workspace.to_path_buf();
    run_blocking(move || write_blocking(&workspace, &path, &content)).await
}

#[cfg(unix)]
fn write_blocking(workspace: &Path, path: &str, content: &str) -> String {
    use zeroclaw_checkpoint::beneath::{Error, Root};
    if let Err(e) = std::fs::create_dir_all(workspace) {
        return format!(
            "Error: cannot create the workspace {}: {e}",
            workspace.display()
        );
    }
    let (root, parts) = match workspace_parts(workspace, path) {
        Ok(found) => found,
        Err(e) => return e,
    };
    if parts.is_empty() {
        return format!("Error: {path} is a directory");
    }
    let opened = match Root::open(&root) {
        Ok(r) => r,
        Err(e) => {
            return format!(
                "Error: the workspace {} is not accessible: {e}",
                root.display()
            );
        }
    };
    match opened.write(&parts, content.as_bytes(), true) {
        Ok(()) => format!("Wrote {} bytes to {path}", content.len()),
        Err(e @ Error::Link { .. }) => format!("Refused: {path}: {e}"),
        Err(Error::NotFileOrDir { at }) => {
            format!("Error: cannot write {path}: {at} is not a regular file or directory")
        }
        Err(e @ Error::Io { .. }) => format!("Error: cannot write {path}: {e}"),
    }
}

#[cfg(not(unix))]
fn write_blocking(workspace: &Path, path: &str, content: &str) -> String {
    if let Err(e) = std::fs::create_dir_all(workspace) {
        return format!(
            "Error: cannot create the workspace {}: {e}",
            workspace.display()
        );
    }
    let full = match resolve_in_workspace(workspace, path) {
        Ok(p) => p,
        Err(e) => return e,
    };
    if full.is_dir() {
        return format!("Error: {path} is a directory");
    }
    if let Some(parent) = full.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return format!("Error: cannot create the directories of {path}: {e}");
    }
    match std::fs::write(&full, content) {
        Ok(()) => format!("Wrote {} bytes to {path}", content.len()),
        Err(e) => format!("Error: cannot write {path}: {e}"),
    }
}

async fn run_blocking(f: impl FnOnce() -> String + Send + 'static) -> String {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| format!("Error: the file tool failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ws() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        (dir, ws)
    }

    #[tokio::test]
    async fn write_then_read_relative_and_absolute() {
        let (_d, ws) = ws();
        let l = ToolLimits::default();
        let r = write_file(&ws, &json!({"path": "a/b/c.txt", "content": "hello"})).await;
        assert_eq!(r, "Wrote 5 bytes to a/b/c.txt");
        assert_eq!(
            std::fs::read_to_string(ws.join("a/b/c.txt")).unwrap(),
            "hello"
        );
        assert_eq!(
            read_file(&ws, &json!({"path": "a/b/c.txt"}), &l).await,
            "hello"
        );
        assert_eq!(
            read_file(&ws, &json!({"path": "./a/x/../b/c.txt"}), &l).await,
            "hello"
        );
        let abs = ws.join("a/b/c.txt");
        assert_eq!(
            read_file(&ws, &json!({"path": abs.to_str().unwrap()}), &l).await,
            "hello"
        );
        assert!(
            read_file(&ws, &json!({"path": "nope"}), &l)
                .await
                .contains("does not exist")
        );
        assert!(read_file(&ws, &json!({}), &l).await.contains("`path`"));
    }

    #[tokio::test]
    async fn escapes_are_refused() {
        let (d, ws) = ws();
        let l = ToolLimits::default();
        std::fs::write(d.path().join("x"), "secret").unwrap();
        let r = read_file(&ws, &json!({"path": "../x"}), &l).await;
        assert!(r.starts_with("Refused:") && r.contains(".."), "{r}");
        let r = read_file(&ws, &json!({"path": "a/../../x"}), &l).await;
        assert!(r.starts_with("Refused:"), "{r}");
        let r = read_file(&ws, &json!({"path": "/etc/passwd"}), &l).await;
        assert!(r.starts_with("Refused:") && r.contains("outside"), "{r}");
        let r = write_file(&ws, &json!({"path": "../y", "content": "x"})).await;
        assert!(r.starts_with("Refused:"), "{r}");
        assert!(!d.path().join("y").exists());

        std::os::unix::fs::symlink("/tmp", ws.join("link")).unwrap();
        let r = read_file(&ws, &json!({"path": "link/whatever"}), &l).await;
        assert!(r.starts_with("Refused:") && r.contains("symlink"), "{r}");
        let r = write_file(&ws, &json!({"path": "link/new.txt", "content": "x"})).await;
        assert!(r.starts_with("Refused:") && r.contains("symlink"), "{r}");

        std::os::unix::fs::symlink(d.path().join("x"), ws.join("filelink")).unwrap();
        let r = read_file(&ws, &json!({"path": "filelink"}), &l).await;
        assert!(r.starts_with("Refused:"), "{r}");

        std::os::unix::fs::symlink(d.path().join("missing"), ws.join("dangling")).unwrap();
        let r = write_file(&ws, &json!({"path": "dangling", "content": "x"})).await;
        assert!(r.starts_with("Refused:"), "{r}");
        assert!(!d.path().join("missing").exists());
    }

    #[tokio::test]
    async fn symlinks_inside_are_followed() {
        let (_d, ws) = ws();
        let l = ToolLimits::default();
        std::fs::create_dir(ws.join("real")).unwrap();
        std::fs::write(ws.join("real/f"), "inside").unwrap();
        std::os::unix::fs::symlink(ws.join("real"), ws.join("alias")).unwrap();
        assert_eq!(
            read_file(&ws, &json!({"path": "alias/f"}), &l).await,
            "inside"
        );
        // write_file follows no link, even one that stays inside (SPEC §17.2).
        let r = write_file(&ws, &json!({"path": "alias/f", "content": "x"})).await;
        assert!(r.starts_with("Refused:") && r.contains("symlink"), "{r}");
        assert_eq!(
            std::fs::read_to_string(ws.join("real/f")).unwrap(),
            "inside"
        );
        let r = write_file(&ws, &json!({"path": "real", "content": "x"})).await;
        assert!(r.starts_with("Error:"), "{r}");
        let r = write_file(&ws, &json!({"path": ".", "content": "x"})).await;
        assert!(r.contains("is a directory"), "{r}");
    }

    #[tokio::test]
    async fn read_is_capped() {
        let (_d, ws) = ws();
        let l = ToolLimits {
            read_file_cap: 4,
            ..ToolLimits::default()
        };
        std::fs::write(ws.join("big"), "abcdefgh").unwrap();
        assert_eq!(
            read_file(&ws, &json!({"path": "big"}), &l).await,
            "abcd\n[file truncated: showing the first 4 of 8 bytes]"
        );
    }
}
