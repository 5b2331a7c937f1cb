//! SQL functions of our own, on every SQL surface: `logistic_fit(batch, y)`, an aggregate that
//! fits the four-parameter logistic curve of a batch sweep (`engine::models::logistic`, the fit
//! of `POST /v1/models/logistic/fit`) to a group's points: `x = log2(max(int(batch), 1))`, the
//! points as given (a subquery of per-batch medians gives the fit of `/fits/logistic`). Its
//! value is a struct `{L, x0, k, b0, mse, r2, n}`; rows with a NULL or non-finite batch or y are
//! left out.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Float64Array, ListArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

use super::models::LogisticModel;
use super::models::logistic::batch_x;

/// The struct `logistic_fit` answers.
fn fit_fields() -> Fields {
    Fields::from(vec![
        Field::new("L", DataType::Float64, true),
        Field::new("x0", DataType::Float64, true),
        Field::new("k", DataType::Float64, true),
        Field::new("b0", DataType::Float64, true),
        Field::new("mse", DataType::Float64, true),
        Field::new("r2", DataType::Float64, true),
        Field::new("n", DataType::Int64, false),
    ])
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct LogisticFit {
    signature: Signature,
}

/// `logistic_fit(batch, y)`.
pub fn logistic_fit() -> AggregateUDF {
    AggregateUDF::new_from_impl(LogisticFit {
        signature: Signature::exact(
            vec![DataType::Float64, DataType::Float64],
            Volatility::Immutable,
        ),
    })
}

impl AggregateUDFImpl for LogisticFit {
    fn name(&self) -> &str {
        "logistic_fit"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Struct(fit_fields()))
    }

    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Points::default()))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let list = DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)));
        Ok(vec![
            Arc::new(Field::new(format!("{}[x]", args.name), list.clone(), true)),
            Arc::new(Field::new(format!("{}[y]", args.name), list, true)),
        ])
    }
}

/// A group's points so far.
#[derive(Debug, Default)]
struct Points {
    x: Vec<f64>,
    y: Vec<f64>,
}

fn floats(a: &ArrayRef) -> Result<&Float64Array> {
    match a.as_any().downcast_ref::<Float64Array>() {
        Some(f) => Ok(f),
        None => exec_err!(
            "logistic_fit: expected DOUBLE arguments, got {}",
            a.data_type()
        ),
    }
}

impl Points {
    /// Keep the pairs where both are present and finite; `to_x` maps the first of each.
    fn push(&mut self, a: &Float64Array, b: &Float64Array, to_x: impl Fn(f64) -> f64) {
        for i in 0..a.len() {
            if a.is_null(i) || b.is_null(i) {
                continue;
            }
            let (u, v) = (a.value(i), b.value(i));
            if u.is_finite() && v.is_finite() {
                self.x.push(to_x(u));
                self.y.push(v);
            }
        }
    }
}

impl Accumulator for Points {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let (batch, y) = (floats(&values[0])?, floats(&values[1])?);
        self.push(batch, y, batch_x);
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let list = |v: &[f64]| {
            ScalarValue::List(ScalarValue::new_list_nullable(
                &v.iter()
                    .map(|f| ScalarValue::Float64(Some(*f)))
                    .collect::<Vec<_>>(),
                &DataType::Float64,
            ))
        };
        Ok(vec![list(&self.x), list(&self.y)])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = |a: &ArrayRef| -> Result<ListArray> {
            match a.as_any().downcast_ref::<ListArray>() {
                Some(l) => Ok(l.clone()),
                None => exec_err!("logistic_fit: a state that is not a list"),
            }
        };
        let (xs, ys) = (lists(&states[0])?, lists(&states[1])?);
        for i in 0..xs.len() {
            if xs.is_null(i) || ys.is_null(i) {
                continue;
            }
            let (x, y) = (xs.value(i), ys.value(i));
            // Already x values (and already finite): kept as they are.
            self.push(floats(&x)?, floats(&y)?, |x| x);
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let (m, q) = LogisticModel::fit_with_quality(&self.x, &self.y);
        let f =
            |v: f64| -> ArrayRef { Arc::new(Float64Array::from(vec![v.is_finite().then_some(v)])) };
        let n: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(vec![
            self.x.len() as i64,
        ]));
        let fields = fit_fields();
        let array = datafusion::arrow::array::StructArray::try_new(
            fields,
            vec![f(m.l), f(m.x0), f(m.k), f(m.b0), f(q.mse), f(q.r2), n],
            None,
        )?;
        Ok(ScalarValue::Struct(Arc::new(array)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + (self.x.capacity() + self.y.capacity()) * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_fit_equals_the_model_fit_and_skips_missing_points() {
        let batch = [8.0, 16.0, 32.0, 64.0, 128.0, 256.0, f64::NAN];
        let y = [100.0, 180.0, 300.0, 420.0, 480.0, 500.0, 1.0];
        let mut acc = Points::default();
        let a: ArrayRef = Arc::new(Float64Array::from(batch.to_vec()));
        let mut with_null: Vec<Option<f64>> = y.iter().map(|v| Some(*v)).collect();
        with_null[0] = None;
        let b: ArrayRef = Arc::new(Float64Array::from(with_null));
        acc.update_batch(&[a, b]).unwrap();
        let x: Vec<f64> = batch[1..6].iter().map(|&v| batch_x(v)).collect();
        let (m, q) = LogisticModel::fit_with_quality(&x, &y[1..6]);
        let ScalarValue::Struct(s) = acc.evaluate().unwrap() else {
            panic!("a struct")
        };
        let col = |name: &str| {
            s.column_by_name(name)
                .unwrap()
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .value(0)
        };
        assert_eq!(
            (col("L"), col("x0"), col("k"), col("b0"), col("mse")),
            (m.l, m.x0, m.k, m.b0, q.mse)
        );
        let n = s
            .column_by_name("n")
            .unwrap()
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .unwrap()
            .value(0);
        assert_eq!(n, 5);
    }

    #[test]
    fn partial_states_merge_to_the_same_fit() {
        let batch = [8.0, 16.0, 32.0, 64.0, 128.0, 256.0];
        let y = [100.0, 180.0, 300.0, 420.0, 480.0, 500.0];
        let arr = |v: &[f64]| -> ArrayRef { Arc::new(Float64Array::from(v.to_vec())) };
        let mut whole = Points::default();
        whole.update_batch(&[arr(&batch), arr(&y)]).unwrap();
        let (mut a, mut b) = (Points::default(), Points::default());
        a.update_batch(&[arr(&batch[..3]), arr(&y[..3])]).unwrap();
        b.update_batch(&[arr(&batch[3..]), arr(&y[3..])]).unwrap();
        let state: Vec<ArrayRef> = b
            .state()
            .unwrap()
            .into_iter()
            .map(|s| s.to_array().unwrap())
            .collect();
        a.merge_batch(&state).unwrap();
        assert_eq!(a.x, whole.x);
        assert_eq!(a.evaluate().unwrap(), whole.evaluate().unwrap());
    }
}
