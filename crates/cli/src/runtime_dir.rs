//! A private `XDG_RUNTIME_DIR` for headless machines. Mesa's Vulkan drivers load the system's
//! `libwayland-client` while they look for a Wayland display, and that library prints
//! `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` on stderr when the
//! variable is missing — two lines that read like anygrad's own errors before its first line.
//! When the variable is unset or not a directory, the `anygrad` command points it at a
//! directory of its own (mode 0700 under the temporary directory) before any adapter is
//! opened; a user's own value is never replaced.

use std::path::{Path, PathBuf};

/// Set `XDG_RUNTIME_DIR` to a private directory when it is unset or unusable. Must run at the
/// start of `main`, before any thread exists (changing the environment is only sound then).
pub fn ensure_runtime_dir() {
    let usable = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .is_some_and(|dir| dir.is_absolute() && dir.is_dir());
    if usable {
        return;
    }
    if let Some(dir) = private_dir() {
        std::env::set_var("XDG_RUNTIME_DIR", dir);
    }
}

/// `$TMPDIR/anygrad-runtime-<user>` with mode 0700, created when missing; `None` when it cannot
/// be made private (then the variable stays as it was and the two lines may appear).
fn private_dir() -> Option<PathBuf> {
    let user = std::env::var("USER").unwrap_or_else(|_| "user".to_string());
    let user: String = user
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    let dir = std::env::temp_dir().join(format!("anygrad-runtime-{user}"));
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    make_private(&dir).then_some(dir)
}

#[cfg(unix)]
fn make_private(dir: &Path) -> bool {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Ok(metadata) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    // Only a real directory that this user owns (not a link or a folder someone else planted):
    // a file this process creates inside carries this user's id. The probe's name is this
    // process's own: commands started together (a test suite) would otherwise remove each
    // other's probe, find the directory unusable and leave the variable unset.
    let probe = dir.join(format!(".owner-check-{}", std::process::id()));
    let own_uid = std::fs::File::create(&probe)
        .ok()
        .and_then(|_| std::fs::metadata(&probe).ok())
        .map(|m| m.uid());
    let _ = std::fs::remove_file(&probe);
    if !metadata.is_dir() || own_uid != Some(metadata.uid()) {
        return false;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).is_ok()
}

#[cfg(not(unix))]
fn make_private(dir: &Path) -> bool {
    dir.is_dir()
}
