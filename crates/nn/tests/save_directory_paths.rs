//! A save target spelled as a directory (`newdir/`, `dir/.`, `.`) is refused by the up-front
//! check (`check_writable`) as well as by the save itself, saying it names a directory and
//! which file path to give instead; the same path without the slash is a file and saves.

use anygrad_core::Device;
use anygrad_nn::*;
use anygrad_testing::temp_dir;

#[test]
fn directory_spellings_are_refused_before_writing() {
    let dir = temp_dir("save-directory-paths");
    let model = Linear::new(2, 2, true, &Device::Cpu).unwrap();
    let missing = format!("{}/newdir/", dir.display());
    let existing = format!("{}/", dir.display());
    let dotted = format!("{}/.", dir.display());
    for target in [missing.as_str(), existing.as_str(), dotted.as_str(), "."] {
        let error = check_writable(target)
            .expect_err(&format!("check_writable({target}) must refuse a directory"))
            .to_string();
        assert!(
            error.contains("names a directory") && error.contains("model.safetensors"),
            "{target}: {error}"
        );
        let error = save_safetensors(&model, target)
            .expect_err(&format!("saving to {target} must be refused"))
            .to_string();
        assert!(error.contains("names a directory"), "{target}: {error}");
    }
    let error = check_writable(&missing).unwrap_err().to_string();
    assert!(error.contains("newdir/model.safetensors"), "{error}");
    assert!(
        !dir.join("newdir").exists(),
        "the refused save created something"
    );
    // Without the slash it is a file name in an existing directory.
    let file = dir.join("newdir");
    check_writable(&file).unwrap();
    save_safetensors(&model, &file).unwrap();
    assert!(file.is_file());
    let _ = std::fs::remove_dir_all(&dir);
}
