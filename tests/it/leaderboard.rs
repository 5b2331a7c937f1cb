//! The leaderboard's data files from the served snapshot (docs/leaderboard.md): byte for byte
//! the 70 published files over data/sample, the key-presence rules the frontend depends on
//! (leaderboard-contract §4.4), 404s, and the `/data/` twins.

use std::path::PathBuf;

use crate::common::TestApp;

fn published() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/leaderboard")
}

/// Every published file, as a path under the data directory.
fn published_files() -> Vec<String> {
    let root = published();
    let mut out = vec!["index.json".to_string()];
    for dir in ["tasks", "models"] {
        let mut names: Vec<String> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("{}: {e}", root.join(dir).display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|n| format!("{dir}/{n}")));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seventy_published_files_byte_for_byte() {
    let app = TestApp::sample().await;
    let files = published_files();
    assert_eq!(files.len(), 70);
    for f in &files {
        let want = std::fs::read(published().join(f)).unwrap();
        for prefix in ["/leaderboard/data", "/data"] {
            let r = app.get(&format!("{prefix}/{f}")).await;
            assert_eq!(r.status, 200, "{prefix}/{f}: {}", r.text());
            assert_eq!(r.content_type(), "application/json");
            assert!(r.headers.get("content-encoding").is_none());
            if r.body != want {
                let (got, want) = (r.text(), String::from_utf8(want).unwrap());
                let at = got
                    .bytes()
                    .zip(want.bytes())
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.len().min(want.len()));
                panic!(
                    "{prefix}/{f} differs at byte {at} (lengths {} and {}): served …{}… published …{}…",
                    got.len(),
                    want.len(),
                    &got[at.saturating_sub(80)..(at + 80).min(got.len())],
                    &want[at.saturating_sub(80)..(at + 80).min(want.len())]
                );
            }
        }
    }
}

#[tokio::test]
async fn the_served_files_are_the_published_ones() {
    // No file more than the published ones: the index lists the tasks, the task files the models.
    let app = TestApp::sample().await;
    let index = app.get("/leaderboard/data/index.json").await.json();
    let mut served = vec!["index.json".to_string()];
    for task in index["tasks"].as_array().unwrap() {
        let task = task.as_str().unwrap();
        served.push(format!("tasks/{task}.json"));
        let file = app
            .get(&format!("/leaderboard/data/tasks/{task}.json"))
            .await
            .json();
        let mut models: Vec<String> = file["configurations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["model_id"].as_str().unwrap().replace('/', "__"))
            .collect();
        models.dedup();
        served.extend(
            models
                .into_iter()
                .map(|m| format!("models/{m}__{task}.json")),
        );
    }
    served.sort();
    served.dedup();
    let mut published = published_files();
    published.sort();
    assert_eq!(served, published);
}

/// Keys of a JSON object.
fn keys(v: &serde_json::Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[tokio::test]
async fn key_presence_rules() {
    let app = TestApp::sample().await;
    let index = app.get("/leaderboard/data/index.json").await.json();
    let diffusion_tasks: Vec<&str> = index["architectures"]["diffusion"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(diffusion_tasks, ["text-to-image", "text-to-video"]);
    let mut llm_models = std::collections::BTreeSet::new();
    for task in index["tasks"].as_array().unwrap() {
        let task = task.as_str().unwrap();
        let file = app
            .get(&format!("/leaderboard/data/tasks/{task}.json"))
            .await
            .json();
        let diffusion = diffusion_tasks.contains(&task);
        // Diffusion task files say so at top level; LLM ones have no architecture key.
        assert_eq!(file.get("architecture").is_some(), diffusion, "{task}");
        let media = if task == "text-to-video" {
            "video"
        } else {
            "image"
        };
        for c in file["configurations"].as_array().unwrap() {
            let c = c.as_object().unwrap();
            // The energy key of the task and no other; the latency key of the domain.
            for energy in [
                "energy_per_token_joules",
                "energy_per_image_joules",
                "energy_per_video_joules",
            ] {
                let want = if diffusion {
                    energy == format!("energy_per_{media}_joules")
                } else {
                    energy == "energy_per_token_joules"
                };
                assert_eq!(c.contains_key(energy), want, "{task}: {energy}");
            }
            assert_eq!(c.contains_key("batch_latency_s"), diffusion);
            assert_eq!(c.contains_key("median_itl_ms"), !diffusion);
            // batch_size marks a diffusion row, max_num_seqs an LLM row.
            assert_eq!(c.contains_key("batch_size"), diffusion);
            assert_eq!(c.contains_key("max_num_seqs"), !diffusion);
            // Task rows carry the model id and flat parallelism, never a nested one.
            assert!(c.contains_key("model_id") && !c.contains_key("parallelization"));
            let flat: &[&str] = if diffusion {
                &["ulysses_degree", "ring_degree"]
            } else {
                &["tensor_parallel", "expert_parallel", "data_parallel"]
            };
            assert!(flat.iter().all(|k| c.contains_key(*k)), "{task}");
            assert!(c.values().all(|v| !v.is_null()), "no null is written");
            assert_eq!(
                c.len(),
                if diffusion {
                    if media == "video" { 19 } else { 17 }
                } else {
                    22
                }
            );
            for never in ["use_torch_compile", "seed", "num_request_repeats"] {
                assert!(!c.contains_key(never));
            }
            if !diffusion {
                llm_models.insert(c["model_id"].as_str().unwrap().to_string());
            }
        }
        // Every model file of the task: model-level configurations have no model_id, a nested
        // parallelization, and the detail panels' keys.
        let mut seen = std::collections::BTreeSet::new();
        for c in file["configurations"].as_array().unwrap() {
            let id = c["model_id"].as_str().unwrap();
            if !seen.insert(id.to_string()) {
                continue;
            }
            let name = format!("{}__{task}.json", id.replacen('/', "__", 1));
            let m = app
                .get(&format!("/leaderboard/data/models/{name}"))
                .await
                .json();
            assert!(m.get("total_params_billions").is_some());
            assert_eq!(
                m.get("output_length_distribution").is_some(),
                !diffusion,
                "{name}"
            );
            assert_eq!(m.get("nickname").is_some(), diffusion, "{name}");
            assert_eq!(m.get("architecture").is_some(), !diffusion, "{name}");
            let configs = m["configurations"].as_array().unwrap();
            for mc in configs {
                assert!(mc.get("model_id").is_none());
                assert!(mc.get("parallelization").is_some());
                assert_eq!(mc.get("batch_size").is_some(), diffusion);
                if diffusion {
                    assert_eq!(
                        keys(&mc["parallelization"]),
                        ["ring_degree", "ulysses_degree"]
                    );
                } else {
                    assert_eq!(mc.as_object().unwrap().len(), 15);
                    assert_eq!(
                        keys(&mc["parallelization"]),
                        [
                            "data_parallel",
                            "expert_parallel",
                            "notes",
                            "tensor_parallel"
                        ]
                    );
                    let h = &mc["output_length_distribution"];
                    assert_eq!(h["bins"].as_array().unwrap().len(), 51);
                    assert_eq!(h["counts"].as_array().unwrap().len(), 50);
                    // Shared edges: the model-level histogram's.
                    assert_eq!(h["bins"], m["output_length_distribution"]["bins"]);
                }
            }
            if !diffusion {
                // The model-level counts are the sum of the runs'.
                let sum: Vec<i64> = (0..50)
                    .map(|i| {
                        configs
                            .iter()
                            .map(|c| {
                                c["output_length_distribution"]["counts"][i]
                                    .as_i64()
                                    .unwrap()
                            })
                            .sum()
                    })
                    .collect();
                let total: Vec<i64> = m["output_length_distribution"]["counts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect();
                assert_eq!(sum, total, "{name}");
            }
        }
    }
    // The index names every LLM model, with a nickname.
    for id in &llm_models {
        assert!(index["models"][id]["nickname"].is_string(), "{id}");
    }
}

#[tokio::test]
async fn unknown_files_are_404_problems_naming_the_files() {
    let app = TestApp::sample().await;
    let r = app.get("/leaderboard/data/tasks/chess.json").await;
    let p = r.problem(404, "unknown_leaderboard_file");
    assert_eq!(p["parameter"], "task");
    assert!(
        p["allowed"]
            .as_array()
            .unwrap()
            .contains(&"gpqa.json".into())
    );
    assert_eq!(p["allowed"].as_array().unwrap().len(), 7);
    let r = app.get("/data/models/Qwen__Qwen3-8B__chess.json").await;
    let p = r.problem(404, "unknown_leaderboard_file");
    assert_eq!(p["parameter"], "file");
    assert_eq!(p["allowed"].as_array().unwrap().len(), 62);
    // The task name without .json is not the file.
    app.get("/leaderboard/data/tasks/gpqa")
        .await
        .problem(404, "unknown_leaderboard_file");
    // Case matters, as for the published files.
    app.get("/leaderboard/data/tasks/GPQA.json")
        .await
        .problem(404, "unknown_leaderboard_file");
    // Another file under data/ is no route.
    app.get("/leaderboard/data/other.json")
        .await
        .problem(404, "not_found");
}
