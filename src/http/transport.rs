//! How answers travel: the content coding negotiated from `Accept-Encoding`.

use axum::http::{HeaderMap, header};

use crate::service::coding::Coding;

/// The coding to send for `Accept-Encoding`: the compressed coding the client rates highest
/// (ties: br, zstd, gzip), `*` standing for any coding it does not name; identity when it names
/// none of ours, rates them all 0, or sends no header.
pub fn choose_coding(headers: &HeaderMap) -> Coding {
    let value = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let mut named: Vec<(Coding, f32)> = Vec::new();
    let mut star: Option<f32> = None;
    for item in value.split(',') {
        let mut parts = item.split(';');
        let token = parts.next().unwrap_or("").trim();
        let mut q = 1.0f32;
        for p in parts {
            if let Some((k, v)) = p.split_once('=')
                && k.trim().eq_ignore_ascii_case("q")
            {
                q = v.trim().parse().unwrap_or(0.0);
            }
        }
        if token == "*" {
            star = Some(q);
        } else if let Some(c) = Coding::from_token(token) {
            named.push((c, q));
        }
    }
    let rate = |c: Coding| {
        named
            .iter()
            .find(|(n, _)| *n == c)
            .map(|(_, q)| *q)
            .or(star)
            .unwrap_or(0.0)
    };
    let mut best = (Coding::Identity, 0.0f32);
    for c in Coding::COMPRESSED {
        let q = rate(c);
        if q > best.1 {
            best = (c, q);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(v: &str) -> Coding {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, v.parse().unwrap());
        choose_coding(&h)
    }

    #[test]
    fn codings_by_rating() {
        assert_eq!(choose_coding(&HeaderMap::new()), Coding::Identity);
        assert_eq!(pick("gzip, deflate, br, zstd"), Coding::Br);
        assert_eq!(pick("gzip"), Coding::Gzip);
        assert_eq!(pick("gzip;q=1.0, zstd;q=0.5"), Coding::Gzip);
        assert_eq!(pick("br;q=0, *"), Coding::Zstd);
        assert_eq!(pick("*;q=0"), Coding::Identity);
        assert_eq!(pick("identity"), Coding::Identity);
        assert_eq!(pick("deflate"), Coding::Identity);
        assert_eq!(pick("GZIP;Q=0.3"), Coding::Gzip);
    }
}
