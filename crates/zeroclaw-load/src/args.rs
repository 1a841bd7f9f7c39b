//! Command-line arguments shared by `main` and the bench runners (`bench`,
//! `sessions-bench`): a leaf module, so the runners need nothing from `main`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Args)]
pub struct SessionsBenchArgs {
    /// The zeroclaw binary to start (`zeroclaw daemon --config-dir <temp dir>`).
    #[arg(long)]
    pub bin: PathBuf,
    /// Words in the streamed prompt.
    #[arg(long, default_value_t = 100_000)]
    pub words: usize,
    #[arg(long, default_value_t = 3)]
    pub stream_rounds: usize,
    /// Measured prompt → first chunk iterations (each also times the provider directly).
    #[arg(long, default_value_t = 300)]
    pub iterations: usize,
    #[arg(long, default_value_t = 20)]
    pub warmup: usize,
    #[arg(long, default_value_t = 10 * 1024 * 1024)]
    pub upload_bytes: usize,
    #[arg(long, default_value_t = 5)]
    pub upload_rounds: usize,
    /// Uploads held staged (begun and filled, never committed) for the memory figure.
    #[arg(long, default_value_t = 20)]
    pub staged_uploads: usize,
    #[arg(long, default_value_t = 10 * 1024 * 1024)]
    pub staged_bytes: usize,
}

#[derive(Args)]
pub struct BenchArgs {
    /// The zeroclaw binary to start (`zeroclaw daemon --config-dir <temp dir>`).
    #[arg(long)]
    pub bin: PathBuf,
    /// Rounds of latency / pipelined / connections, echo and daemon interleaved.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    #[arg(long, default_value_t = 20_000)]
    pub latency_calls: usize,
    #[arg(long, default_value_t = 2_000)]
    pub warmup: usize,
    #[arg(long, default_value_t = 200_000)]
    pub pipelined_calls: usize,
    #[arg(long, default_value_t = 32)]
    pub window: usize,
    #[arg(long, default_value_t = 64)]
    pub conns: usize,
    #[arg(long, default_value_t = 1_000)]
    pub conn_calls: usize,
    #[arg(long, default_value_t = 1_000)]
    pub idle_conns: usize,
    /// Starts timed for the startup figure (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub starts: usize,
    #[arg(long, default_value = "status")]
    pub method: String,
    /// CPU placement for the load rounds: `none` (the scheduler decides), `shared` (client
    /// and server on the first allowed CPU: per-request CPU cost, no cross-CPU wake-ups), or
    /// `split` (server on the first allowed CPU, client on the second).
    #[arg(long, value_enum, default_value_t = Pin::None)]
    pub pin: Pin,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Pin {
    None,
    Shared,
    Split,
}
