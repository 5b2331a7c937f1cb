//! Run ids: stable, URL-safe names derived from a run's natural key.
//!
//! LLM: `{task}~{org}--{model}~{gpu}~g{num_gpus}~b{max_num_seqs}[~r{num_request_repeats}][~seed{seed}]`
//! Diffusion: `{task}~{org}--{model}~{gpu}~g{num_gpus}~b{batch}~{height}x{width}[~s{steps}]~u{uly}~r{ring}[~tc]`
//!
//! Only `[A-Za-z0-9._~-]` appear (RFC 3986 unreserved characters); any other character of a
//! component becomes `_`. Repeats and seed are part of the LLM key because the published data
//! has runs that differ only in `num_request_repeats`. If two runs still share an id, the later
//! one in the default order gets `~2`, `~3`, ... appended.

use std::fmt::Write;

fn push_component(out: &mut String, s: &str) {
    for c in s.chars() {
        out.push(
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            },
        );
    }
}

fn push_model(out: &mut String, model_id: &str) {
    let mut parts = model_id.split('/');
    if let Some(first) = parts.next() {
        push_component(out, first);
    }
    for p in parts {
        out.push_str("--");
        push_component(out, p);
    }
}

fn opt(v: Option<i64>) -> String {
    v.map_or_else(|| "_".to_string(), |v| v.to_string())
}

/// Natural-key fields of an LLM run.
pub struct LlmKey<'a> {
    pub task: &'a str,
    pub model_id: &'a str,
    pub gpu_model: &'a str,
    pub num_gpus: Option<i64>,
    pub max_num_seqs: Option<i64>,
    pub num_request_repeats: Option<i64>,
    pub seed: Option<i64>,
}

/// Natural-key fields of a diffusion run.
pub struct DiffusionKey<'a> {
    pub task: &'a str,
    pub model_id: &'a str,
    pub gpu_model: &'a str,
    pub num_gpus: Option<i64>,
    pub batch_size: Option<i64>,
    pub height: Option<i64>,
    pub width: Option<i64>,
    pub inference_steps: Option<i64>,
    pub ulysses_degree: Option<i64>,
    pub ring_degree: Option<i64>,
    pub use_torch_compile: Option<bool>,
}

pub fn llm_run_id(k: &LlmKey<'_>) -> String {
    let mut s = String::with_capacity(64);
    push_component(&mut s, k.task);
    s.push('~');
    push_model(&mut s, k.model_id);
    s.push('~');
    push_component(&mut s, k.gpu_model);
    let _ = write!(s, "~g{}~b{}", opt(k.num_gpus), opt(k.max_num_seqs));
    if let Some(r) = k.num_request_repeats {
        let _ = write!(s, "~r{r}");
    }
    if let Some(seed) = k.seed {
        let _ = write!(s, "~seed{seed}");
    }
    s
}

pub fn diffusion_run_id(k: &DiffusionKey<'_>) -> String {
    let mut s = String::with_capacity(96);
    push_component(&mut s, k.task);
    s.push('~');
    push_model(&mut s, k.model_id);
    s.push('~');
    push_component(&mut s, k.gpu_model);
    let _ = write!(
        s,
        "~g{}~b{}~{}x{}",
        opt(k.num_gpus),
        opt(k.batch_size),
        opt(k.height),
        opt(k.width)
    );
    if let Some(steps) = k.inference_steps {
        let _ = write!(s, "~s{steps}");
    }
    let _ = write!(s, "~u{}~r{}", opt(k.ulysses_degree), opt(k.ring_degree));
    if k.use_torch_compile == Some(true) {
        s.push_str("~tc");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llm_ids_are_readable_and_url_safe() {
        let id = llm_run_id(&LlmKey {
            task: "gpqa",
            model_id: "Qwen/Qwen3-14B",
            gpu_model: "B200",
            num_gpus: Some(1),
            max_num_seqs: Some(8),
            num_request_repeats: Some(1),
            seed: None,
        });
        assert_eq!(id, "gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1");
        let with_seed = llm_run_id(&LlmKey {
            task: "lm arena",
            model_id: "a/b c",
            gpu_model: "H100",
            num_gpus: Some(2),
            max_num_seqs: Some(64),
            num_request_repeats: None,
            seed: Some(48105),
        });
        assert_eq!(with_seed, "lm_arena~a--b_c~H100~g2~b64~seed48105");
    }

    #[test]
    fn diffusion_ids_carry_the_whole_key() {
        let id = diffusion_run_id(&DiffusionKey {
            task: "text-to-image",
            model_id: "black-forest-labs/FLUX.1-dev",
            gpu_model: "H100",
            num_gpus: Some(8),
            batch_size: Some(4),
            height: Some(1024),
            width: Some(1024),
            inference_steps: Some(50),
            ulysses_degree: Some(1),
            ring_degree: Some(8),
            use_torch_compile: Some(false),
        });
        assert_eq!(
            id,
            "text-to-image~black-forest-labs--FLUX.1-dev~H100~g8~b4~1024x1024~s50~u1~r8"
        );
    }
}
