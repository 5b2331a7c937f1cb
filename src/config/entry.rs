//! What the binary runs: parse the command line and run `serve` (default), `build`, `import`,
//! `sample` or `healthcheck`. In the library, not in `main.rs`, so that its code (the runtime,
//! the front ends' start-up, the subscriber) is compiled once with the library's codegen units
//! in parallel rather than again in the binary's crate, which a release build compiles last and
//! alone (a long serial step at the end of a cold build; an edit to a handler rebuilds both).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use super::log_json::{JsonLines, JsonMembers};
use super::log_out::BatchedStdout;
use super::{BuildArgs, Cli, Command, HealthcheckArgs, ImportArgs, LogFormat, ServeArgs};
#[cfg(feature = "flight")]
use crate::flight;
use crate::http::AppState;
use crate::peer::ImportSpec;
#[cfg(feature = "pg")]
use crate::pg;
use crate::rawtree::compile::write_compiled;
use crate::rawtree::sample;
use crate::rawtree::{BuildCache, BuildOptions, build};
use crate::service::Service;
use crate::service::open::{open_dataset, reopen_dataset};
use crate::service::reload::Reloader;
use crate::service::static_site::StaticSite;
use clap::Parser;
use tracing_subscriber::EnvFilter;

/// The variables the log filter is read from, first found first.
pub const LOG_FILTER_VARS: [&str; 2] = ["MLENERGY_LOG", "RUST_LOG"];

/// The log filter: `MLENERGY_LOG` if set, else `RUST_LOG` (what most Rust services read), else
/// `info`. A set but empty variable counts as unset; an unreadable one is reported and skipped.
fn log_filter() -> EnvFilter {
    for var in LOG_FILTER_VARS {
        let Some(value) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        match EnvFilter::try_new(&value) {
            Ok(filter) => return filter,
            Err(e) => eprintln!("{var}={value:?} is not a log filter ({e}); ignored"),
        }
    }
    EnvFilter::new("info")
}

/// Log lines of `format`, written by `out` (batched for `serve`, direct for a command that prints
/// its own results between them).
fn init_tracing<W>(format: LogFormat, out: W)
where
    W: for<'a> tracing_subscriber::fmt::MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = log_filter();
    // Colour only on a terminal: a file or a pipe gets plain text (ANSI codes would be noise).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(out)
        .with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .fmt_fields(JsonMembers)
            .event_format(JsonLines)
            .init(),
    }
}

async fn serve(args: ServeArgs) -> Result<(), String> {
    let started = Instant::now();
    let spec = args.data_dir();
    let (dataset, catalog) = open_dataset(&spec, &args.source_options()).await?;
    if let Ok(n) = catalog.fail_orphaned_jobs().await
        && n > 0
    {
        tracing::warn!(
            jobs = n,
            "prefetch jobs interrupted by the last stop marked failed"
        );
    }
    for (path, reason) in &dataset.source.skipped {
        tracing::warn!(%path, %reason, "raw results file skipped");
    }
    tracing::info!(
        source = %dataset.source.location,
        revision = dataset.source.revision.as_deref().unwrap_or("-"),
        catalog = catalog.url(),
        llm_runs = dataset.llm.len(),
        diffusion_runs = dataset.diffusion.len(),
        "dataset loaded"
    );
    let reopen = {
        let (spec, opts, catalog) = (spec.clone(), args.source_options(), catalog.clone());
        move || {
            let (spec, opts, catalog) = (spec.clone(), opts.clone(), catalog.clone());
            Box::pin(async move { reopen_dataset(&spec, &opts, &catalog).await })
                as futures::future::BoxFuture<'static, _>
        }
    };
    let mut options = args.service_options();
    options.reloader = Reloader::new(Arc::new(reopen));
    let load_revision = {
        let (spec, opts, catalog) = (spec.clone(), args.source_options(), catalog.clone());
        let named = Arc::new(args.source.snapshots.clone());
        move |revision: String| {
            let (spec, opts, catalog, named) =
                (spec.clone(), opts.clone(), catalog.clone(), named.clone());
            Box::pin(async move {
                crate::service::open::open_revision(&spec, &revision, &named, &opts, &catalog).await
            }) as futures::future::BoxFuture<'static, _>
        }
    };
    options.revisions = crate::service::revisions::Revisions::new(
        Some(Arc::new(load_revision)),
        args.source.max_snapshots.max(1),
    );
    if !args.source.imports.is_empty() {
        let specs: Vec<ImportSpec> = args
            .source
            .imports
            .iter()
            .map(|s| ImportSpec::parse(s))
            .collect();
        let frames = crate::peer::load(&specs).map_err(|e| format!("--import: {e}"))?;
        options.measurements = crate::service::measurements::Measurements::new(frames);
        tracing::info!(
            runs = options.measurements.imported_runs(),
            "measurements imported"
        );
    }
    let service = Service::with_options(dataset, catalog, options);
    let leaderboard_ui = match &args.leaderboard.leaderboard_ui {
        Some(dir) => {
            let site = StaticSite::load(dir).map_err(|e| format!("--leaderboard-ui: {e}"))?;
            tracing::info!(dir = %site.root().display(), files = site.len(), "serving the leaderboard's frontend at /leaderboard/");
            Some(Arc::new(site))
        }
        None => None,
    };
    let state = AppState::new(
        Arc::new(service),
        args.answer_limits(),
        args.http.response_cache_bytes,
    )
    .with_http(args.http_options(leaderboard_ui));
    #[cfg(feature = "pg")]
    if let Some(addr) = args.pg.pg_bind {
        let bound = pg::start(state.service.clone(), addr, args.pg.options()).await?;
        tracing::info!(addr = %bound, tls = args.pg.pg_tls_cert.is_some(), password = args.pg.pg_password.is_some(), "postgres wire protocol listening");
    }
    #[cfg(feature = "flight")]
    if let Some(addr) = args.flight.flight_bind {
        let bound = flight::start(state.service.clone(), addr).await?;
        tracing::info!(addr = %bound, "Flight SQL listening");
    }
    let bind = args.http.bind;
    crate::server::serve(state, bind, |addr| {
        tracing::info!(%addr, ready_ms = started.elapsed().as_millis() as u64, "listening");
    })
    .await
    .map_err(|e| format!("cannot serve on {bind}: {e}"))
}

/// GET /readyz over a plain TCP connection; an unspecified bind address (0.0.0.0) is checked on
/// loopback.
fn healthcheck(args: &HealthcheckArgs) -> Result<(), String> {
    use std::io::{Read, Write};
    let mut addr = args.bind;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let timeout = std::time::Duration::from_secs(3);
    let mut s =
        std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("{addr}: {e}"))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    write!(
        s,
        "GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head)
        .map_err(|e| format!("{addr}: {e}"))?;
    match &head {
        b"HTTP/1.1 200" => Ok(()),
        other => Err(format!(
            "{addr}/readyz answered {}",
            String::from_utf8_lossy(other)
        )),
    }
}

/// `build`: raw roots to a compiled data directory, with a summary and the skipped files on stderr.
fn import_command(args: &ImportArgs) -> Result<(), String> {
    let started = Instant::now();
    let specs: Vec<ImportSpec> = args.sources.iter().map(|s| ImportSpec::parse(s)).collect();
    let report = crate::peer::import(&specs, &args.out)?;
    for (kind, path, runs, failed) in &report.sources {
        eprintln!("{kind} {}: {runs} runs", path.display());
        for (file, reason) in failed {
            eprintln!("  not read {file}: {reason}");
        }
    }
    eprintln!(
        "wrote {}: {} runs from {} sources ({} unchanged since the last import), {} earlier sources kept, in {:.2} s (read {:.2} s, merged and written {:.2} s)",
        args.out.display(),
        report.runs,
        report.sources.len(),
        report.unchanged,
        report.kept,
        started.elapsed().as_secs_f64(),
        report.read_s,
        report.write_s
    );
    Ok(())
}

fn build_command(args: &BuildArgs) -> Result<(), String> {
    let started = Instant::now();
    let opts = BuildOptions {
        roots: args.roots.clone(),
        llm_config_dir: args.llm_config_dir.clone(),
        diffusion_config_dir: args.diffusion_config_dir.clone(),
        tasks: args.tasks.as_ref().map(|t| t.iter().cloned().collect()),
        progress: true,
    };
    eprintln!("reading {} root(s)", opts.roots.len());
    let cache_path = args.out.join(".mlenergy-build").join("cache.json");
    let previous = BuildCache::load(&cache_path);
    let built = build(&opts, Some(&previous)).map_err(|e| e.to_string())?;
    let (stable, unstable) = built.llm.stability_counts();
    eprintln!(
        "{} results files ({} parsed, {} unchanged since the last build): {} LLM rows ({stable} stable, {unstable} unstable), {} diffusion rows, {} skipped",
        built.runs.len(),
        built.parsed,
        built.reused,
        built.llm.len(),
        built.diffusion.len(),
        built.skipped.len()
    );
    for s in &built.skipped {
        eprintln!("  skipped {}: {}", s.path, s.reason);
    }
    let report = write_compiled(&built, &args.out, args.skip_raw).map_err(|e| e.to_string())?;
    built
        .cache
        .save(&cache_path)
        .map_err(|e| format!("{}: {e}", cache_path.display()))?;
    eprintln!(
        "wrote {}: output-length histograms of {} of {} stable LLM runs, {} raw files copied, {} unchanged, {} config files, in {:.1} s",
        args.out.display(),
        report.histogram_runs,
        report.stable_llm_runs,
        report.raw_files_copied,
        report.raw_files_unchanged,
        report.config_files,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The binary's `main`: the command line parsed, the command run on a multi-threaded runtime
/// whose threads have the stack a client's SQL is bounded against
/// (`engine::sql::WORKER_STACK_BYTES`) and begin a `--cpu-turn` each time they wake for work.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(crate::engine::sql::WORKER_STACK_BYTES)
        .on_thread_unpark(crate::http::connections::turn_begins)
        .build()
    {
        Ok(rt) => rt.block_on(run(cli)),
        Err(e) => {
            eprintln!("error: the runtime did not start: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Some(Command::Sample(a)) => {
            init_tracing(LogFormat::Text, std::io::stdout);
            sample::build_sample(&a.from, &a.out)
                .map_err(|e| e.to_string())
                .map(|()| {
                    println!("wrote {}", a.out.display());
                })
        }
        Some(Command::Healthcheck(a)) => healthcheck(&a),
        Some(Command::Build(a)) => build_command(&a),
        Some(Command::Import(a)) => import_command(&a),
        Some(Command::Serve(a)) => {
            init_tracing(a.http.log_format, BatchedStdout);
            serve(a).await
        }
        None => {
            init_tracing(cli.serve.http.log_format, BatchedStdout);
            serve(cli.serve).await
        }
    };
    super::log_out::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
