//! A question asked: what, of which domain and run, with which parameters (read by the one
//! grammar), in which representation, and at which path (a next page's link is made on it).

use crate::engine::Domain;
use crate::service::ServiceError;

use super::declare::Question;
use super::format::Format;
use super::grammar::Params;

/// One question asked.
pub struct Request {
    pub question: Question,
    pub domain: Domain,
    /// The run a question of one run is of.
    pub run_id: Option<String>,
    pub params: Params,
    pub format: Format,
    /// The path the question is asked at: a next page's link is this path with the parameters.
    pub path: String,
}

impl Request {
    /// `question` of `domain` (and `run_id`) with the parameters of `query` (a URL query string's
    /// form), asked at `path`; answered in JSON unless `format` is set otherwise.
    pub fn parse(
        question: Question,
        domain: Domain,
        run_id: Option<String>,
        query: Option<&str>,
        path: String,
    ) -> Result<Request, ServiceError> {
        Ok(Request {
            question,
            domain,
            run_id,
            params: Params::parse(domain, question, query)?,
            format: Format::Json,
            path,
        })
    }
}
