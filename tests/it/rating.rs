//! The energy rating (`energy_rating`, AI Energy Score's five equal bands of the energy range per
//! task and size class) and its badge, worked by hand from the runs' own fields.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::TestApp;

fn class(total: f64) -> &'static str {
    if total <= 20.0 {
        "A"
    } else if total <= 66.0 {
        "B"
    } else {
        "C"
    }
}

/// Stars by run id, worked by hand from (group, energy) pairs.
fn by_hand(runs: &[(String, String, f64)]) -> BTreeMap<String, i64> {
    let mut range: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for (_, g, e) in runs {
        let r = range.entry(g).or_insert((f64::INFINITY, f64::NEG_INFINITY));
        *r = (r.0.min(*e), r.1.max(*e));
    }
    runs.iter()
        .map(|(id, g, e)| {
            let (lo, hi) = range[g.as_str()];
            let w = (hi - lo) / 5.0;
            let band = if w > 0.0 {
                (((e - lo) / w).floor() as i64).min(4)
            } else {
                0
            };
            (id.clone(), 5 - band)
        })
        .collect()
}

#[tokio::test]
async fn llm_ratings_are_the_bands_of_their_task_and_size_class() {
    let app = TestApp::sample().await;
    let all = app
        .get("/v1/llm/runs?stability=all&fields=task,total_params_billions,is_stable,energy_per_token_joules,energy_rating")
        .await
        .json();
    let runs = all["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 838);
    let stable: Vec<(String, String, f64)> = runs
        .iter()
        .filter(|r| r["is_stable"] == true)
        .map(|r| {
            (
                r["run_id"].as_str().unwrap().to_string(),
                format!(
                    "{}|{}",
                    r["task"].as_str().unwrap(),
                    class(r["total_params_billions"].as_f64().unwrap())
                ),
                r["energy_per_token_joules"].as_f64().unwrap(),
            )
        })
        .collect();
    let want = by_hand(&stable);
    let mut seen = [0usize; 6];
    for r in runs {
        let got = &r["energy_rating"];
        match want.get(r["run_id"].as_str().unwrap()) {
            Some(&stars) => {
                assert_eq!(got.as_i64(), Some(stars), "{r}");
                seen[stars as usize] += 1;
            }
            None => assert!(got.is_null(), "an unstable run is not rated: {r}"),
        }
    }
    // Every band is used, and the lowest energy of a group is 5 stars, the highest 1.
    assert!(seen[1..].iter().all(|&n| n > 0), "{seen:?}");
    // The rating sorts and groups like any field.
    let top = app
        .get("/v1/llm/runs?task=gpqa&sort=-energy_rating,energy_per_token_joules&limit=1&fields=energy_rating")
        .await
        .json();
    assert_eq!(top["runs"][0]["energy_rating"], 5);
    let groups = app
        .get("/v1/llm/groups?by=energy_rating&agg=count")
        .await
        .json();
    let counted: i64 = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| !g["energy_rating"].is_null())
        .map(|g| g["count"].as_i64().unwrap())
        .sum();
    assert_eq!(counted as usize, stable.len());
}

#[tokio::test]
async fn diffusion_ratings_are_the_bands_of_their_task() {
    let app = TestApp::sample().await;
    let all = app
        .get("/v1/diffusion/runs?fields=task,energy_per_generation_joules,energy_rating")
        .await
        .json();
    let runs: Vec<&Value> = all["runs"].as_array().unwrap().iter().collect();
    let pairs: Vec<(String, String, f64)> = runs
        .iter()
        .map(|r| {
            (
                r["run_id"].as_str().unwrap().to_string(),
                r["task"].as_str().unwrap().to_string(),
                r["energy_per_generation_joules"].as_f64().unwrap(),
            )
        })
        .collect();
    let want = by_hand(&pairs);
    for r in runs {
        assert_eq!(
            r["energy_rating"].as_i64(),
            Some(want[r["run_id"].as_str().unwrap()]),
            "{r}"
        );
    }
}

#[tokio::test]
async fn the_badge_shows_the_run_field() {
    let app = TestApp::sample().await;
    let run = app
        .get("/v1/llm/runs?task=gpqa&sort=energy_per_token_joules&limit=1&fields=energy_rating,total_params_billions")
        .await
        .json();
    let r = &run["runs"][0];
    let id = r["run_id"].as_str().unwrap();
    let svg = app.get(&format!("/v1/llm/runs/{id}/rating.svg")).await;
    assert_eq!(svg.status, 200);
    assert_eq!(svg.content_type(), "image/svg+xml");
    let text = svg.text();
    let stars = r["energy_rating"].as_i64().unwrap();
    assert!(
        text.contains(&format!("Energy rating: {stars} of 5 stars")),
        "{text}"
    );
    assert!(text.contains(&"\u{2605}".repeat(stars as usize)));
    let c = class(r["total_params_billions"].as_f64().unwrap());
    assert!(text.contains(&format!("gpqa · class {c}")), "{text}");
    // An unstable run is not rated; an unknown run is 404.
    let unstable = app
        .get("/v1/llm/runs?stability=unstable&limit=1&fields=energy_rating")
        .await
        .json();
    if let Some(u) = unstable["runs"].as_array().unwrap().first() {
        assert!(u["energy_rating"].is_null());
        let t = app
            .get(&format!(
                "/v1/llm/runs/{}/rating.svg",
                u["run_id"].as_str().unwrap()
            ))
            .await
            .text();
        assert!(t.contains("not rated"));
    }
    app.get("/v1/llm/runs/nope/rating.svg")
        .await
        .problem(404, "unknown_run");
    app.get(&format!("/v1/llm/runs/{id}/rating.svg?x=1"))
        .await
        .problem(400, "unknown_parameter");
}
