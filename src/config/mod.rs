//! Command line and environment: `serve` (the default), `build`, `sample` and `healthcheck`.
//! Every serve option also reads an `MLENERGY_*` environment variable.
//!
//! Layer: the top, with the binary's `main`; may import every layer.

pub mod entry;
pub mod log_json;
pub mod log_out;
pub mod reference;

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

// `serve`'s arguments are large next to the others; the command is parsed once.
#[allow(clippy::large_enum_variant)]
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
    /// Import LLM Energy Measure or IPW results into the measurement tables (parquet) in --out.
    Import(ImportArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Result directories: a LEM v1 results directory (aggregated/, raw/), LEM v2 result
    /// directories, IPW profile or agentic run directories, or a directory holding such; the kind
    /// is detected, or restricted with a `lem:` or `ipw:` prefix.
    #[arg(required = true)]
    pub sources: Vec<String>,
    /// Output directory (one parquet file per table); sources imported there before and not named
    /// again are kept.
    #[arg(long)]
    pub out: PathBuf,
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

/// `serve`'s options, a block per concern; each block becomes the options of its part in one place
/// (the methods below and on the blocks).
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub http: HttpArgs,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub leaderboard: LeaderboardArgs,
    #[command(flatten)]
    pub sql: SqlArgs,
    #[command(flatten)]
    pub admin: AdminArgs,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// The PostgreSQL wire protocol (feature `pg`).
    #[cfg(feature = "pg")]
    #[command(flatten)]
    pub pg: PgArgs,
    /// Arrow Flight SQL (feature `flight`).
    #[cfg(feature = "flight")]
    #[command(flatten)]
    pub flight: FlightArgs,
    /// The Model Context Protocol (feature `mcp`).
    #[cfg(feature = "mcp")]
    #[command(flatten)]
    pub mcp: McpArgs,
}

/// The HTTP listener and its answers.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "HTTP")]
pub struct HttpArgs {
    /// Address to listen on.
    #[arg(long, env = "MLENERGY_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,
    /// Log lines on standard output, each request's with its `x-request-id`. `json` lines have
    /// the members of tracing-subscriber's JSON format (`timestamp`, `level`, `fields`, `target`,
    /// `span`, `spans`). Lines are written in batches, shortly after they are logged, and all of
    /// them before the process exits.
    #[arg(long, env = "MLENERGY_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// An origin allowed to read answers from a browser (`https://ml.energy`); repeat it, or
    /// separate origins with commas. Default: any origin.
    #[arg(long = "cors-origin", env = "MLENERGY_CORS_ORIGINS", value_delimiter = ',', value_parser = parse_origin)]
    pub cors_origins: Vec<String>,
    /// `Cache-Control: max-age` of answers, in seconds. Answers of a hub source pinned to a
    /// commit (`hf://datasets/ORG/NAME@<40-hex commit>`) are `immutable` instead.
    #[arg(long, env = "MLENERGY_CACHE_MAX_AGE", default_value_t = crate::http::HttpOptions::MAX_AGE)]
    pub cache_max_age: u32,
    /// Memory for cached encoded responses, in bytes.
    #[arg(long, env = "MLENERGY_RESPONSE_CACHE_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub response_cache_bytes: u64,
    /// Long answers (ITLs, output lengths) in JSON, CSV, NDJSON or Parquet estimated at this many
    /// bytes or more are streamed while they are encoded, and not cached (in Arrow they are always
    /// sent straight from the derived data's buffers, uncopied).
    #[arg(long, env = "MLENERGY_STREAM_ANSWER_BYTES", default_value_t = crate::http::Limits::STREAM_BYTES)]
    pub stream_answer_bytes: usize,
    /// Pieces of speed machinery to switch off, each answering through the plain path instead
    /// (for the differential tests and bench/machinery_bench.py); the answers do not change.
    #[arg(long, env = "MLENERGY_PLAIN", value_enum, value_delimiter = ',')]
    pub plain: Vec<crate::service::machinery::Piece>,
    /// On shutdown (SIGTERM, Ctrl-C), how long to keep answering after /readyz turns 503
    /// (`status: draining`), so a load balancer stops sending before the listener closes; then
    /// the requests in flight finish.
    #[arg(long, env = "MLENERGY_DRAIN_DELAY", default_value = "0s", value_parser = humantime::parse_duration)]
    pub drain_delay: std::time::Duration,
}

/// What is served and where it comes from.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Data source")]
pub struct SourceArgs {
    /// Compiled data directory (runs/llm.parquet, runs/diffusion.parquet); a raw benchmark root
    /// (detected, or forced with a `raw:` prefix) whose rows are derived at start; the Hugging
    /// Face dataset `hf://datasets/ORG/NAME[@REVISION]`; or an object_store URL (s3://, gs://,
    /// az://, http(s)://, file://) of a compiled directory. Default: the embedded dataset
    /// data/sample (next to the working directory or the crate).
    #[arg(long, env = "MLENERGY_DATA")]
    pub data: Option<String>,
    /// Measurements of other tools to serve under /v1/measurements beside the dataset (repeatable):
    /// a directory written by `import`, or result directories imported at start (kind detected,
    /// or forced with a `lem:` or `ipw:` prefix).
    #[arg(long = "import", value_name = "PATH")]
    pub imports: Vec<String>,
    /// Read the --data source again this often (e.g. 5m) and serve it when its content changed:
    /// a new commit of a hub revision such as main, a rewritten directory; a change is served
    /// once two reads in a row find it. Off by default.
    #[arg(long, env = "MLENERGY_WATCH", value_parser = humantime::parse_duration)]
    pub watch: Option<std::time::Duration>,
    /// A local snapshot directory served beside --data under a revision name (repeatable):
    /// `NAME=DIR`, asked for with `revision=NAME` on every read endpoint.
    #[arg(long = "snapshot", value_name = "NAME=DIR", value_parser = parse_named_snapshot)]
    pub snapshots: Vec<(String, String)>,
    /// Snapshots held at once, the served one among them: another revision asked for is loaded
    /// on first use, and the least recently used is dropped beyond this many.
    #[arg(long, env = "MLENERGY_MAX_SNAPSHOTS", default_value_t = crate::service::revisions::Revisions::MAX_SNAPSHOTS, value_parser = clap::value_parser!(usize))]
    pub max_snapshots: usize,
    /// Hugging Face endpoint.
    #[arg(long, env = "HF_ENDPOINT", default_value = "https://huggingface.co")]
    pub hf_endpoint: String,
    /// Hugging Face token (for the gated dataset); default: the token file in HF_HOME.
    #[arg(long, env = "HF_TOKEN", hide_env_values = true)]
    pub hf_token: Option<String>,
    /// Hugging Face home: the parquet summaries are stored in HF_HOME/hub as huggingface_hub
    /// stores them, so the Python toolkit finds them too. Default: ~/.cache/huggingface.
    #[arg(long, env = "HF_HOME")]
    pub hf_home: Option<PathBuf>,
    /// Longest wait for an upstream answer or for the next chunk of a download.
    #[arg(long, env = "MLENERGY_UPSTREAM_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub upstream_timeout: std::time::Duration,
    /// Extra attempts after an upstream 5xx, refused connection or timeout.
    #[arg(long, env = "MLENERGY_UPSTREAM_RETRIES", default_value_t = 2)]
    pub upstream_retries: u32,
}

/// `NAME=DIR` of `--snapshot`: a revision's name and its directory.
fn parse_named_snapshot(s: &str) -> Result<(String, String), String> {
    let (name, dir) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not NAME=DIR"))?;
    crate::service::ask::check_revision(name).map_err(|e| e.to_string())?;
    if dir.is_empty() {
        return Err(format!("'{s}' names no directory"));
    }
    Ok((name.to_string(), dir.to_string()))
}

/// The raw cache, persisted derived data and the catalog.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Cache")]
pub struct CacheArgs {
    /// Raw cache for remote sources, and persisted derived data (ITLs, output lengths, timelines)
    /// for every source: a directory, or an object_store URL shared by replicas.
    /// Default: $XDG_CACHE_HOME/mlenergy-server (~/.cache/mlenergy-server).
    #[arg(long, env = "MLENERGY_CACHE")]
    pub cache: Option<String>,
    /// Bound on the cache, raw files and persisted derived data together; least recently used
    /// files are evicted beyond it.
    #[arg(long, env = "MLENERGY_CACHE_MAX_BYTES", default_value_t = 20 * 1024 * 1024 * 1024)]
    pub cache_max_bytes: u64,
    /// Catalog database (the cache's index, fetch leases, prefetch jobs, hub commits seen):
    /// sqlite://PATH or postgres://...; its schema is in migrations/, applied at start. Default:
    /// catalog.db in the cache directory.
    #[arg(long, env = "MLENERGY_CATALOG", hide_env_values = true)]
    pub catalog: Option<String>,
    /// Life of a fetch lease: replicas sharing a cache and a `postgres://` catalog fetch each raw
    /// file once, the others waiting; a lease whose replica died is taken over after this long.
    #[arg(long, env = "MLENERGY_CACHE_LEASE_TTL", default_value = "30s", value_parser = humantime::parse_duration)]
    pub cache_lease_ttl: std::time::Duration,
}

/// The bounds of requests and connections.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// Largest page a run list may ask for (`limit`).
    #[arg(long, env = "MLENERGY_MAX_ROWS", default_value_t = crate::service::ask::DEFAULT_MAX_ROWS)]
    pub max_rows: usize,
    /// Time limit to an answer's head; past it the work is stopped and the answer is 504.
    #[arg(long, env = "MLENERGY_REQUEST_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub request_timeout: std::time::Duration,
    /// Requests in flight at once; more are answered 503 with Retry-After at once.
    #[arg(long, env = "MLENERGY_MAX_IN_FLIGHT", default_value_t = 1024)]
    pub max_in_flight: usize,
    /// Costly questions (raw-derived data, SQL, fits, models and charts) computed at once, from
    /// every front end (default: 4 per core); more are answered 503 `busy` with Retry-After at
    /// once. An answer from the cache takes no place.
    #[arg(long, env = "MLENERGY_MAX_COSTLY_IN_FLIGHT")]
    pub max_costly_in_flight: Option<usize>,
    /// Requests per second each client IP may make on average (e.g. 50, or 0.5); more are
    /// answered 429 with Retry-After. Off by default. Probes are not counted.
    #[arg(long, env = "MLENERGY_RATE_LIMIT_PER_IP", value_parser = parse_rate)]
    pub rate_limit_per_ip: Option<f64>,
    /// Requests a client may make at once beyond its average rate (--rate-limit-per-ip).
    #[arg(long, env = "MLENERGY_RATE_LIMIT_BURST", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_burst: u32,
    /// The header naming the client behind a reverse proxy, for --rate-limit-per-ip
    /// (x-forwarded-for: its last address, the one the proxy saw; or x-real-ip). Default: the
    /// connection's peer address. Set it only behind a proxy that sets the header.
    #[arg(long, env = "MLENERGY_CLIENT_IP_HEADER", value_parser = parse_header_name)]
    pub client_ip_header: Option<axum::http::HeaderName>,
    /// Longest request target (path and query) in bytes; longer: 414.
    #[arg(long, env = "MLENERGY_MAX_URI_BYTES", default_value_t = 8192)]
    pub max_uri_bytes: usize,
    /// Most bytes of request headers; more: 431.
    #[arg(long, env = "MLENERGY_MAX_HEADER_BYTES", default_value_t = 32768)]
    pub max_header_bytes: usize,
    /// Largest request body (SQL text, model data), bounded before it is read; larger: 413
    /// `payload_too_large` naming the limit.
    #[arg(long, env = "MLENERGY_MAX_BODY_BYTES", default_value_t = crate::http::state::GuardOptions::MAX_BODY_BYTES)]
    pub max_body_bytes: usize,
    /// Largest body of an ITL mixture fit (POST /v1/models/itl-mixture/fit: bulk samples);
    /// larger: 413.
    #[arg(long, env = "MLENERGY_MAX_SAMPLES_BODY_BYTES", default_value_t = crate::http::state::GuardOptions::MAX_SAMPLES_BODY_BYTES)]
    pub max_samples_body_bytes: usize,
    /// Time a connection has to send a request's headers once it starts one; past it the
    /// connection is closed.
    #[arg(long, env = "MLENERGY_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = parse_positive_duration)]
    pub header_read_timeout: std::time::Duration,
    /// How long a connection may stay open with no request under way (keep-alive, or opened and
    /// silent); past it the connection is closed.
    #[arg(long, env = "MLENERGY_KEEP_ALIVE_TIMEOUT", default_value = "30s", value_parser = parse_positive_duration)]
    pub keep_alive_timeout: std::time::Duration,
    /// HTTP connections open at once; past it a new connection is answered 503 `busy` and closed
    /// at once. Default: 4096, or three quarters of the process's descriptor limit if that is
    /// lower. /metrics counts them: `mlenergy_http_connections_open`, `_accepted_total`,
    /// `_closed_total{kind="refused"|"header_timeout"|"idle"}`.
    #[arg(long, env = "MLENERGY_MAX_CONNECTIONS", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
    /// Time a worker thread runs without a pause before it gives its core up (sched_yield) after
    /// sending an HTTP answer, so that a client or proxy on the same machine reads it at once rather
    /// than a scheduler tick later. Off by default (0s): it shortens the tail only when clients
    /// share the server's cores, and costs throughput otherwise.
    #[arg(long, env = "MLENERGY_CPU_TURN", default_value = "0s", value_parser = humantime::parse_duration)]
    pub cpu_turn: std::time::Duration,
}

/// The leaderboard's data files and frontend.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Leaderboard")]
pub struct LeaderboardArgs {
    /// The leaderboard's `index.json` `last_updated` (YYYY-MM-DD). Default: the snapshot's date
    /// (the embedded dataset's 2026-02-16, a hub revision's commit date, a compiled directory's
    /// modification date).
    #[arg(long, env = "MLENERGY_LEADERBOARD_DATE", value_parser = parse_date)]
    pub leaderboard_date: Option<String>,
    /// When the leaderboard's LLM model files read their runs' raw files for the output-length
    /// histograms (a source without precomputed ones, which `build` writes): `on-request`, a
    /// pair's runs when its file is first asked for (raw files are fetched lazily); or
    /// `background`, from the start (every stable LLM run's results.json is read, downloaded
    /// first from a remote source: tens of gigabytes for the published dataset).
    #[arg(
        long,
        env = "MLENERGY_LEADERBOARD_HISTOGRAMS",
        value_enum,
        default_value = "on-request"
    )]
    pub leaderboard_histograms: HistogramReading,
    /// A built leaderboard frontend (its `dist/`, built with base `/leaderboard/`), served at
    /// `/leaderboard/` beside its data: one process is a whole leaderboard. Read into memory at
    /// start; a path with no file and no extension gets its index.html (client routes).
    #[arg(long, env = "MLENERGY_LEADERBOARD_UI", value_name = "DIR")]
    pub leaderboard_ui: Option<PathBuf>,
}

/// Read-only SQL on every surface (HTTP, PostgreSQL wire, Flight SQL).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "SQL")]
pub struct SqlArgs {
    /// The time limit of an SQL query, from its arrival (its wait for a turn included): it is
    /// stopped and answered 422 past it.
    #[arg(long, env = "MLENERGY_SQL_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration)]
    pub sql_timeout: std::time::Duration,
    /// The memory pool of each SQL query, in bytes (sorts, joins, aggregates, the answer being
    /// collected; no spilling).
    #[arg(long, env = "MLENERGY_SQL_MEMORY_BYTES", default_value_t = 512 << 20)]
    pub sql_memory_bytes: usize,
    /// The most bytes one value an SQL query builds may hold: a string, a list or a struct made
    /// by a function or an aggregate, or a constant. A call past it is stopped before it builds
    /// (422 query_limit); one call's output over a batch may hold 2048 such values.
    #[arg(long, env = "MLENERGY_SQL_VALUE_BYTES", default_value_t = 16 << 10)]
    pub sql_value_bytes: usize,
    /// SQL queries run at once (default: one per core); more wait.
    #[arg(long, env = "MLENERGY_SQL_CONCURRENCY")]
    pub sql_concurrency: Option<usize>,
    /// SQL queries that may wait for a turn; beyond them, 503 with Retry-After.
    #[arg(long, env = "MLENERGY_SQL_QUEUE", default_value_t = crate::service::sql::Sql::QUEUE)]
    pub sql_queue: usize,
    /// Prepared statements kept per SQL surface (HTTP, PostgreSQL wire, Flight SQL) and
    /// snapshot: a query's values (comparison operands, `IN` items, `BETWEEN` bounds in `WHERE`
    /// and `HAVING`) are lifted into placeholders, its statement planned and optimised once and
    /// bound per query (`mlenergy_sql_plan_cache_total` counts hits, misses and evictions). 0
    /// plans every query anew.
    #[arg(long, env = "MLENERGY_SQL_PLANS", default_value_t = crate::service::sql::Sql::PLANS)]
    pub sql_plans: u64,
}

/// Admin actions (prefetch, reload, evictions).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Admin")]
pub struct AdminArgs {
    /// The bearer token admin actions need (`POST .../prefetch`, `POST /v1/admin/reload`,
    /// `DELETE .../runs/{run_id}/cache`; 401 without it). Unset: they are allowed only when the
    /// server listens on loopback (403 `admin_forbidden` otherwise). Never logged.
    #[arg(long, env = "MLENERGY_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
}

/// The dataset as a Hugging Face Hub repository under `/hub`, for the unmodified toolkit
/// (`HF_ENDPOINT=http://HOST:PORT/hub`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Hugging Face mirror")]
pub struct MirrorArgs {
    /// Serve the dataset's files under /hub with the hub's download protocol.
    #[arg(long, env = "MLENERGY_HUB_MIRROR", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub hub_mirror: bool,
    /// The repository a local, compiled or raw source is served as (an hf:// source is served as
    /// itself).
    #[arg(long, env = "MLENERGY_HUB_MIRROR_REPO", default_value = crate::http::state::MirrorOptions::REPO, value_parser = parse_repo_id)]
    pub hub_mirror_repo: String,
    /// The bearer token the mirror needs (clients send it as HF_TOKEN). Unset: the mirror answers
    /// only when the server listens on loopback.
    #[arg(long, env = "MLENERGY_MIRROR_TOKEN", hide_env_values = true)]
    pub mirror_token: Option<String>,
}

/// The PostgreSQL wire protocol's options (built with the `pg` feature).
#[cfg(feature = "pg")]
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "PostgreSQL wire protocol")]
pub struct PgArgs {
    /// Serve the PostgreSQL wire protocol on this address too (psql, Grafana, Metabase, DBeaver):
    /// the same tables, read-only policy and limits as /v1/sql. Off by default.
    #[arg(long, env = "MLENERGY_PG_BIND")]
    pub pg_bind: Option<SocketAddr>,
    /// The password wire-protocol clients must send (any user name; sent in clear text, so pair
    /// it with --pg-tls-cert). Unset: no password.
    #[arg(long, env = "MLENERGY_PG_PASSWORD", hide_env_values = true)]
    pub pg_password: Option<String>,
    /// A PEM certificate chain for the wire protocol's TLS (clients that ask for it get it).
    #[arg(long, env = "MLENERGY_PG_TLS_CERT", requires = "pg_tls_key")]
    pub pg_tls_cert: Option<PathBuf>,
    /// The PEM (PKCS#8) private key of --pg-tls-cert.
    #[arg(long, env = "MLENERGY_PG_TLS_KEY", requires = "pg_tls_cert")]
    pub pg_tls_key: Option<PathBuf>,
    /// Wire-protocol connections open at once; more are closed at once.
    #[arg(long, env = "MLENERGY_PG_MAX_CONNECTIONS", default_value_t = 64)]
    pub pg_max_connections: usize,
}

#[cfg(feature = "pg")]
impl PgArgs {
    /// The wire protocol's options.
    pub fn options(&self) -> crate::pg::PgOptions {
        crate::pg::PgOptions {
            password: self.pg_password.clone().filter(|p| !p.is_empty()),
            tls: self.pg_tls_cert.clone().zip(self.pg_tls_key.clone()),
            max_connections: self.pg_max_connections,
        }
    }
}

/// Arrow Flight SQL's options (built with the `flight` feature).
#[cfg(feature = "flight")]
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Flight SQL")]
pub struct FlightArgs {
    /// Serve Arrow Flight SQL (gRPC) on this address too (ADBC, the Flight SQL JDBC driver,
    /// Grafana's Flight SQL plugin): the same tables, policy and limits as /v1/sql. Off by default.
    #[arg(long, env = "MLENERGY_FLIGHT_BIND")]
    pub flight_bind: Option<SocketAddr>,
}

/// The Model Context Protocol's options (built with the `mcp` feature): the service's questions
/// as tools for AI assistants at /mcp on the HTTP listener.
#[cfg(feature = "mcp")]
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Model Context Protocol")]
pub struct McpArgs {
    /// Serve /mcp (Streamable HTTP). On by default; `--no-mcp` or MLENERGY_MCP=false turns it off.
    #[arg(long, env = "MLENERGY_MCP", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub mcp: bool,
    /// Turn /mcp off.
    #[arg(long = "no-mcp", default_value_t = false)]
    pub no_mcp: bool,
    /// The bearer token /mcp needs. Unset: the admin token when it is set, else none.
    #[arg(long, env = "MLENERGY_MCP_TOKEN", hide_env_values = true)]
    pub mcp_token: Option<String>,
    /// Host names (or host:port) /mcp accepts in the Host header beside localhost, 127.0.0.1 and
    /// [::1] (the check against DNS rebinding); a public deployment names its own.
    #[arg(
        long = "mcp-allowed-host",
        env = "MLENERGY_MCP_ALLOWED_HOSTS",
        value_delimiter = ','
    )]
    pub mcp_allowed_hosts: Vec<String>,
}

#[cfg(feature = "mcp")]
impl McpArgs {
    /// The protocol's options, or none when it is off. `admin_token` stands in for the token
    /// when it is the only one set.
    pub fn options(&self, admin_token: Option<&str>) -> Option<crate::http::state::McpOptions> {
        (self.mcp && !self.no_mcp).then(|| crate::http::state::McpOptions {
            token: self
                .mcp_token
                .clone()
                .filter(|t| !t.is_empty())
                .or_else(|| admin_token.map(str::to_string)),
            allowed_hosts: self
                .mcp_allowed_hosts
                .iter()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .collect(),
        })
    }
}

/// When the leaderboard's histograms are read from raw files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HistogramReading {
    Background,
    OnRequest,
}

/// An origin: `scheme://host[:port]`, nothing after it.
fn parse_origin(s: &str) -> Result<String, String> {
    let s = s.trim();
    let u = url::Url::parse(s).map_err(|e| format!("'{s}' is not an origin: {e}"))?;
    let origin = u.origin().ascii_serialization();
    if origin == "null" || origin != s.trim_end_matches('/') {
        return Err(format!(
            "'{s}' is not an origin (scheme://host[:port], e.g. https://ml.energy)"
        ));
    }
    Ok(origin)
}

/// A hub repository id, `org/name` (letters, digits, `-`, `_`, `.`).
fn parse_repo_id(s: &str) -> Result<String, String> {
    let ok_part = |p: &str| {
        !p.is_empty()
            && !p.starts_with('.')
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    match s.split_once('/') {
        Some((org, name)) if ok_part(org) && ok_part(name) => Ok(s.to_string()),
        _ => Err(format!(
            "'{s}' is not a repository id (org/name, e.g. ml-energy/benchmark-v3)"
        )),
    }
}

/// A `YYYY-MM-DD` date.
fn parse_date(s: &str) -> Result<String, String> {
    if crate::store::hub::is_iso_date(s) {
        Ok(s.to_string())
    } else {
        Err(format!("'{s}' is not a date of the form YYYY-MM-DD"))
    }
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
    /// Cache, catalog and hub settings.
    pub fn source_options(&self) -> crate::service::open::SourceOptions {
        use crate::service::open::default_cache_dir;
        use crate::store::{FetchOptions, hub::HubConfig};
        let (source, cache) = (&self.source, &self.cache);
        crate::service::open::SourceOptions {
            hub: HubConfig {
                endpoint: source.hf_endpoint.clone(),
                token: source.hf_token.clone(),
                home: source.hf_home.clone(),
                fetch: FetchOptions {
                    timeout: source.upstream_timeout,
                    retries: source.upstream_retries,
                },
            },
            cache: cache
                .cache
                .clone()
                .unwrap_or_else(|| default_cache_dir().display().to_string()),
            catalog: cache.catalog.clone(),
            max_bytes: cache.cache_max_bytes,
            lease_ttl: cache.cache_lease_ttl,
        }
    }

    /// The data directory to serve: `--data`, else `data/sample` in the working directory, else
    /// the one next to this crate's sources.
    pub fn data_dir(&self) -> String {
        if let Some(d) = &self.source.data {
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

    /// The service's options (its reloader and imported measurements are the caller's to add).
    pub fn service_options(&self) -> crate::service::ServiceOptions {
        use crate::service::sql::Sql;
        crate::service::ServiceOptions {
            sql_limits: crate::engine::sql::SqlLimits {
                timeout: self.sql.sql_timeout,
                memory_bytes: self.sql.sql_memory_bytes,
                max_rows: self.limits.max_rows,
            },
            sql_concurrency: self
                .sql
                .sql_concurrency
                .unwrap_or_else(Sql::default_concurrency),
            sql_queue: self.sql.sql_queue,
            sql_plans: self.sql.sql_plans,
            sql_values: crate::engine::sql_bounds::ValueBounds::of_value(self.sql.sql_value_bytes),
            leaderboard_date: self.leaderboard.leaderboard_date.clone(),
            histograms_in_background: self.leaderboard.leaderboard_histograms
                == HistogramReading::Background,
            ..Default::default()
        }
    }

    /// The HTTP front end's options, with the leaderboard frontend read from `--leaderboard-ui`.
    pub fn http_options(
        &self,
        leaderboard_ui: Option<std::sync::Arc<crate::service::static_site::StaticSite>>,
    ) -> crate::http::HttpOptions {
        let (l, http) = (&self.limits, &self.http);
        crate::http::HttpOptions {
            max_age: http.cache_max_age,
            plain: crate::service::machinery::Plain::of(&http.plain),
            cors_origins: http.cors_origins.clone(),
            leaderboard_ui,
            drain_delay: http.drain_delay,
            watch: self.source.watch.filter(|d| !d.is_zero()),
            mirror: self
                .mirror
                .hub_mirror
                .then(|| crate::http::state::MirrorOptions {
                    repo: self.mirror.hub_mirror_repo.clone(),
                    token: self.mirror.mirror_token.clone().filter(|t| !t.is_empty()),
                }),
            #[cfg(feature = "mcp")]
            mcp: self
                .mcp
                .options(self.admin.admin_token.as_deref().filter(|t| !t.is_empty())),
            #[cfg(not(feature = "mcp"))]
            mcp: None,
            front_ends: crate::http::state::FrontEnds {
                #[cfg(feature = "pg")]
                pg: self.pg.pg_bind,
                #[cfg(not(feature = "pg"))]
                pg: None,
                #[cfg(feature = "flight")]
                flight: self.flight.flight_bind,
                #[cfg(not(feature = "flight"))]
                flight: None,
            },
            guard: crate::http::state::GuardOptions {
                max_uri_bytes: l.max_uri_bytes,
                max_header_bytes: l.max_header_bytes,
                max_in_flight: l.max_in_flight,
                max_costly_in_flight: l
                    .max_costly_in_flight
                    .unwrap_or(crate::http::state::GuardOptions::default().max_costly_in_flight),
                request_timeout: l.request_timeout,
                admin_token: self.admin.admin_token.clone().filter(|t| !t.is_empty()),
                loopback: http.bind.ip().is_loopback(),
                rate_per_ip: l
                    .rate_limit_per_ip
                    .map(|per_second| crate::http::state::RateLimit {
                        per_second,
                        burst: l.rate_limit_burst,
                    }),
                client_ip_header: l.client_ip_header.clone(),
                max_body_bytes: l.max_body_bytes,
                max_samples_body_bytes: l.max_samples_body_bytes,
            },
            connections: crate::http::connections::ConnectionOptions {
                header_read_timeout: l.header_read_timeout,
                keep_alive_timeout: l.keep_alive_timeout,
                max_connections: l
                    .max_connections
                    .map_or_else(crate::http::connections::default_max_connections, |n| {
                        n as usize
                    }),
                cpu_turn: l.cpu_turn,
            },
        }
    }

    /// The bounds of answers (rows of a page, the size past which long answers stream).
    pub fn answer_limits(&self) -> crate::http::Limits {
        crate::http::Limits {
            max_rows: self.limits.max_rows,
            stream_bytes: self.http.stream_answer_bytes,
        }
    }
}

/// A duration longer than zero.
fn parse_positive_duration(s: &str) -> Result<std::time::Duration, String> {
    match humantime::parse_duration(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(format!("'{s}' is not longer than zero")),
        Err(e) => Err(format!("'{s}' is not a duration such as 10s: {e}")),
    }
}

/// A positive, finite number of requests per second.
fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "'{s}' is not a positive number of requests per second"
        )),
    }
}

/// An HTTP header name.
fn parse_header_name(s: &str) -> Result<axum::http::HeaderName, String> {
    axum::http::HeaderName::from_bytes(s.trim().as_bytes())
        .map_err(|_| format!("'{s}' is not an HTTP header name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::time::Duration;

    fn turn(args: &[&str]) -> Result<Duration, String> {
        let cli = Cli::try_parse_from([&["mlenergy-server"], args].concat())
            .map_err(|e| e.to_string())?;
        Ok(cli.serve.http_options(None).connections.cpu_turn)
    }

    #[test]
    fn cpu_turn_is_off_unless_set() {
        assert_eq!(turn(&[]), Ok(Duration::ZERO));
        assert_eq!(
            turn(&["--cpu-turn", "250us"]),
            Ok(Duration::from_micros(250))
        );
        assert_eq!(turn(&["--cpu-turn", "0s"]), Ok(Duration::ZERO));
        let bad = turn(&["--cpu-turn", "soon"]).unwrap_err();
        assert!(bad.contains("--cpu-turn"), "{bad}");
    }
}
