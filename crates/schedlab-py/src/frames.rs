//! Trace text as Arrow record batches, one per event name
//! (`schedlab_core::trace::frames`), handed to pyarrow through the Arrow C
//! data interface without copying the columns.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::pyarrow::ToPyArrow;
use arrow::record_batch::RecordBatch;
use pyo3::prelude::*;
use schedlab_core::trace::{EventFrame, FrameColumn, FIXED_COLUMNS};

/// One event's table as a record batch: `Time` (s), `__cpu`, `__pid`,
/// `__comm`, `__line`, then its fields (int64 or utf8, nullable).
fn batch(frame: EventFrame) -> Result<RecordBatch, arrow::error::ArrowError> {
    let [time, cpu, pid, comm, line] = FIXED_COLUMNS;
    let mut fields = vec![
        Field::new(time, DataType::Float64, false),
        Field::new(cpu, DataType::Int64, false),
        Field::new(pid, DataType::Int64, false),
        Field::new(comm, DataType::Utf8, false),
        Field::new(line, DataType::UInt64, false),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Float64Array::from(frame.time_s)),
        Arc::new(Int64Array::from(frame.cpu)),
        Arc::new(Int64Array::from(frame.pid)),
        Arc::new(StringArray::from(frame.comm)),
        Arc::new(UInt64Array::from(frame.line)),
    ];
    for (name, col) in frame.fields {
        match col {
            FrameColumn::Int(v) => {
                fields.push(Field::new(name, DataType::Int64, true));
                columns.push(Arc::new(Int64Array::from(v)));
            }
            FrameColumn::Text(v) => {
                fields.push(Field::new(name, DataType::Utf8, true));
                columns.push(Arc::new(StringArray::from(v)));
            }
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}

/// The tables of ftrace-format `text` (ftrace, trace-cmd report, perf
/// script): `([(event name, pyarrow.RecordBatch), ...], lines skipped)`,
/// events in order of first appearance.
#[pyfunction]
pub fn trace_frames(py: Python<'_>, text: String) -> PyResult<(Vec<(String, PyObject)>, u64)> {
    let (batches, skipped) = py
        .allow_threads(|| {
            let frames = schedlab_core::trace::frames_of(&text);
            let batches: Result<Vec<(String, RecordBatch)>, arrow::error::ArrowError> =
                frames.events.into_iter().map(|f| Ok((f.name.clone(), batch(f)?))).collect();
            batches.map(|b| (b, frames.skipped))
        })
        .map_err(|e| crate::errors::SimulationError::new_err(format!("trace tables: {e}")))?;
    let tables = batches.into_iter().map(|(name, b)| Ok((name, b.to_pyarrow(py)?))).collect::<PyResult<Vec<_>>>()?;
    Ok((tables, skipped))
}
