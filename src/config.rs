//! Command line and environment: `serve` (the default) and `sample`. Every serve option also
//! reads an `MLENERGY_*` environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "mlenergy-server",
    version,
    about = "HTTP query service over the ML.ENERGY benchmark-v3 dataset"
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options for `serve`, which also runs when no subcommand is given.
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the dataset over HTTP (the default).
    Serve(ServeArgs),
    /// Rebuild data/sample from the public run tables (shared/data/real).
    Sample(SampleArgs),
    /// Exit 0 if a running server answers GET /readyz with 200 (for container health checks).
    Healthcheck(HealthcheckArgs),
    /// Build a compiled data directory (runs/*.parquet, raw files, configs) from raw results.
    Build(BuildArgs),
}

#[derive(Debug, Clone, Args)]
pub struct BuildArgs {
    /// Raw benchmark roots (directories holding llm/ and diffusion/, or a .../current/run directory).
    #[arg(required = true)]
    pub roots: Vec<PathBuf>,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// LLM config directory (default: the first ROOT/configs/vllm).
    #[arg(long)]
    pub llm_config_dir: Option<PathBuf>,
    /// Diffusion config directory (default: the first ROOT/configs/xdit).
    #[arg(long)]
    pub diffusion_config_dir: Option<PathBuf>,
    /// Only these tasks (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub tasks: Option<Vec<String>>,
    /// Write the parquet tables and configs but not the raw results files.
    #[arg(long)]
    pub skip_raw: bool,
}

#[derive(Debug, Clone, Args)]
pub struct HealthcheckArgs {
    /// Address of the server to check.
    #[arg(long, env = "MLENERGY_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "MLENERGY_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Compiled data directory (runs/llm.parquet, runs/diffusion.parquet), or a raw benchmark
    /// root (detected, or forced with a `raw:` prefix) whose rows are derived at start. Default:
    /// the embedded dataset data/sample (next to the working directory or the crate).
    #[arg(long, env = "MLENERGY_DATA")]
    pub data: Option<String>,
    /// Log line format.
    #[arg(long, env = "MLENERGY_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Largest page a run list may ask for (`limit`).
    #[arg(long, env = "MLENERGY_MAX_ROWS", default_value_t = 100_000)]
    pub max_rows: usize,
    /// Memory for cached encoded responses, in bytes.
    #[arg(long, env = "MLENERGY_RESPONSE_CACHE_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub response_cache_bytes: u64,
}

#[derive(Debug, Clone, Args)]
pub struct SampleArgs {
    /// The shared run tables (llm_runs.jsonl, diffusion_runs.jsonl, histogram bins).
    #[arg(long, default_value = "../shared/data/real")]
    pub from: PathBuf,
    /// Output directory.
    #[arg(long, default_value = "data/sample")]
    pub out: PathBuf,
}

impl ServeArgs {
    /// The data directory to serve: `--data`, else `data/sample` in the working directory, else
    /// the one next to this crate's sources.
    pub fn data_dir(&self) -> String {
        if let Some(d) = &self.data {
            return d.clone();
        }
        let local = PathBuf::from("data/sample");
        if local.join("runs").is_dir() {
            return local.display().to_string();
        }
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("data/sample")
            .display()
            .to_string()
    }
}
