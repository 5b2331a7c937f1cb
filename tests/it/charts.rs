//! The SVG charts, read back as XML: well-formed, 800 × 500, one legend entry per series, and per
//! series exactly its points drawn (each series' markers are the filled shapes of its colour, one
//! more for its legend entry), counted against the data endpoints' answers to the same question.

use std::collections::HashMap;

use mlenergy_server::chart::{CONTEXT, colour_hex};
use quick_xml::Reader;
use quick_xml::events::Event;

use crate::common::TestApp;

/// The one LLM run of data/sample with a raw file.
const RAW_RUN: &str = "video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1";

/// An element of the drawing: its tag, attributes, and text content (for `<text>`).
#[derive(Debug)]
struct Element {
    tag: String,
    attrs: HashMap<String, String>,
    text: String,
}

/// Every element of `svg`, failing on XML that is not well-formed.
fn parse(svg: &[u8]) -> Vec<Element> {
    let mut reader = Reader::from_reader(svg);
    let mut out: Vec<Element> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut buf = Vec::new();
    loop {
        let ev = reader
            .read_event_into(&mut buf)
            .unwrap_or_else(|e| panic!("not well-formed XML: {e}"));
        let empty = matches!(ev, Event::Empty(_));
        match ev {
            Event::Start(e) | Event::Empty(e) => {
                let attrs = e
                    .attributes()
                    .map(|a| {
                        let a = a.unwrap();
                        (
                            String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                            a.unescape_value().unwrap().to_string(),
                        )
                    })
                    .collect();
                out.push(Element {
                    tag: String::from_utf8(e.name().as_ref().to_vec()).unwrap(),
                    attrs,
                    text: String::new(),
                });
                if !empty {
                    open.push(out.len() - 1);
                }
            }
            Event::Text(t) => {
                if let Some(&i) = open.last() {
                    out[i].text.push_str(t.decode().unwrap().trim());
                }
            }
            Event::End(_) => {
                open.pop();
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    assert!(open.is_empty(), "unclosed elements");
    assert_eq!(out[0].tag, "svg");
    assert_eq!(out[0].attrs["width"], "800");
    assert_eq!(out[0].attrs["height"], "500");
    out
}

/// Filled marker shapes (circle, polygon, rect) of colour `fill`.
fn filled(els: &[Element], fill: &str) -> usize {
    els.iter()
        .filter(|e| matches!(e.tag.as_str(), "circle" | "polygon" | "rect"))
        .filter(|e| e.attrs.get("fill").map(String::as_str) == Some(fill))
        .count()
}

/// Lines (polylines) drawn in colour `stroke` at a series' width (axes and ticks are 1 wide).
fn lines<'a>(els: &'a [Element], stroke: &str) -> Vec<&'a Element> {
    els.iter()
        .filter(|e| {
            e.tag == "polyline" && e.attrs.get("stroke").map(String::as_str) == Some(stroke)
        })
        .filter(|e| e.attrs.get("stroke-width").is_some_and(|w| w != "1"))
        .collect()
}

fn texts(els: &[Element]) -> Vec<&str> {
    els.iter()
        .filter(|e| e.tag == "text")
        .map(|e| e.text.as_str())
        .collect()
}

async fn svg(app: &TestApp, uri: &str) -> Vec<Element> {
    let r = app.get(uri).await;
    assert_eq!(r.status, 200, "{uri}: {}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.content_type(), "image/svg+xml");
    parse(&r.body)
}

#[tokio::test]
async fn pareto_chart_draws_each_frontier_and_the_other_runs() {
    let app = TestApp::sample().await;
    let q = "task=sourcegraph-fim&per=model_id";
    let data = app.get(&format!("/v1/llm/pareto?{q}")).await.json();
    let total = app
        .get("/v1/llm/runs?task=sourcegraph-fim&fields=run_id")
        .await
        .json()["total"]
        .as_u64()
        .unwrap() as usize;
    // The frontier's runs per model, in the answer's order.
    let mut groups: Vec<(String, usize)> = Vec::new();
    for r in data["runs"].as_array().unwrap() {
        let m = r["model_id"].as_str().unwrap().to_string();
        match groups.last_mut() {
            Some((last, n)) if *last == m => *n += 1,
            _ => groups.push((m, 1)),
        }
    }
    assert!(groups.len() >= 3);
    let els = svg(&app, &format!("/v1/llm/charts/pareto.svg?{q}")).await;
    let words = texts(&els);
    let on_frontier: usize = groups.iter().map(|g| g.1).sum();
    let context = format!("#{:02X}{:02X}{:02X}", CONTEXT.0, CONTEXT.1, CONTEXT.2);
    assert_eq!(filled(&els, &context), total - on_frontier + 1);
    assert!(words.contains(&"other runs"));
    for (i, (model, n)) in groups.iter().enumerate() {
        assert!(words.contains(&model.as_str()), "legend names {model}");
        assert_eq!(filled(&els, &colour_hex(i)), n + 1, "{model}'s points");
        // The frontier's line through them.
        assert_eq!(lines(&els, &colour_hex(i)).len(), usize::from(*n > 1));
    }
    assert!(
        words.iter().any(|t| t.contains("median_itl_ms (ms)")),
        "{words:?}"
    );
    assert!(
        words
            .iter()
            .any(|t| t.contains("energy_per_token_joules (J/token)"))
    );

    // One frontier, nothing else: no context left when every run is on it.
    let els = svg(
        &app,
        "/v1/diffusion/charts/pareto.svg?task=text-to-image&model_id=black-forest-labs/FLUX.1-dev",
    )
    .await;
    assert_eq!(filled(&els, &colour_hex(0)), 3 + 1);
    assert_eq!(filled(&els, &context), 104 - 3 + 1);
    assert!(texts(&els).contains(&"frontier"));
}

#[tokio::test]
async fn sweep_chart_draws_runs_and_fitted_curves() {
    let app = TestApp::sample().await;
    let q = "model_id=Qwen/Qwen3-8B&gpu_model=H100&num_gpus=1";
    let els = svg(
        &app,
        &format!("/v1/llm/charts/sweep.svg?{q}&y=avg_power_watts"),
    )
    .await;
    let words = texts(&els);
    for (i, task) in ["gpqa", "lm-arena-chat"].iter().enumerate() {
        let runs = app
            .get(&format!("/v1/llm/runs?{q}&task={task}&fields=run_id"))
            .await
            .json()["total"]
            .as_u64()
            .unwrap() as usize;
        assert!(runs >= 4);
        assert_eq!(filled(&els, &colour_hex(i)), runs + 1, "{task}");
        assert!(words.contains(&format!("Qwen3-8B · {task} · H100×1").as_str()));
        // The fitted curve: one line of 81 points through the batch range.
        let curve = lines(&els, &colour_hex(i));
        assert_eq!(curve.len(), 1, "{task}");
        assert_eq!(curve[0].attrs["points"].split_whitespace().count(), 81);
    }
    assert!(words.iter().any(|t| t.contains("avg_power_watts (W)")));
    assert!(words.contains(&"max_num_seqs (log2 scale)"));
    // Powers of two on the batch axis.
    for tick in ["8", "16", "32", "64", "128"] {
        assert!(words.contains(&tick), "{tick} in {words:?}");
    }
    // Diffusion's sweep, default y.
    let els = svg(
        &app,
        "/v1/diffusion/charts/sweep.svg?model_id=black-forest-labs/FLUX.1-dev&gpu_model=B200&num_gpus=1&task=text-to-image",
    )
    .await;
    assert!(
        texts(&els)
            .iter()
            .any(|t| t.contains("energy_per_generation_joules (J/generation)"))
    );
}

#[tokio::test]
async fn timeline_and_itl_charts_of_a_run() {
    let app = TestApp::sample().await;
    // One point per second: the same buckets as the data endpoint's.
    let data = app
        .get(&format!("/v1/llm/runs/{RAW_RUN}/timeline?every=1s"))
        .await
        .json();
    let n = data.as_array().unwrap().len();
    assert!(n > 100);
    let els = svg(
        &app,
        &format!("/v1/llm/runs/{RAW_RUN}/timeline.svg?every=1s"),
    )
    .await;
    let words = texts(&els);
    for name in ["total", "GPU 0", "GPU 1"] {
        assert!(words.contains(&name), "{name}");
    }
    let total = lines(&els, &colour_hex(0));
    // The total's line and its legend entry.
    assert_eq!(total.len(), 2);
    assert_eq!(total[0].attrs["points"].split_whitespace().count(), n);
    assert_eq!(total[0].attrs["stroke-width"], "3");
    assert!(!lines(&els, &colour_hex(1)).is_empty());
    assert!(!lines(&els, &colour_hex(2)).is_empty());
    assert!(words.contains(&"GPU power (W)"));
    // Without `every`: at most one point per pixel of the plot.
    let els = svg(&app, &format!("/v1/llm/runs/{RAW_RUN}/timeline.svg")).await;
    let points = lines(&els, &colour_hex(0))[0].attrs["points"]
        .split_whitespace()
        .count();
    assert!((600..=701).contains(&points), "{points}");
    // Temperature: per GPU only.
    let els = svg(
        &app,
        &format!("/v1/llm/runs/{RAW_RUN}/timeline.svg?metric=temperature"),
    )
    .await;
    let words = texts(&els);
    assert!(!words.contains(&"total"));
    assert!(words.contains(&"GPU 0") && words.contains(&"GPU 1"));
    assert!(words.contains(&"GPU temperature (°C)"));

    // The ITL histogram: 50 bars, the median and p99 marked; as many gaps as the summary counts.
    let summary = app
        .get(&format!("/v1/llm/runs/{RAW_RUN}/itl?summary=true"))
        .await
        .json();
    let count = summary[0]["count"].as_u64().unwrap();
    let p50 = summary[0]["p50_s"].as_f64().unwrap() * 1000.0;
    let els = svg(&app, &format!("/v1/llm/runs/{RAW_RUN}/itl.svg")).await;
    assert_eq!(filled(&els, &colour_hex(0)), 50 + 1);
    let words = texts(&els);
    assert!(
        words.contains(&format!("{count} inter-token gaps").as_str()),
        "{words:?}"
    );
    assert!(
        words.contains(&format!("median {p50:.1} ms").as_str()),
        "{words:?}"
    );
    assert!(words.iter().any(|t| t.starts_with("p99 ")));
    assert!(words.contains(&"inter-token latency (ms)"));
}

#[tokio::test]
async fn charts_are_cached_like_every_answer_and_refuse_what_they_cannot_draw() {
    let app = TestApp::sample().await;
    let uri = "/v1/llm/charts/pareto.svg?task=gpqa&model_id=Qwen/Qwen3-8B";
    let first = app.get_with(uri, &[("accept-encoding", "br")]).await;
    assert_eq!(first.headers["content-encoding"], "br");
    let tag = first.headers["etag"].to_str().unwrap().to_string();
    assert!(
        first.headers["cache-control"]
            .to_str()
            .unwrap()
            .starts_with("public")
    );
    let again = app.get_with(uri, &[("if-none-match", &tag)]).await;
    assert_eq!(again.status, 304);

    let bad_metric = format!("/v1/llm/runs/{RAW_RUN}/timeline.svg?metric=volts");
    let cases: [(&str, u16, &str, &str); 5] = [
        (
            "/v1/llm/charts/pareto.svg?format=csv",
            400,
            "unknown_parameter",
            "format",
        ),
        (
            "/v1/llm/charts/sweep.svg?model_id=Qwen/Qwen3-8B&y=task",
            400,
            "invalid_parameter",
            "y",
        ),
        ("/v1/llm/runs/nope/timeline.svg", 404, "unknown_run", ""),
        (
            "/v1/llm/runs/gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1/itl.svg",
            404,
            "raw_unavailable",
            "run_id",
        ),
        (&bad_metric, 400, "invalid_parameter", "metric"),
    ];
    for (uri, status, slug, parameter) in cases {
        let p = app.get(uri).await.problem(status, slug);
        if !parameter.is_empty() {
            assert_eq!(p["parameter"], parameter, "{uri}");
        }
    }
    // More series than a legend holds: the first 14, and a Warning saying how many there were.
    for (uri, what) in [
        (
            "/v1/llm/charts/pareto.svg?task=gpqa&per=run_id",
            "frontiers",
        ),
        ("/v1/llm/charts/sweep.svg", "sweeps"),
    ] {
        let r = app.get(uri).await;
        assert_eq!(r.status, 200);
        let w = r.headers["warning"].to_str().unwrap();
        assert!(
            w.contains(what) && w.contains("the chart draws the first 14"),
            "{w}"
        );
        let els = parse(&r.body);
        assert!(texts(&els).iter().any(|t| t.ends_with("(first 14)")));
        for i in 0..7 {
            assert!(
                filled(&els, &colour_hex(i)) >= 2 * 2,
                "series {i} and {}",
                i + 7
            );
        }
    }
    // Nothing matched: an empty chart that says so.
    let els = svg(&app, "/v1/llm/charts/pareto.svg?task=nope").await;
    assert!(texts(&els).contains(&"no run matches the filters"));
}
