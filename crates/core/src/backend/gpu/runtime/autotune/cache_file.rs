//! The autotuner's file of choices (`autotune.json`: adapter -> key -> chosen candidate),
//! shared by every tuner of the process and by other processes.
//!
//! Adding a choice re-reads the file and merges into what is there, so that choices written
//! meanwhile by another tuner (data-parallel replicas on one GPU, `--devices gpu:0,gpu:0`, each
//! have one) or another process are kept. Within the process one lock serializes the merges;
//! across processes an advisory lock on `autotune.json.lock` does, where the file system has
//! such locks. The new contents go to a temporary file whose name is unique to the writer
//! (process id, thread, a counter) and then replace the file by a rename, which is atomic: a
//! reader sees the old file or the new one, and a crash leaves the old one. (The temporary was
//! once named after the process alone: two threads of one process wrote the same temporary,
//! and the second rename failed with "No such file or directory".)

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Adapter -> key -> choice.
pub(crate) type CacheFile = BTreeMap<String, BTreeMap<String, String>>;

/// Largest cache file read (a larger one is ignored and rewritten): far above any real one.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Serializes read-merge-write within the process.
static MERGE_LOCK: Mutex<()> = Mutex::new(());

/// Temporaries written by this process so far (part of each one's name).
static TEMPORARIES: AtomicU64 = AtomicU64::new(0);

/// The cache file's contents; empty when missing, not a regular file, too large, unreadable
/// or corrupt (the tuner then times again).
pub(crate) fn read(path: &Path) -> CacheFile {
    crate::files::read_regular_file(path, MAX_FILE_BYTES, "autotune cache")
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Add `key -> name` under `adapter` to the file at `path`, keeping every other entry there
/// (see the module header).
pub(crate) fn record(path: &Path, adapter: &str, key: &str, name: &str) -> std::io::Result<()> {
    let _merging = MERGE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(directory) = path.parent() {
        std::fs::create_dir_all(directory)?;
    }
    let _across_processes = lock_across_processes(path);
    let mut all = read(path);
    all.entry(adapter.to_string())
        .or_default()
        .insert(key.to_string(), name.to_string());
    write(path, &all)
}

/// Hold the advisory lock of `path`'s lock file until the returned file is dropped; `None`
/// where it cannot be taken (the merge then relies on the in-process lock alone).
fn lock_across_processes(path: &Path) -> Option<std::fs::File> {
    let mut name = path.file_name()?.to_os_string();
    name.push(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.with_file_name(name))
        .ok()?;
    file.lock().ok()?;
    Some(file)
}

/// Write `contents` to `path` through a temporary of this writer's own and a rename.
fn write(path: &Path, contents: &CacheFile) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(contents).map_err(std::io::Error::other)?;
    replace_file(path, &text)
}

/// Replace `path` by `bytes` through a temporary of this writer's own and a rename, so that a
/// reader never sees half a file and two writers never share a temporary (the autotuner's
/// choices, the persisted pipeline cache).
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = temporary_name(path);
    let written = std::fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    renamed
}

/// `autotune.json.<pid>.<thread>.<counter>.tmp` beside `path`: no two writers share one.
fn temporary_name(path: &Path) -> PathBuf {
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    let counter = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.{thread}.{counter}.tmp", std::process::id()));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::{read, record};

    /// Many threads adding choices to one file at once: every write succeeds, the file holds
    /// every entry, and no temporary is left behind.
    #[test]
    fn concurrent_writers_all_succeed_and_keep_every_entry() {
        let directory =
            std::env::temp_dir().join(format!("anygrad-autotune-writers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        let path = directory.join("autotune.json");
        let threads = 16;
        let keys_per_thread = 8;
        let results: Vec<std::io::Result<()>> = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..threads)
                .map(|thread| {
                    let path = &path;
                    scope.spawn(move || {
                        (0..keys_per_thread).try_for_each(|key| {
                            let adapter = format!("adapter {}", thread % 2);
                            record(path, &adapter, &format!("key {thread}.{key}"), "tile64")
                        })
                    })
                })
                .collect();
            writers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        for result in &results {
            assert!(result.is_ok(), "a write failed: {result:?}");
        }
        let all = read(&path);
        let entries: usize = all.values().map(|keys| keys.len()).sum();
        assert_eq!(entries, threads * keys_per_thread, "{all:?}");
        for thread in 0..threads {
            for key in 0..keys_per_thread {
                let adapter = format!("adapter {}", thread % 2);
                assert_eq!(
                    all[&adapter].get(&format!("key {thread}.{key}")),
                    Some(&"tile64".to_string())
                );
            }
        }
        let leftovers: Vec<_> = std::fs::read_dir(&directory)
            .unwrap()
            .filter_map(|entry| entry.ok())
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "temporaries left: {leftovers:?}");
        let _ = std::fs::remove_dir_all(&directory);
    }
}
