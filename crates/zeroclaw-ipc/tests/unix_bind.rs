//! The SPEC §2 Unix bind sequence against the real filesystem: directory and socket modes,
//! the lock, stale and foreign files at the socket path, length limit, inode-checked unlink,
//! and peer labels from real connections. Tests run as root here, so modes are checked
//! through metadata, never through access denial.
#![cfg(unix)]

use std::fs::{self, Permissions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zeroclaw_ipc::{
    BindOptions, Dirs, IpcError, LocalListener, SUN_PATH_MAX, connect, endpoint_path_with,
    lock_path,
};

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn is_socket(path: &Path) -> bool {
    fs::symlink_metadata(path)
        .map(|m| m.file_type().is_socket())
        .unwrap_or(false)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

fn leftovers(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".zc"))
        .collect()
}

/// Connects, accepts, and checks bytes flow both ways through the split halves.
async fn round_trip(listener: &LocalListener) {
    let (client, server) = tokio::join!(connect(listener.path()), listener.accept());
    let (mut client, mut server) = (client.unwrap(), server.unwrap());
    client.writer.write_all(b"ping\n").await.unwrap();
    let mut buf = [0u8; 5];
    server.reader.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping\n");
    server.writer.write_all(b"pong\n").await.unwrap();
    client.reader.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"pong\n");
}

#[tokio::test]
async fn bind_creates_parent_0700_and_socket_0600() {
    let tmp = tempfile::tempdir().unwrap();
    let parent = tmp.path().join("a/data");
    let path = parent.join("daemon.sock");
    let listener = LocalListener::bind(&path).unwrap();
    assert_eq!(listener.path(), path);
    assert_eq!(mode(&parent), 0o700);
    assert_eq!(mode(&tmp.path().join("a")), 0o700);
    assert!(is_socket(&path));
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&lock_path(&path)), 0o600);
    round_trip(&listener).await;
}

#[tokio::test]
async fn default_data_dir_is_tightened() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = Dirs::from_config_dir(tmp.path()).unwrap();
    fs::create_dir(&dirs.data_dir).unwrap();
    fs::set_permissions(&dirs.data_dir, Permissions::from_mode(0o775)).unwrap();
    let path = endpoint_path_with(&dirs, &|_| None).unwrap();
    let options = BindOptions::for_endpoint(&dirs, &path);
    assert!(options.tighten_parent);
    let listener = LocalListener::bind_with(&path, options).unwrap();
    assert_eq!(mode(&dirs.data_dir), 0o700);
    assert_eq!(mode(&path), 0o600);
    round_trip(&listener).await;
}

#[tokio::test]
async fn own_traversable_parent_is_used_as_is_with_a_0600_socket() {
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), Permissions::from_mode(0o755)).unwrap();
    let path = tmp.path().join("zc.sock");
    let listener = LocalListener::bind(&path).unwrap();
    assert_eq!(mode(tmp.path()), 0o755, "a custom parent is not changed");
    assert_eq!(mode(&path), 0o600);
    assert!(leftovers(tmp.path()).is_empty());
    round_trip(&listener).await;
}

#[tokio::test]
async fn sticky_world_writable_parent_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), Permissions::from_mode(0o1777)).unwrap();
    let path = tmp.path().join("zc.sock");
    let listener = LocalListener::bind(&path).unwrap();
    assert_eq!(mode(tmp.path()), 0o1777);
    assert!(is_socket(&path));
    assert_eq!(mode(&path), 0o600);
    assert!(leftovers(tmp.path()).is_empty(), "staging dir removed");
    round_trip(&listener).await;
    drop(listener);
    assert!(!path.exists());
}

#[tokio::test]
async fn taken_staging_names_are_skipped_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), Permissions::from_mode(0o1777)).unwrap();
    let squatted = tmp.path().join(".zc0");
    fs::create_dir(&squatted).unwrap();
    fs::write(squatted.join("s"), "not ours").unwrap();
    let path = tmp.path().join("zc.sock");
    let listener = LocalListener::bind(&path).unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(fs::read(squatted.join("s")).unwrap(), b"not ours");
    assert_eq!(leftovers(tmp.path()), vec![squatted]);
    round_trip(&listener).await;
}

#[tokio::test]
async fn shared_parent_without_room_for_staging_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    // `<parent>/z` fits in sun_path, but `<parent>/.zc0/s` would not.
    let parent = path_of_len(tmp.path(), SUN_PATH_MAX - 3);
    fs::create_dir_all(&parent).unwrap();
    fs::set_permissions(&parent, Permissions::from_mode(0o1777)).unwrap();
    let path = parent.join("z");
    assert_eq!(path.as_os_str().len(), SUN_PATH_MAX - 1);
    let err = LocalListener::bind(&path).unwrap_err();
    assert!(matches!(err, IpcError::StagingPathTooLong { .. }), "{err}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    assert!(!path.exists());
    assert!(leftovers(&parent).is_empty());
}

#[tokio::test]
async fn group_writable_non_sticky_parent_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let parent = tmp.path().join("shared");
    fs::create_dir(&parent).unwrap();
    fs::set_permissions(&parent, Permissions::from_mode(0o775)).unwrap();
    let path = parent.join("zc.sock");
    let err = LocalListener::bind(&path).unwrap_err();
    assert!(matches!(err, IpcError::UnsafeParent { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(&parent.display().to_string()), "{msg}");
    assert!(msg.contains("sticky"), "{msg}");
    assert_eq!(mode(&parent), 0o775, "left untouched");
    assert!(!lock_path(&path).exists());
}

#[tokio::test]
async fn parent_that_is_a_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f");
    fs::write(&file, "x").unwrap();
    let err = LocalListener::bind(&file.join("zc.sock")).unwrap_err();
    assert!(
        err.to_string().contains(&file.display().to_string()),
        "{err}"
    );
}

#[tokio::test]
async fn second_bind_sees_the_lock_while_the_first_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("data/daemon.sock");
    let first = LocalListener::bind(&path).unwrap();
    let err = LocalListener::bind(&path).unwrap_err();
    assert!(matches!(err, IpcError::Locked { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!("another daemon owns {}", path.display())
    );
    assert!(is_socket(&path), "the loser must not touch the socket");
    round_trip(&first).await;
    // Once the first is gone, the name is free again.
    drop(first);
    let again = LocalListener::bind(&path).unwrap();
    round_trip(&again).await;
}

#[tokio::test]
async fn stale_socket_is_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("daemon.sock");
    // std's listener does not unlink on drop: this leaves a dead socket file behind.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(is_socket(&path));
    // A second name keeps the old inode allocated, so its number cannot be reused.
    let keep = tmp.path().join("keep");
    fs::hard_link(&path, &keep).unwrap();
    let old_ino = fs::symlink_metadata(&path).unwrap().ino();
    let listener = LocalListener::bind(&path).unwrap();
    assert_ne!(fs::symlink_metadata(&path).unwrap().ino(), old_ino);
    assert_eq!(mode(&path), 0o600);
    round_trip(&listener).await;
}

#[tokio::test]
async fn live_socket_is_refused_as_already_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("daemon.sock");
    let other = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let err = LocalListener::bind(&path).unwrap_err();
    assert!(matches!(err, IpcError::AlreadyServing { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!("already serving at {}", path.display())
    );
    assert!(is_socket(&path));
    drop(other);
}

#[tokio::test]
async fn regular_file_at_socket_path_is_refused_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("daemon.sock");
    let content = b"precious\x00bytes\n".to_vec();
    fs::write(&path, &content).unwrap();
    fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
    let err = LocalListener::bind(&path).unwrap_err();
    assert!(matches!(err, IpcError::NotASocket { .. }), "{err}");
    assert!(err.to_string().contains(&path.display().to_string()));
    assert_eq!(fs::read(&path).unwrap(), content);
    assert_eq!(mode(&path), 0o644);
}

#[tokio::test]
async fn symlink_at_socket_path_is_refused_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    fs::write(&target, "t").unwrap();
    let path = tmp.path().join("daemon.sock");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    let err = LocalListener::bind(&path).unwrap_err();
    assert!(matches!(err, IpcError::NotASocket { .. }), "{err}");
    assert!(
        fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn lock_file_symlink_is_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("daemon.sock");
    let elsewhere = tmp.path().join("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, lock_path(&path)).unwrap();
    let err = LocalListener::bind(&path).unwrap_err();
    assert!(matches!(err, IpcError::UnsafeLockFile { .. }), "{err}");
    assert!(!elsewhere.exists(), "nothing created through the link");
    assert!(!path.exists());
}

#[tokio::test]
async fn loose_lock_file_is_tightened() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("daemon.sock");
    fs::write(lock_path(&path), "").unwrap();
    fs::set_permissions(lock_path(&path), Permissions::from_mode(0o666)).unwrap();
    let _listener = LocalListener::bind(&path).unwrap();
    assert_eq!(mode(&lock_path(&path)), 0o600);
}

/// A directory whose absolute path is exactly `len` bytes once `name` is appended.
fn path_of_len(base: &Path, len: usize) -> PathBuf {
    let prefix = base.join("d");
    let pad = len - prefix.as_os_str().len() - 1;
    let p = prefix.join("x".repeat(pad));
    assert_eq!(p.as_os_str().len(), len);
    p
}

#[tokio::test]
async fn socket_path_length_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let too_long = path_of_len(tmp.path(), SUN_PATH_MAX);
    let err = LocalListener::bind(&too_long).unwrap_err();
    assert!(matches!(err, IpcError::PathTooLong { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(&too_long.display().to_string()), "{msg}");
    assert!(msg.contains(&SUN_PATH_MAX.to_string()), "{msg}");
    assert!(
        !tmp.path().join("d").exists(),
        "refused before creating anything"
    );
    #[cfg(target_os = "linux")]
    assert_eq!(SUN_PATH_MAX, 108);

    let longest = path_of_len(tmp.path(), SUN_PATH_MAX - 1);
    let listener = LocalListener::bind(&longest).unwrap();
    round_trip(&listener).await;
}

#[tokio::test]
async fn drop_unlinks_own_socket_and_keeps_the_lock_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("daemon.sock");
    let listener = LocalListener::bind(&path).unwrap();
    drop(listener);
    assert!(!path.exists());
    assert!(lock_path(&path).exists());
}

#[tokio::test]
async fn drop_leaves_a_replaced_socket_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("daemon.sock");
    let listener = LocalListener::bind(&path).unwrap();
    let original = fs::symlink_metadata(&path).unwrap().ino();
    fs::remove_file(&path).unwrap();
    let replacement = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let ino = fs::symlink_metadata(&path).unwrap().ino();
    // The listener pins its inode, so the replacement cannot reuse the number.
    #[cfg(target_os = "linux")]
    assert_ne!(ino, original);
    let _ = original;
    drop(listener);
    assert!(is_socket(&path), "the replacement survives");
    assert_eq!(fs::symlink_metadata(&path).unwrap().ino(), ino);
    drop(replacement);
}

#[tokio::test]
async fn peer_labels_come_from_real_credentials() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("daemon.sock");
    let listener = LocalListener::bind(&path).unwrap();
    let (client, server) = tokio::join!(connect(&path), listener.accept());
    let (client, server) = (client.unwrap(), server.unwrap());
    let pid = std::process::id();
    assert_eq!(server.peer.uid, Some(euid()));
    assert_eq!(server.peer.pid, Some(pid));
    assert_eq!(server.peer.label, format!("unix:pid={pid},uid={}", euid()));
    assert_eq!(client.peer.label, "unix:server");
    assert_eq!(client.peer.uid, Some(euid()));
}

#[tokio::test]
async fn relative_socket_path_is_made_absolute() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = std::env::current_dir().unwrap();
    let rel = pathdiff(tmp.path(), &cwd).join("daemon.sock");
    let listener = LocalListener::bind(&rel).unwrap();
    assert!(listener.path().is_absolute());
    assert_eq!(listener.path(), cwd.join(&rel));
}

/// `target` relative to `base` via `..` components (both absolute).
fn pathdiff(target: &Path, base: &Path) -> PathBuf {
    let mut rel = PathBuf::new();
    for _ in base.components().skip(1) {
        rel.push("..");
    }
    rel.join(target.strip_prefix("/").unwrap())
}

#[test]
fn bind_outside_a_runtime_is_an_error_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("daemon.sock");
    let err = LocalListener::bind(&path).unwrap_err();
    assert!(matches!(err, IpcError::NoRuntime { .. }), "{err}");
    assert!(!path.exists());
}
