//! The two domains of the benchmark: LLM and diffusion runs.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The two run tables of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Domain {
    Llm,
    Diffusion,
}

impl Domain {
    pub const ALL: [Domain; 2] = [Domain::Llm, Domain::Diffusion];

    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Llm => "llm",
            Domain::Diffusion => "diffusion",
        }
    }

    pub fn parse(s: &str) -> Option<Domain> {
        match s {
            "llm" => Some(Domain::Llm),
            "diffusion" => Some(Domain::Diffusion),
            _ => None,
        }
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
