//! The native part of `anygrad.profiler`: a recording of every op between `start` and `stop`
//! (the library's `profiler::start` / `Recording::finish`), which the Python context manager
//! `anygrad.profiler.profile` opens and closes around its block, and the finished profile's
//! per-op averages, table and Chrome trace.

use anygrad::profiler::{self, Profile, Recording};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{run, runtime_error};

/// One profile: recording until `stop`, then readable.
#[pyclass(name = "ProfileRecording", module = "anygrad._native")]
pub struct PyProfile {
    recording: Option<Recording>,
    profile: Option<Profile>,
}

impl PyProfile {
    /// The finished profile, or an error naming `op` while it still records.
    fn finished(&self, op: &str) -> PyResult<&Profile> {
        self.profile.as_ref().ok_or_else(|| {
            runtime_error(
                op,
                "the profile is still recording (leave the `with` block first)",
            )
        })
    }
}

#[pymethods]
impl PyProfile {
    /// Start recording every op (an error while another profile records).
    #[staticmethod]
    fn start() -> PyResult<PyProfile> {
        let recording = run("profile", profiler::start)?;
        Ok(PyProfile {
            recording: Some(recording),
            profile: None,
        })
    }

    /// Stop recording (a second call changes nothing).
    fn stop(&mut self) {
        if let Some(recording) = self.recording.take() {
            self.profile = Some(recording.finish());
        }
    }

    /// Per op name: calls, host and device totals (µs), bytes allocated, CPU fallbacks.
    fn key_averages<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let profile = self.finished("key_averages")?;
        profile
            .key_averages()
            .0
            .iter()
            .map(|row| {
                let entry = PyDict::new(py);
                entry.set_item("name", &row.name)?;
                entry.set_item("count", row.calls)?;
                entry.set_item("cpu_time_total", row.host_us)?;
                entry.set_item("device_time_total", row.device_us)?;
                entry.set_item("bytes_allocated", row.bytes_allocated)?;
                entry.set_item("cpu_fallbacks", row.fallback_calls)?;
                Ok(entry)
            })
            .collect()
    }

    /// The per-op table, like PyTorch's `key_averages().table()`.
    fn table(&self) -> PyResult<String> {
        Ok(self.finished("table")?.key_averages().table())
    }

    /// The ops recorded (their count).
    fn event_count(&self) -> PyResult<usize> {
        Ok(self.finished("events")?.events.len())
    }

    /// Wall time from start to stop, µs.
    fn total_us(&self) -> PyResult<f64> {
        Ok(self.finished("total_us")?.total_us)
    }

    /// Write the Chrome trace (open it in Perfetto or chrome://tracing).
    fn export_chrome_trace(&self, path: std::path::PathBuf) -> PyResult<()> {
        let profile = self.finished("export_chrome_trace")?;
        run("export_chrome_trace", || profile.export_chrome_trace(&path))
    }
}

/// Add the profile class to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyProfile>()
}
