//! The pages a browser gets: the home page at `/` (and the API's index as JSON), the explorer of
//! a domain and a run's page; their numbers checked against the API's answers, the SQL they show
//! run and compared with the page, every value from the data or the request escaped, refusals as
//! pages naming the parameter, and the same caching and compression as the API. The browser
//! itself (Chromium) drives them in tests/browser.

use crate::common::{TestApp, copy_sample, rewrite_llm_strings, run_ids_in as run_ids};

const HTML: &[(&str, &str)] = &[("accept", "text/html,application/xhtml+xml,*/*;q=0.8")];

/// The text of the element with `id` (its first text up to the closing tag), unescaped.
fn text_of(page: &str, id: &str) -> String {
    let open = format!("id=\"{id}\">");
    let start = page.find(&open).unwrap_or_else(|| panic!("no #{id}")) + open.len();
    let end = start + page[start..].find("</").unwrap();
    unescape(&page[start..end])
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[tokio::test]
async fn the_root_answers_the_index_of_the_api_as_json_and_a_home_page_to_a_browser() {
    let app = TestApp::sample().await;
    let r = app.get("/").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.content_type(), "application/json");
    let index = r.json();
    assert_eq!(index["runs"]["llm"], 838);
    assert_eq!(index["runs"]["diffusion"], 1020);
    assert_eq!(index["openapi"], "/openapi.json");
    assert_eq!(index["explorer"][0], "/explore/llm");
    let runs = index["families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "runs")
        .expect("the runs family");
    assert!(
        runs["paths"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "/v1/{domain}/runs")
    );
    // Every path the index names is one the OpenAPI document has.
    let doc = app.get("/openapi.json").await.json();
    for family in index["families"].as_array().unwrap() {
        for p in family["paths"].as_array().unwrap() {
            assert!(doc["paths"].get(p.as_str().unwrap()).is_some(), "{p}");
        }
    }

    let page = app.get_with("/", HTML).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.content_type(), "text/html; charset=utf-8");
    assert_eq!(
        page.headers["content-security-policy"],
        mlenergy_server::http::explore::CSP
    );
    let body = page.text();
    let snapshot = page.headers["x-snapshot-id"].to_str().unwrap();
    assert!(body.contains(&format!("<code>{snapshot}</code>")), "{body}");
    for facts in ["<td class=\"num\">838</td>", "<td class=\"num\">1020</td>"] {
        assert!(body.contains(facts), "{facts}");
    }
    for link in [
        "href=\"/explore/llm\"",
        "href=\"/explore/diffusion\"",
        "href=\"/docs\"",
    ] {
        assert!(body.contains(link), "{link}");
    }
    // The JSON and the page are different answers of one URL, each with its own tag.
    assert_ne!(r.headers["etag"], page.headers["etag"]);
}

#[tokio::test]
async fn the_explorer_shows_the_runs_the_api_answers_and_sql_that_answers_the_same() {
    let app = TestApp::sample().await;
    let view = "task=gpqa&gpu_model=B200&sort=-energy_per_token_joules&limit=25&offset=25";
    let page = app.get_with(&format!("/explore/llm?{view}"), HTML).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let body = page.text();
    let api = app.get(&format!("/v1/llm/runs?{view}")).await.json();
    let ids = run_ids(&api, "runs");
    assert_eq!(ids.len(), 25);
    // The page's rows are the API's, in its order.
    let mut at = 0;
    for id in &ids {
        let found = body[at..]
            .find(&format!(">{id}</a>"))
            .unwrap_or_else(|| panic!("{id} after byte {at}"));
        at += found + 1;
    }
    let total = api["total"].as_u64().unwrap();
    assert!(body.contains(&format!("<strong>{total}</strong> runs match")));
    assert!(body.contains(&format!("rows 26–50 of {total}")));
    // Facet counts are /groups' counts under the other filters.
    let groups = app
        .get("/v1/llm/groups?by=task&gpu_model=B200")
        .await
        .json();
    for g in groups["groups"].as_array().unwrap() {
        let shown = format!(
            ">{}</a> <span class=\"count\">{}</span>",
            g["task"].as_str().unwrap(),
            g["count"]
        );
        assert!(body.contains(&shown), "{shown}");
    }
    // The sorted column says so, and its link sorts the other way.
    assert!(body.contains("aria-sort=\"descending\""));
    assert!(body.contains(
        "href=\"?task=gpqa&amp;gpu_model=B200&amp;limit=25&amp;sort=energy_per_token_joules\""
    ));
    assert!(body.contains("src=\"/v1/llm/charts/pareto.svg?task=gpqa&amp;gpu_model=B200\""));
    // The SQL shown answers the same page.
    let sql = text_of(&body, "snip-sql");
    let q: String = form_urlencoded::byte_serialize(sql.as_bytes()).collect();
    let answer = app.get(&format!("/v1/sql?q={q}")).await;
    assert_eq!(answer.status, 200, "{sql}: {}", answer.text());
    assert_eq!(run_ids(&answer.json(), "rows"), ids, "{sql}");
    // The curl command asks the API for the same page.
    let curl = text_of(&body, "snip-curl");
    assert!(
        curl.starts_with("curl 'http://127.0.0.1:8080/v1/llm/runs?task=gpqa&gpu_model=B200&sort=-energy_per_token_joules&limit=25&offset=25'"),
        "{curl}"
    );
    let python = text_of(&body, "snip-python");
    assert!(
        python.contains(".task(\"gpqa\").gpu_model(\"B200\").to_dataframe()"),
        "{python}"
    );
}

#[tokio::test]
async fn the_best_configuration_under_the_deadline_is_the_apis() {
    let app = TestApp::sample().await;
    let page = app
        .get_with("/explore/llm?task=lm-arena-chat&deadline=40", HTML)
        .await
        .text();
    let best = app
        .get("/v1/llm/best?task=lm-arena-chat&deadline=40")
        .await
        .json();
    let ids = run_ids(&best, "runs");
    assert!(!ids.is_empty());
    let section = &page[page.find("Best configuration per model").unwrap()..];
    let mut at = 0;
    for id in ids.iter().take(10) {
        at += section[at..].find(&format!(">{id}</a>")).unwrap() + 1;
    }
    assert!(page.contains("median_itl_ms ≤ 40 ms"));
    // One model, GPU and count chosen: the batch sweep is drawn.
    let page = app
        .get_with(
            "/explore/llm?task=gpqa&model_id=Qwen/Qwen3-14B&gpu_model=B200&num_gpus=1",
            HTML,
        )
        .await
        .text();
    assert!(page.contains(
        "src=\"/v1/llm/charts/sweep.svg?task=gpqa&amp;model_id=Qwen%2FQwen3-14B&amp;gpu_model=B200&amp;num_gpus=1\""
    ));
    let sweep = app
        .get("/v1/llm/charts/sweep.svg?task=gpqa&model_id=Qwen%2FQwen3-14B&gpu_model=B200&num_gpus=1")
        .await;
    assert_eq!(sweep.status, 200);
}

#[tokio::test]
async fn every_value_from_the_data_or_the_request_is_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    copy_sample(tmp.path());
    let hostile = "<script>alert(\"m\")</script>";
    rewrite_llm_strings(
        &tmp.path().join("runs/llm.parquet"),
        &[("model_id", 0, Some(hostile))],
    );
    let app = TestApp::over(tmp.path()).await;
    let q: String = form_urlencoded::byte_serialize(hostile.as_bytes()).collect();
    let found = app
        .get(&format!(
            "/v1/llm/runs?model_id={q}&stability=all&fields=run_id"
        ))
        .await
        .json();
    let id = run_ids(&found, "runs").pop().expect("the hostile run");
    let id_q: String = form_urlencoded::byte_serialize(id.as_bytes()).collect();
    for uri in [
        format!("/explore/llm?model_id={q}&stability=all"),
        format!("/explore/llm?task={q}"),
        format!("/explore/llm?sort={q}"),
        format!("/explore/llm/runs/{id_q}"),
        format!("/explore/llm/runs/{q}"),
    ] {
        let r = app.get_with(&uri, HTML).await;
        assert!(
            r.status == 200 || r.status == 400 || r.status == 404,
            "{uri}"
        );
        let body = r.text();
        assert!(!body.contains("<script>alert"), "{uri}: {body}");
        assert!(body.contains("&lt;script&gt;alert"), "{uri}");
        assert_eq!(
            r.headers["content-security-policy"],
            mlenergy_server::http::explore::CSP
        );
        // The only script is the server's own file.
        assert_eq!(body.matches("<script").count(), 1, "{uri}");
        assert!(body.contains("<script src=\"/explore/assets/explore.js\" defer></script>"));
    }
    // A Host header that is no host is not repeated in the snippets.
    let r = app
        .get_with("/explore/llm", &[("host", "x\"><img src=y>")])
        .await
        .text();
    assert!(r.contains("curl 'http://127.0.0.1:8080/v1/llm/runs?limit=50'"));
}

#[tokio::test]
async fn refusals_are_pages_that_name_the_parameter_and_what_it_accepts() {
    let app = TestApp::sample().await;
    let r = app.get_with("/explore/llm?format=csv", HTML).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.content_type(), "text/html; charset=utf-8");
    let body = r.text();
    assert!(body.contains("Parameter: <code>format</code>"), "{body}");
    assert!(body.contains("<code>deadline</code>"));
    // Anyone but a browser gets the problem document every endpoint answers.
    let r = app.get("/explore/llm?format=csv").await;
    assert_eq!(r.status, 400);
    let p = r.problem(400, "unknown_parameter");
    assert_eq!(p["parameter"], "format");
    assert!(
        p["allowed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "deadline")
    );
    assert_eq!(app.get("/explore/gpu").await.status, 404);
    assert_eq!(
        app.get("/explore/llm/runs/no-such-run")
            .await
            .content_type(),
        "application/problem+json"
    );
    let r = app.get_with("/explore/llm?num_gpus=two", HTML).await;
    assert_eq!(r.status, 400);
    assert!(r.text().contains("Parameter: <code>num_gpus</code>"));
    let r = app.get_with("/explore/llm?sort=energy", HTML).await;
    assert_eq!(r.status, 400);
    assert!(r.text().contains("<code>energy_per_token_joules</code>"));
    let r = app.get_with("/explore/gpu", HTML).await;
    assert_eq!(r.status, 404);
    assert!(r.text().contains("<code>llm</code>"));
    let r = app.get_with("/explore/llm/runs/no-such-run", HTML).await;
    assert_eq!(r.status, 404);
    assert!(r.text().contains("no-such-run"));
    assert_eq!(r.headers["cache-control"], "no-store");
    // An empty control of the form is no filter.
    let r = app
        .get_with(
            "/explore/diffusion?task=&model_id=&batch_size_min=&limit=25",
            HTML,
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<strong>1020</strong> runs match"));
}

#[tokio::test]
async fn pages_are_revalidated_and_compressed_like_every_answer() {
    let app = TestApp::sample().await;
    let uri = "/explore/diffusion?task=text-to-image";
    let first = app.get_with(uri, HTML).await;
    assert_eq!(first.status, 200);
    let tag = first.headers["etag"].to_str().unwrap().to_string();
    let again = app
        .get_with(uri, &[HTML[0], ("if-none-match", tag.as_str())])
        .await;
    assert_eq!(again.status, 304);
    let gz = app
        .get_with(uri, &[HTML[0], ("accept-encoding", "gzip")])
        .await;
    assert_eq!(gz.status, 200);
    assert_eq!(gz.headers["content-encoding"], "gzip");
    assert!(
        gz.body.len() * 5 < first.body.len(),
        "{} of {}",
        gz.body.len(),
        first.body.len()
    );
    let js = app.get("/explore/assets/explore.js").await;
    assert_eq!(js.status, 200);
    assert_eq!(js.content_type(), "text/javascript; charset=utf-8");
    assert!(js.text().contains("requestSubmit"));
    assert_eq!(app.get("/explore/assets/other.js").await.status, 404);
}

#[tokio::test]
async fn a_run_page_has_every_field_and_the_charts_of_its_raw_data() {
    let app = TestApp::sample().await;
    let runs = app
        .get("/v1/llm/runs?stability=all&fields=run_id,results_path,prometheus_path")
        .await
        .json();
    let runs = runs["runs"].as_array().unwrap();
    let raw = runs
        .iter()
        .find(|r| !r["results_path"].is_null())
        .expect("data/sample has a raw LLM run");
    let id = raw["run_id"].as_str().unwrap();
    let body = app
        .get_with(&format!("/explore/llm/runs/{id}"), HTML)
        .await
        .text();
    let fields = app.get("/v1/llm/fields").await.json();
    let run = app.get(&format!("/v1/llm/runs/{id}")).await.json();
    for f in fields["fields"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        assert!(body.contains(&format!("<code>{name}</code>")), "{name}");
    }
    let energy = run["energy_per_token_joules"].as_f64().unwrap();
    assert!(body.contains(&format!("<td>{energy}</td>")), "{energy}");
    for chart in [
        "timeline.svg\"",
        "timeline.svg?metric=temperature\"",
        "itl.svg\"",
    ] {
        assert!(
            body.contains(&format!("src=\"/v1/llm/runs/{id}/{chart}")),
            "{chart}"
        );
    }
    assert!(body.contains(&format!("href=\"/v1/llm/runs/{id}/raw/results.json\"")));
    let chart = app.get(&format!("/v1/llm/runs/{id}/timeline.svg")).await;
    assert_eq!(chart.status, 200);
    // A run without raw files says so.
    let other = runs.iter().find(|r| r["results_path"].is_null()).unwrap()["run_id"]
        .as_str()
        .unwrap();
    let body = app
        .get_with(&format!("/explore/llm/runs/{other}"), HTML)
        .await
        .text();
    assert!(body.contains("No raw data for this run"), "{body}");
    assert!(!body.contains("timeline.svg"));
}

#[tokio::test]
async fn the_form_has_a_control_for_every_filter_of_the_run_list() {
    let app = TestApp::sample().await;
    for domain in ["llm", "diffusion"] {
        let page = app
            .get_with(&format!("/explore/{domain}"), HTML)
            .await
            .text();
        let fields = app.get(&format!("/v1/{domain}/fields")).await.json();
        let mut names = Vec::new();
        for f in fields["fields"].as_array().unwrap() {
            let filters: Vec<&str> = f["filters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            // The canonical names: the first, and its range bounds (the others are aliases).
            if let Some(first) = filters.first() {
                names.extend(filters.iter().filter(|n| n.starts_with(first)).copied());
            }
        }
        assert!(names.len() >= 12, "{names:?}");
        for name in names {
            let control = format!("name=\"{name}\"");
            let labelled = format!("<label for=\"f-{name}\">");
            assert!(page.contains(&control), "{domain}: {name}");
            assert!(page.contains(&labelled), "{domain}: {name} has no label");
        }
    }
}
