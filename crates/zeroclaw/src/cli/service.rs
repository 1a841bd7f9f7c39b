//! `zeroclaw service install|uninstall|status`: runs `zeroclaw daemon --config-dir DIR` as
//! a per-user service: a systemd user unit on Linux, a launchd agent on macOS. `--print`
//! shows the file without writing it. The service manager is asked to (de)activate it
//! when it is there; when it is not (or refuses), the commands to run are printed.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{Subcommand, ValueEnum};
use zeroclaw_ipc::Dirs;

use super::error::CliError;

const UNIT_NAME: &str = "zeroclaw.service";
const LAUNCHD_LABEL: &str = "dev.zeroclaw.daemon";

#[derive(Subcommand)]
pub enum ServiceAction {
    /// Write the service file and enable it (start at login, restart on failure).
    Install {
        /// Print the service file instead of writing it.
        #[arg(long)]
        print: bool,
        /// Which service manager to write for (default: this system's).
        #[arg(long, value_enum, default_value_t = Manager::native())]
        manager: Manager,
    },
    /// Disable the service and remove its file.
    Uninstall {
        /// Which service manager (default: this system's).
        #[arg(long, value_enum, default_value_t = Manager::native())]
        manager: Manager,
    },
    /// Say whether the service file is installed and whether the service runs.
    Status {
        /// Which service manager (default: this system's).
        #[arg(long, value_enum, default_value_t = Manager::native())]
        manager: Manager,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Manager {
    /// A systemd user unit (`~/.config/systemd/user/zeroclaw.service`).
    Systemd,
    /// A launchd agent (`~/Library/LaunchAgents/dev.zeroclaw.daemon.plist`).
    Launchd,
}

impl Manager {
    fn native() -> Manager {
        if cfg!(target_os = "macos") {
            Manager::Launchd
        } else {
            Manager::Systemd
        }
    }

    /// Where the service file goes.
    fn path(self) -> Result<PathBuf, CliError> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or("HOME is not set")?;
        Ok(match self {
            Manager::Systemd => std::env::var_os("XDG_CONFIG_HOME")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".config"))
                .join("systemd/user")
                .join(UNIT_NAME),
            Manager::Launchd => home
                .join("Library/LaunchAgents")
                .join(format!("{LAUNCHD_LABEL}.plist")),
        })
    }

    fn file(self, exe: &Path, config_dir: &Path) -> String {
        match self {
            Manager::Systemd => systemd_unit(exe, config_dir),
            Manager::Launchd => launchd_plist(exe, config_dir),
        }
    }

    /// The commands that activate an installed file.
    fn enable_commands(self, path: &Path) -> Vec<Vec<String>> {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            Manager::Systemd => vec![
                args(&["systemctl", "--user", "daemon-reload"]),
                args(&["systemctl", "--user", "enable", "--now", UNIT_NAME]),
            ],
            Manager::Launchd => vec![args(&["launchctl", "load", "-w", &path.to_string_lossy()])],
        }
    }

    fn disable_commands(self, path: &Path) -> Vec<Vec<String>> {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            Manager::Systemd => vec![args(&[
                "systemctl",
                "--user",
                "disable",
                "--now",
                UNIT_NAME,
            ])],
            Manager::Launchd => vec![args(&[
                "launchctl",
                "unload",
                "-w",
                &path.to_string_lossy(),
            ])],
        }
    }

    fn status_command(self) -> Vec<String> {
        match self {
            Manager::Systemd => vec![
                "systemctl".into(),
                "--user".into(),
                "is-active".into(),
                UNIT_NAME.into(),
            ],
            Manager::Launchd => vec!["launchctl".into(), "list".into(), LAUNCHD_LABEL.into()],
        }
    }
}

/// A systemd user unit running the daemon on `config_dir`.
pub fn systemd_unit(exe: &Path, config_dir: &Path) -> String {
    format!(
        "[Unit]\n\
         Description=zeroclaw agent daemon ({config})\n\
         \n\
         [Service]\n\
         ExecStart={exe} daemon --config-dir {config}\n\
         Restart=on-failure\n\
         RestartSec=2\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        exe = quote_systemd(&exe.to_string_lossy()),
        config = quote_systemd(&config_dir.to_string_lossy()),
    )
}

/// systemd splits `ExecStart` on spaces: quote a path that holds one.
fn quote_systemd(path: &str) -> String {
    if path.contains([' ', '"', '\\']) {
        format!("\"{}\"", path.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        path.to_string()
    }
}

/// A launchd agent running the daemon on `config_dir`.
pub fn launchd_plist(exe: &Path, config_dir: &Path) -> String {
    let xml = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let log = config_dir.join("data").join("daemon.log");
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>{LAUNCHD_LABEL}</string>
  <key>ProgramArguments</key>
  <array>
    <string>{exe}</string>
    <string>daemon</string>
    <string>--config-dir</string>
    <string>{config}</string>
  </array>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
  <key>StandardErrorPath</key><string>{log}</string>
</dict>
</plist>
"#,
        exe = xml(&exe.to_string_lossy()),
        config = xml(&config_dir.to_string_lossy()),
        log = xml(&log.to_string_lossy()),
    )
}

/// Runs a command; `Err` with what it said when it is missing or fails.
fn run_command(argv: &[String]) -> Result<String, String> {
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() {
        Ok(text)
    } else {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(if err.is_empty() { text } else { err })
    }
}

/// Runs each command in turn; on the first failure prints it and the rest to run by hand.
fn run_or_explain(commands: &[Vec<String>]) {
    for (i, argv) in commands.iter().enumerate() {
        if let Err(why) = run_command(argv) {
            println!("could not run `{}`: {why}", argv.join(" "));
            println!("run by hand:");
            for argv in &commands[i..] {
                println!("  {}", argv.join(" "));
            }
            return;
        }
    }
}

pub fn run(config_dir: Option<PathBuf>, action: ServiceAction) -> Result<(), CliError> {
    match action {
        ServiceAction::Install { print, manager } => {
            let dirs = Dirs::resolve(config_dir.as_deref()).map_err(|e| e.to_string())?;
            let config = std::path::absolute(&dirs.config_dir).map_err(|e| e.to_string())?;
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot find this program's path: {e}"))?;
            let text = manager.file(&exe, &config);
            if print {
                print!("{text}");
                return Ok(());
            }
            let path = manager.path()?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("wrote {}", path.display());
            run_or_explain(&manager.enable_commands(&path));
            Ok(())
        }
        ServiceAction::Uninstall { manager } => {
            let path = manager.path()?;
            if !path.exists() {
                println!("not installed ({} does not exist)", path.display());
                return Ok(());
            }
            run_or_explain(&manager.disable_commands(&path));
            std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("removed {}", path.display());
            Ok(())
        }
        ServiceAction::Status { manager } => {
            let path = manager.path()?;
            if !path.exists() {
                println!("not installed ({} does not exist)", path.display());
                return Ok(());
            }
            println!("installed: {}", path.display());
            let argv = manager.status_command();
            match run_command(&argv) {
                Ok(state) if manager == Manager::Systemd => println!("state: {state}"),
                Ok(_) => println!("state: loaded"),
                // `is-active` answers `inactive` or `failed` with a non-zero status.
                Err(state) if !state.is_empty() && !state.contains(' ') => {
                    println!("state: {state}")
                }
                Err(why) => println!("state: unknown (`{}`: {why})", argv.join(" ")),
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{launchd_plist, systemd_unit};

    #[test]
    fn files_name_the_binary_and_the_config_dir() {
        let unit = systemd_unit(Path::new("/usr/bin/zeroclaw"), Path::new("/home/a/my zc"));
        assert!(
            unit.contains("ExecStart=/usr/bin/zeroclaw daemon --config-dir \"/home/a/my zc\"\n"),
            "{unit}"
        );
        let plist = launchd_plist(Path::new("/bin/zc"), Path::new("/a&b"));
        assert!(plist.contains("<string>/a&amp;b</string>"), "{plist}");
    }
}
