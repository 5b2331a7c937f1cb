//! Content codings of an answer's bytes (gzip, br, zstd), each compressed once and kept: the
//! leaderboard's files and the cached API answers are sent compressed without compressing per
//! request. Levels are set per use: the leaderboard's files are compressed hard (once per
//! snapshot, off the request path), answers cached on first request at a level that is quick.

use std::io::Write;
use std::sync::OnceLock;

use bytes::Bytes;

/// A content coding the service sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coding {
    Identity,
    Gzip,
    Br,
    Zstd,
}

impl Coding {
    /// The compressed codings, in the order preferred when a client rates them equally: the
    /// smallest for JSON first.
    pub const COMPRESSED: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

    /// The token of `Content-Encoding` / `Accept-Encoding`.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Br => "br",
            Coding::Zstd => "zstd",
        }
    }

    /// The suffix an entity tag gets for this coding (a strong tag differs per representation).
    pub fn etag_suffix(self) -> &'static str {
        match self {
            Coding::Identity => "",
            Coding::Gzip => "-gz",
            Coding::Br => "-br",
            Coding::Zstd => "-zst",
        }
    }

    pub fn from_token(token: &str) -> Option<Coding> {
        Some(match token.trim().to_ascii_lowercase().as_str() {
            "identity" => Coding::Identity,
            "gzip" | "x-gzip" => Coding::Gzip,
            "br" => Coding::Br,
            "zstd" => Coding::Zstd,
            _ => return None,
        })
    }
}

/// How hard to compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    /// Once per snapshot, off the request path: gzip 9, brotli 11, zstd 19.
    Most,
    /// On a request's path: gzip 6, brotli 5, zstd 3.
    Quick,
}

/// `body` in `coding`.
pub fn compress(body: &[u8], coding: Coding, effort: Effort) -> Bytes {
    let most = effort == Effort::Most;
    match coding {
        Coding::Identity => Bytes::copy_from_slice(body),
        Coding::Gzip => {
            let level = if most { 9 } else { 6 };
            let mut enc = flate2::write::GzEncoder::new(
                Vec::with_capacity(body.len() / 4),
                flate2::Compression::new(level),
            );
            enc.write_all(body).expect("writing to memory");
            enc.finish().expect("writing to memory").into()
        }
        Coding::Br => {
            let params = brotli::enc::BrotliEncoderParams {
                quality: if most { 11 } else { 5 },
                lgwin: 22,
                size_hint: body.len(),
                ..Default::default()
            };
            let mut out = Vec::with_capacity(body.len() / 4);
            brotli::BrotliCompress(&mut &body[..], &mut out, &params).expect("writing to memory");
            out.into()
        }
        Coding::Zstd => {
            let level = if most { 19 } else { 3 };
            zstd::bulk::compress(body, level)
                .expect("zstd in memory")
                .into()
        }
    }
}

/// The compressed forms of a body, each made on first use and kept.
#[derive(Debug, Default)]
pub struct Variants {
    gzip: OnceLock<Bytes>,
    br: OnceLock<Bytes>,
    zstd: OnceLock<Bytes>,
}

impl Variants {
    /// `body` in `coding`, compressed now if it is the first time (`body` must be the same every
    /// call).
    pub fn get(&self, body: &Bytes, coding: Coding, effort: Effort) -> Bytes {
        let slot = match coding {
            Coding::Identity => return body.clone(),
            Coding::Gzip => &self.gzip,
            Coding::Br => &self.br,
            Coding::Zstd => &self.zstd,
        };
        slot.get_or_init(|| compress(body, coding, effort)).clone()
    }

    /// `coding`'s form if it is made already.
    pub fn made(&self, coding: Coding) -> Option<Bytes> {
        match coding {
            Coding::Identity => None,
            Coding::Gzip => self.gzip.get().cloned(),
            Coding::Br => self.br.get().cloned(),
            Coding::Zstd => self.zstd.get().cloned(),
        }
    }

    /// Memory held by the compressed forms made so far.
    pub fn held(&self) -> usize {
        [&self.gzip, &self.br, &self.zstd]
            .iter()
            .map(|s| s.get().map_or(0, Bytes::len))
            .sum()
    }
}

/// A body and its compressed forms, each made on first use and kept.
#[derive(Debug)]
pub struct Precompressed {
    body: Bytes,
    effort: Effort,
    variants: Variants,
}

impl Precompressed {
    pub fn new(body: Bytes, effort: Effort) -> Self {
        Precompressed {
            body,
            effort,
            variants: Variants::default(),
        }
    }

    /// The identity body.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The body in `coding`, compressed now if it is the first time.
    pub fn get(&self, coding: Coding) -> Bytes {
        self.variants.get(&self.body, coding, self.effort)
    }

    /// Memory held, compressed forms included.
    pub fn weight(&self) -> usize {
        self.body.len() + self.variants.held()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn every_coding_decodes_to_the_body() {
        let body: Bytes = (0..200_000u32)
            .map(|i| format!("{{\"x\": {}}},", i % 977))
            .collect::<String>()
            .into();
        for effort in [Effort::Quick, Effort::Most] {
            let p = Precompressed::new(body.clone(), effort);
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&p.get(Coding::Gzip)[..])
                .read_to_end(&mut out)
                .unwrap();
            assert!(out == body);
            out.clear();
            brotli::BrotliDecompress(&mut &p.get(Coding::Br)[..], &mut out).unwrap();
            assert!(out == body);
            assert!(zstd::decode_all(&p.get(Coding::Zstd)[..]).unwrap() == body);
            assert!(p.get(Coding::Identity) == body);
            assert!(p.get(Coding::Br).len() < body.len() / 10);
        }
        assert_eq!(Coding::from_token(" GZip"), Some(Coding::Gzip));
        assert_eq!(Coding::from_token("deflate"), None);
    }
}
