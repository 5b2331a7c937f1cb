//! Read-only SQL over a dataset's tables (`llm_runs`, `diffusion_runs`), with limits: only
//! queries (SELECT, WITH, VALUES, EXPLAIN, SHOW, DESCRIBE) are planned, anything that would
//! define, change or copy data or set state is refused; every query has a time limit, shares a
//! memory pool of a fixed size, and may return at most a number of rows. A query over a limit is
//! stopped (its stream dropped) and answered with an error naming the limit.

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::{DataFusionError, ParamValues};
use datafusion::execution::context::SQLOptions;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::Dialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};
use futures::StreamExt;

use super::arrow_conv::column_from_array;
use super::dataset::Dataset;
use super::fields::{FieldSpec, FieldType};
use super::frame::{Frame, FrameColumn};

/// The limits of every SQL query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SqlLimits {
    pub timeout: Duration,
    /// The memory pool shared by the queries of one snapshot (sorts, joins, aggregates).
    pub memory_bytes: usize,
    /// The most rows an answer holds.
    pub max_rows: usize,
}

impl Default for SqlLimits {
    fn default() -> Self {
        SqlLimits {
            timeout: Duration::from_secs(5),
            memory_bytes: 512 << 20,
            max_rows: 100_000,
        }
    }
}

/// Why a query was not answered.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// A statement of a kind the service does not run.
    #[error("{0}: only queries are run (SELECT, WITH, VALUES, EXPLAIN, SHOW, DESCRIBE)")]
    Refused(String),
    /// The text does not plan (syntax, unknown table or column, type errors).
    #[error("{0}")]
    Invalid(String),
    #[error("the query ran over the time limit of {0:?} and was stopped")]
    Timeout(Duration),
    #[error("the query needed more than the memory limit of {mib} MiB and was stopped ({detail})")]
    Memory { mib: usize, detail: String },
    #[error("the answer has more than the row cap of {0} rows; add a LIMIT or narrow the query")]
    Rows(usize),
    /// A value, a call's output or the answer over its bound (`engine::sql_bounds`).
    #[error("the query was stopped: {0}")]
    Value(String),
    #[error("{0}")]
    Internal(String),
}

/// How deeply a statement may nest (sqlparser's recursion limit, for every parse of a client's
/// text: DataFusion's, the plan cache's, the PostgreSQL and Flight SQL front ends'; DataFusion's
/// default is 50). The parser of sqlparser 0.62 backtracks exponentially on some shapes: a chain
/// of n dotted names ending in `[` takes 2^n steps (a long one runs past any time limit, pinning
/// a thread: found by the query_strings fuzz target), and each name is one level deeper, so the
/// limit bounds n. 24 still parses ten nested subqueries, 21 nested parentheses or function calls.
pub const SQL_RECURSION_LIMIT: usize = 24;

/// How long a chain of operators one statement may hold. The parser builds `a OR b OR c ...`,
/// `a + b + c ...`, `x::t::t ...` and `SELECT ... UNION SELECT ...` in a loop, not by recursion, so
/// the recursion limit does not bound them, but the tree it builds is as deep as the chain is long
/// and everything that walks it afterwards (cloning, comparing, printing, dropping, planning) does
/// recurse: a long chain of ORs overflowed a 2 MiB stack (a shorter one in the debug build) and
/// aborted the server (found from outside). The bound is counted on the tokens, before a tree is
/// built (see [`longest_chain`]); with the server's 16 MiB worker stacks ([`WORKER_STACK_BYTES`])
/// a chain of this length has ample room in a release build. It still lets a WHERE clause hold
/// nearly 500 `x = 1 OR` terms or a CASE over 300 `WHEN x = 1 THEN 'a'` arms; a longer list of
/// values belongs in an `IN (...)` list, which is not a chain.
pub const SQL_CHAIN_LIMIT: usize = 1_000;

/// The stack of each thread that parses or plans a client's SQL (the server's runtime workers):
/// the depth [`SQL_CHAIN_LIMIT`] allows is measured against it. Only the pages a thread touches are
/// memory; the rest is address space.
pub const WORKER_STACK_BYTES: usize = 16 << 20;

/// Why a client's text was not parsed.
#[derive(Debug)]
pub enum Unparsed {
    /// Past a bound that keeps parsing and planning within time and stack: the reason, said in
    /// full.
    Bound(String),
    /// Not a statement of the dialect.
    Syntax(ParserError),
}

/// The statements of `sql` in `dialect`, parsed at most [`SQL_RECURSION_LIMIT`] deep, with no
/// chain longer than [`SQL_CHAIN_LIMIT`].
pub fn parse_statements(dialect: &dyn Dialect, sql: &str) -> Result<Vec<Statement>, Unparsed> {
    let tokens = Tokenizer::new(dialect, sql)
        .tokenize_with_location()
        .map_err(|e| Unparsed::Syntax(e.into()))?;
    within_chain_limit(&tokens).map_err(Unparsed::Bound)?;
    Parser::new(dialect)
        .with_recursion_limit(SQL_RECURSION_LIMIT)
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|e| match e {
            ParserError::RecursionLimitExceeded => Unparsed::Bound(too_deep()),
            e => Unparsed::Syntax(e),
        })
}

/// `sql` refused when it holds a chain longer than [`SQL_CHAIN_LIMIT`], before DataFusion parses
/// it. A text that does not tokenize is left for DataFusion's parser to say why.
pub fn bounded(sql: &str) -> Result<(), SqlError> {
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    match Tokenizer::new(&GenericDialect {}, sql).tokenize_with_location() {
        Ok(tokens) => within_chain_limit(&tokens).map_err(SqlError::Invalid),
        Err(_) => Ok(()),
    }
}

fn within_chain_limit(tokens: &[TokenWithSpan]) -> Result<(), String> {
    let n = longest_chain(tokens);
    if n > SQL_CHAIN_LIMIT {
        return Err(format!(
            "the statement chains {n} operators and keywords in one expression, more than the \
             limit of {SQL_CHAIN_LIMIT}; a long list of alternatives (x = 1 OR x = 2 ...) is \
             written x IN (1, 2, ...)"
        ));
    }
    Ok(())
}

/// An upper bound on how deep the parser's tree of `tokens` is, counted without building it (and
/// without recursion, for a text of any nesting). A link is a token that joins or wraps operands:
/// an operator or a keyword, not a name, a literal or a placeholder. Within a level of parentheses
/// (or brackets or braces) each comma starts an operand list's next item, and a path down the tree
/// stays in one item, so an item counts its operator links plus the deepest group it holds; the
/// level's keywords (UNION, JOIN, AND, CASE ... ) are counted across its commas, for a chain of
/// `SELECT a, b UNION SELECT c, d UNION ...` continues past them. A group is one deeper than its
/// deepest item.
pub fn longest_chain(tokens: &[TokenWithSpan]) -> usize {
    #[derive(Default)]
    struct Level {
        keywords: usize,
        /// The operators of the current item, and its deepest group.
        operators: usize,
        inner: usize,
        /// The deepest item before the current one.
        deepest: usize,
    }
    impl Level {
        fn depth(&self) -> usize {
            self.keywords + self.deepest.max(self.operators + self.inner)
        }
    }
    let mut levels = vec![Level::default()];
    let close = |levels: &mut Vec<Level>| {
        if levels.len() > 1 {
            let group = levels.pop().expect("more than one level");
            let top = levels.last_mut().expect("the outermost level");
            top.inner = top.inner.max(group.depth() + 1);
        }
    };
    for t in tokens {
        let top = levels
            .last_mut()
            .expect("the outermost level is never closed");
        match &t.token {
            Token::LParen | Token::LBracket | Token::LBrace => levels.push(Level::default()),
            Token::RParen | Token::RBracket | Token::RBrace => close(&mut levels),
            Token::Comma | Token::SemiColon => {
                top.deepest = top.deepest.max(top.operators + top.inner);
                top.operators = 0;
                top.inner = 0;
            }
            Token::Word(w) if w.keyword != Keyword::NoKeyword => top.keywords += 1,
            Token::Word(_)
            | Token::Number(..)
            | Token::Char(_)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::TripleSingleQuotedString(_)
            | Token::TripleDoubleQuotedString(_)
            | Token::DollarQuotedString(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_)
            | Token::TripleSingleQuotedByteStringLiteral(_)
            | Token::TripleDoubleQuotedByteStringLiteral(_)
            | Token::SingleQuotedRawStringLiteral(_)
            | Token::DoubleQuotedRawStringLiteral(_)
            | Token::TripleSingleQuotedRawStringLiteral(_)
            | Token::TripleDoubleQuotedRawStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::QuoteDelimitedStringLiteral(_)
            | Token::NationalQuoteDelimitedStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::Placeholder(_)
            | Token::Whitespace(_)
            | Token::Period
            | Token::EOF => {}
            // A dotted name is parsed by recursion (the recursion limit bounds it); every other
            // token may join or wrap operands.
            _ => top.operators += 1,
        }
    }
    while levels.len() > 1 {
        close(&mut levels);
    }
    levels[0].depth()
}

/// Why a statement deeper than [`SQL_RECURSION_LIMIT`] is refused.
pub fn too_deep() -> String {
    format!(
        "the statement nests more than {SQL_RECURSION_LIMIT} levels deep (the parser's recursion limit)"
    )
}

/// `ctx` (its tables, functions and settings) with a memory pool of `memory_bytes` of its own, for
/// one query. The cached context's pool is shared by every query run on it, so a query that filled
/// it made the others running beside it fail too; the limit is each query's.
pub fn with_own_memory(
    ctx: &SessionContext,
    memory_bytes: usize,
) -> Result<SessionContext, SqlError> {
    let state = ctx.state();
    let runtime = RuntimeEnvBuilder::from_runtime_env(state.runtime_env())
        .with_memory_limit(memory_bytes, 1.0)
        .build_arc()
        .map_err(|e| SqlError::Internal(e.to_string()))?;
    let state = datafusion::execution::SessionStateBuilder::new_from_existing(state)
        .with_runtime_env(runtime)
        .build();
    Ok(SessionContext::new_with_state(state))
}

/// A query's answer: its schema and its batches.
pub struct SqlAnswer {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    pub rows: usize,
}

/// The SQL context of a dataset: its tables, with information_schema (for SHOW TABLES and
/// clients' catalog queries) and a memory pool of `memory_bytes`, without spilling to disk.
pub async fn sql_context(
    dataset: &Dataset,
    memory_bytes: usize,
) -> Result<SessionContext, SqlError> {
    // No spilling: a query over the pool stops rather than writing temporary files.
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_limit(memory_bytes, 1.0)
        .with_disk_manager_builder(
            DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled),
        )
        .build_arc()
        .map_err(|e| SqlError::Internal(e.to_string()))?;
    let config = SessionConfig::new()
        .with_batch_size(super::sql_bounds::SQL_BATCH_ROWS)
        .with_information_schema(true)
        .with_default_catalog_and_schema("datafusion", "public")
        .set_usize("datafusion.sql_parser.recursion_limit", SQL_RECURSION_LIMIT);
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    ctx.register_udaf(super::sql_functions::logistic_fit());
    for name in ["llm_runs", "diffusion_runs"] {
        let table = dataset
            .ctx
            .table_provider(name)
            .await
            .map_err(|e| SqlError::Internal(e.to_string()))?;
        ctx.register_table(name, table)
            .map_err(|e| SqlError::Internal(e.to_string()))?;
    }
    Ok(ctx)
}

pub(crate) fn classify(e: DataFusionError, limits: &SqlLimits) -> SqlError {
    match e.find_root() {
        DataFusionError::ResourcesExhausted(m) if m.starts_with(super::sql_bounds::VALUE_LIMIT) => {
            SqlError::Value(m.clone())
        }
        DataFusionError::ResourcesExhausted(m) => SqlError::Memory {
            mib: limits.memory_bytes >> 20,
            detail: m.clone(),
        },
        DataFusionError::Plan(m)
            if m.starts_with("DDL not supported")
                || m.starts_with("DML not supported")
                || m.starts_with("Statement not supported") =>
        {
            SqlError::Refused(m.clone())
        }
        DataFusionError::SQL(e, _) if matches!(**e, ParserError::RecursionLimitExceeded) => {
            SqlError::Invalid(too_deep())
        }
        DataFusionError::Plan(m) if m.starts_with("Invalid function") => SqlError::Invalid(
            format!("{m} (GET /v1/sql/functions lists the functions that may be called)"),
        ),
        DataFusionError::Plan(m) | DataFusionError::SQL(_, Some(m)) => SqlError::Invalid(m.clone()),
        DataFusionError::NotImplemented(m) => SqlError::Invalid(format!("not supported: {m}")),
        other => SqlError::Invalid(other.to_string()),
    }
}

/// The answer's schema with a name of its own for each column: a name several columns share
/// (`a.run_id`, `b.run_id` of a join) is qualified by its relation, or numbered without one.
pub(crate) fn unique_schema(schema: &datafusion::common::DFSchema) -> SchemaRef {
    use datafusion::arrow::datatypes::{Field, Schema};
    let plain: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let fields: Vec<Field> = schema
        .iter()
        .enumerate()
        .map(|(i, (qualifier, f))| {
            let name = f.name();
            if plain.iter().filter(|n| **n == name.as_str()).count() == 1 {
                return f.as_ref().clone();
            }
            let unique = match qualifier {
                Some(q) => format!("{q}.{name}"),
                None => format!("{name}_{i}"),
            };
            f.as_ref().clone().with_name(unique)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Rows of no column have no form in CSV or JSON rows (found by fuzzing: a 500).
pub(crate) fn no_column() -> SqlError {
    SqlError::Invalid(
        "the query selects no column (SELECT FROM ...); name at least one, e.g. SELECT count(*) FROM ..."
            .into(),
    )
}

/// The answer of `stream` under the row cap, its batches given `schema`'s names. The answer is
/// held whole until it is sent, so its bytes count against the memory limit as well.
pub(crate) async fn collect(
    mut stream: datafusion::physical_plan::SendableRecordBatchStream,
    schema: SchemaRef,
    limits: &SqlLimits,
) -> Result<SqlAnswer, SqlError> {
    let mut batches = Vec::new();
    let mut rows = 0usize;
    let mut bytes = 0usize;
    while let Some(b) = stream.next().await {
        let b = b.map_err(|e| classify(e, limits))?;
        rows += b.num_rows();
        if rows > limits.max_rows {
            return Err(SqlError::Rows(limits.max_rows));
        }
        bytes += b
            .columns()
            .iter()
            .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0))
            .sum::<usize>();
        if bytes > limits.memory_bytes {
            return Err(SqlError::Memory {
                mib: limits.memory_bytes >> 20,
                detail: format!("the answer holds more than {bytes} bytes"),
            });
        }
        // With its row count: `SELECT FROM t` has rows and no column (found by fuzzing).
        let b = RecordBatch::try_new_with_options(
            schema.clone(),
            as_planned(&schema, b.columns())?,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
        )
        .map_err(|e| SqlError::Invalid(format!("the engine could not form this answer: {e}")))?;
        batches.push(b);
    }
    Ok(SqlAnswer {
        schema,
        batches,
        rows,
    })
}

/// `columns` in the types the plan announced (and clients were told). DataFusion's execution can
/// disagree with its own plan: `SELECT 0/16000000000000079213` is planned as Decimal128(20, 0) and
/// computed as Decimal128(24, 4) (found by fuzzing: a 500). Such a column is cast to the planned
/// type; one that does not convert is the statement's problem, said as such.
fn as_planned(
    schema: &SchemaRef,
    columns: &[arrow::array::ArrayRef],
) -> Result<Vec<arrow::array::ArrayRef>, SqlError> {
    columns
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                return Ok(c.clone());
            }
            arrow::compute::cast(c, f.data_type()).map_err(|e| {
                SqlError::Invalid(format!(
                    "column '{}' was planned as {} and computed as {}, which does not convert: {e}",
                    f.name(),
                    f.data_type(),
                    c.data_type()
                ))
            })
        })
        .collect()
}

/// The read-only policy: no DDL, no DML, no statements that set state.
pub(crate) fn read_only() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}

/// Plan `sql` under the read-only policy without running it: the answer's columns and the
/// placeholders' types, for a client that describes a statement before it binds it.
pub async fn plan(
    ctx: &SessionContext,
    sql: &str,
    limits: &SqlLimits,
) -> Result<LogicalPlan, SqlError> {
    bounded(sql)?;
    let plan = ctx
        .state()
        .create_logical_plan(sql)
        .await
        .map_err(|e| classify(e, limits))?;
    read_only()
        .verify_plan(&plan)
        .map_err(|e| classify(e, limits))?;
    Ok(plan)
}

/// Run `sql` (with `$1`... bound to `params`) under `limits`; `timeout`, when given, is a
/// tighter time limit the client asked for (the configured one still bounds it).
pub async fn run(
    ctx: &SessionContext,
    sql: &str,
    params: ParamValues,
    limits: &SqlLimits,
    timeout: Option<Duration>,
) -> Result<SqlAnswer, SqlError> {
    let has_params = match &params {
        ParamValues::List(l) => !l.is_empty(),
        ParamValues::Map(m) => !m.is_empty(),
    };
    bounded(sql)?;
    let work = async {
        let mut df = ctx
            .sql_with_options(sql, read_only())
            .await
            .map_err(|e| classify(e, limits))?;
        if has_params {
            df = df
                .with_param_values(params)
                .map_err(|e| classify(e, limits))?;
        }
        let schema = unique_schema(df.schema());
        if schema.fields().is_empty() {
            return Err(no_column());
        }
        let stream = df.execute_stream().await.map_err(|e| classify(e, limits))?;
        collect(stream, schema, limits).await
    };
    let limit = timeout.map_or(limits.timeout, |t| t.min(limits.timeout));
    match tokio::time::timeout(limit, work).await {
        Ok(r) => r,
        Err(_) => Err(SqlError::Timeout(limit)),
    }
}

/// An answer as a frame for the row formats (JSON, NDJSON, CSV): strings, integers, floats and
/// booleans as they are, any other type as its text.
pub fn frame_of(answer: &SqlAnswer) -> Result<Frame, SqlError> {
    let mut columns = Vec::with_capacity(answer.schema.fields().len());
    for (i, field) in answer.schema.fields().iter().enumerate() {
        let dt = field.data_type();
        let ty = match dt {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => FieldType::String,
            d if d.is_integer() => FieldType::Int64,
            d if d.is_floating() => FieldType::Double,
            DataType::Boolean => FieldType::Bool,
            _ => FieldType::String,
        };
        let spec = FieldSpec {
            name: "sql",
            ty,
            unit: None,
            nullable: true,
            description: "",
        };
        let mut data = super::frame::ColumnData::empty(ty);
        for b in &answer.batches {
            let mut array = b.column(i).clone();
            if ty == FieldType::String
                && !matches!(
                    dt,
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                )
            {
                array = as_text(&array).map_err(|e| SqlError::Internal(e.to_string()))?;
            }
            let part =
                column_from_array(&spec, &array).map_err(|e| SqlError::Internal(e.to_string()))?;
            data.extend(part);
        }
        columns.push(FrameColumn {
            name: field.name().clone(),
            data,
        });
    }
    Ok(Frame { columns })
}

/// `array` as text: cast where arrow casts the type to a string, else each value as arrow displays
/// it (structs and maps have no cast to a string: `{a: 1}`; a time out of range is shown with the
/// reason it has no text).
pub fn as_text(
    array: &arrow::array::ArrayRef,
) -> Result<arrow::array::ArrayRef, arrow::error::ArrowError> {
    use arrow::array::Array as _;
    if let Ok(text) = datafusion::arrow::compute::cast(array, &DataType::Utf8) {
        return Ok(text);
    }
    let shown = arrow::util::display::ArrayFormatter::try_new(
        array.as_ref(),
        &arrow::util::display::FormatOptions::default(),
    )?;
    let text: arrow::array::StringArray = (0..array.len())
        .map(|i| (!array.is_null(i)).then(|| shown.value(i).to_string()))
        .collect();
    Ok(Arc::new(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::{GenericDialect, PostgreSqlDialect};

    /// The shape sqlparser backtracks on is stopped by the depth bound in every dialect we parse
    /// with; ordinary nesting is not.
    #[test]
    fn deep_statements_stop_at_the_depth_bound() {
        let chain = format!("SELECT {}[", vec!["ab"; 60].join("."));
        for dialect in [&GenericDialect {} as &dyn Dialect, &PostgreSqlDialect {}] {
            assert!(matches!(
                parse_statements(dialect, &chain),
                Err(Unparsed::Bound(why)) if why == too_deep()
            ));
            let nested = format!(
                "SELECT {}a{} FROM {}t{}",
                "abs(".repeat(15),
                ")".repeat(15),
                "(SELECT a FROM ".repeat(8),
                ") s".repeat(8)
            );
            assert_eq!(parse_statements(dialect, &nested).unwrap().len(), 1);
        }
    }

    fn chain(sql: &str) -> usize {
        longest_chain(
            &Tokenizer::new(&GenericDialect {}, sql)
                .tokenize_with_location()
                .unwrap(),
        )
    }

    /// The bound counts each path down the tree once: an item's operators and its deepest group,
    /// the level's keywords across its commas, a group one deeper than its deepest item; names,
    /// literals, dotted names and placeholders are not links, and strings and comments hold none.
    #[test]
    fn chains_count_the_links_of_the_deepest_path() {
        for (sql, n) in [
            ("SELECT a FROM t", 2),
            ("SELECT 1 + 2 + 3", 3),
            ("SELECT a + 1, b + 2 + 3, c", 3),
            ("SELECT f(a + b, c) + 1", 4),
            ("SELECT t.a, s.b FROM t, s WHERE t.x = $1", 4),
            ("SELECT ((((a))))", 5),
            ("SELECT 'a + b + (c', \"x + y\" -- + + + (\n", 1),
            ("SELECT 1, 2 UNION ALL SELECT 3, 4 UNION ALL SELECT 5, 6", 7),
            ("SELECT CASE WHEN x = 1 THEN 'a' WHEN x = 2 THEN 'b' END", 9),
            ("SELECT 1::BIGINT::TEXT", 5),
            // Unbalanced text is closed at its end; a stray `)` does not leave the outermost level.
            ("SELECT (a + (b", 4),
            ("SELECT a)) + b", 2),
        ] {
            assert_eq!(chain(sql), n, "{sql}");
        }
        let ors = |n: usize| {
            let terms: Vec<String> = (0..n).map(|i| format!("x = {i}")).collect();
            format!("SELECT count(*) FROM t WHERE {}", terms.join(" OR "))
        };
        // SELECT, COUNT, FROM, WHERE and n - 1 ORs, n `=`, and count(*)'s group of two.
        assert_eq!(chain(&ors(497)), 999);
        assert!(parse_statements(&GenericDialect {}, &ors(497)).is_ok());
        let past = parse_statements(&GenericDialect {}, &ors(498));
        assert!(
            matches!(&past, Err(Unparsed::Bound(why)) if why.starts_with("the statement chains 1001 ")),
            "{past:?}"
        );
        // Nesting of any depth is counted without recursion.
        assert_eq!(
            chain(&format!("SELECT {}1", "(".repeat(1_000_000))),
            1_000_001
        );
    }
}
