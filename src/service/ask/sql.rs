//! SQL as a question of the door: a read-only query's text and its placeholders' values, answered
//! by the service's SQL funnel (its limits and gate) in one of the representations, and kept in
//! the answer cache when the front end says its answer is fixed by the text (a GET's).

use std::sync::Arc;

use datafusion::common::ScalarValue;

use crate::engine::sql::SqlError;
use crate::service::ServiceError;
use crate::service::encode::sql::sql_answer;
use crate::service::sql::{SqlFailure, Surface};

use super::answer::Encoded;
use super::door::{AnswerKey, Door, keep};
use super::format::Format;

/// An SQL question.
pub struct SqlAsked<'a> {
    pub text: &'a str,
    /// Values of `$1`, `$2`...
    pub params: Vec<ScalarValue>,
    pub format: Format,
    /// Whether the answer is kept (and looked up) by the text and representation.
    pub keep: bool,
    /// The dataset revision the tables are of (none: the served one).
    pub revision: Option<&'a str>,
}

/// The value of a placeholder given in JSON: a number, string, boolean or null; none for an
/// array or an object.
pub fn json_param(v: serde_json::Value) -> Option<ScalarValue> {
    use serde_json::Value as J;
    Some(match v {
        J::Null => ScalarValue::Null,
        J::Bool(b) => ScalarValue::Boolean(Some(b)),
        J::String(s) => ScalarValue::Utf8(Some(s)),
        J::Number(n) => match n.as_i64() {
            Some(i) => ScalarValue::Int64(Some(i)),
            None => ScalarValue::Float64(n.as_f64()),
        },
        J::Array(_) | J::Object(_) => return None,
    })
}

impl Door {
    /// The answer to an SQL question, from the cache when it is kept and was answered before for
    /// the same snapshot.
    pub async fn sql(&self, q: SqlAsked<'_>) -> Result<Arc<Encoded>, ServiceError> {
        if q.text.trim().is_empty() {
            return Err(sql_failure(SqlFailure::Query(SqlError::Invalid(
                "no SQL given: write a query in q (GET) or the body (POST)".into(),
            ))));
        }
        let service = self.service();
        let snapshot = service.snapshot_at(q.revision).await?;
        let key = q.keep.then(|| {
            AnswerKey::of(&[
                &snapshot.generation.to_le_bytes(),
                b"sql",
                q.format.name().as_bytes(),
                q.text.as_bytes(),
            ])
        });
        if let Some(hit) = key.as_ref().and_then(|k| self.cache().get(k)) {
            return Ok(hit);
        }
        let _place = self.costly_place()?;
        let answer = service
            .sql(&Surface::PLAIN, &snapshot, q.text, q.params.into(), None)
            .await
            .map_err(sql_failure)?;
        let body = sql_answer(&answer, q.format).map_err(ServiceError::Internal)?;
        let encoded = Encoded {
            total: Some(answer.rows),
            ..Encoded::new(q.format.content_type(), body)
        };
        Ok(match key {
            Some(key) => keep(self.cache(), key, encoded),
            None => Arc::new(encoded),
        })
    }
}

fn sql_failure(f: SqlFailure) -> ServiceError {
    ServiceError::Sql(Arc::new(f))
}
