//! `--leaderboard-ui DIR`: a small built site of our own (a page, nested content-hashed assets,
//! an image, a link out of the site) served at /leaderboard/ beside the data: the bytes and
//! content types, client routes falling back to the page, missing assets and data files as 404s,
//! and the caching headers of each kind of file.

use std::io::Read;
use std::sync::Arc;

use mlenergy_server::http::{HttpOptions, Limits};
use mlenergy_server::service::static_site::StaticSite;

use crate::common::{Reply, TestApp};

const PAGE: &str = "<!doctype html><html><head><title>ML.ENERGY Leaderboard</title>\
<script type=\"module\" src=\"/leaderboard/assets/index-B3x9kQ2a.js\"></script>\
<link rel=\"stylesheet\" href=\"/leaderboard/assets/css/deep/style-Dk2x9aQ1.css\"></head>\
<body><div id=\"root\"></div></body></html>";

fn header<'a>(r: &'a Reply, name: &str) -> &'a str {
    r.headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name}: {:?}", r.headers))
        .to_str()
        .unwrap()
}

struct Site {
    _dir: tempfile::TempDir,
    _outside: tempfile::TempDir,
    app: TestApp,
    script: String,
    png: Vec<u8>,
}

async fn site() -> Site {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("assets/css/deep")).unwrap();
    std::fs::write(root.join("index.html"), PAGE).unwrap();
    let script: String = (0..400)
        .map(|i| format!("export const series{i} = [{i}, {}, {}];\n", i * 2, i * 3))
        .collect();
    std::fs::write(root.join("assets/index-B3x9kQ2a.js"), &script).unwrap();
    std::fs::write(
        root.join("assets/css/deep/style-Dk2x9aQ1.css"),
        "body { font-family: sans-serif; }\n".repeat(20),
    )
    .unwrap();
    let png: Vec<u8> = [0x89, b'P', b'N', b'G', 13, 10, 26, 10]
        .into_iter()
        .chain((0..600u32).map(|i| (i % 7) as u8))
        .collect();
    std::fs::write(root.join("logo.png"), &png).unwrap();
    std::fs::write(outside.path().join("secret.txt"), "not for the web").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("secret.txt"))
            .unwrap();
        std::os::unix::fs::symlink(root.join("logo.png"), root.join("assets/logo-link.png"))
            .unwrap();
    }
    let loaded = StaticSite::load(root).unwrap();
    let app = TestApp::with(
        Limits {
            max_rows: 100_000,
            stream_bytes: Limits::STREAM_BYTES,
        },
        HttpOptions {
            max_age: 120,
            leaderboard_ui: Some(Arc::new(loaded)),
            ..HttpOptions::default()
        },
    )
    .await;
    Site {
        _dir: dir,
        _outside: outside,
        app,
        script,
        png,
    }
}

#[tokio::test]
async fn files_are_served_with_their_types() {
    let s = site().await;
    let page = s.app.get("/leaderboard/").await;
    assert_eq!(page.status, 200);
    assert_eq!(page.text(), PAGE);
    assert_eq!(page.content_type(), "text/html; charset=utf-8");

    let js = s.app.get("/leaderboard/assets/index-B3x9kQ2a.js").await;
    assert_eq!(js.status, 200);
    assert_eq!(js.text(), s.script);
    assert!(
        js.content_type().contains("javascript"),
        "{}",
        js.content_type()
    );

    let css = s
        .app
        .get("/leaderboard/assets/css/deep/style-Dk2x9aQ1.css")
        .await;
    assert_eq!(css.status, 200);
    assert_eq!(css.content_type(), "text/css; charset=utf-8");
    assert!(css.text().starts_with("body { font-family"));

    let png = s.app.get("/leaderboard/logo.png").await;
    assert_eq!(png.status, 200);
    assert_eq!(png.content_type(), "image/png");
    assert!(png.body == s.png);
    // A link inside the site is followed; one out of it is not served.
    let linked = s.app.get("/leaderboard/assets/logo-link.png").await;
    assert!(linked.body == s.png);
    s.app
        .get("/leaderboard/secret.txt")
        .await
        .problem(404, "not_found");
    // Nor does a path climb out.
    let climb = s.app.get("/leaderboard/assets/..%2F..%2Fsecret.txt").await;
    assert_eq!(climb.status, 404);

    // /leaderboard is the site's root.
    let bare = s.app.get("/leaderboard").await;
    assert_eq!(bare.status, 308);
    assert_eq!(header(&bare, "location"), "/leaderboard/");

    // The data is still the data, beside the site.
    let index = s.app.get("/leaderboard/data/index.json").await;
    assert_eq!(index.status, 200);
    assert!(index.json()["tasks"].as_array().unwrap().len() == 7);
}

#[tokio::test]
async fn client_routes_fall_back_to_the_page_and_missing_files_do_not() {
    let s = site().await;
    for route in [
        "/leaderboard/gpqa",
        "/leaderboard/tasks/text-to-image",
        "/leaderboard/compare/a/b",
    ] {
        let r = s.app.get(route).await;
        assert_eq!(r.status, 200, "{route}");
        assert_eq!(r.text(), PAGE, "{route}");
        assert_eq!(header(&r, "cache-control"), "no-cache");
    }
    // A missing asset is a 404, not the page (a script that is HTML breaks the page silently).
    s.app
        .get("/leaderboard/assets/index-Zz9y8x7w.js")
        .await
        .problem(404, "not_found");
    s.app
        .get("/leaderboard/favicon.ico")
        .await
        .problem(404, "not_found");
    // A data path never falls back: the frontend must see a missing file.
    s.app
        .get("/leaderboard/data/tasks/no-such-task.json")
        .await
        .problem(404, "unknown_leaderboard_file");
    s.app
        .get("/leaderboard/data/elsewhere")
        .await
        .problem(404, "not_found");
}

#[tokio::test]
async fn caching_headers_by_kind_of_file() {
    let s = site().await;
    let page = s.app.get("/leaderboard/").await;
    assert_eq!(header(&page, "cache-control"), "no-cache");
    let tag = header(&page, "etag").to_string();
    assert!(tag.starts_with("\"ui-"), "{tag}");
    // The page and a client route are the same representation.
    let route = s.app.get("/leaderboard/gpqa").await;
    assert_eq!(header(&route, "etag"), tag);
    let again = s
        .app
        .get_with("/leaderboard/gpqa", &[("if-none-match", &tag)])
        .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(header(&again, "etag"), tag);
    assert_eq!(header(&again, "cache-control"), "no-cache");

    let js = s.app.get("/leaderboard/assets/index-B3x9kQ2a.js").await;
    assert_eq!(
        header(&js, "cache-control"),
        "public, max-age=31536000, immutable"
    );
    let png = s.app.get("/leaderboard/logo.png").await;
    assert_eq!(header(&png, "cache-control"), "public, max-age=120");

    // Text is sent compressed in each coding (one tag each, revalidating the others); an image
    // as it is, whatever the client accepts.
    for (coding, asked) in [
        ("br", "gzip, deflate, br, zstd"),
        ("gzip", "gzip"),
        ("zstd", "zstd"),
    ] {
        let r = s
            .app
            .get_with(
                "/leaderboard/assets/index-B3x9kQ2a.js",
                &[("accept-encoding", asked)],
            )
            .await;
        assert_eq!(header(&r, "content-encoding"), coding);
        assert!(r.body.len() < s.script.len() / 3);
        let mut out = Vec::new();
        match coding {
            "br" => brotli::BrotliDecompress(&mut &r.body[..], &mut out).unwrap(),
            "gzip" => {
                flate2::read::GzDecoder::new(&r.body[..])
                    .read_to_end(&mut out)
                    .unwrap();
            }
            _ => out = zstd::decode_all(&r.body[..]).unwrap(),
        }
        assert_eq!(String::from_utf8(out).unwrap(), s.script);
        let tag = header(&r, "etag");
        assert_ne!(tag, header(&js, "etag"));
        let plain_again = s
            .app
            .get_with(
                "/leaderboard/assets/index-B3x9kQ2a.js",
                &[("if-none-match", tag)],
            )
            .await;
        assert_eq!(plain_again.status, 304);
    }
    let png_br = s
        .app
        .get_with("/leaderboard/logo.png", &[("accept-encoding", "br")])
        .await;
    assert!(png_br.headers.get("content-encoding").is_none());
    assert!(png_br.body == s.png);
    assert_eq!(header(&png_br, "etag"), header(&png, "etag"));
}

#[tokio::test]
async fn without_the_option_there_is_no_site() {
    let app = TestApp::sample().await;
    app.get("/leaderboard/").await.problem(404, "not_found");
    app.get("/leaderboard/gpqa").await.problem(404, "not_found");
    assert_eq!(app.get("/leaderboard/data/index.json").await.status, 200);
}

#[test]
fn a_site_needs_its_page_and_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.js"), "1").unwrap();
    let e = StaticSite::load(dir.path()).unwrap_err().to_string();
    assert!(e.contains("no index.html"), "{e}");
    let e = StaticSite::load(&dir.path().join("app.js"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a directory"), "{e}");
    let e = StaticSite::load(&dir.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing"), "{e}");
}
