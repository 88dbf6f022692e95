//! `anygrad onnx test DIR... [--device D] [--json]`: run every case folder in ONNX's
//! backend-test layout found under the given folders. One line per case (`PASS name`,
//! `FAIL name: why`, `UNSUPPORTED name: op`), then `N passed, M failed[, K skipped]`;
//! with `--json` one JSON object per case and a summary object. A failing case never stops
//! the run; the command fails when any case failed.

use std::path::PathBuf;
use std::time::Instant;

use anygrad::Device;
use anygrad_onnx::{find_cases, run_case, CaseOutcome};
use clap::Args;

/// Arguments of `anygrad onnx test`.
#[derive(Args)]
pub struct TestArgs {
    /// Case folders, or folders of case folders.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Device: cpu, gpu, gpu:N or best.
    #[arg(long, default_value = "best")]
    device: String,
    /// JSON lines instead of text.
    #[arg(long)]
    json: bool,
}

/// Run the cases.
pub fn run(args: TestArgs) -> Result<(), String> {
    let device = Device::parse(&args.device).map_err(|e| e.to_string())?;
    let cases = find_cases(&args.dirs);
    if cases.is_empty() {
        return Err("no case folder (one holding model.onnx) found".into());
    }
    let (mut passed, mut failed, mut skipped) = (0usize, 0usize, 0usize);
    let started = Instant::now();
    for dir in &cases {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| dir.display().to_string());
        let case_started = Instant::now();
        let outcome = {
            let _inference = anygrad::no_grad();
            run_case(dir, &device)
        };
        let seconds = case_started.elapsed().as_secs_f64();
        let (status, detail) = match &outcome {
            CaseOutcome::Pass => {
                passed += 1;
                ("PASS", String::new())
            }
            CaseOutcome::Fail(why) => {
                failed += 1;
                ("FAIL", why.replace('\n', " "))
            }
            CaseOutcome::Unsupported(op) => {
                skipped += 1;
                ("UNSUPPORTED", op.clone())
            }
        };
        if args.json {
            println!(
                "{}",
                serde_json::json!({"case": name, "status": status, "detail": detail, "seconds": seconds})
            );
        } else if detail.is_empty() {
            println!("{status} {name}");
        } else {
            println!("{status} {name}: {detail}");
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "passed": passed, "failed": failed, "skipped": skipped,
                "device": device.description(), "seconds": started.elapsed().as_secs_f64(),
            })
        );
    }
    let mut summary = format!("{passed} passed, {failed} failed");
    if skipped > 0 {
        summary.push_str(&format!(", {skipped} skipped"));
    }
    println!("{summary}");
    if failed > 0 {
        return Err(format!("{failed} case(s) failed"));
    }
    Ok(())
}
