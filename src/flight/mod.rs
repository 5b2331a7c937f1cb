//! Arrow Flight SQL (`--flight-bind`): ADBC's Flight SQL driver, the Flight SQL JDBC driver and
//! Grafana's Flight SQL plugin read the same tables as `/v1/sql`, as Arrow record batches, under
//! the same read-only policy, limits and gate (`service::sql`, plain surface). Statement queries
//! and prepared statements (parameters bound with DoPut); catalogs, schemas, tables, table types
//! and SqlInfo for the drivers' metadata calls. Stateless: a ticket or prepared-statement handle
//! carries its SQL (and bound parameters), so any replica answers it; what a handle holds is
//! planned under the same policy as any statement, so a forged one gains nothing.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest,
    ActionCreatePreparedStatementResult, Any, CommandGetCatalogs, CommandGetDbSchemas,
    CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables, CommandPreparedStatementQuery,
    CommandStatementQuery, DoPutPreparedStatementResult, ProstMessageExt, SqlInfo,
    TicketStatementQuery,
};
use arrow_flight::{
    FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse, IpcMessage,
    SchemaAsIpc, Ticket,
};
use bytes::Bytes;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::writer::IpcWriteOptions;
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::logical_expr::LogicalPlan;
use futures::{Stream, TryStreamExt, stream};
use prost::Message;
use tonic::{Request, Response, Status, Streaming};

use crate::engine::sql::{SqlAnswer, SqlError};
use crate::service::Service;
use crate::service::sql::{SqlFailure, Surface};

/// The catalog and schema every table is in.
const CATALOG: &str = "datafusion";
const SCHEMA: &str = "public";

static SQL_INFO: LazyLock<SqlInfoData> = LazyLock::new(|| {
    let mut b = SqlInfoDataBuilder::new();
    b.append(SqlInfo::FlightSqlServerName, "mlenergy-server");
    b.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    b.append(SqlInfo::FlightSqlServerArrowVersion, "59");
    b.append(SqlInfo::FlightSqlServerReadOnly, true);
    b.append(SqlInfo::FlightSqlServerSql, true);
    b.append(SqlInfo::FlightSqlServerSubstrait, false);
    // SqlSupportedTransaction::None
    b.append(SqlInfo::FlightSqlServerTransaction, 0i32);
    b.append(SqlInfo::FlightSqlServerCancel, false);
    b.append(SqlInfo::SqlDdlCatalog, false);
    b.append(SqlInfo::SqlDdlSchema, false);
    b.append(SqlInfo::SqlDdlTable, false);
    b.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
    b.build().expect("SqlInfo values of their declared types")
});

/// A prepared statement's handle: its SQL and, once bound, its parameters as an Arrow IPC
/// stream of one row. Layout: `mlq1`, the SQL's length (u32 LE), the SQL, the IPC bytes.
struct Handle {
    sql: String,
    params: Vec<ScalarValue>,
}

const HANDLE_MAGIC: &[u8] = b"mlq1";

impl Handle {
    fn encode(sql: &str, params: Option<&RecordBatch>) -> Result<Bytes, Status> {
        let mut out = Vec::with_capacity(8 + sql.len());
        out.extend_from_slice(HANDLE_MAGIC);
        out.extend_from_slice(&(sql.len() as u32).to_le_bytes());
        out.extend_from_slice(sql.as_bytes());
        if let Some(batch) = params {
            let mut w =
                datafusion::arrow::ipc::writer::StreamWriter::try_new(&mut out, &batch.schema())
                    .map_err(|e| Status::internal(e.to_string()))?;
            w.write(batch)
                .map_err(|e| Status::internal(e.to_string()))?;
            w.finish().map_err(|e| Status::internal(e.to_string()))?;
        }
        Ok(out.into())
    }

    fn decode(bytes: &[u8]) -> Result<Handle, Status> {
        let bad = || Status::invalid_argument("not a prepared statement handle of this server");
        let rest = bytes.strip_prefix(HANDLE_MAGIC).ok_or_else(bad)?;
        let len = u32::from_le_bytes(
            rest.get(..4)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        ) as usize;
        let sql = rest.get(4..4 + len).ok_or_else(bad)?;
        let sql = std::str::from_utf8(sql).map_err(|_| bad())?.to_owned();
        let ipc = &rest[4 + len..];
        let mut params = Vec::new();
        if !ipc.is_empty() {
            let reader = datafusion::arrow::ipc::reader::StreamReader::try_new(ipc, None)
                .map_err(|_| bad())?;
            if let Some(batch) = reader.into_iter().next() {
                let batch = batch.map_err(|_| bad())?;
                params = first_row(&batch)?;
            }
        }
        Ok(Handle { sql, params })
    }
}

/// The first row of a parameter batch, one value per column.
fn first_row(batch: &RecordBatch) -> Result<Vec<ScalarValue>, Status> {
    if batch.num_rows() == 0 {
        return Ok(Vec::new());
    }
    batch
        .columns()
        .iter()
        .map(|c| {
            ScalarValue::try_from_array(c, 0).map_err(|e| Status::invalid_argument(e.to_string()))
        })
        .collect()
}

fn sql_status(e: SqlError) -> Status {
    let message = e.to_string();
    match e {
        SqlError::Refused(_) => Status::permission_denied(message),
        SqlError::Invalid(_) => Status::invalid_argument(message),
        SqlError::Timeout(_) => Status::deadline_exceeded(message),
        SqlError::Memory { .. } | SqlError::Rows(_) | SqlError::Value(_) => {
            Status::resource_exhausted(message)
        }
        SqlError::Internal(_) => Status::internal(message),
    }
}

fn failure_status(f: SqlFailure) -> Status {
    match f {
        SqlFailure::Busy { .. } => Status::unavailable(f.to_string()),
        SqlFailure::Query(e) => sql_status(e),
    }
}

fn ipc_schema(schema: &Schema) -> Result<Bytes, Status> {
    let message: IpcMessage = SchemaAsIpc::new(schema, &IpcWriteOptions::default())
        .try_into()
        .map_err(|e: datafusion::arrow::error::ArrowError| Status::internal(e.to_string()))?;
    Ok(message.0)
}

/// The placeholders `$1`, `$2`... of a plan as the fields of a parameter schema.
fn parameter_schema(plan: &LogicalPlan) -> Result<Schema, Status> {
    let types = plan
        .get_parameter_types()
        .map_err(|e| Status::invalid_argument(e.to_string()))?;
    let mut numbered: Vec<(usize, String, DataType)> = types
        .into_iter()
        .filter_map(|(id, t)| {
            let n = id.trim_start_matches('$').parse::<usize>().ok()?;
            Some((n, id, t.unwrap_or(DataType::Null)))
        })
        .collect();
    numbered.sort_by_key(|(n, _, _)| *n);
    Ok(Schema::new(
        numbered
            .into_iter()
            .map(|(_, id, t)| Field::new(id, t, true))
            .collect::<Vec<_>>(),
    ))
}

type DoGetStream = Pin<Box<dyn Stream<Item = Result<arrow_flight::FlightData, Status>> + Send>>;

fn batches_stream(schema: SchemaRef, batches: Vec<RecordBatch>) -> DoGetStream {
    let encoded = FlightDataEncoderBuilder::new()
        .with_schema(schema)
        .build(stream::iter(batches.into_iter().map(Ok::<_, FlightError>)))
        .map_err(Status::from);
    Box::pin(encoded)
}

/// The FlightInfo of a metadata command: the builder's schema, the command itself as the ticket.
fn command_info(
    command: &impl ProstMessageExt,
    schema: &Schema,
    request: Request<FlightDescriptor>,
) -> Result<Response<FlightInfo>, Status> {
    Ok(Response::new(info(
        schema,
        command.as_any().encode_to_vec(),
        request.into_inner(),
    )?))
}

/// A metadata answer of one batch.
fn one_batch(
    batch: Result<RecordBatch, impl std::fmt::Display>,
) -> Result<Response<DoGetStream>, Status> {
    let batch = batch.map_err(|e| Status::internal(e.to_string()))?;
    Ok(Response::new(batches_stream(batch.schema(), vec![batch])))
}

fn info(
    schema: &Schema,
    ticket: Vec<u8>,
    descriptor: FlightDescriptor,
) -> Result<FlightInfo, Status> {
    Ok(FlightInfo::new()
        .try_with_schema(schema)
        .map_err(|e| Status::internal(e.to_string()))?
        .with_endpoint(FlightEndpoint::new().with_ticket(Ticket::new(ticket)))
        .with_descriptor(descriptor))
}

/// The Flight SQL service over the served snapshot.
#[derive(Clone)]
pub struct FlightSql {
    service: Arc<Service>,
}

impl FlightSql {
    async fn plan(&self, sql: &str) -> Result<LogicalPlan, Status> {
        let sql = &number_placeholders(sql);
        let snapshot = self.service.snapshot();
        self.service
            .sql_plan(&Surface::PLAIN, &snapshot, sql)
            .await
            .map_err(sql_status)
    }

    async fn run(&self, sql: &str, params: Vec<ScalarValue>) -> Result<SqlAnswer, Status> {
        let sql = &number_placeholders(sql);
        let snapshot = self.service.snapshot();
        self.service
            .sql(
                &Surface::PLAIN,
                &snapshot,
                sql,
                ParamValues::from(params),
                None,
            )
            .await
            .map_err(failure_status)
    }

    async fn tables(&self) -> Result<Vec<(String, SchemaRef)>, Status> {
        let snapshot = self.service.snapshot();
        self.service
            .sql_tables(&Surface::PLAIN, &snapshot)
            .await
            .map_err(sql_status)
    }
}

/// JDBC's and ADBC's `?` placeholders numbered as DataFusion's `$1`, `$2`... in the order they
/// are written; SQL without `?` is returned as it is.
fn number_placeholders(sql: &str) -> String {
    use datafusion::sql::sqlparser::ast::{Expr, Value, visit_expressions_mut};
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    if !sql.contains('?') {
        return sql.to_owned();
    }
    let Ok(mut statements) = crate::engine::sql::parse_statements(&GenericDialect {}, sql) else {
        return sql.to_owned();
    };
    let mut n = 0usize;
    let _ = visit_expressions_mut(&mut statements, |e| {
        if let Expr::Value(v) = e
            && matches!(&v.value, Value::Placeholder(p) if p == "?")
        {
            n += 1;
            v.value = Value::Placeholder(format!("${n}"));
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    if n == 0 {
        return sql.to_owned();
    }
    statements
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

fn statement_sql(handle: &[u8]) -> Result<String, Status> {
    String::from_utf8(handle.to_vec())
        .map_err(|_| Status::invalid_argument("the statement ticket is not UTF-8 SQL"))
}

#[tonic::async_trait]
impl FlightSqlService for FlightSql {
    type FlightService = FlightSql;

    /// No authentication: an empty handshake is answered with an empty token.
    async fn do_handshake(
        &self,
        _request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<
        Response<Pin<Box<dyn Stream<Item = Result<HandshakeResponse, Status>> + Send>>>,
        Status,
    > {
        let answer = HandshakeResponse {
            protocol_version: 0,
            payload: Bytes::new(),
        };
        Ok(Response::new(Box::pin(stream::once(async { Ok(answer) }))))
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let plan = self.plan(&query.query).await?;
        let ticket = TicketStatementQuery {
            statement_handle: query.query.clone().into(),
        };
        let schema = plan.schema().as_arrow().clone();
        Ok(Response::new(info(
            &schema,
            ticket.as_any().encode_to_vec(),
            request.into_inner(),
        )?))
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        _request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let sql = statement_sql(&ticket.statement_handle)?;
        let answer = self.run(&sql, Vec::new()).await?;
        Ok(Response::new(batches_stream(answer.schema, answer.batches)))
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        _request: Request<arrow_flight::Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let plan = self.plan(&query.query).await?;
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: Handle::encode(&query.query, None)?,
            dataset_schema: ipc_schema(plan.schema().as_arrow())?,
            parameter_schema: ipc_schema(&parameter_schema(&plan)?)?,
        })
    }

    async fn do_put_prepared_statement_query(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<DoPutPreparedStatementResult, Status> {
        let handle = Handle::decode(&query.prepared_statement_handle)?;
        let stream = request.into_inner().map_err(FlightError::from);
        let batches: Vec<RecordBatch> =
            arrow_flight::decode::FlightRecordBatchStream::new_from_flight_data(stream)
                .try_collect()
                .await
                .map_err(Status::from)?;
        let batch = batches.into_iter().find(|b| b.num_rows() > 0);
        Ok(DoPutPreparedStatementResult {
            prepared_statement_handle: Some(Handle::encode(&handle.sql, batch.as_ref())?),
        })
    }

    async fn get_flight_info_prepared_statement(
        &self,
        cmd: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let handle = Handle::decode(&cmd.prepared_statement_handle)?;
        let plan = self.plan(&handle.sql).await?;
        let schema = plan.schema().as_arrow().clone();
        Ok(Response::new(info(
            &schema,
            cmd.as_any().encode_to_vec(),
            request.into_inner(),
        )?))
    }

    async fn do_get_prepared_statement(
        &self,
        cmd: CommandPreparedStatementQuery,
        _request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let handle = Handle::decode(&cmd.prepared_statement_handle)?;
        let answer = self.run(&handle.sql, handle.params).await?;
        Ok(Response::new(batches_stream(answer.schema, answer.batches)))
    }

    /// Nothing is kept per prepared statement, so closing one has nothing to free.
    async fn do_action_close_prepared_statement(
        &self,
        _query: ActionClosePreparedStatementRequest,
        _request: Request<arrow_flight::Action>,
    ) -> Result<(), Status> {
        Ok(())
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder(&SQL_INFO).schema();
        command_info(&query, &schema, request)
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        _request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        one_batch(query.into_builder(&SQL_INFO).build())
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.into_builder().schema();
        command_info(&query, &schema, request)
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        _request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let mut b = query.into_builder();
        b.append(CATALOG);
        one_batch(b.build())
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        command_info(&query, &schema, request)
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        _request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let mut b = query.into_builder();
        b.append(CATALOG, SCHEMA);
        one_batch(b.build())
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        command_info(&query, &schema, request)
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        _request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let tables = self.tables().await?;
        let mut b = query.into_builder();
        for (name, schema) in &tables {
            b.append(CATALOG, SCHEMA, name, "TABLE", schema)
                .map_err(|e| Status::internal(e.to_string()))?;
        }
        one_batch(b.build())
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.into_builder().schema();
        command_info(&query, &schema, request)
    }

    async fn do_get_table_types(
        &self,
        query: CommandGetTableTypes,
        _request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let mut b = query.into_builder();
        b.append("TABLE");
        one_batch(b.build())
    }

    async fn do_get_fallback(
        &self,
        _request: Request<Ticket>,
        message: Any,
    ) -> Result<Response<<Self as FlightService>::DoGetStream>, Status> {
        Err(Status::unimplemented(format!(
            "{} is not served: statement queries, prepared statements and the catalog, schema, table, table type and SqlInfo calls are",
            message.type_url
        )))
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}

/// Listen on `addr` and serve Flight SQL from a task of its own (until the process stops);
/// the bound address is returned.
pub async fn start(service: Arc<Service>, addr: SocketAddr) -> Result<SocketAddr, String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot serve Flight SQL on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    // No Nagle: a small answer waits for no delayed ACK.
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let svc = FlightServiceServer::new(FlightSql { service }).max_decoding_message_size(16 << 20);
    tokio::spawn(async move {
        if let Err(e) = tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming(incoming)
            .await
        {
            tracing::error!(error = %e, "Flight SQL server stopped");
        }
    });
    Ok(bound)
}
