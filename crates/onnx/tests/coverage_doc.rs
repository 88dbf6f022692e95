//! docs/ONNX.md's operator coverage table is the registry's (`coverage_table()`), between
//! its markers. `ANYGRAD_ONNX_WRITE_DOC=1 cargo test -p anygrad-onnx --test coverage_doc`
//! rewrites it after the registry changes.

const BEGIN: &str = "<!-- coverage table: generated from the registry -->\n";
const END: &str = "<!-- end of coverage table -->";

#[test]
fn the_documented_coverage_table_is_the_registry() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ONNX.md");
    let text = std::fs::read_to_string(&path).expect("docs/ONNX.md exists");
    let (Some(start), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        panic!("docs/ONNX.md lacks the coverage table markers");
    };
    let table = anygrad_onnx::coverage_table();
    let current = &text[start + BEGIN.len()..end];
    if std::env::var("ANYGRAD_ONNX_WRITE_DOC").is_ok_and(|v| v == "1") {
        let updated = format!("{}{BEGIN}{table}{}", &text[..start], &text[end..]);
        std::fs::write(&path, updated).expect("docs/ONNX.md written");
        return;
    }
    assert_eq!(
        current, table,
        "docs/ONNX.md's coverage table is out of date: rerun with ANYGRAD_ONNX_WRITE_DOC=1"
    );
}
