//! What the wire protocol's clients see beside the tables: `pg_catalog` (pg_class, pg_namespace,
//! pg_attribute, pg_type... over our tables) and the functions psql's `\d`, Grafana, Metabase,
//! DBeaver and SQLAlchemy's reflection call, from datafusion-pg-catalog; and a `version()` in
//! PostgreSQL's form, which drivers parse for the server's version.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};
use datafusion::prelude::SessionContext;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_postgres::datafusion_pg_catalog::setup_pg_catalog;

use crate::service::sql::Surface;

/// The PostgreSQL version the server answers as (what `server_version` and `version()` say).
pub(super) const SERVER_VERSION: &str = "16.6";

/// The wire protocol's surface: the shared tables plus `pg_catalog`.
pub const SURFACE: Surface = Surface {
    name: "postgres",
    setup,
};

fn setup(ctx: &SessionContext) -> Result<(), String> {
    setup_pg_catalog(ctx, "datafusion", EmptyContextProvider).map_err(|e| e.to_string())?;
    let text = format!(
        "PostgreSQL {SERVER_VERSION} (mlenergy-server {}, Apache DataFusion {})",
        env!("CARGO_PKG_VERSION"),
        datafusion::DATAFUSION_VERSION
    );
    let version = create_udf(
        "version",
        vec![],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |_: &[ColumnarValue]| {
            Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(text.clone()))))
        }),
    );
    ctx.register_udf(version);
    ctx.register_udf(to_regtype());
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::new_from_impl(
        JsonBuildObject::new(),
    ));
    Ok(())
}

/// `json_build_object(key, value, ...)`: a JSON object as text, each value written as its JSON
/// type (numbers, booleans, null, else strings), as PostgreSQL's; DataFusion has none.
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonBuildObject {
    signature: datafusion::logical_expr::Signature,
}

impl JsonBuildObject {
    fn new() -> JsonBuildObject {
        JsonBuildObject {
            signature: datafusion::logical_expr::Signature::variadic_any(Volatility::Immutable),
        }
    }
}

impl datafusion::logical_expr::ScalarUDFImpl for JsonBuildObject {
    fn name(&self) -> &str {
        "json_build_object"
    }
    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> datafusion::common::Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> datafusion::common::Result<ColumnarValue> {
        use datafusion::arrow::array::StringBuilder;
        if !args.args.len().is_multiple_of(2) {
            return datafusion::common::plan_err!(
                "json_build_object: the arguments must be key, value pairs"
            );
        }
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let mut out = StringBuilder::new();
        for row in 0..args.number_rows {
            let mut object = serde_json::Map::new();
            for pair in arrays.chunks(2) {
                let key = ScalarValue::try_from_array(&pair[0], row)?;
                let value = ScalarValue::try_from_array(&pair[1], row)?;
                let key = if key.is_null() {
                    return datafusion::common::exec_err!("json_build_object: a key is null");
                } else {
                    key.to_string()
                };
                object.insert(key, json_value(&value));
            }
            out.append_value(serde_json::Value::Object(object).to_string());
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

fn json_value(v: &ScalarValue) -> serde_json::Value {
    use serde_json::Value as J;
    if v.is_null() {
        return J::Null;
    }
    match v {
        ScalarValue::Boolean(Some(b)) => J::Bool(*b),
        ScalarValue::Float32(Some(f)) => {
            serde_json::Number::from_f64(*f as f64).map_or(J::Null, J::Number)
        }
        ScalarValue::Float64(Some(f)) => {
            serde_json::Number::from_f64(*f).map_or(J::Null, J::Number)
        }
        v if v.data_type().is_integer() => v
            .to_string()
            .parse::<i64>()
            .map(J::from)
            .unwrap_or_else(|_| J::String(v.to_string())),
        v => J::String(v.to_string()),
    }
}

/// The oid of a built-in type by any of its names, as PostgreSQL's catalog numbers it.
fn type_oid(name: &str) -> Option<i32> {
    let n = name.trim().trim_matches('"').to_ascii_lowercase();
    let n = n.strip_prefix("pg_catalog.").unwrap_or(&n);
    Some(match n {
        "bool" | "boolean" => 16,
        "bytea" => 17,
        "char" => 18,
        "name" => 19,
        "int8" | "bigint" => 20,
        "int2" | "smallint" => 21,
        "int4" | "integer" | "int" => 23,
        "regproc" => 24,
        "text" => 25,
        "oid" => 26,
        "json" => 114,
        "float4" | "real" => 700,
        "float8" | "double precision" => 701,
        "varchar" | "character varying" => 1043,
        "date" => 1082,
        "time" | "time without time zone" => 1083,
        "timestamp" | "timestamp without time zone" => 1114,
        "timestamptz" | "timestamp with time zone" => 1184,
        "interval" => 1186,
        "numeric" | "decimal" => 1700,
        "regclass" => 2205,
        "regtype" => 2206,
        "uuid" => 2950,
        "jsonb" => 3802,
        "text[]" | "_text" => 1009,
        "int4[]" | "_int4" => 1007,
        "int8[]" | "_int8" => 1016,
        "float8[]" | "_float8" => 1022,
        _ => return None,
    })
}

/// `to_regtype(name)`: the type's oid, or NULL for a type this server does not have (drivers
/// ask for extension types such as hstore this way).
fn to_regtype() -> datafusion::logical_expr::ScalarUDF {
    use datafusion::arrow::array::{Array, Int32Array, StringArray};
    create_udf(
        "to_regtype",
        vec![DataType::Utf8],
        DataType::Int32,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| match &args[0] {
            ColumnarValue::Scalar(s) => {
                let name = match s {
                    ScalarValue::Utf8(n) | ScalarValue::LargeUtf8(n) | ScalarValue::Utf8View(n) => {
                        n.as_deref()
                    }
                    _ => None,
                };
                Ok(ColumnarValue::Scalar(ScalarValue::Int32(
                    name.and_then(type_oid),
                )))
            }
            ColumnarValue::Array(a) => {
                let a = datafusion::arrow::compute::cast(a, &DataType::Utf8)?;
                let names = a
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .expect("cast to Utf8");
                let oids: Int32Array = (0..names.len())
                    .map(|i| {
                        (!names.is_null(i))
                            .then(|| type_oid(names.value(i)))
                            .flatten()
                    })
                    .collect();
                Ok(ColumnarValue::Array(Arc::new(oids)))
            }
        }),
    )
}
