//! `anygrad onnx run MODEL --input NAME=FILE.npy ... [--device D] [--output OUT.npz]
//! [--repeat N] [--profile] [--json]`: run a model on `.npy` inputs. Prints each output's name,
//! type and shape (and writes them to `--output`); `--json` prints one object with the outputs
//! and the load and run times. `--repeat N` runs it N times on the same inputs (the first run
//! includes one-time work such as GPU shader compilation; the outputs written are the last
//! run's); `--profile` records one more run under the op profiler and prints its per-op table.

use std::path::PathBuf;
use std::time::Instant;

use anygrad::Device;
use anygrad_onnx::{HostTensor, OnnxModel};
use clap::Args;

use super::npy::{read_npy, write_npz};

/// Arguments of `anygrad onnx run`.
#[derive(Args)]
pub struct RunArgs {
    /// The `.onnx` file.
    model: PathBuf,
    /// A graph input as NAME=FILE.npy (repeat for each input).
    #[arg(long = "input", value_name = "NAME=FILE.npy")]
    inputs: Vec<String>,
    /// Device: cpu, gpu, gpu:N or best.
    #[arg(long, default_value = "best")]
    device: String,
    /// Write the outputs to this `.npz` archive.
    #[arg(long, value_name = "OUT.npz")]
    output: Option<PathBuf>,
    /// Run the model this many times (timings of each run; at least 1).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// After the timed runs, run once more under the op profiler and print its per-op table
    /// (to standard error with `--json`).
    #[arg(long)]
    profile: bool,
    /// One JSON object (outputs, timings) instead of text.
    #[arg(long)]
    json: bool,
}

/// Run the model.
pub fn run(args: RunArgs) -> Result<(), String> {
    let device = Device::parse(&args.device).map_err(|e| e.to_string())?;
    let mut inputs: Vec<(String, HostTensor)> = Vec::new();
    for spec in &args.inputs {
        let (name, file) = spec
            .split_once('=')
            .ok_or_else(|| format!("--input `{spec}` must be NAME=FILE.npy"))?;
        inputs.push((name.to_string(), read_npy(std::path::Path::new(file))?));
    }
    let started = Instant::now();
    let model = OnnxModel::load(&args.model, &device).map_err(|e| e.to_string())?;
    let load_seconds = started.elapsed().as_secs_f64();
    if args.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    let refs: Vec<(&str, HostTensor)> = inputs
        .iter()
        .map(|(n, t)| (n.as_str(), t.clone()))
        .collect();
    let run_once = || {
        let _inference = anygrad::no_grad();
        model.run_host(&refs).map_err(|e| e.to_string())
    };
    let mut run_times = Vec::with_capacity(args.repeat);
    let mut outputs = Vec::new();
    for _ in 0..args.repeat {
        let started = Instant::now();
        outputs = run_once()?;
        run_times.push(started.elapsed().as_secs_f64());
    }
    let run_seconds = run_times[0];
    let later_runs = &run_times[1..];
    let fastest_later = later_runs.iter().copied().reduce(f64::min);
    let profile_table = if args.profile {
        let (_, profile) = anygrad::profiler::profile(|| {
            run_once().map_err(|message| anygrad::Error::invalid("onnx run", message))
        })
        .map_err(|e| e.to_string())?;
        Some(format!(
            "{}\n{}\n{}",
            profile.key_averages().table(),
            profile.shape_averages().time_table(12),
            profile.memory_bound_shapes().time_table(12)
        ))
    } else {
        None
    };
    if let Some(path) = &args.output {
        write_npz(path, &outputs)?;
    }
    if args.json {
        let value = serde_json::json!({
            "model": args.model.display().to_string(),
            "device": device.description(),
            "load_seconds": load_seconds,
            "run_seconds": run_seconds,
            "run_seconds_all": run_times,
            "run_seconds_best_after_first": fastest_later,
            "outputs": outputs.iter().map(|(name, t)| serde_json::json!({
                "name": name,
                "dtype": format!("{:?}", t.data_type()).to_ascii_lowercase(),
                "shape": t.shape,
            })).collect::<Vec<_>>(),
            "written_to": args.output.as_ref().map(|p| p.display().to_string()),
        });
        println!("{value}");
        if let Some(table) = profile_table {
            eprint!("{table}");
        }
        return Ok(());
    }
    for (name, t) in &outputs {
        println!(
            "{name}: {} {:?}",
            format!("{:?}", t.data_type()).to_ascii_lowercase(),
            t.shape
        );
    }
    println!(
        "loaded in {:.3} s, ran in {:.3} s on {}",
        load_seconds,
        run_seconds,
        device.description()
    );
    if let Some(best) = fastest_later {
        println!(
            "{} more runs: fastest {:.3} s, slowest {:.3} s",
            later_runs.len(),
            best,
            later_runs.iter().copied().fold(0.0, f64::max)
        );
    }
    if let Some(table) = profile_table {
        print!("{table}");
    }
    Ok(())
}
