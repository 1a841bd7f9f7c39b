//! Leftovers of interrupted config writes (SPEC §17 "Leftovers are swept"): the atomic
//! writer's temp files are named `.config.toml.<random>` beside `config.toml`; at start the
//! daemon removes those, and only those.

use std::path::Path;

/// The name every config temp file starts with; `<random>` (ASCII letters and digits)
/// follows.
pub const TEMP_PREFIX: &str = ".config.toml.";

/// Whether `name` is one of the atomic writer's temp files.
pub fn is_temp_name(name: &str) -> bool {
    crate::persist::is_temp_name(name, TEMP_PREFIX)
}

/// Removes the config temp files in `config_dir` (regular files named
/// `.config.toml.<random>`); every other entry stays. Call only while holding the daemon's
/// lock, so no other writer's temp file is in flight. Returns how many were removed;
/// failures are logged, never fatal.
pub fn sweep_config_temp_files(config_dir: &Path) -> usize {
    crate::persist::sweep_temp_files(config_dir, TEMP_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_temp_name(".config.toml.abc123"));
        assert!(is_temp_name(".config.toml.X"));
        for other in [
            ".config.toml.",
            ".config.toml",
            "config.toml",
            "config.toml.bak",
            ".config.toml.abc.def",
            ".config.toml.a-b",
            ".upload-abc",
        ] {
            assert!(!is_temp_name(other), "{other}");
        }
    }

    #[test]
    fn sweeps_only_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join(".config.toml.abc123"), "x").unwrap();
        std::fs::write(d.join(".config.toml.Zz9"), "x").unwrap();
        std::fs::write(d.join("config.toml"), "x").unwrap();
        std::fs::write(d.join(".config.toml.bak~"), "x").unwrap();
        std::fs::create_dir(d.join(".config.toml.dir1")).unwrap();
        assert_eq!(sweep_config_temp_files(d), 2);
        let mut left: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [".config.toml.bak~", ".config.toml.dir1", "config.toml"]
        );
        assert_eq!(sweep_config_temp_files(&d.join("missing")), 0);
    }
}
