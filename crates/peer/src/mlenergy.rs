//! The ML.ENERGY v3 LLM runs in the measurement schema (§4.4's ML column): GPU energy over the
//! steady state, measured, batch semantics max_num_seqs. The values are the run table's own.

use super::common::{accelerator, derive};
use super::schema::{RunRow, SourceRow};
use mlenergy_engine::RunTable;
use mlenergy_engine::frame::Value;

/// The source id of the served ML.ENERGY dataset.
pub const SOURCE_ID: &str = "mlenergy_v3";

/// The LLM runs of the served dataset (stable or not) as measurement runs.
pub fn runs(table: &RunTable, origin: &str) -> (SourceRow, Vec<RunRow>) {
    let col = |name: &str| table.frame.column(name).map(|c| &c.data);
    let (id, model, gpu, task, ngpu, seqs, seed) = (
        col("run_id"),
        col("model_id"),
        col("gpu_model"),
        col("task"),
        col("num_gpus"),
        col("max_num_seqs"),
        col("seed"),
    );
    let s = |c: Option<&mlenergy_engine::frame::ColumnData>, r: usize| match c.map(|c| c.get(r)) {
        Some(Value::Str(x)) => Some(super::schema::Text::from(x)),
        _ => None,
    };
    let i = |c: Option<&mlenergy_engine::frame::ColumnData>, r: usize| match c.map(|c| c.get(r)) {
        Some(Value::Int(x)) => Some(x),
        _ => None,
    };
    let f = |name: &str, r: usize| col(name).and_then(|c| c.get(r).as_f64());
    let mut rows = Vec::with_capacity(table.len());
    for r in 0..table.len() {
        let local = s(id, r).unwrap_or_else(|| "".into());
        let hw = s(gpu, r);
        let mut run = RunRow {
            run_id: Some(format!("{SOURCE_ID}~{local}").into()),
            source_id: Some(SOURCE_ID.into()),
            source_kind: Some("mlenergy_v3".into()),
            // The experiment: the run's natural key without its seed.
            experiment_id: Some(match i(seed, r) {
                Some(sd) => local.trim_end_matches(&format!("~seed{sd}")).into(),
                None => local.clone(),
            }),
            local_id: Some(local),
            repeat_index: i(seed, r),
            model: s(model, r),
            hardware: hw.as_deref().map(|h| accelerator(h).into()),
            hardware_raw: hw.clone(),
            num_gpus: i(ngpu, r),
            task: s(task, r),
            workload_kind: Some("single_turn".into()),
            engine: Some("vllm".into()),
            batch_value: i(seqs, r),
            batch_semantics: Some("max_num_seqs".into()),
            energy_j: f("steady_state_energy_joules", r),
            gpu_energy_j: f("steady_state_energy_joules", r),
            energy_scope: Some("gpu".into()),
            window: Some("steady_state".into()),
            window_s: f("steady_state_duration_seconds", r),
            attribution: Some("measured".into()),
            requests_completed: i(col("completed_requests"), r),
            output_tokens: i(col("total_output_tokens"), r),
            energy_per_output_token_j: f("energy_per_token_joules", r),
            energy_per_request_j: f("energy_per_request_joules", r),
            output_tps: f("output_throughput_tokens_per_sec", r),
            avg_power_w: f("avg_power_watts", r),
            itl_mean_s: f("mean_itl_ms", r).map(|x| x / 1000.0),
            itl_p50_s: f("median_itl_ms", r).map(|x| x / 1000.0),
            itl_p95_s: f("p95_itl_ms", r).map(|x| x / 1000.0),
            itl_p99_s: f("p99_itl_ms", r).map(|x| x / 1000.0),
            itl_kind: Some("smoothed".into()),
            is_stable: match col("is_stable").map(|c| c.get(r)) {
                Some(Value::Bool(b)) => Some(b),
                _ => None,
            },
            ..Default::default()
        };
        // Decode FLOPs: 2 × activated parameters per output token, at the steady throughput.
        if let (Some(p), Some(tps), Some(w)) = (
            f("activated_params_billions", r),
            run.output_tps,
            run.window_s,
        ) {
            run.flops = Some(2.0 * p * 1e9 * tps * w);
        }
        let reason = s(col("unstable_reason"), r).filter(|x| !x.is_empty());
        run.warnings = Some(
            serde_json::Value::from(
                reason
                    .into_iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>(),
            )
            .to_string()
            .into(),
        );
        derive(&mut run, hw.as_deref());
        rows.push(run);
    }
    let source = SourceRow {
        source_id: Some(SOURCE_ID.into()),
        kind: Some("mlenergy_v3".into()),
        origin: Some(origin.into()),
        parser_version: Some(super::PARSER_VERSION),
        runs: Some(rows.len() as i64),
        files_failed: Some("[]".into()),
        warnings: Some("[]".into()),
        ..Default::default()
    };
    (source, rows)
}
