//! Checkpoints in the **safetensors** format with PyTorch's `state_dict` names, so weights
//! exported from PyTorch (`safetensors.torch.save_file(model.state_dict(), path)`) load
//! unchanged and ours load in PyTorch.
//!
//! - Files are written atomically: a temporary file in the same directory is written,
//!   `fsync`ed and renamed over the target, so a crash never leaves a half-written checkpoint.
//!   A target that exists but is not a regular file is refused, and temporaries left by a
//!   killed save of the same target are removed by the next save.
//! - Loading validates everything before changing anything, and reports every missing,
//!   unexpected and mis-shaped tensor in one `Error::Format`. A corrupt file is an error,
//!   never a panic.
//! - Values are copied into the module's existing tensors (`assign`), converted to each
//!   tensor's dtype and device, so optimizers holding the parameters stay valid.
//! - Optimizer state can go in the same file (`save_checkpoint`), under `optimizer.` names
//!   (`optimizer.state.fc.weight.exp_avg`) with scalars (learning rate, step counts) in the
//!   header metadata (`anygrad.optimizer.scalar.<name>`), or in a file of its own
//!   (`save_optimizer`).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use anygrad_core::{DType, Device, Error, Result, Tensor};
use half::{bf16, f16};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use crate::module::Module;
use crate::optim::{Optimizer, OptimizerState};

const OPTIMIZER_PREFIX: &str = "optimizer.";
const META_OPTIMIZER: &str = "anygrad.optimizer.";
const META_KIND: &str = "anygrad.optimizer.kind";
const META_SCALAR: &str = "anygrad.optimizer.scalar.";
const META_RESERVED: &str = "anygrad.";

/// What a non-strict load found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Module tensors the file does not have (left unchanged).
    pub missing: Vec<String>,
    /// File tensors the module does not have (ignored).
    pub unexpected: Vec<String>,
}

/// Save a module's parameters and buffers (its `state_dict`) to `path`.
pub fn save_safetensors(module: &dyn Module, path: impl AsRef<Path>) -> Result<()> {
    save_checkpoint(module, None, &BTreeMap::new(), path)
}

/// Load a module's parameters and buffers from `path`. Every tensor must be present with the
/// right shape and nothing else may be in the file (optimizer entries of a full checkpoint
/// are skipped); otherwise nothing is changed and the error lists every problem.
pub fn load_safetensors(module: &dyn Module, path: impl AsRef<Path>) -> Result<()> {
    load_safetensors_with(module, path, true).map(|_| ())
}

/// Like [`load_safetensors`]; with `strict = false` missing and unexpected tensors are
/// reported instead of refused (shape mismatches are still errors).
pub fn load_safetensors_with(
    module: &dyn Module,
    path: impl AsRef<Path>,
    strict: bool,
) -> Result<LoadReport> {
    let path = path.as_ref();
    let (tensors, metadata) = read_file(path)?;
    let has_optimizer = metadata.contains_key(META_KIND);
    let model: BTreeMap<String, Tensor> = tensors
        .into_iter()
        .filter(|(name, _)| !(has_optimizer && name.starts_with(OPTIMIZER_PREFIX)))
        .collect();
    load_state_into(module, &model, strict, &path.display().to_string())
}

/// Load a module from a file whose tensors have other names: `map` turns each name in the file
/// into the module's name for it, or `None` to skip the tensor (like editing a PyTorch
/// `state_dict` before `load_state_dict`). With `strict`, every module tensor must be
/// provided and every kept file tensor used. Two file tensors mapped to one name are an error.
///
/// ```no_run
/// # use anygrad_nn::{load_safetensors_mapped, Sequential};
/// # fn demo(model: &Sequential) -> anygrad_core::Result<()> {
/// // A checkpoint saved from `nn.DataParallel` (`module.features.0.weight`, ...).
/// load_safetensors_mapped(model, "model.safetensors", true, |name| {
///     name.strip_prefix("module.").map(str::to_string)
/// })?;
/// # Ok(())
/// # }
/// ```
pub fn load_safetensors_mapped(
    module: &dyn Module,
    path: impl AsRef<Path>,
    strict: bool,
    map: impl Fn(&str) -> Option<String>,
) -> Result<LoadReport> {
    let path = path.as_ref();
    let context = path.display().to_string();
    let (tensors, metadata) = read_file(path)?;
    let has_optimizer = metadata.contains_key(META_KIND);
    let mut renamed: BTreeMap<String, Tensor> = BTreeMap::new();
    for (name, tensor) in tensors {
        if has_optimizer && name.starts_with(OPTIMIZER_PREFIX) {
            continue;
        }
        let Some(target) = map(&name) else { continue };
        if renamed.insert(target.clone(), tensor).is_some() {
            return Err(Error::format(
                &context,
                format!("two tensors of the file are mapped to `{target}` (the last was `{name}`)"),
            ));
        }
    }
    load_state_into(module, &renamed, strict, &context)
}

/// Copy tensors by name into a module's parameters and buffers (the in-memory form of
/// [`load_safetensors_with`]).
pub fn load_state_into(
    module: &dyn Module,
    state: &BTreeMap<String, Tensor>,
    strict: bool,
    context: &str,
) -> Result<LoadReport> {
    let (report, updates) = prepare_state(module, state, strict, context)?;
    assign_state(updates)?;
    Ok(report)
}

/// The checked, converted values of a load ([`prepare_state`]): (target, value) pairs.
type StateUpdates = Vec<(Tensor, Tensor)>;

/// Check `state` against the module's slots and convert every value to its target's dtype
/// and device, changing nothing yet.
fn prepare_state(
    module: &dyn Module,
    state: &BTreeMap<String, Tensor>,
    strict: bool,
    context: &str,
) -> Result<(LoadReport, StateUpdates)> {
    let slots = module.named_slots();
    let mut report = LoadReport::default();
    let mut mis_shaped = Vec::new();
    let mut updates = Vec::new();
    for (name, slot, _) in &slots {
        let target = slot.tensor();
        match state.get(name) {
            None => report.missing.push(name.clone()),
            Some(source) if source.shape() != target.shape() => {
                mis_shaped.push(format!(
                    "{name}: file {:?}, module {:?}",
                    source.shape(),
                    target.shape()
                ));
            }
            Some(source) => {
                let converted = source
                    .detach()
                    .to_dtype(target.dtype())?
                    .to_device(target.device())?;
                updates.push((target, converted));
            }
        }
    }
    report.unexpected = state
        .keys()
        .filter(|k| !slots.iter().any(|(n, _, _)| n == *k))
        .cloned()
        .collect();
    let mut problems = Vec::new();
    if strict && !report.missing.is_empty() {
        problems.push(format!("missing tensors: {:?}", report.missing));
    }
    if strict && !report.unexpected.is_empty() {
        problems.push(format!("unexpected tensors: {:?}", report.unexpected));
    }
    if !mis_shaped.is_empty() {
        problems.push(format!("shape mismatches: [{}]", mis_shaped.join("; ")));
    }
    if !problems.is_empty() {
        return Err(Error::format(
            context,
            format!("cannot load the state dict: {}", problems.join("; ")),
        ));
    }
    Ok((report, updates))
}

/// Write prepared values into their module tensors.
fn assign_state(updates: StateUpdates) -> Result<()> {
    let _guard = anygrad_core::no_grad();
    for (target, value) in updates {
        target.assign(&value)?;
    }
    Ok(())
}

/// Save a module, optionally its optimizer's state, and string metadata (epoch, config, ...;
/// keys starting with `anygrad.` are reserved) to one file.
pub fn save_checkpoint(
    module: &dyn Module,
    optimizer: Option<&dyn Optimizer>,
    metadata: &BTreeMap<String, String>,
    path: impl AsRef<Path>,
) -> Result<()> {
    let mut tensors: Vec<(String, Tensor)> = module.state_dict();
    let mut header: HashMap<String, String> = HashMap::new();
    for (key, value) in metadata {
        if key.starts_with(META_RESERVED) {
            return Err(Error::invalid(
                "save_checkpoint",
                format!("metadata key `{key}` uses the reserved prefix `anygrad.`"),
            ));
        }
        header.insert(key.clone(), value.clone());
    }
    if let Some(optimizer) = optimizer {
        add_optimizer_entries(&optimizer.state_dict()?, &mut tensors, &mut header);
    }
    write_file(&tensors, header, path.as_ref())
}

/// Load a checkpoint written by [`save_checkpoint`]: the module strictly, the optimizer state
/// when `optimizer` is given (the file must then hold one). Returns the user metadata.
pub fn load_checkpoint(
    module: &dyn Module,
    optimizer: Option<&mut dyn Optimizer>,
    path: impl AsRef<Path>,
) -> Result<BTreeMap<String, String>> {
    let path = path.as_ref();
    let context = path.display().to_string();
    let (tensors, metadata) = read_file(path)?;
    let has_optimizer = metadata.contains_key(META_KIND);
    let (optimizer_tensors, model): (BTreeMap<_, _>, BTreeMap<_, _>) = tensors
        .into_iter()
        .partition(|(name, _)| has_optimizer && name.starts_with(OPTIMIZER_PREFIX));
    // Check the model's tensors first and write them last: the optimizer's load validates
    // its whole state before changing it, so a bad file changes neither.
    let (_, updates) = prepare_state(module, &model, true, &context)?;
    if let Some(optimizer) = optimizer {
        let state = optimizer_state_from(&optimizer_tensors, &metadata, &context)?;
        optimizer
            .load_state_dict(&state)
            .map_err(|error| in_file(error, &context))?;
    }
    assign_state(updates)?;
    Ok(metadata
        .into_iter()
        .filter(|(k, _)| !k.starts_with(META_RESERVED))
        .collect())
}

/// Save an optimizer's state on its own.
pub fn save_optimizer(optimizer: &dyn Optimizer, path: impl AsRef<Path>) -> Result<()> {
    let mut tensors = Vec::new();
    let mut header = HashMap::new();
    add_optimizer_entries(&optimizer.state_dict()?, &mut tensors, &mut header);
    write_file(&tensors, header, path.as_ref())
}

/// Load an optimizer's state saved by [`save_optimizer`] (or a full checkpoint).
pub fn load_optimizer(optimizer: &mut dyn Optimizer, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let (tensors, metadata) = read_file(path)?;
    let context = path.display().to_string();
    let state = optimizer_state_from(&tensors, &metadata, &context)?;
    optimizer
        .load_state_dict(&state)
        .map_err(|error| in_file(error, &context))
}

/// Name the file in an error from `Optimizer::load_state_dict` (which only knows the key).
fn in_file(error: Error, file: &str) -> Error {
    match error {
        Error::Format { context, message } => Error::format(file, format!("{context}: {message}")),
        Error::InvalidArgument { op, message } => {
            Error::format(file, format!("optimizer state ({op}): {message}"))
        }
        other => other,
    }
}

fn add_optimizer_entries(
    state: &OptimizerState,
    tensors: &mut Vec<(String, Tensor)>,
    header: &mut HashMap<String, String>,
) {
    header.insert(META_KIND.into(), state.kind.clone());
    for (name, value) in &state.scalars {
        header.insert(format!("{META_SCALAR}{name}"), format!("{value:?}"));
    }
    for (name, tensor) in &state.tensors {
        tensors.push((format!("{OPTIMIZER_PREFIX}{name}"), tensor.clone()));
    }
}

fn optimizer_state_from(
    tensors: &BTreeMap<String, Tensor>,
    metadata: &HashMap<String, String>,
    context: &str,
) -> Result<OptimizerState> {
    let kind = metadata
        .get(META_KIND)
        .ok_or_else(|| Error::format(context, "the file holds no optimizer state"))?
        .clone();
    let mut state = OptimizerState {
        kind,
        ..Default::default()
    };
    let unknown: Vec<&String> = metadata
        .keys()
        .filter(|key| {
            key.starts_with(META_OPTIMIZER) && *key != META_KIND && !key.starts_with(META_SCALAR)
        })
        .collect();
    if !unknown.is_empty() {
        return Err(Error::format(
            context,
            format!(
                "unknown optimizer metadata {unknown:?} (only `{META_KIND}` and \
                 `{META_SCALAR}<name>` are written); the file is damaged or from another tool"
            ),
        ));
    }
    for (key, value) in metadata {
        if let Some(name) = key.strip_prefix(META_SCALAR) {
            let parsed = value.parse::<f64>().map_err(|_| {
                Error::format(
                    context,
                    format!("optimizer scalar `{name}` is not a number: `{value}`"),
                )
            })?;
            state.scalars.insert(name.to_string(), parsed);
        }
    }
    for (name, tensor) in tensors {
        if let Some(stripped) = name.strip_prefix(OPTIMIZER_PREFIX) {
            state.tensors.insert(stripped.to_string(), tensor.clone());
        }
    }
    Ok(state)
}

/// Write named tensors (moved to the CPU) and metadata to `path` atomically.
pub fn save_tensors(
    tensors: &[(String, Tensor)],
    metadata: &BTreeMap<String, String>,
    path: impl AsRef<Path>,
) -> Result<()> {
    write_file(
        tensors,
        metadata.clone().into_iter().collect(),
        path.as_ref(),
    )
}

/// Read every tensor of a safetensors file onto `device`, with the header metadata.
pub fn load_tensors(
    path: impl AsRef<Path>,
    device: &Device,
) -> Result<(BTreeMap<String, Tensor>, BTreeMap<String, String>)> {
    let (tensors, metadata) = read_file(path.as_ref())?;
    let moved = tensors
        .into_iter()
        .map(|(name, t)| Ok((name, t.to_device(device)?)))
        .collect::<Result<BTreeMap<_, _>>>()?;
    Ok((moved, metadata.into_iter().collect()))
}

fn write_file(
    tensors: &[(String, Tensor)],
    header: HashMap<String, String>,
    path: &Path,
) -> Result<()> {
    let context = path.display().to_string();
    let mut encoded: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::with_capacity(tensors.len());
    for (name, tensor) in tensors {
        let (dtype, bytes) = tensor_bytes(tensor)?;
        encoded.push((name.clone(), dtype, tensor.shape().to_vec(), bytes));
    }
    let mut views = Vec::with_capacity(encoded.len());
    for (name, dtype, shape, bytes) in &encoded {
        let view = TensorView::new(*dtype, shape.clone(), bytes)
            .map_err(|e| Error::format(&context, format!("tensor `{name}`: {e}")))?;
        views.push((name.clone(), view));
    }
    let header = if header.is_empty() {
        None
    } else {
        Some(header)
    };
    let bytes = safetensors::serialize(views, header)
        .map_err(|e| Error::format(&context, e.to_string()))?;
    write_atomically(path, &bytes)
}

/// Whether `path` is spelled as a directory: it ends with a separator or `/.` (the file name
/// the path would give is then its parent's, and a save would fail only when written).
fn names_a_directory(path: &Path) -> bool {
    let text = path.as_os_str().as_encoded_bytes();
    let separators: &[u8] = if cfg!(windows) { b"/\\" } else { b"/" };
    let ends_with_separator = |bytes: &[u8]| bytes.last().is_some_and(|b| separators.contains(b));
    text == b"."
        || ends_with_separator(text)
        || (text.ends_with(b".") && ends_with_separator(&text[..text.len() - 1]))
}

/// `path` without the trailing separators and `.` that make it name a directory.
fn directory_part(path: &str) -> &str {
    let mut rest = path;
    loop {
        let trimmed = rest.trim_end_matches('/');
        let trimmed = trimmed.strip_suffix("/.").unwrap_or(trimmed);
        if trimmed == rest {
            return if rest == "." { "" } else { rest };
        }
        rest = trimmed;
    }
}

/// The directory and file name of a save target; an existing target must be a regular file
/// (saving renames over it, which would replace a device node, a FIFO or a directory entry).
fn save_target(path: &Path) -> Result<(PathBuf, String)> {
    let context = path.display().to_string();
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if names_a_directory(path) {
        return Err(Error::invalid(
            "save",
            format!(
                "`{context}` ends with `/` (or `/.`), so it names a directory, not a file; give \
                 a file path such as {}",
                Path::new(directory_part(&context))
                    .join("model.safetensors")
                    .display()
            ),
        ));
    }
    let file_name = path
        .file_name()
        .ok_or_else(|| Error::invalid("save", format!("`{context}` is not a file path")))?
        .to_string_lossy()
        .into_owned();
    match std::fs::metadata(path) {
        Ok(metadata) if !metadata.is_file() => {
            return Err(Error::invalid(
                "save",
                format!(
                    "`{context}` exists and is not a regular file (a directory, device or \
                     pipe); choose a file path"
                ),
            ))
        }
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(Error::io(format!("checking {context}"), error)),
    }
    match std::fs::metadata(&directory) {
        Ok(metadata) if metadata.is_dir() => Ok((directory, file_name)),
        Ok(_) => Err(Error::invalid(
            "save",
            format!(
                "cannot save {context}: {} is not a directory",
                directory.display()
            ),
        )),
        Err(error) => Err(Error::io(
            format!("cannot save {context}: directory {}", directory.display()),
            error,
        )),
    }
}

/// Check, before a long run, that [`save_checkpoint`] will be able to write `path`: an
/// existing target must be a regular file, and a temporary file can be created (and is
/// removed again) in its directory.
pub fn check_writable(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let (directory, file_name) = save_target(path)?;
    let probe = directory.join(format!(".{file_name}.tmp.{}.probe", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|error| Error::io(format!("cannot save {}", path.display()), error))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// How old a temporary file of a dead process must be before it is removed (a second writer
/// in another PID namespace could look dead; its file is younger than this while it writes).
const STALE_DEAD_AFTER: std::time::Duration = std::time::Duration::from_secs(60);
/// How old any other process's temporary file must be before it is removed.
const STALE_ANY_AFTER: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Whether process `pid` exists, where the system can tell (`/proc` on Linux).
fn process_alive(pid: u32) -> Option<bool> {
    let proc = Path::new("/proc");
    proc.join("self")
        .exists()
        .then(|| proc.join(pid.to_string()).exists())
}

/// Remove `.NAME.tmp.PID.N` files of the same target left by saves that were killed: those of
/// a process that no longer exists (and untouched for a minute), and any untouched for a day.
/// This process's own files and those of live writers are left alone.
pub fn remove_stale_temporaries(path: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    let (directory, file_name) = save_target(path.as_ref())?;
    let prefix = format!(".{file_name}.tmp.");
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(&directory) else {
        return Ok(removed);
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let Some(pid) = rest
            .split_once('.')
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        let age = metadata
            .modified()
            .ok()
            .and_then(|time| time.elapsed().ok())
            .unwrap_or_default();
        let dead = process_alive(pid) == Some(false);
        if metadata.is_file()
            && ((dead && age >= STALE_DEAD_AFTER) || age >= STALE_ANY_AFTER)
            && std::fs::remove_file(entry.path()).is_ok()
        {
            removed.push(entry.path());
        }
    }
    Ok(removed)
}

/// Write `bytes` to a temporary file next to `path`, fsync it, rename it over `path`, and
/// fsync the directory (best effort) so the rename itself is durable. Stale temporaries of
/// killed saves of the same target are removed first.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let context = path.display().to_string();
    let (directory, file_name) = save_target(path)?;
    let _ = remove_stale_temporaries(path);
    let unique = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temporary = directory.join(format!(".{file_name}.tmp.{}.{unique}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    if let Err(error) = result {
        let _ = std::fs::remove_file(&temporary);
        return Err(Error::io(format!("writing {context}"), error));
    }
    if let Ok(dir) = std::fs::File::open(&directory) {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn tensor_bytes(tensor: &Tensor) -> Result<(Dtype, Vec<u8>)> {
    fn le<T: Copy, const N: usize>(values: Vec<T>, to_bytes: fn(T) -> [u8; N]) -> Vec<u8> {
        values.into_iter().flat_map(to_bytes).collect()
    }
    Ok(match tensor.dtype() {
        DType::F32 => (Dtype::F32, le(tensor.to_vec::<f32>()?, f32::to_le_bytes)),
        DType::F16 => (Dtype::F16, le(tensor.to_vec::<f16>()?, f16::to_le_bytes)),
        DType::BF16 => (Dtype::BF16, le(tensor.to_vec::<bf16>()?, bf16::to_le_bytes)),
        DType::F64 => (Dtype::F64, le(tensor.to_vec::<f64>()?, f64::to_le_bytes)),
        DType::I32 => (Dtype::I32, le(tensor.to_vec::<i32>()?, i32::to_le_bytes)),
        DType::U32 => (Dtype::U32, le(tensor.to_vec::<u32>()?, u32::to_le_bytes)),
        DType::U8 => (Dtype::U8, tensor.to_vec::<u8>()?),
        DType::Bool => (
            Dtype::BOOL,
            tensor.to_vec::<bool>()?.into_iter().map(u8::from).collect(),
        ),
    })
}

type FileContents = (BTreeMap<String, Tensor>, HashMap<String, String>);

/// The largest checkpoint read where the machine's memory is unknown.
const MAX_CHECKPOINT_BYTES: u64 = 1 << 40;

fn read_file(path: &Path) -> Result<FileContents> {
    let context = path.display().to_string();
    // A FIFO, a device or a file larger than the machine's memory (RAM plus swap: it is read
    // whole) is refused before anything is read.
    let bound = anygrad_core::host_memory::total_memory().unwrap_or(MAX_CHECKPOINT_BYTES);
    let bytes = anygrad_core::files::read_regular_file(path, bound, "checkpoint")?;
    let (_, header) = SafeTensors::read_metadata(&bytes)
        .map_err(|e| Error::format(&context, format!("not a valid safetensors file: {e}")))?;
    let metadata = header.metadata().clone().unwrap_or_default();
    let file = SafeTensors::deserialize(&bytes)
        .map_err(|e| Error::format(&context, format!("not a valid safetensors file: {e}")))?;
    let mut tensors = BTreeMap::new();
    for (name, view) in file.tensors() {
        let tensor = decode(&view)
            .map_err(|message| Error::format(&context, format!("tensor `{name}`: {message}")))?;
        tensors.insert(name, tensor);
    }
    Ok((tensors, metadata))
}

/// Bytes of one safetensors entry → a CPU tensor of the entry's own dtype (BF16 stays BF16;
/// 8/16/64-bit integers narrow to I32 when they fit). Loading into a module converts each to
/// its parameter's dtype afterwards.
fn decode(view: &TensorView<'_>) -> std::result::Result<Tensor, String> {
    fn chunks<const N: usize, T>(data: &[u8], convert: fn([u8; N]) -> T) -> Vec<T> {
        data.chunks_exact(N)
            .map(|c| {
                let mut raw = [0u8; N];
                raw.copy_from_slice(c);
                convert(raw)
            })
            .collect()
    }
    fn narrow<T: Copy + TryInto<i32> + std::fmt::Display>(
        values: Vec<T>,
    ) -> std::result::Result<Vec<i32>, String> {
        values
            .into_iter()
            .map(|v| {
                v.try_into()
                    .map_err(|_| format!("integer {v} does not fit int32"))
            })
            .collect()
    }
    let shape = view.shape().to_vec();
    let data = view.data();
    let cpu = Device::Cpu;
    let made = match view.dtype() {
        Dtype::F32 => Tensor::from_vec(chunks(data, f32::from_le_bytes), &shape, &cpu),
        Dtype::F16 => Tensor::from_vec(chunks(data, f16::from_le_bytes), &shape, &cpu),
        Dtype::BF16 => Tensor::from_vec(chunks(data, bf16::from_le_bytes), &shape, &cpu),
        Dtype::F64 => Tensor::from_vec(chunks(data, f64::from_le_bytes), &shape, &cpu),
        Dtype::I64 => Tensor::from_vec(narrow(chunks(data, i64::from_le_bytes))?, &shape, &cpu),
        Dtype::I32 => Tensor::from_vec(chunks(data, i32::from_le_bytes), &shape, &cpu),
        Dtype::I16 => Tensor::from_vec(narrow(chunks(data, i16::from_le_bytes))?, &shape, &cpu),
        Dtype::U16 => Tensor::from_vec(narrow(chunks(data, u16::from_le_bytes))?, &shape, &cpu),
        Dtype::I8 => Tensor::from_vec(narrow(chunks(data, i8::from_le_bytes))?, &shape, &cpu),
        Dtype::U32 => Tensor::from_vec(chunks(data, u32::from_le_bytes), &shape, &cpu),
        Dtype::U8 => Tensor::from_vec(data.to_vec(), &shape, &cpu),
        Dtype::BOOL => Tensor::from_vec(
            data.iter().map(|&b| b != 0).collect::<Vec<bool>>(),
            &shape,
            &cpu,
        ),
        other => return Err(format!("dtype {other:?} is not supported")),
    };
    made.map_err(|e| e.to_string())
}
