//! Statements planned once and bound many times. A query's literals that only stand for values
//! (the operands of a comparison with an expression that is not a literal, the items of an
//! `IN (...)` list, the bounds of a `BETWEEN`) are lifted into placeholders after the client's
//! own (`$1`... from `params`), so `task = 'gpqa' AND max_num_seqs >= 64` and `task = 'lm-arena-chat'
//! AND max_num_seqs >= 8` are one statement, `task = $1 AND max_num_seqs >= $2`: planned and
//! optimised once (`prepare`), then bound with each request's values and given a physical plan
//! (`run_prepared`). A literal anywhere else (a projection, `LIMIT`, `GROUP BY 1`, a function's
//! argument, a `LIKE` pattern) is left in the statement, so it is part of the statement's key: a
//! different one is a different statement. A value is bound only when it converts to its
//! placeholder's type without changing (`64` to a float column's `64.0`; not `0.5` to an integer
//! column): else the statement is run as written. The service keeps the prepared statements
//! (`service::sql`); this module lifts, prepares and runs.
//!
//! Most texts a dashboard sends are the shape of one it sent before with other values. A text is
//! scanned ([`sql_scan`]; tokenized if it holds what the scanner leaves to the tokenizer) and its
//! shape (its tokens, its liftable literals as markers of their kind) looked up: a shape lifted
//! before gives the key and the values straight from the tokens, and only a new shape, or a new
//! kept literal (another LIMIT), is parsed ([`lift`]). Parsing, printing the key and dropping the
//! tree were a large part of a fresh query's time.
//!
//! A bound plan still needs a physical plan, and DataFusion's physical optimiser was most of the
//! time of planning a filtered, sorted page of a run table (distribution and ordering
//! requirements, projection and filter pushdown, each a walk of the plan that recomputes its
//! properties). A statement that is only projections, filters, sorts and limits over one run
//! table (one in-memory partition: nothing to distribute, no operator whose requirements another
//! operator must meet) is planned with the limit pushdown and the sanity check alone
//! ([`PlanStates`]); if the sanity check finds a requirement unmet, it is planned again with every
//! rule. Everything else gets every rule.
//!
//! A simple statement whose placeholders all stand in its filters goes further: its physical plan
//! is made once, when it is prepared, with each placeholder a slot (a function no query can name
//! that refuses to be evaluated), and a request's plan is that template with its values put into
//! the filters' predicates (each filter keeping the template's properties, every other operator
//! given fresh state by DataFusion's `reset_state`, as for re-execution). Planning a bound plan
//! anew, binding the logical plan, and building the filters again (their properties: the table's
//! statistics, the predicate's equivalences) were each a part of a fresh query's time that this
//! spares.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array};
use datafusion::arrow::compute::{
    LexicographicalComparator, SortColumn, and, concat_batches, filter_record_batch,
    take_record_batch,
};
use datafusion::arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use datafusion::common::cast::as_boolean_array;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{ParamValues, ScalarValue, internal_err, plan_err};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::{DataSource, DataSourceExec};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::{SessionState, SessionStateBuilder, TaskContext};
use datafusion::logical_expr::Operator;
use datafusion::logical_expr::expr::{Placeholder, ScalarFunction};
use datafusion::logical_expr::{
    ColumnarValue, Expr as LogicalExpr, LogicalPlan, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::ScalarFunctionExpr;
use datafusion::physical_expr::expressions::{
    BinaryExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, Literal, NotExpr, in_list,
};
use datafusion::physical_expr::split_conjunction;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::limit_pushdown::LimitPushdown;
use datafusion::physical_optimizer::sanity_checker::SanityCheckPlan;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder, batch_filter};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Query, SetExpr, Statement, TableFactor, Value, ValueWithSpan,
    visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{
    Location, Token, TokenWithSpan, Tokenizer, Whitespace,
};
use futures::{StreamExt, TryStreamExt};

use super::sql::{
    SqlAnswer, SqlError, SqlLimits, classify, collect, no_column, read_only, unique_schema,
};
use super::sql_scan::{self, Literal as TextLiteral, number_value};

/// A query with its value literals lifted: the statement (placeholders `$n` for them, numbered
/// after the client's), its text (the key of its plan), the lifted values in order, and how many
/// placeholders the client's text had.
#[derive(Debug, Clone)]
pub struct Lifted {
    pub key: String,
    /// None when the text was lifted by its shape ([`Shape`]): [`lift_parsed`] gives it.
    statement: Option<Statement>,
    pub values: Vec<ScalarValue>,
    pub client_params: usize,
}

impl Lifted {
    /// Whether [`prepare`] can plan it (it has its statement).
    pub fn has_statement(&self) -> bool {
        self.statement.is_some()
    }
}

/// The highest `$n` a client's statement may use and still be lifted (the PostgreSQL protocol
/// binds at most 65,535 values).
const MAX_CLIENT_PLACEHOLDER: usize = 65_535;

/// The lifted form of `sql`, or none when it is not one query (several statements, EXPLAIN,
/// SHOW, anything but a query) or does not parse (it is then run as written, which says why).
///
/// A text of a shape lifted before (its tokens the same but for its liftable literals: see
/// [`Shape`]) is lifted from its tokens without being parsed, and without its statement; any
/// other is parsed ([`lift_parsed`]) and its shape kept. The shape of most texts is scanned
/// ([`sql_scan`]), of the rest tokenized.
pub fn lift(sql: &str) -> Option<Lifted> {
    let (skeleton, literals) = match sql_scan::scan(sql) {
        Some((text, literals)) => (Skeleton::Scanned(text), literals),
        None => {
            let tokens = Tokenizer::new(&GenericDialect {}, sql)
                .tokenize_with_location()
                .ok()?;
            let (tokens, literals) = skeleton(tokens);
            (Skeleton::Tokens(tokens), literals)
        }
    };
    if let Some(lifted) = SHAPES.lift(&skeleton, &literals) {
        return Some(lifted);
    }
    let (lifted, starts) = lift_statement(sql)?;
    SHAPES.keep(skeleton, &literals, &lifted, &starts);
    Some(lifted)
}

/// [`lift`] by parsing `sql`, with the statement.
pub fn lift_parsed(sql: &str) -> Option<Lifted> {
    lift_statement(sql).map(|(lifted, _)| lifted)
}

/// `sql` lifted by parsing it, and where in the text each lifted value stood.
fn lift_statement(sql: &str) -> Option<(Lifted, Vec<Location>)> {
    let mut statements = super::sql::parse_statements(&GenericDialect {}, sql).ok()?;
    if statements.len() != 1 {
        return None;
    }
    let mut statement = statements.pop()?;
    if !matches!(statement, Statement::Query(_)) {
        return None;
    }
    // The client's placeholders: `$n` numbers in use, the lifted ones come after. Named ones, and
    // numbers no request could bind (`$18446744073709551615`: the lifted ones' numbers overflowed,
    // found by fuzzing), leave the statement as written, where DataFusion says what is wrong.
    let mut client_params = 0usize;
    let mut as_written = false;
    let _ = visit_expressions_mut(&mut statement, |e: &mut Expr| {
        if let Expr::Value(ValueWithSpan {
            value: Value::Placeholder(p),
            ..
        }) = e
        {
            match p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                Some(n) if n <= MAX_CLIENT_PLACEHOLDER => client_params = client_params.max(n),
                _ => as_written = true,
            }
        }
        ControlFlow::<()>::Continue(())
    });
    if as_written {
        return None;
    }
    let mut lifter = Lifter {
        first: client_params,
        values: Vec::new(),
        starts: Vec::new(),
    };
    if let Statement::Query(q) = &mut statement {
        lifter.query(q);
    }
    let lifted = Lifted {
        key: statement.to_string(),
        statement: Some(statement),
        values: lifter.values,
        client_params,
    };
    Some((lifted, lifter.starts))
}

/// `tokens` without their liftable literals (each replaced by its kind's marker, which no text
/// tokenizes to) and with every run of whitespace and comments as one space: the shape of a text.
/// And the literals, in order.
fn skeleton(tokens: Vec<TokenWithSpan>) -> (Vec<Token>, Vec<TextLiteral>) {
    let mut shape = Vec::with_capacity(tokens.len());
    let mut literals = Vec::new();
    for t in tokens {
        match t.token {
            Token::Whitespace(_) => {
                if !matches!(shape.last(), Some(Token::Whitespace(_))) {
                    shape.push(Token::Whitespace(Whitespace::Space));
                }
            }
            token => match token_value(&token) {
                Some(value) => {
                    let (marker, text) = match token {
                        Token::Number(n, _) => (sql_scan::NUMBER, n),
                        Token::SingleQuotedString(s) => (sql_scan::STRING, s),
                        _ => ("", String::new()),
                    };
                    shape.push(Token::Placeholder(marker.into()));
                    literals.push(TextLiteral {
                        at: t.span.start,
                        value,
                        text,
                    });
                }
                None => shape.push(token),
            },
        }
    }
    (shape, literals)
}

/// The value a literal token stands for when lifted: as [`value_of`] types it.
fn token_value(t: &Token) -> Option<ScalarValue> {
    match t {
        Token::Number(n, false) => number_value(n),
        Token::SingleQuotedString(s) => Some(ScalarValue::Utf8(Some(s.clone()))),
        _ => None,
    }
}

/// How a shape's texts are lifted: which of its literals are lifted, in the order of the values,
/// and, for the texts of each set of the other (kept) literals' texts, the statement's key. The
/// parse of a text, so its statement and which literals the lifter takes, depends only on its
/// tokens' kinds and on which literals are liftable, which its shape holds: two texts of one
/// shape differ only in their literals' values.
struct Shape {
    lifted: Vec<usize>,
    kept: Vec<usize>,
    client_params: usize,
    keys: HashMap<Vec<String>, String>,
}

/// The shapes seen with their keys: [`KEYS_KEPT`] keys at most, all forgotten when one more
/// would be kept (what a text is lifted to does not depend on the data: one set for the process).
#[derive(Default)]
struct Shapes(std::sync::Mutex<KeptShapes>);

/// A text's shape: scanned, or else tokenized (two maps in one: a scanned shape and a tokenized
/// one are never the same key).
#[derive(PartialEq, Eq, Hash)]
enum Skeleton {
    Scanned(String),
    Tokens(Vec<Token>),
}

#[derive(Default)]
struct KeptShapes {
    shapes: HashMap<Skeleton, Shape>,
    keys: usize,
}

const KEYS_KEPT: usize = 32_768;

static SHAPES: std::sync::LazyLock<Shapes> = std::sync::LazyLock::new(Shapes::default);

impl Shapes {
    fn lift(&self, skeleton: &Skeleton, literals: &[TextLiteral]) -> Option<Lifted> {
        let kept = self.0.lock().ok()?;
        let shape = kept.shapes.get(skeleton)?;
        let kept: Vec<String> = shape
            .kept
            .iter()
            .map(|&i| literals[i].text.clone())
            .collect();
        let key = shape.keys.get(&kept)?.clone();
        Some(Lifted {
            key,
            statement: None,
            values: shape
                .lifted
                .iter()
                .map(|&i| literals[i].value.clone())
                .collect(),
            client_params: shape.client_params,
        })
    }

    /// Keep how `lifted` was lifted from a text of `skeleton` with `literals` (its values from
    /// `starts` in the text), when each lifted value is one of its literals, as that literal's
    /// token stands for it (not, say, two adjacent strings the parser joined).
    fn keep(
        &self,
        skeleton: Skeleton,
        literals: &[TextLiteral],
        lifted: &Lifted,
        starts: &[Location],
    ) {
        if starts.len() != lifted.values.len() {
            return;
        }
        let mut taken = vec![false; literals.len()];
        let mut order = Vec::with_capacity(starts.len());
        for (at, value) in starts.iter().zip(&lifted.values) {
            match literals.iter().position(|l| l.at == *at) {
                Some(i) if !taken[i] && literals[i].value == *value => {
                    taken[i] = true;
                    order.push(i);
                }
                _ => return,
            }
        }
        let kept: Vec<usize> = (0..literals.len()).filter(|&i| !taken[i]).collect();
        let texts: Vec<String> = kept.iter().map(|&i| literals[i].text.clone()).collect();
        let Ok(mut all) = self.0.lock() else {
            return;
        };
        if all.keys >= KEYS_KEPT {
            *all = KeptShapes::default();
        }
        let shape = all.shapes.entry(skeleton).or_insert_with(|| Shape {
            lifted: order.clone(),
            kept: kept.clone(),
            client_params: lifted.client_params,
            keys: HashMap::new(),
        });
        if shape.lifted == order
            && shape.kept == kept
            && shape.keys.insert(texts, lifted.key.clone()).is_none()
        {
            all.keys += 1;
        }
    }
}

/// Lifts the value literals of the WHERE and HAVING clauses of every SELECT of a query (its CTEs,
/// derived tables and set operations included): only there does a literal stand for a value and
/// nothing else (in a projection it names the column, in LIMIT or GROUP BY it shapes the plan).
struct Lifter {
    first: usize,
    values: Vec<ScalarValue>,
    /// Where each lifted value stood in the text.
    starts: Vec<Location>,
}

impl Lifter {
    fn query(&mut self, q: &mut Query) {
        if let Some(with) = &mut q.with {
            for cte in &mut with.cte_tables {
                self.query(&mut cte.query);
            }
        }
        self.set_expr(&mut q.body);
    }

    fn set_expr(&mut self, s: &mut SetExpr) {
        match s {
            SetExpr::Select(select) => {
                for t in &mut select.from {
                    self.table(&mut t.relation);
                    for j in &mut t.joins {
                        self.table(&mut j.relation);
                    }
                }
                if let Some(w) = &mut select.selection {
                    self.clause(w);
                }
                if let Some(h) = &mut select.having {
                    self.clause(h);
                }
            }
            SetExpr::Query(q) => self.query(q),
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left);
                self.set_expr(right);
            }
            _ => {}
        }
    }

    fn table(&mut self, t: &mut TableFactor) {
        if let TableFactor::Derived { subquery, .. } = t {
            self.query(subquery);
        }
    }

    fn take(&mut self, e: &mut Expr) {
        if let Some(v) = value_of(e) {
            if let Expr::Value(ValueWithSpan { span, .. }) = e {
                self.starts.push(span.start);
            }
            self.values.push(v);
            *e = Expr::Value(
                Value::Placeholder(format!("${}", self.first + self.values.len()))
                    .with_empty_span(),
            );
        }
    }

    /// A WHERE or HAVING clause: every comparison of an expression with a literal, IN list and
    /// BETWEEN in it.
    fn clause(&mut self, clause: &mut Expr) {
        let _ = visit_expressions_mut(clause, |e: &mut Expr| {
            match e {
                Expr::BinaryOp { left, op, right } if comparison(op) => {
                    match (value_of(left).is_some(), value_of(right).is_some()) {
                        (true, false) => self.take(left),
                        (false, true) => self.take(right),
                        _ => {}
                    }
                }
                Expr::InList { expr, list, .. } if value_of(expr).is_none() => {
                    for item in list {
                        self.take(item);
                    }
                }
                Expr::Between {
                    expr, low, high, ..
                } if value_of(expr).is_none() => {
                    self.take(low);
                    self.take(high);
                }
                _ => {}
            }
            ControlFlow::<()>::Continue(())
        });
    }
}

fn comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
    )
}

/// The value a literal stands for, typed as DataFusion types it: an integer that fits is Int64,
/// another number Float64, a single-quoted string Utf8. Others (booleans, NULL, big integers,
/// typed or escaped strings) are not lifted.
fn value_of(e: &Expr) -> Option<ScalarValue> {
    let Expr::Value(ValueWithSpan { value, .. }) = e else {
        return None;
    };
    match value {
        Value::Number(n, false) => number_value(n),
        Value::SingleQuotedString(s) => Some(ScalarValue::Utf8(Some(s.clone()))),
        _ => None,
    }
}

/// A statement planned and optimised with its placeholders, the answer's schema, and each
/// placeholder's type.
#[derive(Debug)]
pub struct Prepared {
    plan: LogicalPlan,
    schema: SchemaRef,
    /// The type of `$n` at `n - 1`: none where the plan does not use it, `Some(None)` where the
    /// plan gave it no type.
    types: Vec<Option<Option<DataType>>>,
    /// Projections, filters, sorts and limits over one run table (`lean`).
    simple: bool,
    /// A simple statement's physical plan with its placeholders as slots, when they all stand in
    /// filters.
    template: Option<Arc<dyn ExecutionPlan>>,
}

/// The tables a simple statement may read: the run tables, one in-memory partition each.
const RUN_TABLES: [&str; 2] = ["llm_runs", "diffusion_runs"];

/// Whether `plan` (optimised) is only projections, filters, sorts and limits over run tables, with
/// no subquery left in an expression.
fn is_simple(plan: &LogicalPlan) -> bool {
    let mut simple = true;
    let _ = plan.apply(|node| {
        simple = match node {
            LogicalPlan::Projection(_)
            | LogicalPlan::Filter(_)
            | LogicalPlan::Sort(_)
            | LogicalPlan::Limit(_)
            | LogicalPlan::SubqueryAlias(_) => true,
            LogicalPlan::TableScan(scan) => RUN_TABLES.contains(&scan.table_name.table()),
            _ => false,
        } && node.expressions().iter().all(|e| {
            !e.exists(|e| {
                Ok(matches!(
                    e,
                    LogicalExpr::ScalarSubquery(_)
                        | LogicalExpr::InSubquery(_)
                        | LogicalExpr::Exists(_)
                ))
            })
            .unwrap_or(true)
        });
        Ok(if simple {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    simple
}

/// The session states a context's prepared statements are planned with, made once per context:
/// its own (every physical optimiser rule) and a lean one for simple statements (the limit
/// pushdown, which makes a sort with a limit a top-k, and the sanity check).
pub struct PlanStates {
    full: SessionState,
    lean: SessionState,
}

impl PlanStates {
    pub fn of(ctx: &SessionContext) -> PlanStates {
        let full = ctx.state();
        let rules: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> = vec![
            Arc::new(LimitPushdown::new()),
            Arc::new(SanityCheckPlan::new()),
        ];
        let lean = SessionStateBuilder::new_from_existing(full.clone())
            .with_physical_optimizer_rules(rules)
            .build();
        PlanStates { full, lean }
    }
}

/// Plan and optimise `lifted` on `ctx` under the read-only policy; a simple statement's physical
/// template is made with `states` (the context's).
pub async fn prepare(
    ctx: &SessionContext,
    states: &PlanStates,
    lifted: &Lifted,
    limits: &SqlLimits,
) -> Result<Prepared, SqlError> {
    let state = ctx.state();
    let plan = state
        .statement_to_plan(DfStatement::Statement(Box::new(
            lifted.statement.clone().ok_or_else(|| {
                SqlError::Internal(
                    "a statement lifted by its shape is prepared by lift_parsed".into(),
                )
            })?,
        )))
        .await
        .map_err(|e| classify(e, limits))?;
    read_only()
        .verify_plan(&plan)
        .map_err(|e| classify(e, limits))?;
    let mut types = Vec::new();
    for (name, t) in plan
        .get_parameter_types()
        .map_err(|e| classify(e, limits))?
    {
        // Every placeholder is `$n` (a named one leaves the text as written: `lift`).
        if let Some(n) = name.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
            && n >= 1
        {
            if types.len() < n {
                types.resize(n, None);
            }
            types[n - 1] = Some(t);
        }
    }
    let schema = unique_schema(plan.schema());
    if schema.fields().is_empty() {
        return Err(no_column());
    }
    let plan = state.optimize(&plan).map_err(|e| classify(e, limits))?;
    let simple = is_simple(&plan);
    let template = if simple {
        template(states, &plan).await
    } else {
        None
    };
    Ok(Prepared {
        plan,
        schema,
        types,
        simple,
        template,
    })
}

/// The value bound at `index` (0-based, as `$index+1`), standing in a template's filters. Named so
/// that no query can call it (a `$` cannot start a function's name); evaluated, it fails, so a slot
/// left unbound is an error, never an answer.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Slot {
    name: String,
    index: usize,
    field: FieldRef,
    signature: Signature,
}

impl ScalarUDFImpl for Slot {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> datafusion::common::Result<DataType> {
        Ok(self.field.data_type().clone())
    }

    fn return_field_from_args(&self, _: ReturnFieldArgs) -> datafusion::common::Result<FieldRef> {
        Ok(self.field.clone())
    }

    fn invoke_with_args(&self, _: ScalarFunctionArgs) -> datafusion::common::Result<ColumnarValue> {
        internal_err!("{} was not bound", self.name)
    }
}

/// `plan`'s physical plan with its placeholders as slots, planned lean; none when a placeholder
/// stands anywhere but in a filter, has no type, or the plan is not made lean.
async fn template(states: &PlanStates, plan: &LogicalPlan) -> Option<Arc<dyn ExecutionPlan>> {
    let slotted = plan
        .clone()
        .transform_up(|node| {
            let filter = matches!(node, LogicalPlan::Filter(_));
            node.map_expressions(|e| {
                e.transform_up(|e| match e {
                    LogicalExpr::Placeholder(Placeholder { id, field }) => {
                        let index = id.strip_prefix('$').and_then(|n| n.parse::<usize>().ok());
                        match (filter, index, field) {
                            (true, Some(n @ 1..), Some(field)) => Ok(Transformed::yes(
                                LogicalExpr::ScalarFunction(ScalarFunction::new_udf(
                                    Arc::new(ScalarUDF::new_from_impl(Slot {
                                        name: format!("${n}"),
                                        index: n - 1,
                                        field,
                                        signature: Signature::nullary(Volatility::Volatile),
                                    })),
                                    Vec::new(),
                                )),
                            )),
                            _ => plan_err!("a placeholder outside a filter"),
                        }
                    }
                    e => Ok(Transformed::no(e)),
                })
            })
        })
        .ok()?
        .data;
    let physical = states
        .lean
        .query_planner()
        .create_physical_plan(&slotted, &states.lean)
        .await
        .ok()?
        .transform_up(|node| {
            let lean = SmallSort::of(&node)
                .or_else(|| Pick::of(&node))
                .or_else(|| Rows::of(&node));
            Ok(match lean {
                Some(lean) => Transformed::yes(lean),
                None => Transformed::no(node),
            })
        })
        .ok()?
        .data;
    // Slots in the filters' predicates only (the filters are what `bind` rebuilds).
    let mut elsewhere = false;
    let _ = physical.apply(|node| {
        if node.downcast_ref::<FilterExec>().is_none() {
            let _ = node.apply_expressions(&mut |e| {
                elsewhere |= e.exists(|e| Ok(slot(e).is_some()))?;
                Ok(TreeNodeRecursion::Continue)
            });
        }
        Ok(TreeNodeRecursion::Continue)
    });
    (!elsewhere).then_some(physical)
}

/// The index a slot stands for, if `e` is one.
fn slot(e: &Arc<dyn PhysicalExpr>) -> Option<usize> {
    let f = e.downcast_ref::<ScalarFunctionExpr>()?;
    f.fun().inner().downcast_ref::<Slot>().map(|s| s.index)
}

/// A request's physical plan from a template: each filter's slots replaced by `values` (an `IN`
/// list of values made again, so that it gets its set lookup), as a [`BoundFilter`] (or a filter
/// built again when it also projects or limits); every other operator given its new children and
/// fresh state, as DataFusion re-executes a plan.
fn bind(
    node: &Arc<dyn ExecutionPlan>,
    values: &[ScalarValue],
) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
    let children = node
        .children()
        .into_iter()
        .map(|c| bind(c, values))
        .collect::<datafusion::common::Result<Vec<_>>>()?;
    if let Some(filter) = node.downcast_ref::<FilterExec>() {
        let input = only_child(children, "a filter")?;
        let predicate = bind_expr(filter.predicate(), values, &input.schema())?;
        if filter.projection().is_none() && filter.fetch().is_none() {
            let conjuncts = split_conjunction(&predicate);
            let conjuncts = conjuncts
                .iter()
                .all(|c| infallible(c))
                .then(|| conjuncts.into_iter().cloned().collect());
            return Ok(Arc::new(BoundFilter {
                predicate,
                conjuncts,
                input,
                properties: Arc::clone(filter.properties()),
            }));
        }
        return Ok(Arc::new(
            FilterExecBuilder::from(filter)
                .with_input(input)
                .with_predicate(predicate)
                .build()?,
        ));
    }
    let node = if children.is_empty() {
        Arc::clone(node)
    } else {
        // The properties the template's children had: bound values make none of them wrong
        // (a value can only make a column constant, which the template did not rely on).
        Arc::clone(node).replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep),
        )?
    };
    node.reset_state()
}

/// A template's filter with its values bound: the rows of its input for which the predicate is
/// true, with the properties the template's filter was given. A `FilterExec` built anew computes
/// them again for every query (statistics of the whole table, the predicate's equivalences) and
/// values could only add constants to them, which nothing above it needs.
///
/// A predicate that is a conjunction of comparisons of columns with values (and `IN` lists, `IS
/// NULL`, boolean columns, their negations) is evaluated one conjunct at a time over the whole
/// batch, the rows kept being those for which every one is true, and the batch filtered once.
/// DataFusion's `AND` filters the batch (every column) to evaluate its right side on the rows its
/// left side kept, once per `AND` whose left side keeps a fifth of the rows or fewer: a filter of
/// the run tables' five conditions copied the batch up to four times, most of the filter's time.
/// Such conjuncts cannot fail on any row, so evaluating each over every row answers the same.
#[derive(Debug)]
struct BoundFilter {
    predicate: Arc<dyn PhysicalExpr>,
    /// The predicate's conjuncts, when each is [`infallible`].
    conjuncts: Option<Vec<Arc<dyn PhysicalExpr>>>,
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl DisplayAs for BoundFilter {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "BoundFilter: {}", self.predicate)
    }
}

impl ExecutionPlan for BoundFilter {
    fn name(&self) -> &'static str {
        "BoundFilter"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> datafusion::common::Result<TreeNodeRecursion>,
    ) -> datafusion::common::Result<TreeNodeRecursion> {
        f(&self.predicate)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        // Another input: a filter of DataFusion's own, its properties computed for it.
        let input = only_child(children, "a filter")?;
        Ok(Arc::new(FilterExec::try_new(
            Arc::clone(&self.predicate),
            input,
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> datafusion::common::Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let predicate = Arc::clone(&self.predicate);
        let conjuncts = self.conjuncts.clone();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            input.map(move |batch| match &conjuncts {
                Some(c) => filter_by_all(&batch?, c),
                None => batch_filter(&batch?, &predicate),
            }),
        )))
    }
}

/// Whether `e` evaluates without error on any row: a column, a value, a comparison of those, an
/// `IN` list of values, `IS [NOT] NULL` or `NOT` of one.
fn infallible(e: &Arc<dyn PhysicalExpr>) -> bool {
    let leaf = |e: &Arc<dyn PhysicalExpr>| {
        e.downcast_ref::<Column>().is_some() || e.downcast_ref::<Literal>().is_some()
    };
    if leaf(e) {
        return true;
    }
    if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        return matches!(
            b.op(),
            Operator::Eq
                | Operator::NotEq
                | Operator::Lt
                | Operator::LtEq
                | Operator::Gt
                | Operator::GtEq
                | Operator::IsDistinctFrom
                | Operator::IsNotDistinctFrom
        ) && leaf(b.left())
            && leaf(b.right());
    }
    if let Some(list) = e.downcast_ref::<InListExpr>() {
        return leaf(list.expr()) && list.list().iter().all(leaf);
    }
    if let Some(n) = e.downcast_ref::<NotExpr>() {
        return infallible(n.arg());
    }
    if let Some(n) = e.downcast_ref::<IsNullExpr>() {
        return leaf(n.arg());
    }
    if let Some(n) = e.downcast_ref::<IsNotNullExpr>() {
        return leaf(n.arg());
    }
    false
}

/// The one input of `what` (a filter, a sort) among `children`.
fn only_child(
    children: Vec<Arc<dyn ExecutionPlan>>,
    what: &str,
) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
    let [input] = <[_; 1]>::try_from(children).map_err(|c| {
        datafusion::common::DataFusionError::Internal(format!(
            "{what} has one input, not {}",
            c.len()
        ))
    })?;
    Ok(input)
}

/// A template's sort, with or without a limit, over the one partition of a run table's rows that
/// its filters kept (a thousand rows at most): the rows gathered, the sort keys evaluated once, the
/// first `fetch` row numbers selected and sorted, the rows taken. DataFusion's `SortExec` with a
/// limit is a top-k that converts every row's keys to its row format and keeps a heap of them,
/// made, filled and emitted for every query: more work than a run table's few rows need. Rows
/// with equal keys keep their order in the table (the row number is the last key), so an answer
/// is the same each time.
#[derive(Debug)]
struct SmallSort {
    expr: datafusion::physical_expr::LexOrdering,
    fetch: Option<usize>,
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl SmallSort {
    /// `node` as a small sort, if it is a sort of one partition.
    fn of(node: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
        let sort = node.downcast_ref::<SortExec>()?;
        (sort.input().properties().partitioning.partition_count() == 1).then(|| {
            Arc::new(SmallSort {
                expr: sort.expr().clone(),
                fetch: sort.fetch(),
                input: Arc::clone(sort.input()),
                properties: Arc::clone(sort.properties()),
            }) as Arc<dyn ExecutionPlan>
        })
    }
}

impl DisplayAs for SmallSort {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "SmallSort: fetch={:?}, expr=[{}]", self.fetch, self.expr)
    }
}

impl ExecutionPlan for SmallSort {
    fn name(&self) -> &'static str {
        "SmallSort"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> datafusion::common::Result<TreeNodeRecursion>,
    ) -> datafusion::common::Result<TreeNodeRecursion> {
        for e in self.expr.iter() {
            if f(&e.expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        // Another input: a sort of DataFusion's own, its properties computed for it.
        let input = only_child(children, "a sort")?;
        Ok(Arc::new(
            SortExec::new(self.expr.clone(), input).with_fetch(self.fetch),
        ))
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        options: ReplaceChildrenOptions,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        match options.children_properties {
            ChildrenPropertiesMode::Keep => {
                let input = only_child(children, "a sort")?;
                Ok(Arc::new(SmallSort {
                    expr: self.expr.clone(),
                    fetch: self.fetch,
                    input,
                    properties: Arc::clone(&self.properties),
                }))
            }
            #[allow(deprecated)]
            _ => self.with_new_children(children),
        }
    }

    /// No state: gathered and sorted anew in each `execute`.
    fn reset_state(self: Arc<Self>) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> datafusion::common::Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let schema = self.input.schema();
        let expr = self.expr.clone();
        let fetch = self.fetch;
        let sorted = futures::stream::once(async move {
            let batches: Vec<RecordBatch> = input.try_collect().await?;
            let batch = concat_batches(&schema, &batches)?;
            sort_rows(&batch, &expr, fetch)
        })
        .filter_map(|b| async move {
            match b {
                Ok(b) if b.num_rows() == 0 => None,
                b => Some(b),
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            sorted,
        )))
    }
}

/// A template's projection of columns as they are: each batch's columns picked, under the
/// projection's schema. DataFusion's `ProjectionExec` names a metric after each of its expressions
/// on every execution and measures every batch it passes, work every fresh query paid for.
#[derive(Debug)]
struct Pick {
    columns: Vec<usize>,
    /// DataFusion's projection, for its properties and as what another input makes of it.
    projection: Arc<dyn ExecutionPlan>,
    input: Arc<dyn ExecutionPlan>,
}

impl Pick {
    /// `node` as a pick, if it is a projection of columns alone.
    fn of(node: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
        let p = node.downcast_ref::<ProjectionExec>()?;
        let columns = p
            .expr()
            .iter()
            .map(|e| e.expr.downcast_ref::<Column>().map(Column::index))
            .collect::<Option<Vec<usize>>>()?;
        (!columns.is_empty()).then(|| {
            Arc::new(Pick {
                columns,
                projection: Arc::clone(node),
                input: Arc::clone(p.input()),
            }) as Arc<dyn ExecutionPlan>
        })
    }
}

impl DisplayAs for Pick {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "Pick: columns={:?}", self.columns)
    }
}

impl ExecutionPlan for Pick {
    fn name(&self) -> &'static str {
        "Pick"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.projection.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> datafusion::common::Result<TreeNodeRecursion>,
    ) -> datafusion::common::Result<TreeNodeRecursion> {
        self.projection.apply_expressions(f)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        // Another input: DataFusion's projection, its properties computed for it.
        #[allow(deprecated)]
        Arc::clone(&self.projection).with_new_children(children)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        options: ReplaceChildrenOptions,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        match options.children_properties {
            ChildrenPropertiesMode::Keep => Ok(Arc::new(Pick {
                columns: self.columns.clone(),
                projection: Arc::clone(&self.projection),
                input: only_child(children, "a projection")?,
            })),
            #[allow(deprecated)]
            _ => self.with_new_children(children),
        }
    }

    fn reset_state(self: Arc<Self>) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> datafusion::common::Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let schema = self.schema();
        let columns = self.columns.clone();
        let out = Arc::clone(&schema);
        let picked = input.map(move |batch| {
            let batch = batch?;
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            let picked = columns
                .iter()
                .map(|&i| Arc::clone(batch.column(i)))
                .collect();
            Ok(RecordBatch::try_new_with_options(
                Arc::clone(&out),
                picked,
                &options,
            )?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, picked)))
    }
}

/// A template's scan of an in-memory table of one partition: its batches, projected once when the
/// template is made (the scan holds the same batches: the table as it was planned). DataFusion's
/// scan projects each batch and compares its schema on every execution, in three streams.
#[derive(Debug)]
struct Rows {
    batches: Vec<RecordBatch>,
    /// DataFusion's scan, for its properties and as what it stands for.
    scan: Arc<dyn ExecutionPlan>,
}

impl Rows {
    /// `node` as rows, if it is a scan of one partition of memory without a limit whose
    /// projected batches are of its schema.
    fn of(node: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
        let scan = node.downcast_ref::<DataSourceExec>()?;
        let memory = scan.data_source().downcast_ref::<MemorySourceConfig>()?;
        let [partition] = memory.partitions() else {
            return None;
        };
        if memory.fetch().is_some() {
            return None;
        }
        let schema = node.schema();
        let batches = partition
            .iter()
            .map(|b| match memory.projection() {
                Some(p) => b.project(p).ok(),
                None => Some(b.clone()),
            })
            .collect::<Option<Vec<RecordBatch>>>()?;
        batches.iter().all(|b| b.schema() == schema).then(|| {
            Arc::new(Rows {
                batches,
                scan: Arc::clone(node),
            }) as Arc<dyn ExecutionPlan>
        })
    }
}

impl DisplayAs for Rows {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "Rows: batches={}", self.batches.len())
    }
}

impl ExecutionPlan for Rows {
    fn name(&self) -> &'static str {
        "Rows"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.scan.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> datafusion::common::Result<TreeNodeRecursion>,
    ) -> datafusion::common::Result<TreeNodeRecursion> {
        self.scan.apply_expressions(f)
    }

    fn with_new_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn reset_state(self: Arc<Self>) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _: Arc<TaskContext>,
    ) -> datafusion::common::Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!("rows of one partition, not of partition {partition}");
        }
        let batches = futures::stream::iter(self.batches.clone().into_iter().map(Ok));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            batches,
        )))
    }
}

/// The first `fetch` rows of `batch` (all of them without a limit) in the order of `expr`, rows
/// with equal keys in their order in `batch`.
fn sort_rows(
    batch: &RecordBatch,
    expr: &datafusion::physical_expr::LexOrdering,
    fetch: Option<usize>,
) -> datafusion::common::Result<RecordBatch> {
    let n = batch.num_rows();
    let keys = expr
        .iter()
        .map(|e| {
            Ok(SortColumn {
                values: e.expr.evaluate(batch)?.into_array(n)?,
                options: Some(e.options),
            })
        })
        .collect::<datafusion::common::Result<Vec<_>>>()?;
    let keys = LexicographicalComparator::try_new(&keys)?;
    let order = |a: &u32, b: &u32| keys.compare(*a as usize, *b as usize).then(a.cmp(b));
    let mut rows: Vec<u32> = (0..n as u32).collect();
    match fetch {
        Some(0) => rows.clear(),
        Some(k) if k < n => {
            rows.select_nth_unstable_by(k - 1, order);
            rows.truncate(k);
        }
        _ => {}
    }
    // The row number is the last key: a total order, so an unstable sort is a stable one.
    rows.sort_unstable_by(order);
    Ok(take_record_batch(batch, &UInt32Array::from(rows))?)
}

/// The rows of `batch` for which every one of `conjuncts` is true (a null is not), the batch
/// filtered once.
fn filter_by_all(
    batch: &RecordBatch,
    conjuncts: &[Arc<dyn PhysicalExpr>],
) -> datafusion::common::Result<RecordBatch> {
    let mut keep: Option<BooleanArray> = None;
    for c in conjuncts {
        let value = c.evaluate(batch)?.into_array(batch.num_rows())?;
        let value = as_boolean_array(&value)?;
        // `and` is null where either side is, and a null row is not kept: true only where every
        // conjunct is true.
        let both = match &keep {
            None => value.clone(),
            Some(k) => and(k, value)?,
        };
        let none = both.true_count() == 0;
        keep = Some(both);
        if none {
            break;
        }
    }
    match keep {
        Some(k) => Ok(filter_record_batch(batch, &k)?),
        None => Ok(batch.clone()),
    }
}

fn bind_expr(
    expr: &Arc<dyn PhysicalExpr>,
    values: &[ScalarValue],
    schema: &Schema,
) -> datafusion::common::Result<Arc<dyn PhysicalExpr>> {
    Ok(Arc::clone(expr)
        .transform_up(|e| {
            if let Some(i) = slot(&e) {
                let Some(v) = values.get(i) else {
                    return internal_err!("no value for ${}", i + 1);
                };
                return Ok(Transformed::yes(
                    Arc::new(Literal::new(v.clone())) as Arc<dyn PhysicalExpr>
                ));
            }
            if let Some(list) = e.downcast_ref::<InListExpr>()
                && list
                    .list()
                    .iter()
                    .all(|x| x.downcast_ref::<Literal>().is_some())
            {
                return Ok(Transformed::yes(in_list(
                    Arc::clone(list.expr()),
                    list.list().to_vec(),
                    &list.negated(),
                    schema,
                )?));
            }
            Ok(Transformed::no(e))
        })?
        .data)
}

/// Why a prepared statement was not run: the values do not bind to it (run the text as
/// written), or it ran and failed.
#[derive(Debug)]
pub enum PreparedError {
    Unbound,
    Failed(SqlError),
}

/// How a request's physical plan is made: bound into the template, or planned from the bound
/// logical plan.
enum Route {
    Template(Arc<dyn ExecutionPlan>),
    Logical(LogicalPlan),
}

/// Bind the client's `params` and the lifted values to `prepared` and run it on `ctx` (the shared
/// context) under `limits`, with a memory pool of its own.
pub async fn run_prepared(
    states: &PlanStates,
    prepared: &Prepared,
    lifted: &Lifted,
    params: &ParamValues,
    limits: &SqlLimits,
    timeout: Option<Duration>,
) -> Result<SqlAnswer, PreparedError> {
    let ParamValues::List(given) = params else {
        return Err(PreparedError::Unbound);
    };
    if given.len() != lifted.client_params {
        // Too few or too many: the statement as written says which.
        return Err(PreparedError::Unbound);
    }
    let values = bound_values(
        prepared,
        given
            .iter()
            .map(|p| p.value.clone())
            .chain(lifted.values.iter().cloned()),
    )?;
    // A template binds the values as they are; a value with metadata of its own (which
    // `with_param_values` keeps on its literal) takes the logical path.
    let route = match prepared
        .template
        .as_ref()
        .filter(|_| given.iter().all(|p| p.metadata.is_none()))
    {
        Some(t) => Route::Template(bind(t, &values).map_err(|_| PreparedError::Unbound)?),
        None => Route::Logical(
            prepared
                .plan
                .clone()
                .with_param_values(ParamValues::from(values))
                .map_err(|_| PreparedError::Unbound)?,
        ),
    };
    // The query's own memory pool, given to its task alone: the context's state (its tables and
    // functions) is not copied into a new one for each query.
    let runtime = RuntimeEnvBuilder::from_runtime_env(states.full.runtime_env())
        .with_memory_limit(limits.memory_bytes, 1.0)
        .build_arc()
        .map_err(|e| PreparedError::Failed(SqlError::Internal(e.to_string())))?;
    let state = &states.full;
    // A lean plan's functions are in its expressions already: its task needs no copy of the
    // context's function registries (copying them cost every query time).
    let lean_task = |runtime| {
        TaskContext::new(
            None,
            state.session_id().to_string(),
            state.config().clone(),
            HashMap::new(),
            HashMap::new(),
            HashMap::new(),
            HashMap::new(),
            runtime,
        )
    };
    let work = async {
        let planner = state.query_planner();
        let (physical, task) = match route {
            Route::Template(physical) => (physical, lean_task(runtime)),
            Route::Logical(plan) => {
                let lean = if prepared.simple {
                    planner.create_physical_plan(&plan, &states.lean).await.ok()
                } else {
                    None
                };
                match lean {
                    Some(p) => (p, lean_task(runtime)),
                    None => (
                        planner
                            .create_physical_plan(&plan, state)
                            .await
                            .map_err(|e| classify(e, limits))?,
                        TaskContext::from(state).with_runtime(runtime),
                    ),
                }
            }
        };
        let task = Arc::new(task);
        let stream = datafusion::physical_plan::execute_stream(physical, task)
            .map_err(|e| classify(e, limits))?;
        collect(stream, prepared.schema.clone(), limits).await
    };
    let limit = timeout.map_or(limits.timeout, |t| t.min(limits.timeout));
    match tokio::time::timeout(limit, work).await {
        Ok(r) => r.map_err(PreparedError::Failed),
        Err(_) => Err(PreparedError::Failed(SqlError::Timeout(limit))),
    }
}

/// The values of placeholders `$1`, `$2`, ... (the client's, then the lifted ones), each as the
/// type the plan gave its placeholder.
fn bound_values(
    prepared: &Prepared,
    values: impl Iterator<Item = ScalarValue>,
) -> Result<Vec<ScalarValue>, PreparedError> {
    values
        .enumerate()
        .map(
            |(i, v)| match prepared.types.get(i).and_then(Option::as_ref) {
                // A placeholder the plan does not use (in a branch the planner removed): any value.
                None => Ok(v),
                Some(None) => Err(PreparedError::Unbound),
                Some(Some(t)) if v.data_type() == *t => Ok(v),
                Some(Some(t)) => same_value(&v, t).ok_or(PreparedError::Unbound),
            },
        )
        .collect()
}

/// `v` as type `t` when both are numbers or both strings and the conversion keeps the value
/// exactly (and back gives `v`): the comparison then means what the literal meant.
fn same_value(v: &ScalarValue, t: &DataType) -> Option<ScalarValue> {
    let string =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let vt = v.data_type();
    if !((vt.is_numeric() && t.is_numeric()) || (string(&vt) && string(t))) {
        return None;
    }
    let cast = v.cast_to(t).ok()?;
    if cast.is_null() != v.is_null() {
        return None;
    }
    let back = cast.cast_to(&v.data_type()).ok()?;
    (back == *v).then_some(cast)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_lifted_and_the_rest_is_kept() {
        let a = lift("SELECT model_id, 1 AS one FROM llm_runs WHERE task = 'gpqa' AND max_num_seqs >= 64 AND num_gpus IN (1, 2) ORDER BY 2 LIMIT 5").unwrap();
        let b = lift("select model_id, 1 as one from llm_runs where task = 'lm-arena-chat' and max_num_seqs >= 8 and num_gpus in (4, 8) order by 2 limit 5").unwrap();
        assert_eq!(a.key, b.key);
        assert_eq!(
            a.key,
            "SELECT model_id, 1 AS one FROM llm_runs WHERE task = $1 AND max_num_seqs >= $2 AND num_gpus IN ($3, $4) ORDER BY 2 LIMIT 5"
        );
        assert_eq!(
            a.values,
            vec![
                ScalarValue::Utf8(Some("gpqa".into())),
                ScalarValue::Int64(Some(64)),
                ScalarValue::Int64(Some(1)),
                ScalarValue::Int64(Some(2)),
            ]
        );
        // Another LIMIT, another IN list's length, another projection: other statements.
        for other in [
            "SELECT model_id, 1 AS one FROM llm_runs WHERE task = 'gpqa' AND max_num_seqs >= 64 AND num_gpus IN (1, 2) ORDER BY 2 LIMIT 6",
            "SELECT model_id, 1 AS one FROM llm_runs WHERE task = 'gpqa' AND max_num_seqs >= 64 AND num_gpus IN (1, 2, 4) ORDER BY 2 LIMIT 5",
            "SELECT model_id, 2 AS one FROM llm_runs WHERE task = 'gpqa' AND max_num_seqs >= 64 AND num_gpus IN (1, 2) ORDER BY 2 LIMIT 5",
        ] {
            assert_ne!(lift(other).unwrap().key, a.key, "{other}");
        }
    }

    /// A text of a shape lifted before is lifted from its tokens exactly as parsing lifts it
    /// (its key, its values and their types, the client's placeholders), for every kind of
    /// literal the lifter takes or keeps, each text's shape seen first with other values;
    /// another kept literal (a LIMIT, a projection's) is another statement.
    #[test]
    fn shapes_lift_as_parsing_does() {
        let shapes = [
            "SELECT run_id FROM llm_runs WHERE task = {s} AND max_num_seqs >= {i} AND max_num_seqs <= {i} AND num_gpus <= {i} ORDER BY energy_per_token_joules, run_id LIMIT {i}",
            "select run_id , {i} as one from llm_runs where {i} < num_gpus and task in ({s}, {s}, {s}) and median_itl_ms between {f} and {f} limit 3",
            "SELECT * FROM llm_runs WHERE num_gpus > -{i} AND energy_per_token_joules < {f} AND model_id LIKE {s} AND {i} = {i}",
            "SELECT * FROM llm_runs WHERE task = $1 AND num_gpus = {i} AND max_num_seqs <> 99999999999999999999 -- {s}\n AND gpu_model = {s} LIMIT {i}",
            "WITH q AS (SELECT * FROM llm_runs WHERE task = {s}) SELECT model_id, max_num_seqs > {i} FROM (SELECT * FROM q WHERE num_gpus = {i}) d GROUP BY model_id, max_num_seqs HAVING count(*) > {i} ORDER BY max_num_seqs > {i}",
            "SELECT run_id FROM llm_runs WHERE round(energy_per_token_joules, {i}) > {f} AND num_gpus = {i}.0",
        ];
        let strings = ["'gpqa'", "'it''s'", "''", "'lm-arena-chat'", "'Qwen%'"];
        let ints = ["1", "64", "0", "007", "9223372036854775807"];
        let floats = ["0.5", "1e-3", "2.", "3.25E2", "0.1"];
        let fill = |shape: &str, k: usize| {
            let mut out = String::new();
            let mut n = 0;
            let mut rest = shape;
            while let Some(at) = rest.find('{') {
                out.push_str(&rest[..at]);
                let hole = &rest[at..at + 3];
                let pick = |xs: &[&str]| xs[(k + n * 3) % xs.len()].to_string();
                out.push_str(&match hole {
                    "{s}" => pick(&strings),
                    "{i}" => pick(&ints),
                    _ => pick(&floats),
                });
                n += 1;
                rest = &rest[at + 3..];
            }
            out + rest
        };
        let mut by_shape = 0;
        for shape in shapes {
            let mut keys = std::collections::HashSet::new();
            for k in 0..12 {
                let text = fill(shape, k);
                let parsed = lift_parsed(&text).unwrap_or_else(|| panic!("{text}"));
                for _ in 0..2 {
                    let lifted = lift(&text).unwrap();
                    by_shape += usize::from(!lifted.has_statement());
                    assert_eq!(
                        (&lifted.key, &lifted.values, lifted.client_params),
                        (&parsed.key, &parsed.values, parsed.client_params),
                        "{text}"
                    );
                }
                keys.insert(parsed.key);
            }
            // Some holes are kept literals: more than one statement per shape.
            assert!(keys.len() > 1, "{shape}");
        }
        assert!(by_shape >= 60, "{by_shape}");
        // A text that does not lift is not lifted by a shape either, however often it is sent.
        for _ in 0..3 {
            assert!(
                lift("SELECT run_id FROM llm_runs WHERE task = 'gp' 'qa' AND num_gpus = 1")
                    .is_none()
            );
        }
    }

    /// A literal's kind is part of its text's shape: `'5'` kept in a projection or a LIMIT is
    /// not `5`, whichever came first, scanned or tokenized (a comment sends the text to the
    /// tokenizer).
    #[test]
    fn a_kept_string_is_not_a_kept_number() {
        for (number, string) in [
            ("SELECT 5 AS x", "SELECT '5' AS x"),
            ("SELECT '7' AS x", "SELECT 7 AS x"),
            ("SELECT 6 AS x -- c", "SELECT '6' AS x -- c"),
            (
                "SELECT run_id FROM llm_runs WHERE task = 'gpqa' LIMIT 3",
                "SELECT run_id FROM llm_runs WHERE task = 'gpqa' LIMIT '3'",
            ),
        ] {
            for _ in 0..2 {
                for text in [number, string] {
                    let lifted = lift(text).unwrap();
                    let parsed = lift_parsed(text).unwrap();
                    assert_eq!(
                        (&lifted.key, &lifted.values),
                        (&parsed.key, &parsed.values),
                        "{text}"
                    );
                }
            }
            assert_ne!(lift(number).unwrap().key, lift(string).unwrap().key);
        }
    }

    #[test]
    fn the_clients_placeholders_come_first() {
        let l =
            lift("SELECT * FROM llm_runs WHERE task = $1 AND num_gpus BETWEEN 1 AND 4").unwrap();
        assert_eq!(l.client_params, 1);
        assert_eq!(
            l.key,
            "SELECT * FROM llm_runs WHERE task = $1 AND num_gpus BETWEEN $2 AND $3"
        );
        // A number no request could bind: not lifted (found by fuzzing: an overflow).
        assert!(
            lift(
                "SELECT * FROM llm_runs WHERE num_gpus != $18446744073709551615 AND task = 'gpqa'"
            )
            .is_none()
        );
        assert!(
            lift("SELECT * FROM llm_runs WHERE num_gpus != $65536 AND task = 'gpqa'").is_none()
        );
        assert_eq!(
            lift("SELECT * FROM llm_runs WHERE num_gpus != $65535 AND task = 'gpqa'")
                .unwrap()
                .key,
            "SELECT * FROM llm_runs WHERE num_gpus <> $65535 AND task = $65536"
        );
        // Literal against literal, functions' arguments, LIKE patterns, negative numbers: kept.
        let l = lift("SELECT * FROM llm_runs WHERE 1 = 1 AND round(energy_per_token_joules, 2) > 0.5 AND model_id LIKE 'Qwen%' AND num_gpus > -1").unwrap();
        assert_eq!(
            l.key,
            "SELECT * FROM llm_runs WHERE 1 = 1 AND round(energy_per_token_joules, 2) > $1 AND model_id LIKE 'Qwen%' AND num_gpus > -1"
        );
        // A comparison in a projection names its column, and ORDER BY shapes the answer: kept;
        // a CTE's, a derived table's and a HAVING's values are lifted.
        let l = lift("WITH q AS (SELECT * FROM llm_runs WHERE task = 'gpqa') SELECT model_id, max_num_seqs > 64 FROM (SELECT * FROM q WHERE num_gpus = 1) d GROUP BY model_id, max_num_seqs HAVING count(*) > 2 ORDER BY max_num_seqs > 8").unwrap();
        assert_eq!(
            l.key,
            "WITH q AS (SELECT * FROM llm_runs WHERE task = $1) SELECT model_id, max_num_seqs > 64 FROM (SELECT * FROM q WHERE num_gpus = $2) d GROUP BY model_id, max_num_seqs HAVING count(*) > $3 ORDER BY max_num_seqs > 8"
        );
        assert!(lift("SELECT 1; SELECT 2").is_none());
        assert!(lift("EXPLAIN SELECT 1").is_none());
        assert!(lift("SELECT * FROM t WHERE a = :name").is_none());
    }

    /// A simple statement is planned lean and answers what every rule answers, row for row; the
    /// others are planned with every rule.
    #[tokio::test]
    async fn lean_plans_answer_as_full_ones() {
        let limits = SqlLimits::default();
        let ctx = sample_context().await;
        let states = PlanStates::of(&ctx);
        let everything = PlanStates {
            full: states.full.clone(),
            lean: states.full.clone(),
        };
        for (sql, simple) in [
            (
                "SELECT run_id, energy_per_token_joules FROM llm_runs WHERE task = 'gpqa' AND max_num_seqs >= 64 AND num_gpus <= 4 ORDER BY energy_per_token_joules, run_id LIMIT 7",
                true,
            ),
            (
                "SELECT r.run_id AS id, r.batch_size * 2 AS b FROM diffusion_runs r WHERE r.gpu_model <> 'H100' ORDER BY 2 DESC, 1 LIMIT 5 OFFSET 3",
                true,
            ),
            (
                "SELECT * FROM (SELECT run_id, num_gpus FROM llm_runs WHERE num_gpus IN (2, 4) ORDER BY run_id LIMIT 40) t WHERE num_gpus = 2",
                true,
            ),
            (
                "SELECT task, count(*) AS n FROM llm_runs GROUP BY task ORDER BY task",
                false,
            ),
            (
                "SELECT run_id FROM llm_runs WHERE task = 'gpqa' UNION ALL SELECT run_id FROM diffusion_runs ORDER BY run_id LIMIT 9",
                false,
            ),
            (
                "SELECT run_id FROM llm_runs WHERE num_gpus = (SELECT max(num_gpus) FROM llm_runs) ORDER BY run_id",
                false,
            ),
            (
                "SELECT a.run_id FROM llm_runs a JOIN llm_runs b ON a.run_id = b.run_id WHERE a.num_gpus = 8 ORDER BY 1",
                false,
            ),
        ] {
            let lifted = lift_parsed(sql).unwrap();
            let prepared = prepare(&ctx, &states, &lifted, &limits).await.unwrap();
            assert_eq!(prepared.simple, simple, "{sql}");
            if simple {
                // Planned lean (no fallback): one partition, no repartitioning.
                let bound = prepared
                    .plan
                    .clone()
                    .with_param_values(ParamValues::from(lifted.values.clone()))
                    .unwrap();
                let physical = states
                    .full
                    .query_planner()
                    .create_physical_plan(&bound, &states.lean)
                    .await
                    .unwrap();
                let text = datafusion::physical_plan::displayable(physical.as_ref())
                    .indent(false)
                    .to_string();
                assert!(!text.contains("Repartition"), "{sql}\n{text}");
                assert_eq!(
                    datafusion::physical_plan::ExecutionPlanProperties::output_partitioning(
                        &physical
                    )
                    .partition_count(),
                    1,
                    "{text}"
                );
            }
            assert_eq!(prepared.template.is_some(), simple, "{sql}");
            let params = ParamValues::List(Vec::new());
            let lean = run_prepared(&states, &prepared, &lifted, &params, &limits, None)
                .await
                .unwrap();
            let full = run_prepared(
                &everything,
                &untemplated(&prepared),
                &lifted,
                &params,
                &limits,
                None,
            )
            .await
            .unwrap();
            assert!(lean.rows > 0, "{sql}");
            assert_eq!(lean.rows, full.rows, "{sql}");
            let lean =
                datafusion::arrow::compute::concat_batches(&lean.schema, &lean.batches).unwrap();
            let full =
                datafusion::arrow::compute::concat_batches(&full.schema, &full.batches).unwrap();
            assert_eq!(lean, full, "{sql}");
        }
    }

    /// The statement without its template: run from its bound logical plan.
    fn untemplated(p: &Prepared) -> Prepared {
        Prepared {
            plan: p.plan.clone(),
            schema: p.schema.clone(),
            types: p.types.clone(),
            simple: p.simple,
            template: None,
        }
    }

    /// `plan` with each [`SmallSort`] the `SortExec` it stands for.
    fn as_datafusion(plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        plan.transform_up(|node| {
            if let Some(rows) = node.downcast_ref::<Rows>() {
                return Ok(Transformed::yes(Arc::clone(&rows.scan)));
            }
            if node.downcast_ref::<SmallSort>().is_none() && node.downcast_ref::<Pick>().is_none() {
                return Ok(Transformed::no(node));
            }
            let children = node.children().into_iter().cloned().collect();
            #[allow(deprecated)]
            Ok(Transformed::yes(node.with_new_children(children)?))
        })
        .unwrap()
        .data
    }

    async fn sample_context() -> SessionContext {
        let dataset = crate::load::sample_dataset().await;
        crate::sql::sql_context(&dataset, SqlLimits::default().memory_bytes)
            .await
            .unwrap()
    }

    fn batch(a: &SqlAnswer) -> datafusion::arrow::array::RecordBatch {
        datafusion::arrow::compute::concat_batches(&a.schema, &a.batches).unwrap()
    }

    /// A conjunction of infallible conditions keeps, evaluated one conjunct at a time, exactly
    /// the rows DataFusion's filter keeps: nulls in every column, conditions that keep none, few,
    /// most or all rows, in every order (DataFusion's `AND` takes its pre-selected path when its
    /// left side keeps a fifth of the rows or fewer).
    #[test]
    fn conjuncts_keep_what_the_filter_keeps() {
        use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
        use datafusion::arrow::datatypes::Field;
        use datafusion::physical_expr::expressions::{binary, cast, col, is_null, lit, not};
        let n = 300i64;
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("b", DataType::Boolean, true),
        ]));
        let a: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 7 != 3).then_some((i * 37) % 101)),
        ));
        let s: ArrayRef =
            Arc::new(StringArray::from_iter((0..n).map(|i| {
                (i % 11 != 5).then(|| ["x", "y", "z", "w", "v"][(i % 5) as usize])
            })));
        let b: ArrayRef = Arc::new(BooleanArray::from_iter(
            (0..n).map(|i| (i % 13 != 0).then_some(i % 3 == 0)),
        ));
        let batch = RecordBatch::try_new(schema.clone(), vec![a, s, b]).unwrap();
        let c = |name| col(name, &schema).unwrap();
        let cmp = |name, op, v: ScalarValue| binary(c(name), op, lit(v), &schema).unwrap();
        let int = |i| ScalarValue::Int64(Some(i));
        let conditions: Vec<Arc<dyn PhysicalExpr>> = vec![
            cmp("a", Operator::Lt, int(10)),
            cmp("a", Operator::GtEq, int(3)),
            cmp("a", Operator::NotEq, int(50)),
            cmp("s", Operator::Eq, ScalarValue::Utf8(Some("y".into()))),
            cmp("a", Operator::Gt, int(1000)),
            cmp("a", Operator::IsDistinctFrom, int(7)),
            c("b"),
            not(c("b")).unwrap(),
            is_null(c("s")).unwrap(),
            in_list(
                c("a"),
                vec![lit(int(3)), lit(int(40)), lit(int(74))],
                &false,
                &schema,
            )
            .unwrap(),
            in_list(
                c("s"),
                vec![lit(ScalarValue::Utf8(Some("x".into())))],
                &true,
                &schema,
            )
            .unwrap(),
            lit(ScalarValue::Boolean(Some(true))),
        ];
        let mut cases = 0;
        for i in 0..conditions.len() {
            for j in 0..conditions.len() {
                for k in [0, 3, 6, 9] {
                    let chosen = [&conditions[i], &conditions[j], &conditions[k]];
                    let predicate = chosen[1..].iter().fold(Arc::clone(chosen[0]), |p, q| {
                        binary(p, Operator::And, Arc::clone(q), &schema).unwrap()
                    });
                    let parts: Vec<_> =
                        split_conjunction(&predicate).into_iter().cloned().collect();
                    assert!(parts.iter().all(infallible), "{predicate}");
                    let ours = filter_by_all(&batch, &parts).unwrap();
                    assert_eq!(
                        ours,
                        batch_filter(&batch, &predicate).unwrap(),
                        "{predicate}"
                    );
                    cases += usize::from(ours.num_rows() > 0);
                }
            }
        }
        assert!(cases > 100, "{cases}");
        // What can fail on a row is left to DataFusion's filter.
        let fallible = [
            binary(c("a"), Operator::Divide, lit(int(0)), &schema).unwrap(),
            binary(
                cast(c("s"), &schema, DataType::Int64).unwrap(),
                Operator::Eq,
                lit(int(1)),
                &schema,
            )
            .unwrap(),
        ];
        for e in &fallible {
            assert!(!infallible(e), "{e}");
        }
    }

    /// A template's sort answers the rows DataFusion's sort answers, in its order, for keys in
    /// either direction, nulls first or last, expressions, no limit, limits of one, some and more
    /// than all rows, with an offset; rows with equal keys come in their order in the table.
    #[tokio::test]
    async fn small_sorts_answer_as_datafusion_sorts() {
        let ctx = sample_context().await;
        let limits = SqlLimits::default();
        let states = PlanStates::of(&ctx);
        let orders = [
            "energy_per_token_joules, run_id",
            "energy_per_token_joules DESC, run_id DESC",
            "NULLIF(num_gpus, 2) NULLS FIRST, median_itl_ms DESC, run_id",
            "NULLIF(num_gpus, 4) DESC NULLS LAST, run_id",
            "max_num_seqs * num_gpus, task DESC, run_id",
            "model_id, gpu_model, num_gpus, max_num_seqs, run_id",
        ];
        let mut checked = 0;
        for order in orders {
            // (LIMIT 0 is planned as no rows, with no sort.)
            for limit in [
                "",
                " LIMIT 1",
                " LIMIT 7",
                " LIMIT 7 OFFSET 5",
                " LIMIT 100000",
            ] {
                for filter in ["task = 'gpqa' AND num_gpus <= 4", "num_gpus >= 1"] {
                    let sql = format!(
                        "SELECT run_id, num_gpus, energy_per_token_joules FROM llm_runs WHERE {filter} ORDER BY {order}{limit}"
                    );
                    let lifted = lift_parsed(&sql).unwrap();
                    let prepared = prepare(&ctx, &states, &lifted, &limits).await.unwrap();
                    let template = prepared.template.as_ref().expect(&sql);
                    let mut small = false;
                    let _ = template.apply(|n| {
                        small |= n.downcast_ref::<SmallSort>().is_some();
                        Ok(TreeNodeRecursion::Continue)
                    });
                    assert!(small, "{sql}");
                    let params = ParamValues::List(vec![]);
                    let ours = run_prepared(&states, &prepared, &lifted, &params, &limits, None)
                        .await
                        .unwrap();
                    let theirs = run_prepared(
                        &states,
                        &untemplated(&prepared),
                        &lifted,
                        &params,
                        &limits,
                        None,
                    )
                    .await
                    .unwrap();
                    assert_eq!(batch(&ours), batch(&theirs), "{sql}");
                    checked += usize::from(ours.rows > 1);
                }
            }
        }
        assert!(checked >= 40, "{checked}");
        // Equal keys: the table's order among them.
        let table = crate::sql::run(
            &ctx,
            "SELECT run_id, num_gpus FROM llm_runs",
            ParamValues::List(vec![]),
            &limits,
            None,
        )
        .await
        .unwrap();
        let table = batch(&table);
        let ids = table
            .column(0)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::StringArray>()
            .unwrap();
        let gpus = table
            .column(1)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .unwrap();
        let mut expected: Vec<(i64, &str)> = (0..table.num_rows())
            .map(|i| (gpus.value(i), ids.value(i)))
            .collect();
        expected.sort_by_key(|(g, _)| std::cmp::Reverse(*g));
        let sql =
            "SELECT run_id FROM llm_runs WHERE num_gpus >= 1 ORDER BY num_gpus DESC LIMIT 150";
        let lifted = lift_parsed(sql).unwrap();
        let prepared = prepare(&ctx, &states, &lifted, &limits).await.unwrap();
        let ours = run_prepared(
            &states,
            &prepared,
            &lifted,
            &ParamValues::List(vec![]),
            &limits,
            None,
        )
        .await
        .unwrap();
        let ours = batch(&ours);
        let ours = ours
            .column(0)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::StringArray>()
            .unwrap();
        let ours: Vec<&str> = ours.iter().map(|v| v.unwrap()).collect();
        let expected: Vec<&str> = expected.iter().take(150).map(|(_, id)| *id).collect();
        assert_eq!(ours, expected);
    }

    /// A template bound with a request's values is the plan DataFusion makes of the bound
    /// statement (the same operators and expressions, an `IN` list with its set lookup again) and
    /// answers the same rows, for every set of values, the client's placeholders among them, and
    /// with requests of one statement running at once.
    #[tokio::test]
    async fn templates_answer_as_bound_plans() {
        let ctx = sample_context().await;
        let limits = SqlLimits::default();
        let states = PlanStates::of(&ctx);
        let text = |p: &Arc<dyn ExecutionPlan>| {
            datafusion::physical_plan::displayable(p.as_ref())
                .indent(true)
                .to_string()
        };
        let statements: [(&str, Vec<ScalarValue>); 6] = [
            (
                "SELECT run_id, model_id, energy_per_token_joules FROM llm_runs WHERE task = 'gpqa' AND max_num_seqs >= 64 AND max_num_seqs <= 256 AND num_gpus <= 4 AND is_stable ORDER BY energy_per_token_joules, run_id LIMIT 9",
                vec![],
            ),
            (
                "SELECT run_id, gpu_model FROM llm_runs WHERE num_gpus IN (1, 2, 4, 8, 16) AND gpu_model = 'B200' AND median_itl_ms BETWEEN 5 AND 50.5 ORDER BY run_id",
                vec![],
            ),
            (
                "SELECT run_id, batch_size * 2 AS b FROM diffusion_runs WHERE gpu_model <> 'H100' AND batch_size > 1 ORDER BY 2 DESC, 1 LIMIT 5 OFFSET 3",
                vec![],
            ),
            (
                "SELECT run_id FROM llm_runs WHERE task = $1 AND num_gpus NOT IN (1, 3, 5, 8) AND energy_per_token_joules < 0.5 ORDER BY run_id",
                vec![ScalarValue::Utf8(Some("lm-arena-chat".into()))],
            ),
            (
                "SELECT * FROM (SELECT run_id, num_gpus FROM llm_runs WHERE num_gpus IN (2, 4) ORDER BY run_id LIMIT 40) t WHERE num_gpus = 2",
                vec![],
            ),
            (
                "SELECT run_id, max_num_seqs FROM llm_runs WHERE max_num_seqs >= $1 AND task = 'sourcegraph-fim' ORDER BY max_num_seqs DESC, run_id LIMIT 12",
                vec![ScalarValue::Int64(Some(32))],
            ),
        ];
        let mut differ = 0;
        let mut picks = 0;
        for (sql, given) in statements {
            let lifted = lift_parsed(sql).unwrap();
            let prepared = prepare(&ctx, &states, &lifted, &limits).await.unwrap();
            let template = prepared.template.as_ref().expect(sql);
            // Every template reads its table's rows, held; projections of columns are picks.
            let shown = text(template);
            assert!(
                shown.contains("Rows: batches=1") && !shown.contains("DataSourceExec"),
                "{shown}"
            );
            picks += usize::from(shown.contains("Pick: columns="));
            let plain = untemplated(&prepared);
            // Other values of the same statement: each lifted number moved, each string kept.
            let moved: Vec<ScalarValue> = lifted
                .values
                .iter()
                .map(|v| match v {
                    ScalarValue::Int64(Some(i)) => ScalarValue::Int64(Some(i * 2)),
                    ScalarValue::Float64(Some(f)) => ScalarValue::Float64(Some(f * 0.75)),
                    v => v.clone(),
                })
                .collect();
            let mut answers = Vec::new();
            for values in [&lifted.values, &moved] {
                let other = Lifted {
                    values: values.clone(),
                    ..lifted.clone()
                };
                let params = ParamValues::from(given.clone());
                // The plan: what DataFusion makes of the bound statement, operator for operator.
                let all =
                    bound_values(&prepared, given.iter().chain(values.iter()).cloned()).unwrap();
                let fresh = states
                    .lean
                    .query_planner()
                    .create_physical_plan(
                        &prepared
                            .plan
                            .clone()
                            .with_param_values(ParamValues::from(all.clone()))
                            .unwrap(),
                        &states.lean,
                    )
                    .await
                    .unwrap();
                assert_eq!(
                    text(&as_datafusion(bind(template, &all).unwrap()))
                        .replace("BoundFilter:", "FilterExec:"),
                    text(&fresh),
                    "{sql}"
                );
                let bound = run_prepared(&states, &prepared, &other, &params, &limits, None)
                    .await
                    .unwrap();
                let planned = run_prepared(&states, &plain, &other, &params, &limits, None)
                    .await
                    .unwrap();
                assert_eq!(batch(&bound), batch(&planned), "{sql} {values:?}");
                answers.push((other, params, batch(&bound)));
            }
            assert!(answers[0].2.num_rows() > 0, "{sql}");
            differ += usize::from(answers[0].2 != answers[1].2);
            // Both value sets at once, many times over, on the one template.
            let runs = (0..16).map(|i| {
                let (other, params, _) = &answers[i % 2];
                run_prepared(&states, &prepared, other, params, &limits, None)
            });
            for (i, r) in futures::future::join_all(runs)
                .await
                .into_iter()
                .enumerate()
            {
                assert_eq!(batch(&r.unwrap()), answers[i % 2].2, "{sql}");
            }
        }
        // The moved values asked other questions for most statements (a doubled bound can still
        // select the same runs).
        assert!(differ >= 4, "{differ}");
        assert!(picks >= 4, "{picks}");
        // A placeholder outside a filter (a projection's, a sort's): no template, the statement
        // is planned per request as before.
        for sql in [
            "SELECT run_id, num_gpus + $1 AS n FROM llm_runs WHERE task = 'gpqa' ORDER BY run_id",
            "SELECT run_id, max_num_seqs FROM llm_runs WHERE task = 'gpqa' ORDER BY abs(max_num_seqs - $1), run_id",
        ] {
            let lifted = lift_parsed(sql).unwrap();
            let p = prepare(&ctx, &states, &lifted, &limits).await.unwrap();
            assert!(p.simple && p.template.is_none(), "{sql}");
            let params = ParamValues::from(vec![ScalarValue::Int64(Some(3))]);
            let answer = run_prepared(&states, &p, &lifted, &params, &limits, None)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
            assert!(answer.rows > 0, "{sql}");
        }
    }
}
