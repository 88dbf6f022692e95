//! Where a save may go: temporaries left by a killed save of the same target are removed by
//! the next save (a dead writer's after a minute, anyone's after a day), while a live
//! writer's, this process's and other targets' are kept.

use std::time::{Duration, SystemTime};

use anygrad_core::Device;
use anygrad_nn::*;
use anygrad_testing::temp_dir;

/// The id of a process that has exited (a child that was waited for).
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn touch(path: &std::path::Path, age: Duration) {
    let file = std::fs::File::create(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

#[test]
fn stale_temporaries_of_killed_saves_are_removed() {
    let dir = temp_dir("stale-temporaries");
    let target = dir.join("run.safetensors");
    let dead = dead_pid();
    let live = std::os::unix::process::parent_id();
    let minutes = |m: u64| Duration::from_secs(60 * m);
    let stale_dead = dir.join(format!(".run.safetensors.tmp.{dead}.0"));
    let fresh_dead = dir.join(format!(".run.safetensors.tmp.{dead}.1"));
    let live_writer = dir.join(format!(".run.safetensors.tmp.{live}.0"));
    let ancient_live = dir.join(format!(".run.safetensors.tmp.{live}.1"));
    let other_target = dir.join(format!(".other.safetensors.tmp.{dead}.0"));
    touch(&stale_dead, minutes(5));
    touch(&fresh_dead, Duration::ZERO);
    touch(&live_writer, minutes(5));
    touch(&ancient_live, minutes(2 * 24 * 60));
    touch(&other_target, minutes(5));
    let model = Linear::new(2, 2, true, &Device::Cpu).unwrap();
    save_safetensors(&model, &target).unwrap();
    assert!(target.is_file());
    assert!(
        !stale_dead.exists(),
        "a dead writer's old temporary was kept"
    );
    assert!(!ancient_live.exists(), "a day-old temporary was kept");
    assert!(
        fresh_dead.exists(),
        "a temporary younger than a minute was removed"
    );
    assert!(
        live_writer.exists(),
        "a live writer's temporary was removed"
    );
    assert!(
        other_target.exists(),
        "another target's temporary was removed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
