//! Command-line grammar and the dispatch of each subcommand.

mod chat;
mod config;
mod connect;
mod daemon_args;
mod dashboard;
mod error;
mod human;
mod login_page;
mod pair;
mod rpc;
mod schedule;
mod schema;
mod service;
mod sessions;
mod status;
mod upload;
mod usage;
mod webhook;

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};

pub use daemon_args::recognize as recognize_daemon;
pub use error::CliError;

#[derive(Parser)]
#[command(
    name = "zeroclaw",
    version,
    about = "AI agent sessions served over local JSON-RPC"
)]
pub struct Cli {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, or ~/.zeroclaw).
    #[arg(long, global = true, value_name = "DIR")]
    config_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon in the foreground.
    Daemon {
        /// Exit about a second after the last client disconnects.
        #[arg(long)]
        ephemeral: bool,
    },
    /// Call one method and print its result as JSON.
    Rpc {
        /// Method name, e.g. `status`.
        method: String,
        /// Params as a JSON object (default `{}`).
        params: Option<String>,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
    /// Chat with an agent (type `/help` in the chat for its commands).
    ///
    /// On a terminal: line editing, prompt history kept in the data dir, replies rendered
    /// as markdown. With stdin from a pipe, each line is a prompt.
    Chat {
        /// Agent alias.
        #[arg(long, default_value = "default")]
        agent: String,
        /// Resume (or create) the session with this id; its last messages are shown.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        #[command(flatten)]
        place: chat::Place,
    },
    /// Tokens and cost per day, agent and principal (SPEC §24.2; non-admins: their own).
    Usage {
        /// First day to include, `YYYY-MM-DD` (UTC; default: 30 days ago).
        #[arg(long, value_name = "DAY")]
        since: Option<String>,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// Print the raw `usage/summary` result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the daemon's status.
    Status {
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// Print the raw `status` result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Read or change the configuration through the daemon.
    Config {
        #[command(subcommand)]
        action: config::ConfigAction,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH", global = true)]
        socket: Option<PathBuf>,
        /// Print the raw result as JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// List sessions (`sessions`), or print one's transcript (`sessions show ID`).
    Sessions {
        #[command(subcommand)]
        action: Option<sessions::SessionsAction>,
        /// Show at most this many sessions (the most recently active).
        #[arg(long, default_value_t = 20, value_name = "N")]
        limit: usize,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH", global = true)]
        socket: Option<PathBuf>,
        /// Print the raw result as JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Schedules that prompt an agent while you're away (SPEC §24.1).
    Schedule {
        #[command(subcommand)]
        action: schedule::ScheduleAction,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH", global = true)]
        socket: Option<PathBuf>,
        /// Print the raw result as JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Stop the daemon gracefully and wait until its socket is gone.
    Stop {
        /// Give up waiting after this many seconds.
        #[arg(long, default_value_t = 15, value_name = "SECS")]
        timeout: u64,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// Print the raw `daemon/shutdown` result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Open the web dashboard: start the gateway on 127.0.0.1 if needed, print a one-time
    /// login link, and open it in the desktop's browser.
    Dashboard {
        /// Only print the link (also when `ZEROCLAW_NO_BROWSER=1`).
        #[arg(long)]
        no_open: bool,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// Print the raw `dashboard/login` result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a WebSocket pairing token for a configured user (printed once).
    Pair {
        /// The user (a `[users.NAME]` entry of the configuration).
        #[arg(long, value_name = "NAME")]
        user: String,
        /// Print `{"user", "token"}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke pairing tokens: every token of a user, or one token.
    Unpair {
        /// Revoke every token of this user.
        #[arg(long, value_name = "NAME", conflicts_with = "token")]
        user: Option<String>,
        /// Revoke this one token.
        #[arg(long, value_name = "TOKEN")]
        token: Option<String>,
    },
    /// Upload files into a session's workspace (chunked, with a progress bar).
    Upload {
        /// The session whose workspace receives the files.
        #[arg(long, value_name = "ID")]
        session: String,
        /// Files to upload (10 MiB each at most).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// Print each stored entry as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Bridge stdin/stdout to the daemon's socket, line for line (like socat).
    Connect {
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
    /// Run the daemon as a user service (systemd user unit; launchd agent on macOS).
    Service {
        #[command(subcommand)]
        action: service::ServiceAction,
    },
    /// Webhooks that start turns (SPEC §23.1): add, list, rm, deliveries, test.
    Webhook {
        #[command(subcommand)]
        action: webhook::WebhookAction,
        /// Socket to connect to (default: the resolved endpoint).
        #[arg(long, value_name = "PATH", global = true)]
        socket: Option<PathBuf>,
        /// Print the raw result as JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Print the protocol's JSON Schema (methods, results, session updates).
    Schema,
    /// Be an Agent Client Protocol agent on stdin/stdout, for editors (Zed, JetBrains, …);
    /// starts an ephemeral daemon when none serves the endpoint.
    Acp {
        /// Agent alias for new sessions (default `default`).
        #[arg(long, default_value = "default")]
        agent: String,
        /// The daemon's socket (default: the config dir's endpoint).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
    /// Print a shell completion script for bash, zsh or fish (see the README for where to
    /// put it).
    Completions {
        /// The shell to write the script for.
        shell: clap_complete::Shell,
    },
}

/// Runs the daemon in the foreground until it stops.
pub async fn run_daemon(options: zeroclaw_daemon::DaemonOptions) -> Result<(), CliError> {
    zeroclaw_daemon::run(options)
        .await
        .map_err(|e| CliError::failed(e.to_string()))
}

pub async fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Daemon { ephemeral } => {
            run_daemon(zeroclaw_daemon::DaemonOptions {
                config_dir: cli.config_dir,
                ephemeral,
            })
            .await
        }
        Command::Rpc {
            method,
            params,
            socket,
        } => rpc::call_and_print(cli.config_dir, socket, &method, params.as_deref()).await,
        Command::Chat {
            agent,
            session,
            socket,
            place,
        } => chat::run(cli.config_dir, socket, agent, session, place).await,
        Command::Status { socket, json } => status::run(cli.config_dir, socket, json).await,
        Command::Usage {
            since,
            socket,
            json,
        } => usage::run(cli.config_dir, socket, since, json).await,
        Command::Config {
            action,
            socket,
            json,
        } => config::run(cli.config_dir, socket, action, json).await,
        Command::Sessions {
            action,
            limit,
            socket,
            json,
        } => sessions::run(cli.config_dir, socket, action, limit, json).await,
        Command::Schedule {
            action,
            socket,
            json,
        } => schedule::run(cli.config_dir, socket, action, json).await,
        Command::Stop {
            timeout,
            socket,
            json,
        } => status::stop(cli.config_dir, socket, Duration::from_secs(timeout), json).await,
        Command::Dashboard {
            no_open,
            socket,
            json,
        } => dashboard::run(cli.config_dir, socket, no_open, json).await,
        Command::Pair { user, json } => Ok(pair::pair(cli.config_dir, &user, json)?),
        Command::Unpair { user, token } => Ok(pair::unpair(cli.config_dir, user, token)?),
        Command::Upload {
            session,
            files,
            socket,
            json,
        } => upload::run(cli.config_dir, socket, session, files, json).await,
        Command::Connect { socket } => {
            Ok(connect::run(rpc::endpoint(cli.config_dir, socket)?).await?)
        }
        Command::Service { action } => service::run(cli.config_dir, action),
        Command::Webhook {
            action,
            socket,
            json,
        } => webhook::run(cli.config_dir, socket, action, json).await,
        Command::Schema => Ok(schema::print()?),
        Command::Acp { agent, socket } => Ok(zeroclaw_acp::run(zeroclaw_acp::Options {
            endpoint: rpc::endpoint(cli.config_dir.clone(), socket.clone())?,
            config_dir: cli.config_dir,
            socket,
            agent,
        })
        .await?),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "zeroclaw", &mut script);
            // A closed pipe (`| head`) is not an error worth a message.
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every argument and flag of every subcommand says what it is for in `--help`.
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() && sub.get_name() != "help" {
                    missing.push(format!("{path} {} (no about)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "zeroclaw", &mut missing);
        assert!(missing.is_empty(), "without help: {missing:?}");
        Cli::command().debug_assert();
    }
}
