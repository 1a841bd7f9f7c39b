//! The daemon's own command line, recognized without building the whole command-line
//! grammar: `zeroclaw daemon [--ephemeral]` with an optional `--config-dir DIR` (or
//! `--config-dir=DIR`) before or after `daemon`.
//!
//! Building clap's grammar touches the code of every subcommand, and that code then stays
//! resident in a daemon that never uses it (idle RSS, docs/BENCHMARKS.md). Only those exact
//! forms are taken here; anything else (`--help`, a repeated or unknown flag, a value
//! that starts with `-`, `--`) goes to clap, which parses or refuses it as before. The
//! tests hold both to the same answer.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use zeroclaw_daemon::DaemonOptions;

/// The daemon's options when `args` (without the program name) are exactly a plain daemon
/// invocation; `None` sends them to the full grammar.
pub fn recognize(args: impl IntoIterator<Item = OsString>) -> Option<DaemonOptions> {
    let mut options = DaemonOptions::default();
    let mut seen_daemon = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let text = arg.to_str();
        match text {
            Some("daemon") if !seen_daemon => seen_daemon = true,
            Some("--ephemeral") if seen_daemon && !options.ephemeral => options.ephemeral = true,
            Some("--config-dir") if options.config_dir.is_none() => {
                options.config_dir = Some(plain_value(&args.next()?)?);
            }
            _ => {
                let value = flag_value(&arg, "--config-dir=")?;
                if options.config_dir.is_some() {
                    return None;
                }
                options.config_dir = Some(plain_value(value)?);
            }
        }
    }
    seen_daemon.then_some(options)
}

/// What follows `prefix` in `arg`, when `arg` starts with it (raw bytes on Unix, so a
/// directory name need not be UTF-8).
fn flag_value<'a>(arg: &'a OsStr, prefix: &str) -> Option<&'a OsStr> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let rest = arg.as_bytes().strip_prefix(prefix.as_bytes())?;
        Some(OsStr::from_bytes(rest))
    }
    #[cfg(not(unix))]
    {
        arg.to_str()?.strip_prefix(prefix).map(OsStr::new)
    }
}

/// A directory value clap would take as it is: not empty and not looking like a flag.
fn plain_value(value: &OsStr) -> Option<PathBuf> {
    let bytes = value.as_encoded_bytes();
    (!bytes.is_empty() && bytes[0] != b'-').then(|| PathBuf::from(value))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::recognize;
    use crate::cli::{Cli, Command};

    /// What the full grammar makes of `args`: the daemon's options, or `None` for anything
    /// else (another command, help, an error).
    fn by_clap(args: &[&str]) -> Option<(Option<String>, bool)> {
        let cli =
            Cli::try_parse_from(std::iter::once("zeroclaw").chain(args.iter().copied())).ok()?;
        match cli.command {
            Command::Daemon { ephemeral } => {
                Some((cli.config_dir.map(|d| d.display().to_string()), ephemeral))
            }
            _ => None,
        }
    }

    fn by_recognize(args: &[&str]) -> Option<(Option<String>, bool)> {
        recognize(args.iter().map(Into::into))
            .map(|o| (o.config_dir.map(|d| d.display().to_string()), o.ephemeral))
    }

    #[test]
    fn the_plain_forms_are_taken_as_clap_takes_them() {
        let plain: &[&[&str]] = &[
            &["daemon"],
            &["daemon", "--ephemeral"],
            &["--config-dir", "/tmp/c", "daemon"],
            &["daemon", "--config-dir", "/tmp/c"],
            &["--config-dir=/tmp/c", "daemon", "--ephemeral"],
            &["daemon", "--ephemeral", "--config-dir=/tmp/c d"],
            &["daemon", "--config-dir", "rel/dir", "--ephemeral"],
        ];
        for args in plain {
            let ours = by_recognize(args);
            assert!(ours.is_some(), "{args:?} should be recognized");
            assert_eq!(ours, by_clap(args), "{args:?}");
        }
    }

    #[test]
    fn everything_else_goes_to_clap() {
        let other: &[&[&str]] = &[
            &[],
            &["status"],
            &["daemon", "--help"],
            &["--help"],
            &["--version"],
            &["daemon", "daemon"],
            &["daemon", "--ephemeral", "--ephemeral"],
            &["--ephemeral", "daemon"],
            &["daemon", "--config-dir"],
            &["daemon", "--config-dir", "--ephemeral"],
            &["daemon", "--config-dir="],
            &["daemon", "--config-dir", "a", "--config-dir", "b"],
            &["daemon", "--config-dir=a", "--config-dir=b"],
            &["daemon", "--", "x"],
            &["daemon", "-h"],
            &["daemon", "--ephemral"],
            &["rpc", "daemon"],
            &["daemon", "extra"],
        ];
        for args in other {
            assert_eq!(by_recognize(args), None, "{args:?} must go to clap");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_need_not_be_utf8() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        let dir = OsString::from_vec(b"/tmp/\xff".to_vec());
        let mut flag = OsString::from("--config-dir=");
        flag.push(&dir);
        let options = recognize([flag, "daemon".into()]).expect("recognized");
        assert_eq!(options.config_dir.map(|d| d.into_os_string()), Some(dir));
    }
}
