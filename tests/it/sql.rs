//! SQL over HTTP on data/sample: answers equal /runs and /groups for equivalent filters, every
//! format, parameters, the tables' description; every kind of statement that is not a query
//! refused; the time, memory and row limits each stopping a query while another one succeeds,
//! and the gate answering 503 with Retry-After when full.

use std::time::Duration;

use mlenergy_server::engine::sql::SqlLimits;
use serde_json::Value;

use crate::common::{Reply, TestApp, counter};

/// The app without the answer cache, asking every SQL GET twice: the first plans the statement,
/// the second is bound to the kept plan (`service::sql`'s prepared statements); both must
/// answer alike, byte for byte. Every test of answers here runs through it (the tests of the
/// limits and the gate do not: they count what runs).
struct Twice(TestApp);

impl Twice {
    async fn sample() -> Twice {
        Twice(TestApp::without_answer_cache().await)
    }

    async fn get(&self, uri: &str) -> Reply {
        let first = self.0.get(uri).await;
        if !uri.starts_with("/v1/sql?") {
            return first;
        }
        let second = self.0.get(uri).await;
        assert_eq!(first.status, second.status, "{uri}");
        if first.body != second.body {
            // Rows a query does not order may come in another order (a hash aggregate's
            // partitions): the same rows, the same columns.
            let rows = |r: &Reply| {
                let mut lines: Vec<String> = match serde_json::from_slice::<Value>(&r.body) {
                    Ok(v) if v.get("rows").is_some() => v["rows"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.to_string())
                        .chain([v["columns"].to_string(), v["count"].to_string()])
                        .collect(),
                    _ => r.text().lines().map(str::to_string).collect(),
                };
                lines.sort();
                lines
            };
            assert!(!uri.to_lowercase().contains("order+by"), "{uri}");
            assert_eq!(rows(&first), rows(&second), "{uri}");
        }
        second
    }
}

impl std::ops::Deref for Twice {
    type Target = TestApp;
    fn deref(&self) -> &TestApp {
        &self.0
    }
}

fn q(sql: &str) -> String {
    format!(
        "/v1/sql?q={}",
        url::form_urlencoded::byte_serialize(sql.as_bytes()).collect::<String>()
    )
}

fn column(doc: &Value, name: &str) -> Vec<Value> {
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[name].clone())
        .collect()
}

#[tokio::test]
async fn answers_equal_the_rest_endpoints() {
    let app = Twice::sample().await;
    // The bench's query: gpqa on B200, lowest energy per token first, 50 runs.
    let rest = app
        .get("/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50&fields=energy_per_token_joules")
        .await
        .json();
    let sql = app
        .get(&q("SELECT run_id, energy_per_token_joules FROM llm_runs WHERE task = 'gpqa' AND gpu_model = 'B200' AND is_stable ORDER BY energy_per_token_joules, run_id LIMIT 50"))
        .await;
    assert_eq!(sql.status, 200);
    assert_eq!(sql.headers["x-total-count"], "50");
    let sql = sql.json();
    assert_eq!(sql["count"], 50);
    assert_eq!(
        sql["columns"],
        serde_json::json!([{"name": "run_id", "type": "Utf8"}, {"name": "energy_per_token_joules", "type": "Float64"}])
    );
    let ids = |d: &Value, key: &str| -> Vec<Value> {
        d[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["run_id"].clone())
            .collect()
    };
    assert_eq!(ids(&sql, "rows"), ids(&rest, "runs"));
    // Values to the last bit.
    let energies: Vec<Value> = rest["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["energy_per_token_joules"].clone())
        .collect();
    assert_eq!(column(&sql, "energy_per_token_joules"), energies);

    // A range filter on diffusion runs, counted.
    let rest = app
        .get("/v1/diffusion/runs?task=text-to-image&num_gpus_min=2&num_gpus_max=4&limit=1")
        .await
        .json();
    let sql = app
        .get(&q("SELECT count(*) AS n FROM diffusion_runs WHERE task = 'text-to-image' AND num_gpus BETWEEN 2 AND 4"))
        .await
        .json();
    assert_eq!(sql["rows"][0]["n"], rest["total"]);

    // Every run, stable or not: llm_runs holds them all.
    let sql = app
        .get(&q("SELECT count(*) AS n, sum(CASE WHEN is_stable THEN 1 ELSE 0 END) AS stable FROM llm_runs"))
        .await
        .json();
    let all = app.get("/v1/llm/runs?stability=all&limit=1").await.json();
    let stable = app.get("/v1/llm/runs?limit=1").await.json();
    assert_eq!(sql["rows"][0]["n"], all["total"]);
    assert_eq!(sql["rows"][0]["stable"], stable["total"]);

    // A group: per task and GPU, the count and the least energy, as /groups has them.
    let groups = app
        .get("/v1/llm/groups?by=task,gpu_model&agg=count,min(energy_per_token_joules)")
        .await
        .json();
    let sql = app
        .get(&q("SELECT task, gpu_model, count(*) AS n, min(energy_per_token_joules) AS e FROM llm_runs WHERE is_stable GROUP BY task, gpu_model"))
        .await
        .json();
    let rows = sql["rows"].as_array().unwrap();
    let groups = groups["groups"].as_array().unwrap();
    assert_eq!(rows.len(), groups.len());
    for g in groups {
        let r = rows
            .iter()
            .find(|r| r["task"] == g["task"] && r["gpu_model"] == g["gpu_model"])
            .unwrap();
        assert_eq!(r["n"], g["count"]);
        assert_eq!(r["e"], g["min_energy_per_token_joules"]);
    }
}

#[tokio::test]
async fn formats_parameters_and_tables() {
    let app = Twice::sample().await;
    let text = "SELECT run_id, num_gpus, energy_per_token_joules, is_stable FROM llm_runs WHERE task = 'gpqa' ORDER BY run_id LIMIT 5";
    let json = app.get(&q(text)).await.json();
    let csv = app.get(&format!("{}&format=csv", q(text))).await;
    assert_eq!(csv.content_type(), "text/csv; charset=utf-8");
    let lines: Vec<String> = csv.text().lines().map(str::to_string).collect();
    assert_eq!(
        lines[0],
        "run_id,num_gpus,energy_per_token_joules,is_stable"
    );
    assert_eq!(lines.len(), 6);
    assert!(lines[1].starts_with(json["rows"][0]["run_id"].as_str().unwrap()));
    let nd = app
        .get_with(&q(text), &[("accept", "application/x-ndjson")])
        .await;
    let first: Value = serde_json::from_str(nd.text().lines().next().unwrap()).unwrap();
    assert_eq!(first, json["rows"][0]);
    for (format, magic) in [
        ("arrow", &b"\xff\xff\xff\xff"[..]),
        ("parquet", &b"PAR1"[..]),
    ] {
        let r = app.get(&format!("{}&format={format}", q(text))).await;
        assert_eq!(r.status, 200);
        assert!(r.body.starts_with(magic), "{format}");
    }
    // POST: plain SQL, or JSON with $1 placeholders.
    let plain = app.post("/v1/sql", "text/plain", text).await.json();
    assert_eq!(plain, json);
    let bound = app
        .post(
            "/v1/sql",
            "application/json",
            r#"{"sql": "SELECT run_id FROM llm_runs WHERE task = $1 AND num_gpus = $2 ORDER BY run_id LIMIT 5", "params": ["gpqa", 1]}"#,
        )
        .await
        .json();
    let want = app
        .get(&q("SELECT run_id FROM llm_runs WHERE task = 'gpqa' AND num_gpus = 1 ORDER BY run_id LIMIT 5"))
        .await
        .json();
    assert_eq!(bound["rows"], want["rows"]);
    // A GET answer is cached and revalidated like the rest.
    let first = app.get(&q(text)).await;
    let tag = first.headers["etag"].to_str().unwrap().to_string();
    assert_eq!(
        app.get_with(&q(text), &[("if-none-match", &tag)])
            .await
            .status,
        304
    );

    let tables = app.get("/v1/sql/tables").await.json();
    let names: Vec<&str> = tables
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[..2], ["llm_runs", "diffusion_runs"]);
    assert_eq!(
        tables[0]["rows"],
        838 + app
            .get("/v1/llm/runs?stability=unstable&limit=1")
            .await
            .json()["total"]
            .as_u64()
            .unwrap()
    );
    let energy = tables[0]["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "energy_per_token_joules")
        .unwrap();
    assert_eq!(energy["type"], "Float64");
    assert_eq!(energy["unit"], "J/token");

    // Columns of one name from two relations keep apart.
    let join = app
        .get(&q("SELECT a.run_id, b.run_id FROM llm_runs a JOIN llm_runs b ON a.run_id = b.run_id ORDER BY a.run_id LIMIT 1"))
        .await
        .json();
    assert_eq!(
        join["columns"],
        serde_json::json!([{"name": "a.run_id", "type": "Utf8"}, {"name": "b.run_id", "type": "Utf8"}])
    );
    assert_eq!(join["rows"][0]["a.run_id"], join["rows"][0]["b.run_id"]);

    // Bad requests.
    app.get("/v1/sql").await.problem(400, "invalid_parameter");
    app.get("/v1/sql?q=SELECT%201&limit=3")
        .await
        .problem(400, "unknown_parameter");
    app.get(&q("SELECT * FROM nope"))
        .await
        .problem(400, "invalid_sql");
    app.get(&q("SELEKT 1")).await.problem(400, "invalid_sql");
    // Rows of no column (found by fuzzing: it was a 500 in every format).
    for format in ["json", "csv", "arrow"] {
        let p = app
            .get(&format!("{}&format={format}", q("SELECT FROM llm_runs x")))
            .await
            .problem(400, "invalid_sql");
        assert!(p["detail"].as_str().unwrap().contains("no column"), "{p}");
    }
    // An answer DataFusion computes in another type than it planned (found by fuzzing: a 500):
    // the column in its planned type, as the schema said.
    let decimal = app
        .get(&q("SELECT 0/16000000000000079213 AS z, 7 AS n"))
        .await
        .json();
    assert_eq!(
        decimal["columns"],
        serde_json::json!([{"name": "z", "type": "Decimal128(20, 0)"}, {"name": "n", "type": "Int64"}])
    );
    assert_eq!(decimal["rows"][0]["n"], 7);
    // Decimals are written as their exact text.
    assert_eq!(decimal["rows"][0]["z"], "0", "{decimal}");
    // A placeholder number no request could bind (found by fuzzing: an overflow in lifting).
    app.post(
        "/v1/sql",
        "application/json",
        r#"{"sql": "SELECT * FROM llm_runs WHERE num_gpus != $18446744073709551615 AND task = 'gpqa'", "params": [4]}"#,
    )
    .await
    .problem(400, "invalid_sql");
    app.post(
        "/v1/sql",
        "application/json",
        r#"{"sql": "SELECT 1", "params": [[1]]}"#,
    )
    .await
    .problem(400, "invalid_body");
    app.post("/v1/sql", "image/png", "SELECT 1")
        .await
        .problem(400, "invalid_body");
}

#[tokio::test]
async fn only_queries_run() {
    let app = Twice::sample().await;
    for statement in [
        "DROP TABLE llm_runs",
        "CREATE TABLE t AS SELECT * FROM llm_runs",
        "CREATE VIEW v AS SELECT 1",
        "CREATE EXTERNAL TABLE x STORED AS CSV LOCATION '/etc/passwd'",
        "INSERT INTO llm_runs SELECT * FROM llm_runs",
        "COPY llm_runs TO '/tmp/llm.csv'",
        "SET datafusion.execution.batch_size = 1",
        "DROP VIEW v",
    ] {
        let p = app.get(&q(statement)).await.problem(400, "sql_refused");
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("only queries are run"),
            "{statement}: {p}"
        );
    }
    // Statements the planner does not take at all are refused as invalid, never run.
    for statement in [
        "DELETE FROM llm_runs",
        "UPDATE llm_runs SET task = 'x'",
        "SELECT 1; DROP TABLE llm_runs",
    ] {
        let r = app.get(&q(statement)).await;
        assert_eq!(r.status, 400, "{statement}: {}", r.text());
    }
    // Still there.
    let n = app
        .get(&q("SELECT count(*) AS n FROM llm_runs"))
        .await
        .json();
    assert!(n["rows"][0]["n"].as_u64().unwrap() >= 838);
    // Queries of every allowed kind.
    for statement in [
        "WITH g AS (SELECT task FROM llm_runs) SELECT count(*) FROM g",
        "VALUES (1, 'a')",
        "EXPLAIN SELECT * FROM llm_runs",
        "SHOW TABLES",
        "DESCRIBE llm_runs",
    ] {
        assert_eq!(app.get(&q(statement)).await.status, 200, "{statement}");
    }
}

/// A statement the parser would backtrack on exponentially (a chain of dotted names ending in
/// `[`: 2^n steps for n names, found by the query_strings fuzz target) is refused by the depth
/// bound as invalid SQL at once; a chain within the bound still answers, and nesting that real
/// queries use still parses.
#[tokio::test]
async fn statements_the_parser_would_backtrack_on_are_refused() {
    let app = Twice::sample().await;
    let chain = |n: usize| format!("SELECT {}[", vec!["ab"; n].join("."));
    for n in [40, 400] {
        let p = app.get(&q(&chain(n))).await.problem(400, "invalid_sql");
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("nests more than 24 levels deep"),
            "{p}"
        );
        let (status, body) = post_sql(&app, &chain(n), serde_json::json!([])).await;
        assert_eq!(
            (status, body["type"].as_str()),
            (400, Some("/problems/invalid_sql")),
            "{body}"
        );
    }
    // A short chain is an ordinary syntax error.
    let p = app.get(&q(&chain(3))).await.problem(400, "invalid_sql");
    assert!(
        !p["detail"]
            .as_str()
            .unwrap()
            .contains("nests more than 24 levels deep"),
        "{p}"
    );
    let nested = format!(
        "SELECT count(*) AS n FROM {}llm_runs{}",
        "(SELECT * FROM ".repeat(8),
        ") t".repeat(8)
    );
    let n = app.get(&q(&nested)).await.json();
    assert_eq!(n["rows"][0]["n"].as_u64(), Some(838), "{n}");
}

/// Chains of operators the parser builds in a loop, past the chain bound, are refused before a
/// tree is built, on the GET and POST forms alike, naming the bound and the way to write a long
/// list; the server answers the next query (a chain of 2,000 ORs aborted the server). Answers at
/// the bound are tested on the real binary, whose worker stacks they are measured against.
#[tokio::test]
async fn chains_past_the_bound_are_refused() {
    let app = Twice::sample().await;
    let ors = |n: usize| {
        let terms: Vec<String> = (0..n).map(|i| format!("num_gpus = {i}")).collect();
        format!("SELECT count(*) FROM llm_runs WHERE {}", terms.join(" OR "))
    };
    let chains = [
        ors(2_000),
        ors(20_000),
        format!(
            "SELECT {} FROM llm_runs",
            vec!["num_gpus"; 3_000].join(" = ")
        ),
        format!("SELECT {}", vec!["1"; 1_002].join(" + ")),
        format!("SELECT {}", vec!["true"; 1_002].join(" AND ")),
        format!("SELECT 1{}", "::BIGINT".repeat(1_002)),
        vec!["SELECT 1, 2"; 600].join(" UNION ALL "),
        // Inside parentheses and a function's arguments, the chain still counts.
        format!("SELECT abs(1, ({}))", vec!["1"; 1_002].join(" - ")),
    ];
    for sql in &chains {
        let (status, p) = post_sql(&app, sql, serde_json::json!([])).await;
        assert_eq!(
            (status, p["type"].as_str()),
            (400, Some("/problems/invalid_sql"))
        );
        let detail = p["detail"].as_str().unwrap();
        assert!(
            detail.contains("more than the limit of 1000") && detail.contains("x IN (1, 2, ...)"),
            "{p}"
        );
        // GET's request target holds 8,192 bytes.
        if q(sql).len() <= 8_192 {
            let p = app.get(&q(sql)).await.problem(400, "invalid_sql");
            assert_eq!(p["detail"].as_str(), Some(detail));
        }
    }
    let n = app
        .get(&q("SELECT count(*) AS n FROM llm_runs"))
        .await
        .json();
    assert_eq!(n["rows"][0]["n"].as_u64(), Some(838), "{n}");
}

/// A query that takes long: a count over a large generated series.
const SLOW: &str = "SELECT count(*) FROM generate_series(1, 100000000000) a";

#[tokio::test]
async fn each_limit_stops_its_query_while_another_succeeds() {
    let app = TestApp::with_options(|s| {
        s.sql_limits = SqlLimits {
            timeout: Duration::from_millis(800),
            memory_bytes: 1 << 20,
            max_rows: 1000,
        };
        s.sql_concurrency = 4;
        s.sql_queue = 16;
    })
    .await;
    let quick = q("SELECT task, count(*) AS n FROM llm_runs GROUP BY task");
    let cases = [
        (SLOW, "time limit of 800ms"),
        (
            "SELECT count(DISTINCT a.run_id || b.run_id) FROM llm_runs a CROSS JOIN llm_runs b",
            "memory limit of 1 MiB",
        ),
        (
            "SELECT * FROM llm_runs a CROSS JOIN (VALUES (1), (2)) v",
            "row cap of 1000 rows",
        ),
    ];
    for (statement, limit) in cases {
        let uri = q(statement);
        let (stopped, other) = tokio::join!(app.get(&uri), async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            app.get(&quick).await
        });
        let p = stopped.problem(422, "query_limit");
        assert!(
            p["detail"].as_str().unwrap().contains(limit),
            "{statement}: {p}"
        );
        assert_eq!(other.status, 200, "{}", other.text());
        assert!(other.json()["count"].as_u64().unwrap() >= 5);
    }
}

#[tokio::test]
async fn a_full_gate_answers_busy() {
    let app = TestApp::with_options(|s| {
        s.sql_limits = SqlLimits {
            timeout: Duration::from_millis(1500),
            ..SqlLimits::default()
        };
        s.sql_concurrency = 1;
        s.sql_queue = 0;
    })
    .await;
    let slow_uri = q(SLOW);
    let (slow, busy) = tokio::join!(app.get(&slow_uri), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        app.get(&q("SELECT 1")).await
    });
    slow.problem(422, "query_limit");
    let p = busy.problem(503, "busy");
    assert!(p["detail"].as_str().unwrap().contains("try again"));
    assert_eq!(busy.headers["retry-after"], "1");
    // Free again.
    assert_eq!(app.get(&q("SELECT 1")).await.status, 200);
}

/// The one LLM run of data/sample with a raw file.
const RAW_RUN: &str = "video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1";

#[tokio::test]
async fn raw_derived_tables_equal_the_raw_endpoints() {
    // The run has 117,446 ITLs: over the default row cap. The debug build sorts them slowly
    // when other suites share its cores: the time limit gives it room.
    let app = TestApp::with_options(|s| {
        s.sql_limits = SqlLimits {
            max_rows: 1_000_000,
            timeout: std::time::Duration::from_secs(60),
            ..SqlLimits::default()
        };
        s.sql_concurrency = 2;
        s.sql_queue = 16;
    })
    .await;
    // The ITLs, joined to their runs, as /itl gives them (values to the bit, in order).
    let itl = app.get(&format!("/v1/llm/runs/{RAW_RUN}/itl")).await.json();
    let want: Vec<Value> = itl
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["itl_s"].clone())
        .collect();
    let sql = app
        .get(&format!(
            "{}&format=ndjson",
            q("SELECT i.itl_s FROM llm_runs r JOIN llm_itl i ON r.run_id = i.run_id WHERE r.task = 'video-chat'")
        ))
        .await;
    assert_eq!(sql.status, 200, "{}", sql.text());
    let got: Vec<Value> = sql
        .text()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["itl_s"].clone())
        .collect();
    // A join's rows come in no set order: the same samples, to the bit.
    let bits = |v: &[Value]| {
        let mut b: Vec<u64> = v.iter().map(|x| x.as_f64().unwrap().to_bits()).collect();
        b.sort_unstable();
        b
    };
    assert_eq!(got.len(), want.len());
    assert!(bits(&got) == bits(&want), "the ITLs differ");
    // In the run's order by i.
    let alone = app
        .get(&format!(
            "{}&format=ndjson",
            q(&format!(
                "SELECT itl_s FROM llm_itl WHERE run_id = '{RAW_RUN}' ORDER BY i"
            ))
        ))
        .await;
    let alone: Vec<Value> = alone
        .text()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["itl_s"].clone())
        .collect();
    assert_eq!(alone.len(), want.len());
    if let Some(k) = (0..want.len()).find(|&k| alone[k] != want[k]) {
        panic!(
            "the ITLs in file order differ at {k}: {} against {}",
            alone[k], want[k]
        );
    }

    let lengths = app
        .get(&format!("/v1/llm/runs/{RAW_RUN}/output-lengths"))
        .await
        .json();
    let sum: i64 = lengths
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["output_len"].as_i64().unwrap())
        .sum();
    let sql = app
        .get(&q(&format!("SELECT count(*) AS n, sum(output_len) AS s FROM llm_output_lengths WHERE run_id = '{RAW_RUN}'")))
        .await
        .json();
    assert_eq!(
        sql["rows"][0]["n"].as_u64().unwrap() as usize,
        lengths.as_array().unwrap().len()
    );
    assert_eq!(sql["rows"][0]["s"], sum);

    // The timeline per GPU: as many samples of each GPU as /timeline?per_gpu=true holds.
    let wide = app
        .get(&format!("/v1/llm/runs/{RAW_RUN}/timeline?per_gpu=true"))
        .await
        .json();
    let rows = wide.as_array().unwrap();
    let sql = app
        .get(&q(&format!("SELECT gpu, count(*) AS n, sum(value) AS total FROM timelines WHERE run_id IN ('{RAW_RUN}', 'nope') AND metric = 'power.device_instant' GROUP BY gpu ORDER BY gpu")))
        .await
        .json();
    assert_eq!(sql["count"], 2);
    for g in [0u64, 1] {
        let key = format!("power_device_instant_device_{g}");
        let n = rows.iter().filter(|r| !r[&key].is_null()).count();
        assert_eq!(
            sql["rows"][g as usize]["n"].as_u64().unwrap() as usize,
            n,
            "GPU {g}"
        );
    }

    let tables = app.get("/v1/sql/tables").await.json();
    let names: Vec<&str> = tables
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "llm_runs",
            "diffusion_runs",
            "llm_itl",
            "llm_output_lengths",
            "timelines"
        ]
    );
    assert_eq!(tables[2]["rows"], Value::Null);
}

#[tokio::test]
async fn a_query_over_too_many_runs_is_refused_before_reading() {
    let app = TestApp::with_options(|s| s.sql_max_raw_runs = 0).await;
    let p = app
        .get(&q("SELECT count(*) FROM llm_itl"))
        .await
        .problem(400, "invalid_sql");
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains("more than the limit of 0"), "{detail}");
    assert!(detail.contains("run_id"), "{detail}");
    // A run without a raw file is not counted: naming one reads nothing.
    let r = app
        .get(&q(
            "SELECT count(*) AS n FROM llm_itl WHERE run_id = 'gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1'",
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["rows"][0]["n"], 0);
}

#[tokio::test]
async fn logistic_fit_aggregate_equals_the_model_endpoint() {
    let app = Twice::sample().await;
    let group = "model_id = 'Qwen/Qwen3-14B' AND task = 'gpqa' AND gpu_model = 'B200' AND num_gpus = 1 AND is_stable";
    let points = app
        .get(&q(&format!(
            "SELECT CAST(max_num_seqs AS DOUBLE) AS b, energy_per_token_joules AS y FROM llm_runs WHERE {group}"
        )))
        .await
        .json();
    let batch = column(&points, "b");
    let y = column(&points, "y");
    assert!(batch.len() >= 4, "a sweep of several batch sizes");
    let fit = app
        .get(&q(&format!(
            "SELECT get_field(f, 'L') AS l, get_field(f, 'x0') AS x0, get_field(f, 'k') AS k, get_field(f, 'b0') AS b0, get_field(f, 'r2') AS r2, get_field(f, 'n') AS n FROM (SELECT logistic_fit(CAST(max_num_seqs AS DOUBLE), energy_per_token_joules) AS f FROM llm_runs WHERE {group})"
        )))
        .await
        .json();
    let body = serde_json::json!({"batch": batch, "y": y}).to_string();
    let model = app
        .post("/v1/models/logistic/fit", "application/json", &body)
        .await
        .json();
    let row = &fit["rows"][0];
    assert_eq!(row["n"], serde_json::json!(batch.len()));
    for (ours, theirs) in [
        ("l", "L"),
        ("x0", "x0"),
        ("k", "k"),
        ("b0", "b0"),
        ("r2", "r2"),
    ] {
        let (a, b) = (row[ours].as_f64().unwrap(), model[theirs].as_f64().unwrap());
        // The same points in the same order: the same fit to the last bit.
        assert_eq!(a, b, "{ours}");
    }
    // One fit per group.
    let per_gpu = app
        .get(&q("SELECT gpu_model, get_field(logistic_fit(CAST(max_num_seqs AS DOUBLE), energy_per_token_joules), 'n') AS n, count(*) AS c FROM llm_runs WHERE model_id = 'Qwen/Qwen3-14B' AND task = 'gpqa' AND num_gpus = 1 GROUP BY gpu_model ORDER BY gpu_model"))
        .await
        .json();
    for r in per_gpu["rows"].as_array().unwrap() {
        assert_eq!(r["n"], r["c"]);
    }
}

/// POST `sql` with `params`; the reply's body.
async fn post_sql(app: &TestApp, sql: &str, params: Value) -> (u16, Value) {
    let body = serde_json::json!({"sql": sql, "params": params}).to_string();
    let r = app.post("/v1/sql", "application/json", &body).await;
    (r.status.as_u16(), r.json())
}

fn plan_counts(metrics: &str) -> (u64, u64) {
    let n = |kind: &str| {
        counter(
            metrics,
            &format!("mlenergy_sql_plan_cache_total{{kind=\"{kind}\"}}"),
        )
    };
    (n("hit"), n("miss"))
}

#[tokio::test]
async fn a_prepared_statement_answers_what_a_fresh_plan_answers() {
    // Each family: queries that differ in their values only (one statement, prepared once),
    // or in what shapes the plan (several statements). Asked in turn on one app, the later
    // ones bound to the first's plan; each also asked alone on an app of its own (a fresh plan).
    let families: Vec<Vec<(&str, Value)>> = vec![
        vec![
            (
                "SELECT run_id, energy_per_token_joules FROM llm_runs WHERE task = 'gpqa' AND max_num_seqs >= 64 ORDER BY run_id LIMIT 20",
                Value::Null,
            ),
            (
                "SELECT run_id, energy_per_token_joules FROM llm_runs WHERE task = 'lm-arena-chat' AND max_num_seqs >= 8 ORDER BY run_id LIMIT 20",
                Value::Null,
            ),
            // A float bound of an integer column: not bound to the integer placeholder (the
            // statement as written compares as floats).
            (
                "SELECT run_id, energy_per_token_joules FROM llm_runs WHERE task = 'gpqa' AND max_num_seqs >= 64.5 ORDER BY run_id LIMIT 20",
                Value::Null,
            ),
            (
                "SELECT run_id, energy_per_token_joules FROM llm_runs WHERE task = 'no-such-task' AND max_num_seqs >= 1 ORDER BY run_id LIMIT 20",
                Value::Null,
            ),
        ],
        vec![
            (
                "SELECT run_id FROM llm_runs WHERE num_gpus IN (1) ORDER BY run_id",
                Value::Null,
            ),
            (
                "SELECT run_id FROM llm_runs WHERE num_gpus IN (2, 4) ORDER BY run_id",
                Value::Null,
            ),
            (
                "SELECT run_id FROM llm_runs WHERE num_gpus IN (4, 8, 2) ORDER BY run_id",
                Value::Null,
            ),
            (
                "SELECT run_id FROM llm_runs WHERE num_gpus IN (8, 1) ORDER BY run_id",
                Value::Null,
            ),
        ],
        vec![
            (
                "SELECT count(*) AS n, max(run_id) AS last FROM (SELECT * FROM llm_runs WHERE task = 'gpqa' ORDER BY run_id LIMIT 5) s",
                Value::Null,
            ),
            (
                "SELECT count(*) AS n, max(run_id) AS last FROM (SELECT * FROM llm_runs WHERE task = 'gpqa' ORDER BY run_id LIMIT 50) s",
                Value::Null,
            ),
            (
                "SELECT count(*) AS n, max(run_id) AS last FROM (SELECT * FROM llm_runs WHERE task = 'image-chat' ORDER BY run_id LIMIT 5) s",
                Value::Null,
            ),
        ],
        // A kept literal's kind is part of the statement: '5' is a string column, 5 a number
        // (once answered the Int64 5 after the first).
        vec![
            (
                "SELECT 5 AS x, run_id FROM llm_runs WHERE task = 'gpqa' ORDER BY run_id LIMIT 2",
                Value::Null,
            ),
            (
                "SELECT '5' AS x, run_id FROM llm_runs WHERE task = 'gpqa' ORDER BY run_id LIMIT 2",
                Value::Null,
            ),
            (
                "SELECT 5.0 AS x, run_id FROM llm_runs WHERE task = 'image-chat' ORDER BY run_id LIMIT 2",
                Value::Null,
            ),
        ],
        vec![
            (
                "SELECT run_id FROM diffusion_runs WHERE batch_size = 1 ORDER BY run_id",
                Value::Null,
            ),
            (
                "SELECT run_id, model_id, num_gpus FROM diffusion_runs WHERE batch_size = 2 ORDER BY run_id",
                Value::Null,
            ),
            (
                "SELECT model_id FROM diffusion_runs WHERE batch_size = 4 ORDER BY run_id",
                Value::Null,
            ),
        ],
        vec![
            (
                "SELECT run_id FROM llm_runs WHERE task = $1 AND num_gpus = 2 ORDER BY run_id",
                serde_json::json!(["gpqa"]),
            ),
            (
                "SELECT run_id FROM llm_runs WHERE task = $1 AND num_gpus = 4 ORDER BY run_id",
                serde_json::json!(["video-chat"]),
            ),
            (
                "SELECT run_id FROM llm_runs WHERE task = $1 AND num_gpus = 8 ORDER BY run_id",
                serde_json::json!([]),
            ),
        ],
        vec![
            (
                "SELECT model_id, count(*) AS n FROM llm_runs GROUP BY model_id HAVING count(*) > 20 ORDER BY model_id",
                Value::Null,
            ),
            (
                "SELECT model_id, count(*) AS n FROM llm_runs GROUP BY model_id HAVING count(*) > 40 ORDER BY model_id",
                Value::Null,
            ),
        ],
        vec![
            (
                "SELECT run_id FROM llm_runs WHERE energy_per_token_joules < 1 AND num_gpus = '2' ORDER BY run_id",
                Value::Null,
            ),
            (
                "SELECT run_id FROM llm_runs WHERE energy_per_token_joules < 0.25 AND num_gpus = 2 ORDER BY run_id",
                Value::Null,
            ),
            (
                "SELECT run_id FROM llm_runs WHERE energy_per_token_joules BETWEEN 0.1 AND 0.3 AND gpu_model <> 'B200' ORDER BY run_id",
                Value::Null,
            ),
            (
                "SELECT run_id FROM llm_runs WHERE energy_per_token_joules BETWEEN 1 AND 2 AND gpu_model <> 'H100' ORDER BY run_id",
                Value::Null,
            ),
        ],
    ];
    let warm = TestApp::without_answer_cache().await;
    let mut asked = 0u64;
    for family in &families {
        for (sql, params) in family {
            let params = if params.is_null() {
                serde_json::json!([])
            } else {
                params.clone()
            };
            let (status, hot) = post_sql(&warm, sql, params.clone()).await;
            // Twice on the same app: the second is the prepared statement's, bound again.
            let (status2, hot2) = post_sql(&warm, sql, params.clone()).await;
            let cold_app = TestApp::without_answer_cache().await;
            let (cold_status, cold) = post_sql(&cold_app, sql, params).await;
            assert_eq!(
                (status, status2),
                (cold_status, cold_status),
                "{sql}: {hot}"
            );
            assert_eq!(hot, cold, "{sql}");
            assert_eq!(hot2, cold, "{sql}");
            asked += 2;
        }
    }
    let (hits, misses) = plan_counts(&warm.get("/metrics").await.text());
    assert_eq!(hits + misses, asked);
    // One statement per family of values, one more per shape: the IN lists of three lengths
    // (3), the subquery's two LIMITs (2), the kept 5, '5' and 5.0 (3), the three projections
    // (3), and one each for the first, the client's placeholders, HAVING, and the last family's
    // two (`<` and BETWEEN).
    assert_eq!(
        misses,
        1 + 3 + 2 + 3 + 3 + 1 + 1 + 2,
        "{hits} hits, {misses} misses"
    );
}
