//! The compiled pipelines kept on disk between runs, where the driver lets us (wgpu's
//! pipeline cache: Vulkan). A driver turns each kernel into machine code when its pipeline is
//! created, and on NVIDIA's a tensor-core kernel takes 0.5-2.4 s; with the cache, a second
//! process on the same machine loads that code instead of compiling it again.
//!
//! - The file is `wgpu_pipeline_cache_vulkan_<vendor>_<device>.bin` (wgpu's key for the
//!   adapter) in the autotuner's cache directory (`$ANYGRAD_CACHE_DIR`, else
//!   `$XDG_CACHE_HOME/anygrad`, else `$HOME/.cache/anygrad`). `ANYGRAD_PIPELINE_CACHE=off`
//!   turns it off.
//! - Data from another driver version, another wgpu or a damaged file is checked by wgpu and
//!   the driver and ignored (the cache starts empty); a missing, unreadable or over-size file
//!   likewise. Nothing here ever fails a computation: a file that cannot be written is
//!   reported once (tracing `warn`).
//! - The data is written when the device is closed (`anygrad::gpu::shutdown`, the CLI's exit)
//!   and, while pipelines are being compiled, at most every [`SAVE_EVERY`], through a
//!   temporary file of this writer's own and a rename, so that readers never see half a file.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::GpuContext;
use crate::backend::gpu::runtime::autotune::{cache_file, Autotuner};

/// The largest cache file read (a ResNet-18 and MiniLM workload's pipelines take a few MB).
const MAX_FILE_BYTES: u64 = 1 << 30;

/// While pipelines are being compiled, the data is written at most this often.
pub(super) const SAVE_EVERY: Duration = Duration::from_secs(20);

/// A device's pipeline cache and the file it persists to.
pub(crate) struct PipelineStore {
    pub(super) cache: wgpu::PipelineCache,
    file: PathBuf,
    /// Pipelines created since the data was last written.
    unsaved: AtomicU64,
    /// When the data was last written (or the store opened).
    saved_at: Mutex<Instant>,
    /// Whether a failed write has been reported.
    warned: AtomicBool,
}

/// Whether `ANYGRAD_PIPELINE_CACHE` leaves the persisted cache on (unset, `on`, `1`; `off` or
/// `0` turn it off; anything else warns and keeps it on).
fn enabled_by_env() -> bool {
    match std::env::var("ANYGRAD_PIPELINE_CACHE")
        .ok()
        .as_deref()
        .map(str::trim)
    {
        None | Some("") | Some("on") | Some("1") => true,
        Some("off") | Some("0") => false,
        Some(other) => {
            tracing::warn!("ANYGRAD_PIPELINE_CACHE={other:?} is not on or off; using on");
            true
        }
    }
}

impl PipelineStore {
    /// The store of a device opened with `features` on an adapter described by `info`:
    /// `None` where the device has no pipeline cache, wgpu names no file for the adapter, no
    /// cache directory can be named or `ANYGRAD_PIPELINE_CACHE=off`.
    pub(super) fn open(
        device: &wgpu::Device,
        features: wgpu::Features,
        info: &wgpu::AdapterInfo,
    ) -> Option<PipelineStore> {
        if !features.contains(wgpu::Features::PIPELINE_CACHE) || !enabled_by_env() {
            return None;
        }
        let name = wgpu::util::pipeline_cache_key(info)?;
        let directory = Autotuner::default_file()?.parent()?.to_path_buf();
        Some(PipelineStore::open_at(
            device,
            directory.join(format!("{name}.bin")),
        ))
    }

    /// The store persisting to `file`, starting from its data where it has usable data.
    pub(super) fn open_at(device: &wgpu::Device, file: PathBuf) -> PipelineStore {
        let data = match crate::files::read_regular_file(&file, MAX_FILE_BYTES, "pipeline cache") {
            Ok(data) => Some(data),
            Err(error) => {
                if file.exists() {
                    tracing::warn!("{error}; compiling pipelines afresh");
                }
                None
            }
        };
        // SAFETY: wgpu asks that `data` came from `PipelineCache::get_data`. It is what `save`
        // wrote, for this adapter's key; wgpu checks its own header (magic, version, adapter,
        // driver and a hash of the payload) and with `fallback` an unusable blob gives an
        // empty cache. A file altered on disk by someone else is beyond what can be proven.
        let cache = unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("anygrad pipelines"),
                data: data.as_deref(),
                fallback: true,
            })
        };
        PipelineStore {
            cache,
            file,
            unsaved: AtomicU64::new(0),
            saved_at: Mutex::new(Instant::now()),
            warned: AtomicBool::new(false),
        }
    }

    /// Note a pipeline created through the cache; write the data if the last write is
    /// [`SAVE_EVERY`] old.
    pub(super) fn created_one(&self) {
        self.unsaved.fetch_add(1, Ordering::Relaxed);
        let due = self
            .saved_at
            .lock()
            .map(|saved| saved.elapsed() >= SAVE_EVERY)
            .unwrap_or(false);
        if due {
            self.save();
        }
    }

    /// Write the cache's data if pipelines were created since the last write.
    pub(super) fn save(&self) {
        if self.unsaved.swap(0, Ordering::Relaxed) == 0 {
            return;
        }
        *self.saved_at.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        let Some(data) = self.cache.get_data() else {
            return;
        };
        let written = self
            .file
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| cache_file::replace_file(&self.file, &data));
        if let Err(error) = written {
            if !self.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "pipeline cache {} not written: {error}",
                    self.file.display()
                );
            }
        }
    }

    /// The file the data goes to.
    #[cfg(test)]
    pub(super) fn file(&self) -> &std::path::Path {
        &self.file
    }
}

impl GpuContext {
    /// Write the pipeline cache's data if pipelines were compiled since the last write.
    pub(crate) fn save_pipelines(&self) {
        if let Some(store) = &self.pipeline_store {
            store.save();
        }
    }
}

/// A context dropped (its last tensor gone, the device closed) keeps what it compiled.
impl Drop for GpuContext {
    fn drop(&mut self) {
        self.save_pipelines();
    }
}

#[cfg(test)]
mod tests {
    use super::PipelineStore;
    use crate::backend::tests::support;

    /// Compile one small pipeline through `store`'s cache.
    fn compile(device: &wgpu::Device, store: &PipelineStore, value: u32) {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("pipeline store test"),
            source: wgpu::ShaderSource::Wgsl(
                format!(
                    "@group(0) @binding(0) var<storage, read_write> x: array<u32>;\n\
                     @compute @workgroup_size(1) fn main() {{ x[0] = {value}u; }}"
                )
                .into(),
            ),
        });
        let _pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("pipeline store test"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: Some(&store.cache),
        });
        store.created_one();
    }

    /// The size of the data of `store`'s cache (0: none).
    fn data_len(store: &PipelineStore) -> usize {
        store.cache.get_data().map_or(0, |data| data.len())
    }

    /// What a device compiled is written to the file (only once something was compiled) and
    /// read back by the next store (its cache then starts with more than an empty one's
    /// data); a damaged or missing file gives an empty cache that still compiles.
    #[test]
    fn compiled_pipelines_persist_and_bad_files_start_empty() {
        let Some(gpu) = support::gpu_device() else {
            return;
        };
        let context = gpu.context();
        // Every Vulkan adapter has the feature in wgpu (lavapipe included); elsewhere there is
        // no store to test.
        if !context.features.contains(wgpu::Features::PIPELINE_CACHE) {
            assert!(
                context.pipeline_store.is_none(),
                "a store without the feature"
            );
            assert_ne!(
                context.info.backend, "Vulkan",
                "Vulkan without a pipeline cache"
            );
            return;
        }
        let device = &context.device;
        let directory = std::env::temp_dir().join(format!(
            "anygrad-pipeline-store-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&directory);
        let file = directory.join("pipelines.bin");

        let empty = PipelineStore::open_at(device, file.clone());
        let empty_len = data_len(&empty);
        empty.save();
        assert!(!file.exists(), "nothing compiled, nothing written");
        for value in 1..=3 {
            compile(device, &empty, value);
        }
        empty.save();
        let written = std::fs::metadata(empty.file()).map_or(0, |m| m.len()) as usize;
        assert_eq!(written, data_len(&empty), "the cache's data was written");

        // Drivers that keep compiled code in the cache (NVIDIA's) grow it; the next store
        // starts with it. (Lavapipe compiles when a kernel first runs and keeps only a header.)
        let reopened = PipelineStore::open_at(device, file.clone());
        if written > empty_len {
            assert!(
                data_len(&reopened) > empty_len,
                "the saved data was loaded: {} against {empty_len}",
                data_len(&reopened)
            );
        }

        std::fs::write(&file, b"not a pipeline cache").unwrap();
        let damaged = PipelineStore::open_at(device, file.clone());
        compile(device, &damaged, 4);
        assert!(data_len(&damaged) > 0);
        let leftovers = std::fs::read_dir(&directory)
            .unwrap()
            .filter_map(|entry| entry.ok())
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
            .count();
        assert_eq!(leftovers, 0, "temporary files left behind");
        let _ = std::fs::remove_dir_all(&directory);
    }
}
