//! The private temporary directory of a confined program (SPEC §21.2): made on first use
//! (mode 0700, under the system's temporary directory, named `zeroclaw-tmp-…`), given to the
//! program as `TMPDIR` and as a place it may write, removed with everything in it when the
//! owner (a turn, an MCP server) is done — off the async threads when a runtime is there.

use std::path::Path;

/// A private temporary directory, removed on drop.
#[derive(Debug)]
pub struct Scratch {
    dir: Option<tempfile::TempDir>,
}

impl Scratch {
    /// Makes a new directory; blocking (a `mkdir`), so call it off the async threads.
    pub fn make() -> std::io::Result<Scratch> {
        let mut builder = tempfile::Builder::new();
        builder.prefix("zeroclaw-tmp-");
        // Without a mode tempfile leaves the directory to the umask (0755 under the usual
        // 022): every local user could list it and read what the program wrote there with
        // its own umask.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let dir = builder.tempdir()?;
        Ok(Scratch { dir: Some(dir) })
    }

    /// [`Scratch::make`] on the blocking pool.
    pub async fn make_async() -> std::io::Result<Scratch> {
        tokio::task::spawn_blocking(Scratch::make)
            .await
            .map_err(std::io::Error::other)?
    }

    pub fn path(&self) -> &Path {
        match &self.dir {
            Some(d) => d.path(),
            None => Path::new(""),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else {
            return;
        };
        // Removing a tree can take a while: not on an async thread when there is a runtime.
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(move || drop(dir));
            }
            Err(_) => drop(dir),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_directory_is_the_owners_alone_and_goes_with_its_owner() {
        let scratch = Scratch::make().expect("scratch");
        let path = scratch.path().to_path_buf();
        let mode = std::fs::metadata(&path)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{path:?} has mode {mode:o}");
        drop(scratch);
        assert!(!path.exists(), "{path:?} is removed with its owner");
    }
}
