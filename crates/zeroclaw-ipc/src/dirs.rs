//! `Dirs`: where the configuration and the data of one daemon live (SPEC §2).
//!
//! The config dir is decided by the first rule that applies: `--config-dir`,
//! `ZEROCLAW_CONFIG_DIR`, `ZEROCLAW_DATA_DIR` (see [`Dirs::resolve_with`]), then
//! `~/.zeroclaw`. It is always absolute (made so against the current directory, without
//! requiring it to exist). The data dir is always `<config dir>/data` and the config file
//! `<config dir>/config.toml`. Resolution never creates anything on disk.

use std::path::{Path, PathBuf};

use crate::IpcError;

/// Environment variable naming the config dir.
pub const ENV_CONFIG_DIR: &str = "ZEROCLAW_CONFIG_DIR";
/// Environment variable naming the data dir (the config dir is derived from it).
pub const ENV_DATA_DIR: &str = "ZEROCLAW_DATA_DIR";
/// Name of the default config dir below the home directory.
pub const DEFAULT_DIR_NAME: &str = ".zeroclaw";

/// The resolved directories of one daemon. Both paths are absolute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// The directory holding `config.toml`.
    pub config_dir: PathBuf,
    /// Always `<config_dir>/data`.
    pub data_dir: PathBuf,
}

impl Dirs {
    /// Builds `Dirs` from a config dir, made absolute against the current directory.
    pub fn from_config_dir(config_dir: &Path) -> Result<Dirs, IpcError> {
        let config_dir = absolute(config_dir)?;
        let data_dir = config_dir.join("data");
        Ok(Dirs {
            config_dir,
            data_dir,
        })
    }

    /// `<config_dir>/config.toml`.
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    /// Resolves the directories from the real process environment and home directory.
    ///
    /// `cli_config_dir` is the value of `--config-dir`, if given.
    pub fn resolve(cli_config_dir: Option<&Path>) -> Result<Dirs, IpcError> {
        // A non-unicode value that would be consulted is reported, not silently mangled.
        if cli_config_dir.is_none() {
            for name in [ENV_CONFIG_DIR, ENV_DATA_DIR] {
                match std::env::var_os(name) {
                    Some(value) if value.to_str().is_none() => {
                        return Err(IpcError::NotUnicode { name });
                    }
                    Some(_) => break,
                    None => {}
                }
            }
        }
        let env = |name: &str| std::env::var(name).ok();
        let home = std::env::home_dir().filter(|h| !h.as_os_str().is_empty());
        Dirs::resolve_with(cli_config_dir, &env, home)
    }

    /// Resolves the directories from explicit inputs (the pure core of [`Dirs::resolve`]).
    ///
    /// Rules, first that applies:
    /// 1. `cli` (`--config-dir DIR`) → DIR;
    /// 2. `ZEROCLAW_CONFIG_DIR` → its value;
    /// 3. `ZEROCLAW_DATA_DIR=X` → X if `X/config.toml` exists, else the parent of X if X's
    ///    last component is `data`, else X;
    /// 4. `home/.zeroclaw`.
    ///
    /// A set but empty (or whitespace-only) value is an error naming it. The only disk
    /// access is the `X/config.toml` existence check of rule 3.
    pub fn resolve_with(
        cli: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
        home: Option<PathBuf>,
    ) -> Result<Dirs, IpcError> {
        if let Some(dir) = cli {
            if dir.as_os_str().is_empty() || dir.to_str().is_some_and(is_blank) {
                return Err(IpcError::EmptyValue {
                    name: "--config-dir",
                });
            }
            return Dirs::from_config_dir(dir);
        }
        if let Some(value) = env(ENV_CONFIG_DIR) {
            if is_blank(&value) {
                return Err(IpcError::EmptyValue {
                    name: ENV_CONFIG_DIR,
                });
            }
            return Dirs::from_config_dir(Path::new(&value));
        }
        if let Some(value) = env(ENV_DATA_DIR) {
            if is_blank(&value) {
                return Err(IpcError::EmptyValue { name: ENV_DATA_DIR });
            }
            let data = absolute(Path::new(&value))?;
            let config_dir = if data.join("config.toml").exists() {
                data
            } else if data.file_name().is_some_and(|n| n == "data") {
                // `file_name` is `Some`, so there is a parent.
                data.parent().map(Path::to_path_buf).unwrap_or(data)
            } else {
                data
            };
            return Dirs::from_config_dir(&config_dir);
        }
        match home {
            Some(home) if !home.as_os_str().is_empty() => {
                Dirs::from_config_dir(&home.join(DEFAULT_DIR_NAME))
            }
            _ => Err(IpcError::NoHome),
        }
    }
}

fn is_blank(value: &str) -> bool {
    value.trim().is_empty()
}

/// Makes `path` absolute against the current directory; the path need not exist.
pub(crate) fn absolute(path: &Path) -> Result<PathBuf, IpcError> {
    std::path::absolute(path).map_err(|source| IpcError::Absolute {
        path: path.to_path_buf(),
        source,
    })
}

// The expected values are Unix paths; the rules themselves are platform-independent.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn home() -> Option<PathBuf> {
        Some(PathBuf::from("/home/u"))
    }

    #[test]
    fn cli_wins_over_everything() {
        let env = env_of(&[(ENV_CONFIG_DIR, "/a"), (ENV_DATA_DIR, "/b")]);
        let d = Dirs::resolve_with(Some(Path::new("/cli")), &env, home()).unwrap();
        assert_eq!(d.config_dir, PathBuf::from("/cli"));
        assert_eq!(d.data_dir, PathBuf::from("/cli/data"));
        assert_eq!(d.config_file(), PathBuf::from("/cli/config.toml"));
    }

    #[test]
    fn config_dir_env_wins_over_data_dir_env() {
        let env = env_of(&[(ENV_CONFIG_DIR, "/a"), (ENV_DATA_DIR, "/b")]);
        let d = Dirs::resolve_with(None, &env, home()).unwrap();
        assert_eq!(d.config_dir, PathBuf::from("/a"));
        assert_eq!(d.data_dir, PathBuf::from("/a/data"));
    }

    #[test]
    fn data_dir_env_with_config_file_is_the_config_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let x = tmp.path().join("data");
        std::fs::create_dir(&x).unwrap();
        std::fs::write(x.join("config.toml"), "").unwrap();
        let env = env_of(&[(ENV_DATA_DIR, x.to_str().unwrap())]);
        let d = Dirs::resolve_with(None, &env, home()).unwrap();
        assert_eq!(d.config_dir, x);
        assert_eq!(d.data_dir, x.join("data"));
    }

    #[test]
    fn data_dir_env_named_data_uses_its_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let x = tmp.path().join("data");
        let env = env_of(&[(ENV_DATA_DIR, x.to_str().unwrap())]);
        let d = Dirs::resolve_with(None, &env, home()).unwrap();
        assert_eq!(d.config_dir, tmp.path());
        assert_eq!(d.data_dir, x);
        // A trailing slash does not change the last component.
        let with_slash = format!("{}/", x.display());
        let env = env_of(&[(ENV_DATA_DIR, &with_slash)]);
        let d = Dirs::resolve_with(None, &env, home()).unwrap();
        assert_eq!(d.config_dir, tmp.path());
    }

    #[test]
    fn data_dir_env_otherwise_is_the_config_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let x = tmp.path().join("state");
        let env = env_of(&[(ENV_DATA_DIR, x.to_str().unwrap())]);
        let d = Dirs::resolve_with(None, &env, home()).unwrap();
        assert_eq!(d.config_dir, x);
        assert_eq!(d.data_dir, x.join("data"));
    }

    #[test]
    fn default_is_home_dot_zeroclaw() {
        let d = Dirs::resolve_with(None, &env_of(&[]), home()).unwrap();
        assert_eq!(d.config_dir, PathBuf::from("/home/u/.zeroclaw"));
        assert_eq!(d.data_dir, PathBuf::from("/home/u/.zeroclaw/data"));
    }

    #[test]
    fn no_home_is_an_error() {
        let err = Dirs::resolve_with(None, &env_of(&[]), None).unwrap_err();
        assert!(matches!(err, IpcError::NoHome), "{err}");
        let err = Dirs::resolve_with(None, &env_of(&[]), Some(PathBuf::new())).unwrap_err();
        assert!(matches!(err, IpcError::NoHome), "{err}");
    }

    #[test]
    fn empty_values_are_errors_naming_the_source() {
        let err = Dirs::resolve_with(Some(Path::new("")), &env_of(&[]), home()).unwrap_err();
        assert!(err.to_string().contains("--config-dir"), "{err}");
        for name in [ENV_CONFIG_DIR, ENV_DATA_DIR] {
            for value in ["", "  "] {
                let err = Dirs::resolve_with(None, &env_of(&[(name, value)]), home()).unwrap_err();
                assert!(matches!(err, IpcError::EmptyValue { .. }), "{err}");
                assert!(err.to_string().contains(name), "{err}");
            }
        }
        // An empty ZEROCLAW_CONFIG_DIR is an error even if ZEROCLAW_DATA_DIR is fine.
        let env = env_of(&[(ENV_CONFIG_DIR, ""), (ENV_DATA_DIR, "/b")]);
        assert!(Dirs::resolve_with(None, &env, home()).is_err());
    }

    #[test]
    fn relative_paths_become_absolute_without_existing() {
        let cwd = std::env::current_dir().unwrap();
        let d = Dirs::resolve_with(Some(Path::new("no/such/dir")), &env_of(&[]), home()).unwrap();
        assert_eq!(d.config_dir, cwd.join("no/such/dir"));
        assert!(d.config_dir.is_absolute());
        let env = env_of(&[(ENV_DATA_DIR, "rel/data")]);
        let d = Dirs::resolve_with(None, &env, home()).unwrap();
        assert_eq!(d.config_dir, cwd.join("rel"));
        assert_eq!(d.data_dir, cwd.join("rel/data"));
    }
}
