//! The representations an answer is written in.

/// A response representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Json,
    Csv,
    Ndjson,
    Arrow,
    Parquet,
}

impl Format {
    /// In order of preference when the client does not care.
    pub const ALL: [Format; 5] = [
        Format::Json,
        Format::Csv,
        Format::Ndjson,
        Format::Arrow,
        Format::Parquet,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Ndjson => "ndjson",
            Format::Arrow => "arrow",
            Format::Parquet => "parquet",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Csv => "text/csv; charset=utf-8",
            Format::Ndjson => "application/x-ndjson",
            Format::Arrow => "application/vnd.apache.arrow.stream",
            Format::Parquet => "application/vnd.apache.parquet",
        }
    }

    /// Media types that select this format (the first is canonical).
    pub fn media_types(self) -> &'static [&'static str] {
        match self {
            Format::Json => &["application/json"],
            Format::Csv => &["text/csv"],
            Format::Ndjson => &[
                "application/x-ndjson",
                "application/ndjson",
                "application/jsonl",
                "application/json-seq",
            ],
            Format::Arrow => &["application/vnd.apache.arrow.stream"],
            Format::Parquet => &["application/vnd.apache.parquet", "application/x-parquet"],
        }
    }

    pub fn from_name(s: &str) -> Option<Format> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s.to_ascii_lowercase())
    }

    pub fn names() -> Vec<String> {
        Format::ALL.iter().map(|f| f.name().to_string()).collect()
    }

    pub fn canonical_types() -> Vec<String> {
        Format::ALL
            .iter()
            .map(|f| f.media_types()[0].to_string())
            .collect()
    }
}
