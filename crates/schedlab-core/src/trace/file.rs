//! A trace written to a file while the run goes, in either format, so that
//! a long run or a large machine never holds its whole trace in memory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use super::ftrace::{FtraceWriter, IoWriter};
use super::perfetto::PerfettoWriter;
use super::TimedEvent;

/// The format of a trace file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// ftrace text (`/sys/kernel/tracing/trace` format).
    Ftrace,
    /// A Perfetto protobuf trace.
    Perfetto,
}

/// Where to write a run's trace.
#[derive(Clone, Debug)]
pub struct TraceFile {
    /// The file (created or truncated).
    pub path: PathBuf,
    /// Its format.
    pub format: TraceFormat,
}

/// The tasks a trace names: `names[t]`, `prios[t]`, `kthreads[t]`.
pub struct TraceTasks<'a> {
    /// Names (comms before cutting).
    pub names: &'a [String],
    /// `p->prio`.
    pub prios: &'a [i32],
    /// Per-CPU kernel threads.
    pub kthreads: &'a [bool],
    /// CPUs of the machine.
    pub nr_cpus: usize,
}

/// An open trace file being written.
pub enum TraceFileWriter {
    /// ftrace text.
    Ftrace(FtraceWriter, IoWriter<BufWriter<File>>),
    /// Perfetto.
    Perfetto(PerfettoWriter<BufWriter<File>>),
}

fn io_err(w: &mut IoWriter<BufWriter<File>>) -> std::io::Error {
    w.error.take().unwrap_or_else(|| std::io::Error::other("formatting failed"))
}

impl TraceFileWriter {
    /// Create `file` and write its header (ftrace) or process tree (Perfetto).
    pub fn create(file: &TraceFile, tasks: &TraceTasks<'_>) -> std::io::Result<Self> {
        let out = BufWriter::with_capacity(1 << 20, File::create(&file.path)?);
        Ok(match file.format {
            TraceFormat::Ftrace => {
                let w = FtraceWriter::new(tasks.names.to_vec(), tasks.nr_cpus)
                    .with_prios(tasks.prios.to_vec())
                    .with_kthreads(tasks.kthreads);
                let mut io = IoWriter::new(out);
                // The entry count is not known while streaming: 0/0, as a
                // kernel buffer that was read while being written says.
                if w.write_header(&mut io, None).is_err() {
                    return Err(io_err(&mut io));
                }
                TraceFileWriter::Ftrace(w, io)
            }
            TraceFormat::Perfetto => TraceFileWriter::Perfetto(PerfettoWriter::new(
                out,
                tasks.names,
                tasks.prios,
                tasks.kthreads,
                tasks.nr_cpus,
            )?),
        })
    }

    /// Append events.
    pub fn write_events(&mut self, events: &[TimedEvent]) -> std::io::Result<()> {
        match self {
            TraceFileWriter::Ftrace(w, io) => {
                for e in events {
                    if w.write_event(io, e).is_err() {
                        return Err(io_err(io));
                    }
                }
                Ok(())
            }
            TraceFileWriter::Perfetto(w) => w.write_events(events),
        }
    }

    /// Flush and close; with `incomplete`, first mark the trace as the
    /// record of a run that did not finish (a comment line in ftrace text; an
    /// instant event on CPU 0's decision track in Perfetto).
    pub fn finish(self, incomplete: Option<&str>) -> std::io::Result<()> {
        match self {
            TraceFileWriter::Ftrace(_, mut io) => {
                if let Some(why) = incomplete {
                    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
                    writeln!(io.inner, "# schedlab: INCOMPLETE trace, the run did not finish: {why}")?;
                }
                io.inner.flush()
            }
            TraceFileWriter::Perfetto(mut w) => {
                if let Some(why) = incomplete {
                    w.mark_incomplete(why)?;
                }
                w.finish().map(|_| ())
            }
        }
    }
}
