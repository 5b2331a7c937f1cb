//! One wire-protocol connection's statements. Each statement is parsed with the
//! Postgres-compatible parser (which rewrites what clients send to `pg_catalog` into what
//! DataFusion plans), then: `SET` of a harmless session option is recorded and anything else
//! refused; `SHOW` answers from the session's options; `BEGIN`/`COMMIT`/`ROLLBACK` only move the
//! transaction state (everything is read-only); every other statement runs through
//! `service::sql` on the wire protocol's surface, on the snapshot served when it arrives.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ParamValues;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast::{Expr, Set, Statement, Value};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion_postgres::arrow_pg::datatypes::df::deserialize_parameters_with_server_types;
use datafusion_postgres::arrow_pg::datatypes::{
    arrow_schema_to_pg_fields, encode_recordbatch, into_pg_type,
};
use datafusion_postgres::datafusion_pg_catalog::sql::PostgresCompatibilityParser;
use datafusion_postgres::pgwire;
use futures::{Sink, SinkExt, stream};
use pgwire::api::auth::{
    DefaultServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{
    ClientInfo, ClientPortalStore, PgWireConnectionState, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator, Type,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::types::format::FormatOptions;

use super::catalog::{SERVER_VERSION, SURFACE};
use crate::engine::sql::{SqlAnswer, SqlError, Unparsed};
use crate::service::Service;
use crate::service::sql::SqlFailure;

/// Session options a client may set; they change how answers are written, never what is read.
/// `statement_timeout` is honoured when it is under the server's time limit.
const SETTABLE: &[&str] = &[
    "application_name",
    "client_encoding",
    "datestyle",
    "intervalstyle",
    "bytea_output",
    "extra_float_digits",
    "search_path",
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "timezone",
    "standard_conforming_strings",
    "client_min_messages",
    "default_transaction_read_only",
    "transaction_read_only",
];

/// The wire protocol's statements, as parsed and (for queries) planned.
#[derive(Debug, Clone)]
pub(super) enum PgStatement {
    Query { text: String, plan: LogicalPlan },
    Set(Statement),
    Show(String),
    Transaction(Statement),
}

fn user_error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".to_owned(),
        code.to_owned(),
        message.into(),
    )))
}

/// A refused or failed query as the SQLSTATE a PostgreSQL client expects.
fn query_error(e: SqlError) -> PgWireError {
    let code = match &e {
        SqlError::Refused(_) => "25006",
        SqlError::Invalid(_) => "42601",
        SqlError::Timeout(_) => "57014",
        SqlError::Memory { .. } => "53200",
        SqlError::Rows(_) | SqlError::Value(_) => "54000",
        SqlError::Internal(_) => "XX000",
    };
    user_error(code, e.to_string())
}

fn failure(f: SqlFailure) -> PgWireError {
    match f {
        SqlFailure::Busy { .. } => user_error("53300", f.to_string()),
        SqlFailure::Query(e) => query_error(e),
    }
}

/// The session option a `SHOW` names, lower case, words joined by a space.
fn show_name(statement: &Statement) -> Option<String> {
    match statement {
        Statement::ShowVariable { variable } => Some(
            variable
                .iter()
                .map(|v| v.value.to_lowercase())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// The value `SHOW name` answers in this session, or None for an option we do not know.
fn show_value(name: &str, metadata: &HashMap<String, String>) -> Option<String> {
    let set = |k: &str| metadata.get(k).cloned();
    Some(match name {
        "server_version" => SERVER_VERSION.to_owned(),
        "server_version_num" => "160006".to_owned(),
        "server_encoding" | "client_encoding" => "UTF8".to_owned(),
        "standard_conforming_strings" | "integer_datetimes" => "on".to_owned(),
        "transaction isolation level" | "transaction_isolation" => "read committed".to_owned(),
        "default_transaction_isolation" => "read committed".to_owned(),
        "transaction_read_only" | "default_transaction_read_only" => "on".to_owned(),
        "is_superuser" => "off".to_owned(),
        "max_identifier_length" => "63".to_owned(),
        "max_index_keys" => "32".to_owned(),
        "lc_collate" | "lc_ctype" => "C.UTF-8".to_owned(),
        "time zone" | "timezone" => set("timezone").unwrap_or_else(|| "Etc/UTC".to_owned()),
        "datestyle" => set("datestyle").unwrap_or_else(|| "ISO, YMD".to_owned()),
        "intervalstyle" => set("intervalstyle").unwrap_or_else(|| "postgres".to_owned()),
        "search_path" => set("search_path").unwrap_or_else(|| "public".to_owned()),
        "application_name" => set("application_name").unwrap_or_default(),
        "extra_float_digits" => set("extra_float_digits").unwrap_or_else(|| "1".to_owned()),
        "bytea_output" => set("bytea_output").unwrap_or_else(|| "hex".to_owned()),
        "statement_timeout" => set("statement_timeout").unwrap_or_else(|| "0".to_owned()),
        "client_min_messages" => set("client_min_messages").unwrap_or_else(|| "notice".to_owned()),
        _ => return None,
    })
}

/// One text column named `name` (a `SHOW`'s answer).
fn text_field(name: &str, format: FieldFormat) -> FieldInfo {
    FieldInfo::new(name.to_owned(), None, None, Type::TEXT, format)
}

fn show_response(name: &str, value: String, format: FieldFormat) -> PgWireResult<Response> {
    let fields = Arc::new(vec![text_field(name, format)]);
    let mut row = DataRowEncoder::new(fields.clone());
    row.encode_field(&Some(value))?;
    let rows = vec![Ok(row.take_row())];
    Ok(Response::Query(QueryResponse::new(
        fields,
        stream::iter(rows),
    )))
}

/// `statement_timeout` as PostgreSQL reads it: a number of milliseconds, or a number with a
/// unit (ms, s, min, h); 0 turns it off.
fn parse_timeout(text: &str) -> Option<Option<Duration>> {
    let t = text.trim().trim_matches('\'').trim_matches('"').trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: u64 = n.parse().ok()?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "s" => n.checked_mul(1000)?,
        "min" => n.checked_mul(60_000)?,
        "h" => n.checked_mul(3_600_000)?,
        _ => return None,
    };
    Some((ms > 0).then(|| Duration::from_millis(ms)))
}

/// The session's time limit from `SET statement_timeout`.
fn session_timeout(metadata: &HashMap<String, String>) -> Option<Duration> {
    metadata
        .get("statement_timeout")
        .and_then(|t| parse_timeout(t))
        .flatten()
}

/// `SET name = value` of a harmless option: recorded in the session (and reported back as a
/// parameter status where PostgreSQL does); any other `SET` is refused.
fn apply_set<C: ClientInfo + ?Sized>(
    client: &mut C,
    statement: &Statement,
) -> PgWireResult<Response> {
    let refuse = |what: &str| {
        user_error(
            "55P02",
            format!(
                "{what}: only these session options can be set here: {}",
                SETTABLE.join(", ")
            ),
        )
    };
    let Statement::Set(set) = statement else {
        return Err(refuse(&statement.to_string()));
    };
    let (name, value) = match set {
        Set::SingleAssignment {
            variable, values, ..
        } => {
            let value = match values.first() {
                Some(Expr::Value(v)) => match &v.value {
                    Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                },
                Some(other) => other.to_string(),
                None => String::new(),
            };
            (variable.to_string().to_lowercase(), value)
        }
        Set::SetTimeZone { value, .. } => {
            let v = value.to_string();
            ("timezone".to_owned(), v.trim_matches('\'').to_owned())
        }
        _ => return Err(refuse(&statement.to_string())),
    };
    if !SETTABLE.contains(&name.as_str()) {
        return Err(refuse(&format!("SET {name}")));
    }
    if name == "statement_timeout" && parse_timeout(&value).is_none() {
        return Err(user_error(
            "22023",
            format!(
                "invalid value for statement_timeout: \"{value}\" (milliseconds, or a number with ms, s, min or h)"
            ),
        ));
    }
    if matches!(
        name.as_str(),
        "default_transaction_read_only" | "transaction_read_only"
    ) && !matches!(value.to_lowercase().as_str(), "on" | "true" | "1")
    {
        return Err(user_error(
            "25006",
            format!("{name} is always on: this server is read-only"),
        ));
    }
    client.metadata_mut().insert(name, value);
    Ok(Response::Execution(Tag::new("SET")))
}

/// `BEGIN`, `COMMIT`, `ROLLBACK`, savepoints: the transaction state only; nothing can be
/// written.
fn apply_transaction<C: ClientInfo + ?Sized>(client: &C, statement: &Statement) -> Response {
    match statement {
        Statement::StartTransaction { .. } => {
            if client.transaction_status() == TransactionStatus::Idle {
                Response::TransactionStart(Tag::new("BEGIN"))
            } else {
                Response::Execution(Tag::new("BEGIN"))
            }
        }
        Statement::Rollback {
            savepoint: Some(_), ..
        } => Response::Execution(Tag::new("ROLLBACK")),
        Statement::Rollback { .. } => Response::TransactionEnd(Tag::new("ROLLBACK")),
        Statement::Savepoint { .. } => Response::Execution(Tag::new("SAVEPOINT")),
        Statement::ReleaseSavepoint { .. } => Response::Execution(Tag::new("RELEASE")),
        _ => Response::TransactionEnd(Tag::new("COMMIT")),
    }
}

/// The placeholders of `plan` ($1, $2...) in order with the types the planner inferred.
fn parameter_types(plan: &LogicalPlan) -> PgWireResult<Vec<Option<DataType>>> {
    let types = plan
        .get_parameter_types()
        .map_err(|e| user_error("42P18", e.to_string()))?;
    let mut numbered: Vec<(usize, Option<DataType>)> = types
        .into_iter()
        .filter_map(|(id, t)| {
            id.trim_start_matches('$')
                .parse::<usize>()
                .ok()
                .map(|n| (n, t))
        })
        .collect();
    numbered.sort_by_key(|(n, _)| *n);
    let count = numbered.last().map_or(0, |(n, _)| *n);
    let mut out = vec![None; count];
    for (n, t) in numbered {
        out[n - 1] = t;
    }
    Ok(out)
}

fn wire_types(types: &[Option<DataType>]) -> PgWireResult<Vec<Type>> {
    types
        .iter()
        .map(|t| match t {
            Some(t) => into_pg_type(t),
            None => Ok(Type::UNKNOWN),
        })
        .collect()
}

fn encode_answer(
    answer: SqlAnswer,
    format: &Format,
    options: Arc<FormatOptions>,
) -> PgWireResult<Response> {
    let fields = Arc::new(arrow_schema_to_pg_fields(
        &answer.schema,
        format,
        Some(options),
    )?);
    let rows: Vec<_> = answer
        .batches
        .into_iter()
        .flat_map(|b| encode_recordbatch(fields.clone(), b))
        .collect();
    Ok(Response::Query(QueryResponse::new(
        fields,
        stream::iter(rows),
    )))
}

/// The statement handlers of every connection.
pub(super) struct PgSession {
    service: Arc<Service>,
    parser: Arc<PgParser>,
}

impl PgSession {
    pub(super) fn new(service: Arc<Service>) -> PgSession {
        PgSession {
            parser: Arc::new(PgParser {
                service: service.clone(),
                sql: PostgresCompatibilityParser::new(),
            }),
            service,
        }
    }

    async fn query(
        &self,
        text: &str,
        params: ParamValues,
        timeout: Option<Duration>,
        format: &Format,
        options: Arc<FormatOptions>,
    ) -> PgWireResult<Response> {
        let snapshot = self.service.snapshot();
        let answer = self
            .service
            .sql(&SURFACE, &snapshot, text, params, timeout)
            .await
            .map_err(failure)?;
        encode_answer(answer, format, options)
    }
}

#[async_trait]
impl SimpleQueryHandler for PgSession {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statements = self.parser.parse_text(query)?;
        if statements.is_empty() {
            return Ok(vec![Response::EmptyQuery]);
        }
        let mut out = Vec::with_capacity(statements.len());
        for statement in statements {
            let response = match classify(statement) {
                Kind::Set(s) => apply_set(client, &s)?,
                Kind::Transaction(s) => apply_transaction(client, &s),
                Kind::Show(name) => {
                    let value = show_value(&name, client.metadata()).ok_or_else(|| {
                        user_error(
                            "42704",
                            format!("unrecognized configuration parameter \"{name}\""),
                        )
                    })?;
                    show_response(&name, value, FieldFormat::Text)?
                }
                Kind::Query(text) => {
                    let options = Arc::new(FormatOptions::from_client_metadata(client.metadata()));
                    let timeout = session_timeout(client.metadata());
                    self.query(
                        &text,
                        ParamValues::List(vec![]),
                        timeout,
                        &Format::UnifiedText,
                        options,
                    )
                    .await?
                }
            };
            out.push(response);
        }
        Ok(out)
    }
}

/// What a parsed statement is, before planning.
enum Kind {
    Query(String),
    Set(Statement),
    Show(String),
    Transaction(Statement),
}

fn classify(statement: Statement) -> Kind {
    match statement {
        Statement::Set(_) => Kind::Set(statement),
        Statement::StartTransaction { .. }
        | Statement::Commit { .. }
        | Statement::Rollback { .. }
        | Statement::Savepoint { .. }
        | Statement::ReleaseSavepoint { .. } => Kind::Transaction(statement),
        Statement::ShowVariable { .. } => match show_name(&statement) {
            Some(n) if show_value(&n, &HashMap::new()).is_some() => Kind::Show(n),
            _ => Kind::Query(statement.to_string()),
        },
        other => Kind::Query(other.to_string()),
    }
}

/// Parses (and plans) the extended protocol's statements.
pub(super) struct PgParser {
    service: Arc<Service>,
    sql: PostgresCompatibilityParser,
}

impl PgParser {
    /// The statements of a client's text, by the compatibility parser. It parses at sqlparser's
    /// default depth (50), where some shapes take 2^50 steps (`engine::sql::SQL_RECURSION_LIMIT`),
    /// and builds a chain of operators of any length (`engine::sql::SQL_CHAIN_LIMIT`), so a text
    /// past either bound of ours is refused first; one within them takes the same steps unbounded.
    fn parse_text(&self, sql: &str) -> PgWireResult<Vec<Statement>> {
        if let Err(Unparsed::Bound(why)) =
            crate::engine::sql::parse_statements(&PostgreSqlDialect {}, sql)
        {
            return Err(user_error("54001", why));
        }
        self.sql
            .parse(sql)
            .map_err(|e| user_error("42601", e.to_string()))
    }
}

#[async_trait]
impl QueryParser for PgParser {
    type Statement = PgStatement;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<PgStatement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let mut statements = self.parse_text(sql)?;
        if statements.is_empty() {
            return Ok(None);
        }
        if statements.len() > 1 {
            return Err(user_error(
                "42601",
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        Ok(Some(match classify(statements.remove(0)) {
            Kind::Set(s) => PgStatement::Set(s),
            Kind::Transaction(s) => PgStatement::Transaction(s),
            Kind::Show(n) => PgStatement::Show(n),
            Kind::Query(text) => {
                let snapshot = self.service.snapshot();
                let plan = self
                    .service
                    .sql_plan(&SURFACE, &snapshot, &text)
                    .await
                    .map_err(query_error)?;
                PgStatement::Query { text, plan }
            }
        }))
    }

    fn get_parameter_types(&self, stmt: &PgStatement) -> PgWireResult<Vec<Type>> {
        match stmt {
            PgStatement::Query { plan, .. } => wire_types(&parameter_types(plan)?),
            _ => Ok(vec![]),
        }
    }

    fn get_result_schema(
        &self,
        stmt: &PgStatement,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let format = column_format.unwrap_or(&Format::UnifiedText);
        match stmt {
            PgStatement::Query { plan, .. } => {
                arrow_schema_to_pg_fields(plan.schema().as_arrow(), format, None)
            }
            PgStatement::Show(name) => Ok(vec![text_field(name, format.format_for(0))]),
            _ => Ok(vec![]),
        }
    }
}

#[async_trait]
impl ExtendedQueryHandler for PgSession {
    type Statement = PgStatement;
    type QueryParser = PgParser;

    fn query_parser(&self) -> Arc<PgParser> {
        self.parser.clone()
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<PgStatement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = PgStatement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match &portal.statement.statement {
            PgStatement::Set(s) => apply_set(client, s),
            PgStatement::Transaction(s) => Ok(apply_transaction(client, s)),
            PgStatement::Show(name) => {
                let value = show_value(name, client.metadata()).unwrap_or_default();
                show_response(name, value, portal.result_column_format.format_for(0))
            }
            PgStatement::Query { text, plan } => {
                let inferred = parameter_types(plan)?;
                let wire = wire_types(&inferred)?;
                let inferred_refs: Vec<Option<&DataType>> =
                    inferred.iter().map(|t| t.as_ref()).collect();
                let wire_refs: Vec<Option<&Type>> = wire.iter().map(Some).collect();
                let params =
                    deserialize_parameters_with_server_types(portal, &inferred_refs, &wire_refs)?;
                let options = Arc::new(FormatOptions::from_client_metadata(client.metadata()));
                let timeout = session_timeout(client.metadata());
                self.query(text, params, timeout, &portal.result_column_format, options)
                    .await
            }
        }
    }
}

/// A user's password, never written to a log.
struct Secret(String);

impl Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The start of a connection: no authentication, or a cleartext password (any user name).
pub(super) struct Startup {
    password: Option<Secret>,
    parameters: DefaultServerParameterProvider,
    keys: RandomPidSecretKeyGenerator,
}

impl Startup {
    pub(super) fn new(password: Option<String>) -> Startup {
        let mut parameters = DefaultServerParameterProvider::default();
        parameters.server_version = SERVER_VERSION.to_owned();
        parameters.default_transaction_read_only = true;
        parameters.is_superuser = false;
        Startup {
            password: password.map(Secret),
            parameters,
            keys: RandomPidSecretKeyGenerator::default(),
        }
    }

    async fn finish<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (pid, key) = self.keys.generate(client);
        client.set_pid_and_secret_key(pid, key);
        finish_authentication(client, &self.parameters).await
    }
}

/// The same bytes, compared in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                if self.password.is_some() {
                    client.set_state(PgWireConnectionState::AuthenticationInProgress);
                    client
                        .send(PgWireBackendMessage::Authentication(
                            Authentication::CleartextPassword,
                        ))
                        .await?;
                } else {
                    self.finish(client).await?;
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(pwd) => {
                let given = pwd.into_password()?;
                let user = client.metadata().get("user").cloned().unwrap_or_default();
                match &self.password {
                    Some(Secret(p)) if same(p.as_bytes(), given.password.as_bytes()) => {
                        self.finish(client).await?;
                    }
                    _ => return Err(PgWireError::InvalidPassword(user)),
                }
            }
            _ => {}
        }
        Ok(())
    }
}
