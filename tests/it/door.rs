//! The service's door (`service::ask`): one answer to a question, whichever front end asks it,
//! whatever order its parameters come in, with or without the answer cache.

use crate::common::{TestApp, counter};

/// Questions of every kind the door answers, some with aliases, hints and pages.
const QUESTIONS: &[&str] = &[
    "/v1/llm/runs?task=gpqa&gpu_model=B200&sort=-energy_per_token_joules&limit=7",
    "/v1/llm/runs?gpu=h100&limit=3&offset=2&fields=run_id,energy_per_token_joules",
    "/v1/diffusion/runs?batch_min=2&fields=run_id,batch_size",
    "/v1/llm/groups?by=task,gpu_model&agg=mean(energy_per_token_joules),argmin(energy_per_token_joules)",
    "/v1/diffusion/groups?agg=count",
    "/v1/llm/groups?by=task&agg=count&task=gpqq",
    "/v1/llm/pareto?task=gpqa&per=gpu_model",
    "/v1/diffusion/best?task=text-to-image&deadline=10",
    "/v1/llm/best?task=gpqa",
    "/v1/llm/fits/logistic?task=gpqa&model_id=Qwen/Qwen3-14B&predict=48",
];

/// The answer cache is speed alone: each question, in each format, answers the same bytes and
/// headers computed, from the cache, and by a server without a cache.
#[tokio::test]
async fn the_answer_cache_changes_no_byte() {
    let cached = TestApp::sample().await;
    let plain = TestApp::without_answer_cache().await;
    let one = cached.get("/v1/llm/runs?task=gpqa&limit=1").await.json()["runs"][0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = format!("/v1/llm/runs/{one}?fields=run_id,nickname,energy_per_token_joules");
    for uri in QUESTIONS.iter().copied().chain([run.as_str()]) {
        for format in ["json", "csv", "ndjson", "arrow", "parquet"] {
            let sep = if uri.contains('?') { '&' } else { '?' };
            let uri = format!("{uri}{sep}format={format}");
            let first = cached.get(&uri).await;
            let again = cached.get(&uri).await;
            let fresh = plain.get(&uri).await;
            assert_eq!(first.status, 200, "{uri}: {}", first.text());
            for (name, reply) in [("cached", &again), ("uncached", &fresh)] {
                assert!(first.body == reply.body, "{uri}: {name} body differs");
                for h in ["content-type", "x-total-count", "link", "warning"] {
                    assert_eq!(
                        first.headers.get_all(h).iter().collect::<Vec<_>>(),
                        reply.headers.get_all(h).iter().collect::<Vec<_>>(),
                        "{uri}: {name} {h}"
                    );
                }
            }
        }
    }
}

/// The cache is keyed on the question, not on the text of the request: its parameters in
/// another order are the same entry, and its next page is linked the same way.
#[tokio::test]
async fn a_question_is_one_entry_whatever_its_parameters_order() {
    let app = TestApp::sample().await;
    let hits = |m: &str| counter(m, "mlenergy_http_answers_total{kind=\"cache\"}");
    let a = app
        .get("/v1/llm/runs?task=gpqa&gpu_model=B200&limit=5")
        .await;
    let before = hits(&app.get("/metrics").await.text());
    let b = app
        .get("/v1/llm/runs?limit=5&gpu_model=B200&task=gpqa")
        .await;
    let after = hits(&app.get("/metrics").await.text());
    assert_eq!(a.status, 200);
    assert!(a.body == b.body);
    assert_eq!(after, before + 1);
    let next = a.json()["next"].as_str().unwrap().to_string();
    assert_eq!(
        next,
        "/v1/llm/runs?gpu_model=B200&limit=5&task=gpqa&offset=5"
    );
    let page = app.get(&next).await.json();
    assert_eq!(page["offset"], 5);
    assert_eq!(page["total"], a.json()["total"]);
}
