//! What every handler starts from: the shared state (the service, limits, the answer cache), the
//! domain path segment, and a request's checked parameters and representation (`prepare`).

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use serde::de::DeserializeOwned;

use super::answer::AnswerCache;
use super::error::AppError;
use super::negotiate::{Format, negotiate};
use crate::engine::Domain;
use crate::service::ask::{Params, Question};
use crate::service::static_site::StaticSite;
use crate::service::{Service, Snapshot};

/// Limits applied to every request.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest `limit` a run list accepts.
    pub max_rows: usize,
    /// Long answers (ITLs, output lengths) estimated at this many bytes or more are streamed
    /// rather than held and cached: a filter over many runs reaches gigabytes. Smaller ones (a
    /// single run's ITLs) are cached whole, so a repeated answer is sent without encoding it again.
    pub stream_bytes: usize,
}

impl Limits {
    /// `stream_bytes` unless configured otherwise.
    pub const STREAM_BYTES: usize = 64 << 20;
}

/// How answers are sent: caching headers, cross-origin access, the frontend's files.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// `Cache-Control: max-age` of answers of the snapshot, in seconds (answers of a source
    /// pinned to a commit are `immutable`).
    pub max_age: u32,
    /// Origins allowed to read answers from a browser; empty: any origin.
    pub cors_origins: Vec<String>,
    /// The leaderboard's built frontend, served at `/leaderboard/` (`--leaderboard-ui`).
    pub leaderboard_ui: Option<Arc<StaticSite>>,
    /// How long a shutdown keeps serving after /readyz turns 503, so a load balancer stops
    /// sending before the listener closes (`--drain-delay`).
    pub drain_delay: std::time::Duration,
    /// Bounds of every request and the admin token (`guard`).
    pub guard: GuardOptions,
    /// Read the source again this often and serve it if its content changed (`--watch`).
    pub watch: Option<std::time::Duration>,
    /// Timeouts and the bound of the listener's connections.
    pub connections: super::connections::ConnectionOptions,
    /// The dataset as a Hugging Face Hub repository under `/hub` (`--hub-mirror`); none: off.
    pub mirror: Option<MirrorOptions>,
    /// The Model Context Protocol at `/mcp` (feature `mcp`); none: off.
    pub mcp: Option<McpOptions>,
    /// The addresses of the other front ends, for the home page to name.
    pub front_ends: FrontEnds,
    /// Pieces of speed machinery switched off (`--plain`).
    pub plain: crate::service::machinery::Plain,
}

/// Where the SQL front ends beside HTTP listen (`--pg-bind`, `--flight-bind`); none: off.
#[derive(Debug, Clone, Copy, Default)]
pub struct FrontEnds {
    pub pg: Option<std::net::SocketAddr>,
    pub flight: Option<std::net::SocketAddr>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            max_age: Self::MAX_AGE,
            cors_origins: Vec::new(),
            leaderboard_ui: None,
            drain_delay: std::time::Duration::ZERO,
            guard: Default::default(),
            watch: None,
            connections: Default::default(),
            mirror: None,
            mcp: None,
            front_ends: FrontEnds::default(),
            plain: Default::default(),
        }
    }
}

impl HttpOptions {
    /// `max_age` unless configured otherwise.
    pub const MAX_AGE: u32 = 60;
}

/// The mirror's options (`--hub-mirror`).
#[derive(Debug, Clone)]
pub struct MirrorOptions {
    /// The repository a local, compiled or raw source is served as (`--hub-mirror-repo`).
    pub repo: String,
    /// The bearer token every request needs (`MLENERGY_MIRROR_TOKEN`); none: loopback only.
    pub token: Option<String>,
}

impl MirrorOptions {
    /// `--hub-mirror-repo` unless configured otherwise: the toolkit's default repository.
    pub const REPO: &'static str = "ml-energy/benchmark-v3";
}

/// The Model Context Protocol's options (`/mcp`).
#[derive(Debug, Clone, Default)]
pub struct McpOptions {
    /// The bearer token `/mcp` needs (`MLENERGY_MCP_TOKEN`, else the admin token when it is the
    /// only one set); none: open, read-only as always.
    pub token: Option<String>,
    /// Host names (or `host:port`) accepted in `Host` beside the loopback ones
    /// (`--mcp-allowed-host`); their origins are accepted in `Origin`.
    pub allowed_hosts: Vec<String>,
}

/// The bounds of every request.
#[derive(Debug, Clone)]
pub struct GuardOptions {
    /// Longest request target (path and query), bytes.
    pub max_uri_bytes: usize,
    /// Most bytes of request headers (names and values).
    pub max_header_bytes: usize,
    /// Requests in flight at once; more are shed.
    pub max_in_flight: usize,
    /// Requests in flight at once on the costly routes; more are shed.
    pub max_costly_in_flight: usize,
    /// Time limit to an answer's head.
    pub request_timeout: std::time::Duration,
    /// The bearer token admin actions need (`MLENERGY_ADMIN_TOKEN`).
    pub admin_token: Option<String>,
    /// Whether the server listens on loopback only (admin actions are then allowed without a
    /// token).
    pub loopback: bool,
    /// Requests each client IP may make (off: none).
    pub rate_per_ip: Option<RateLimit>,
    /// The header that names the client behind a reverse proxy (`x-forwarded-for`: its last
    /// address, the one the proxy saw; `x-real-ip`); none: the connection's peer address.
    pub client_ip_header: Option<axum::http::HeaderName>,
    /// Largest request body, bytes (`--max-body-bytes`); larger: 413.
    pub max_body_bytes: usize,
    /// Largest body of the one route that takes bulk samples, the ITL mixture fit
    /// (`--max-samples-body-bytes`).
    pub max_samples_body_bytes: usize,
}

/// The body limit of the route a request is for (a request extension set beside axum's
/// `DefaultBodyLimit`), so that a refusal can name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimit(pub usize);

impl GuardOptions {
    /// `--max-body-bytes` unless configured otherwise: 2 MiB (as Datasette's), room for an SQL
    /// text or a logistic fit of some ten thousand points.
    pub const MAX_BODY_BYTES: usize = 2 << 20;
    /// `--max-samples-body-bytes` unless configured otherwise: about ten million numbers as JSON.
    pub const MAX_SAMPLES_BODY_BYTES: usize = 256 << 20;
}

/// A client's rate: `per_second` on average, with bursts of up to `burst` requests at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: u32,
}

impl Default for GuardOptions {
    fn default() -> Self {
        GuardOptions {
            max_uri_bytes: 8 << 10,
            max_header_bytes: 32 << 10,
            max_in_flight: 1024,
            max_costly_in_flight: 4 * std::thread::available_parallelism().map_or(2, |n| n.get()),
            request_timeout: std::time::Duration::from_secs(30),
            admin_token: None,
            loopback: true,
            rate_per_ip: None,
            client_ip_header: None,
            max_body_bytes: Self::MAX_BODY_BYTES,
            max_samples_body_bytes: Self::MAX_SAMPLES_BODY_BYTES,
        }
    }
}

/// Requests in flight now.
#[derive(Debug, Default)]
pub struct InFlight {
    pub(super) all: std::sync::atomic::AtomicUsize,
    /// Requests shed at --max-in-flight so far (the costly ones refused at the door's places are
    /// the door's count).
    pub(super) shed_all: std::sync::atomic::AtomicU64,
}

impl InFlight {
    /// Requests shed at --max-in-flight so far.
    pub fn shed_all(&self) -> u64 {
        self.shed_all.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Per-client rate limiting (`--rate-limit-per-ip`): the generic cell rate algorithm, one
/// theoretical arrival time per client IP. Clients are kept in a bounded cache and forgotten after
/// an hour idle (by then any practical limit owes them a full burst again).
pub struct Rates {
    /// Theoretical arrival time of each client's next request, ns since `start`.
    clients: moka::sync::Cache<std::net::IpAddr, Arc<std::sync::Mutex<u64>>>,
    start: std::time::Instant,
    /// Requests refused so far.
    pub(super) limited: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Rates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rates")
            .field("clients", &self.clients.entry_count())
            .finish()
    }
}

impl Default for Rates {
    fn default() -> Self {
        Self::new()
    }
}

impl Rates {
    /// Clients tracked at most (beyond it the least recently seen are forgotten).
    const CLIENTS: u64 = 100_000;

    pub fn new() -> Rates {
        Rates {
            clients: moka::sync::Cache::builder()
                .max_capacity(Self::CLIENTS)
                .time_to_idle(std::time::Duration::from_secs(3600))
                .build(),
            start: std::time::Instant::now(),
            limited: Default::default(),
        }
    }

    /// Take one request of `client` under `limit`: `Err(seconds)` to wait when it is over it.
    pub fn take(&self, client: std::net::IpAddr, limit: RateLimit) -> Result<(), u64> {
        let interval = (1e9 / limit.per_second) as u64;
        let tolerance = interval.saturating_mul(u64::from(limit.burst.max(1) - 1));
        let now = self.start.elapsed().as_nanos() as u64;
        let cell = self.clients.get_with(client, Default::default);
        let mut tat = cell.lock().expect("rate cell");
        let due = (*tat).max(now);
        if due - now > tolerance {
            self.limited
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Err((due - now - tolerance).div_ceil(1_000_000_000).max(1));
        }
        *tat = due + interval;
        Ok(())
    }
}

/// State shared by all handlers: one reference-counted handle. Every layer and handler that
/// takes the state clones it per request (axum clones a route's service stack for each call), so a
/// clone is one atomic increment rather than one per part (a profile of cached answers showed the
/// parts' clones and drops in the server's time).
#[derive(Clone)]
pub struct AppState(Arc<StateParts>);

impl std::ops::Deref for AppState {
    type Target = StateParts;

    fn deref(&self) -> &StateParts {
        &self.0
    }
}

/// The parts of [`AppState`].
pub struct StateParts {
    /// What requests are answered from: the snapshot, derived data, prefetch jobs.
    pub service: Arc<Service>,
    pub limits: Limits,
    /// Encoded responses by (snapshot, path, query, format). Snapshots are immutable, so an entry
    /// never goes stale; a reload changes the snapshot part of the key.
    pub cache: AnswerCache,
    /// Whole responses of the answer cache by entity tag, answered before routing further
    /// (`transport`).
    pub kept: super::answer::KeptResponses,
    /// The service's door: questions declared in `service::ask` are answered there, for every
    /// front end, with the answer cache below.
    pub door: Arc<crate::service::ask::Door>,
    /// Shared: every handler clones the state.
    pub http: Arc<HttpOptions>,
    /// What answers depend on besides the snapshot and the request: the server's version and
    /// the settings that shape answers (limits, the leaderboard's date). Part of every entity tag.
    pub salt: Arc<str>,
    /// Set when a shutdown starts: /readyz answers 503 from then on.
    pub draining: Arc<std::sync::atomic::AtomicBool>,
    /// Requests in flight (`guard`).
    pub in_flight: Arc<InFlight>,
    /// Per-client rates (`guard`).
    pub rates: Arc<Rates>,
    /// Request metrics (`metrics`).
    pub metrics: Arc<super::request_metrics::Metrics>,
    /// The listener's connections (`connections`).
    pub connections: Arc<super::connections::ConnectionStats>,
}

impl AppState {
    pub fn new(service: Arc<Service>, limits: Limits, cache_bytes: u64) -> Self {
        let salt = format!(
            "{}|{:?}|{:?}",
            env!("CARGO_PKG_VERSION"),
            limits,
            service.leaderboard_date()
        );
        let http = HttpOptions::default();
        let mut door = crate::service::ask::Door::new(
            service.clone(),
            cache_bytes,
            limits.max_rows,
            limits.stream_bytes,
        );
        door.set_costly_places(http.guard.max_costly_in_flight);
        let door = Arc::new(door);
        AppState(Arc::new(StateParts {
            service,
            limits,
            cache: door.cache().clone(),
            door,
            kept: super::answer::KeptResponses::new(cache_bytes),
            http: Arc::new(http),
            salt: salt.into(),
            draining: Default::default(),
            in_flight: Default::default(),
            rates: Arc::new(Rates::new()),
            metrics: Default::default(),
            connections: Default::default(),
        }))
    }

    /// The state with these HTTP options: set once, before the state is shared.
    pub fn with_http(mut self, http: HttpOptions) -> Self {
        let parts =
            Arc::get_mut(&mut self.0).expect("HTTP options are set before the state is shared");
        let door = Arc::get_mut(&mut parts.door).expect("the door is shared once the state is");
        door.set_plain(http.plain);
        door.set_costly_places(http.guard.max_costly_in_flight);
        if !http.plain.on(crate::service::machinery::Piece::Kept) {
            parts.kept = super::answer::KeptResponses::new(0);
        }
        parts.http = Arc::new(http);
        self
    }
}

/// `Path<T>` whose rejection is a problem+json 400 instead of axum's plain text.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|e| AppError::InvalidParameter {
                parameter: "path".into(),
                detail: e.body_text(),
                allowed: None,
            })
    }
}

/// The domain path segment, or 404 naming the allowed domains.
pub fn parse_domain(s: &str) -> Result<Domain, AppError> {
    Domain::parse(s).ok_or_else(|| AppError::UnknownDomain(s.to_string()))
}

/// What every data endpoint starts from: the domain, its checked parameters, the representation
/// and the snapshot to answer from.
pub struct Prepared {
    pub domain: Domain,
    pub params: Params,
    pub format: Format,
    pub snapshot: Arc<Snapshot>,
}

impl Prepared {
    /// The rows of the request's domain that its run filters select, in default order.
    pub fn filtered_rows(&self) -> Result<Vec<usize>, AppError> {
        let q = self.params.run_filters(self.domain)?;
        Ok(self
            .snapshot
            .table(self.domain)
            .filter_rows(&q.filters, q.stability)?)
    }
}

pub async fn prepare(
    state: &AppState,
    domain: &str,
    endpoint: Question,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Prepared, AppError> {
    let domain = parse_domain(domain)?;
    let params = Params::parse(domain, endpoint, query)?;
    let format = negotiate(
        params.format()?,
        headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()),
    )?;
    let snapshot = state.service.snapshot_at(params.revision()?).await?;
    Ok(Prepared {
        domain,
        params,
        format,
        snapshot,
    })
}

/// A question of the service's door as its route receives it: the route's `domain` and `run_id`
/// path segments, the request's path, query and headers. A route with no `domain` segment is
/// under `/v1/llm/`, the LLM domain's. A door route's handler is `asked.ask(question)`.
pub struct Asked {
    state: AppState,
    domain: String,
    run_id: Option<String>,
    path: String,
    query: Option<String>,
    headers: HeaderMap,
}

impl Asked {
    /// The door's answer to `question`, asked with this request: the domain and parameters
    /// checked, the representation negotiated, and the door's answer sent. The answer's next page
    /// is linked at the request's path.
    pub async fn ask(
        self,
        question: crate::service::ask::Question,
    ) -> Result<axum::response::Response, AppError> {
        let domain = parse_domain(&self.domain)?;
        let mut req = crate::service::ask::Request::parse(
            question,
            domain,
            self.run_id,
            self.query.as_deref(),
            self.path,
        )?;
        req.format = negotiate(
            req.params.format()?,
            self.headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
        )?;
        Ok(super::answer::reply(self.state.door.ask(&req).await?))
    }
}

impl FromRequestParts<AppState> for Asked {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let ApiPath(mut segments) =
            ApiPath::<std::collections::HashMap<String, String>>::from_request_parts(parts, state)
                .await?;
        let path = match parts.extensions.get::<axum::extract::OriginalUri>() {
            Some(original) => original.0.path().to_string(),
            None => parts.uri.path().to_string(),
        };
        let domain = segments
            .remove("domain")
            .unwrap_or_else(|| Domain::Llm.as_str().to_string());
        Ok(Asked {
            state: state.clone(),
            domain,
            run_id: segments.remove("run_id"),
            path,
            query: parts.uri.query().map(str::to_string),
            headers: parts.headers.clone(),
        })
    }
}

/// The `revision` a request names (none: the served one), read from its query alone: the
/// extractor of the endpoints whose other query parameters are not the door's (leaderboard files,
/// fields, SQL, the explorer, Croissant).
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Revision {
    /// The dataset revision to answer from: a hub commit, branch or tag, a local snapshot's name,
    /// or a snapshot id (default: the served revision).
    #[param(pattern = "^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")]
    pub revision: Option<String>,
}

impl Revision {
    /// The revision named in `query`, checked.
    pub fn of_query(query: Option<&str>) -> Result<Revision, AppError> {
        let mut revision = None;
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            if k == "revision" {
                if revision.is_some() {
                    return Err(AppError::InvalidParameter {
                        parameter: "revision".into(),
                        detail: "parameter 'revision' takes a single value".into(),
                        allowed: None,
                    });
                }
                revision = Some(crate::service::ask::check_revision(&v)?.to_string());
            }
        }
        Ok(Revision { revision })
    }

    /// The snapshot it names.
    pub async fn snapshot(&self, state: &AppState) -> Result<Arc<Snapshot>, AppError> {
        Ok(state.service.snapshot_at(self.revision.as_deref()).await?)
    }
}

/// As an extractor: the query's only parameter is `revision` (another is refused, naming it).
impl<S: Send + Sync> FromRequestParts<S> for Revision {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, AppError> {
        let query = parts.uri.query();
        if let Some((other, _)) =
            form_urlencoded::parse(query.unwrap_or("").as_bytes()).find(|(k, _)| k != "revision")
        {
            return Err(AppError::UnknownParameter {
                parameter: other.into_owned(),
                allowed: vec!["revision".into()],
            });
        }
        Revision::of_query(query)
    }
}

/// The origin a link to this server names (the explorer's snippets, Croissant's files): the request's `Host` (the scheme from `X-Forwarded-Proto` when a
/// proxy says https), or the default address.
pub fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.len() <= 255
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]_".contains(&b))
        })
        .unwrap_or("127.0.0.1:8080");
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.eq_ignore_ascii_case("https"));
    format!("{}://{host}", if https { "https" } else { "http" })
}
