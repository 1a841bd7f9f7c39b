//! Command-line grammar and the dispatch of each subcommand.

mod acp;
mod chat;
mod config;
mod connect;
mod pair;
mod rpc;
mod upload;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

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
        /// Disconnect a peer whose full outbound queue went unread this long (ms).
        #[arg(long, hide = true, value_name = "MS")]
        stall_timeout_ms: Option<u64>,
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
    /// Chat with an agent: each line of stdin is a prompt, the reply streams to stdout.
    Chat {
        /// Agent alias (default `default`).
        #[arg(long, default_value = "default")]
        agent: String,
        /// Resume (or create) the session with this id.
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
    /// Print the daemon's status.
    Status {
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
    /// Read or change the configuration through the daemon.
    Config {
        #[command(subcommand)]
        action: config::ConfigAction,
        #[arg(long, value_name = "PATH", global = true)]
        socket: Option<PathBuf>,
    },
    /// Make a WebSocket pairing token for a configured user (printed once).
    Pair {
        #[arg(long, value_name = "NAME")]
        user: String,
    },
    /// Revoke pairing tokens: every token of a user, or one token.
    Unpair {
        #[arg(long, value_name = "NAME", conflicts_with = "token")]
        user: Option<String>,
        #[arg(long, value_name = "TOKEN")]
        token: Option<String>,
    },
    /// Upload files into a session's workspace (chunked, with a progress bar).
    Upload {
        #[arg(long, value_name = "ID")]
        session: String,
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
    /// Be an Agent Client Protocol agent on stdin/stdout (for editors), driving daemon sessions.
    Acp {
        /// Agent alias for new sessions (default `default`).
        #[arg(long, default_value = "default")]
        agent: String,
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
    /// Bridge stdin/stdout to the daemon's socket, line for line (like socat).
    Connect {
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
}

pub async fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Daemon {
            ephemeral,
            stall_timeout_ms,
        } => {
            let options = zeroclaw_daemon::DaemonOptions {
                config_dir: cli.config_dir,
                ephemeral,
                stall_timeout: stall_timeout_ms.map(Duration::from_millis),
            };
            zeroclaw_daemon::run(options)
                .await
                .map_err(|e| e.to_string())
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
        } => chat::run(cli.config_dir, socket, agent, session).await,
        Command::Status { socket } => {
            rpc::call_and_print(cli.config_dir, socket, "status", None).await
        }
        Command::Config { action, socket } => config::run(cli.config_dir, socket, action).await,
        Command::Pair { user } => pair::pair(cli.config_dir, &user),
        Command::Unpair { user, token } => pair::unpair(cli.config_dir, user, token),
        Command::Upload {
            session,
            files,
            socket,
        } => upload::run(cli.config_dir, socket, session, files).await,
        Command::Acp { agent, socket } => {
            let config_dir = cli.config_dir;
            acp::run(acp::Options {
                config_dir,
                socket,
                agent,
            })
            .await
        }
        Command::Connect { socket } => connect::run(rpc::endpoint(cli.config_dir, socket)?).await,
    }
}
