//! `anygrad onnx run MODEL --input NAME=FILE.npy ... [--device D] [--output OUT.npz]
//! [--json]`: run a model once on `.npy` inputs. Prints each output's name, type and shape
//! (and writes them to `--output`); `--json` prints one object with the outputs and the
//! load and run times.

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
    let started = Instant::now();
    let refs: Vec<(&str, HostTensor)> = inputs
        .iter()
        .map(|(n, t)| (n.as_str(), t.clone()))
        .collect();
    let outputs = {
        let _inference = anygrad::no_grad();
        model.run_host(&refs).map_err(|e| e.to_string())?
    };
    let run_seconds = started.elapsed().as_secs_f64();
    if let Some(path) = &args.output {
        write_npz(path, &outputs)?;
    }
    if args.json {
        let value = serde_json::json!({
            "model": args.model.display().to_string(),
            "device": device.description(),
            "load_seconds": load_seconds,
            "run_seconds": run_seconds,
            "outputs": outputs.iter().map(|(name, t)| serde_json::json!({
                "name": name,
                "dtype": format!("{:?}", t.data_type()).to_ascii_lowercase(),
                "shape": t.shape,
            })).collect::<Vec<_>>(),
            "written_to": args.output.as_ref().map(|p| p.display().to_string()),
        });
        println!("{value}");
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
    Ok(())
}
