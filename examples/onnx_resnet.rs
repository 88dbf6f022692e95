//! Fine-tuning the last layer of an imported ONNX image classifier, for PyTorch users who
//! have a model exported with `torch.onnx.export` (torchvision's ResNet-18, say) and want to
//! run and adapt it without Python:
//!
//! 1. load the `.onnx` file on the device `--device` names (`cpu`, `gpu`, `gpu:N`, `best`;
//!    default `best`, which honours `ANYGRAD_DEVICE`) and say which device that is;
//! 2. run it on a batch (shape from the model's declared input; a symbolic batch dim takes
//!    `--batch`, default 4) and print the top-5 classes of the first image;
//! 3. freeze every initializer except the classifier's final Gemm (or MatMul + Add) weight and
//!    bias, found in the graph, and train those two with Adam for `--steps` steps (default 20)
//!    on a fixed batch of random images with random labels, which the model has to learn to
//!    fit (a stand-in for a small labelled data set), printing the falling loss;
//! 4. save the fine-tuned initializers as safetensors, load a fresh copy of the model, load
//!    the saved weights into it and check that it gives the same outputs.
//!
//! ```text
//! # torchvision's ResNet-18 (needs torch and torchvision; --pretrained downloads weights)
//! python3 scripts/onnx/export_resnet18.py /tmp/resnet18.onnx
//! # or a tiny ResNet-shaped classifier written with only the onnx package
//! python3 scripts/onnx/write_small_cnn.py /tmp/small_cnn.onnx
//!
//! cargo run --release -p anygrad --example onnx_resnet -- /tmp/resnet18.onnx \
//!     [--device best] [--steps 20] [--batch 4] [--lr 0.003] [--labels FILE] [--output FILE]
//! ```
//!
//! `--labels FILE` names the classes (one a line; `export_resnet18.py --pretrained --labels
//! FILE` writes ImageNet's); `--output` is where the fine-tuned initializers go (default
//! `onnx_resnet.fine_tuned.safetensors` in the temporary folder). The example fails (exit
//! status 1) if the loss does not fall or the reloaded model's outputs differ.
//!
//! The PyTorch this replaces:
//!
//! ```text
//! for p in model.parameters(): p.requires_grad = False
//! model.fc.weight.requires_grad = model.fc.bias.requires_grad = True
//! optimizer = torch.optim.Adam([model.fc.weight, model.fc.bias], lr=0.003)
//! for step in range(steps):
//!     loss = F.cross_entropy(model(x), labels); loss.backward()
//!     optimizer.step(); optimizer.zero_grad()
//! ```

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use anygrad::nn::{cross_entropy, Adam, AdamConfig, Optimizer, Parameter};
use anygrad::prelude::{no_grad, Device, Tensor};
use anygrad_onnx::proto::{DataType, GraphProto, ModelProto};
use anygrad_onnx::{DeclaredDim, OnnxModel, Value};
use prost::Message;

/// The example's errors: anygrad's, the importer's, or a message of its own.
type Failure = Box<dyn std::error::Error>;

/// Command-line options (plain `std::env::args` parsing).
struct Options {
    model: PathBuf,
    device: String,
    steps: usize,
    batch: usize,
    learning_rate: f64,
    labels: Option<PathBuf>,
    output: PathBuf,
}

const USAGE: &str = "usage: onnx_resnet MODEL.onnx [--device cpu|gpu|gpu:N|best] [--steps N] \
                     [--batch N] [--lr X] [--labels FILE] [--output FILE.safetensors]";

fn options() -> Result<Options, Failure> {
    let mut args = std::env::args().skip(1);
    let mut model = None;
    let mut options = Options {
        model: PathBuf::new(),
        device: "best".into(),
        steps: 20,
        batch: 4,
        learning_rate: 0.003,
        labels: None,
        output: std::env::temp_dir().join("onnx_resnet.fine_tuned.safetensors"),
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--device" => options.device = value("--device")?,
            "--steps" => options.steps = value("--steps")?.parse()?,
            "--batch" => options.batch = value("--batch")?.parse()?,
            "--lr" => options.learning_rate = value("--lr")?.parse()?,
            "--labels" => options.labels = Some(value("--labels")?.into()),
            "--output" => options.output = value("--output")?.into(),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other if other.starts_with("--") => {
                return Err(format!("unknown option {other}\n{USAGE}").into())
            }
            path if model.is_none() => model = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument {extra}\n{USAGE}").into()),
        }
    }
    options.model = model.ok_or(USAGE)?;
    if options.batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    Ok(options)
}

/// The device `--device` names, and why it was chosen (printed, so the run says where it ran).
fn choose_device(requested: &str) -> Result<(Device, String), Failure> {
    if requested != "best" {
        return Ok((Device::parse(requested)?, format!("--device {requested}")));
    }
    if let Ok(named) = std::env::var("ANYGRAD_DEVICE") {
        if !named.is_empty() {
            return Ok((
                Device::best()?,
                format!("--device best: ANYGRAD_DEVICE={named}"),
            ));
        }
    }
    let (device, reason) = Device::best_available();
    let why = match reason {
        Some(reason) => format!("--device best: {reason}"),
        None => "--device best: the first hardware GPU".to_string(),
    };
    Ok((device, why))
}

/// The names of the classifier's final layer: the weight (and bias, if any) of the last Gemm,
/// or of the last MatMul with the Add after it, whose weight is one of `parameters` (directly
/// or through Identity, Transpose or Cast nodes, as some exporters write it).
fn classifier_layer(
    graph: &GraphProto,
    parameters: &HashSet<String>,
) -> Result<(String, Option<String>), Failure> {
    let producers: HashMap<&str, usize> = graph
        .node
        .iter()
        .enumerate()
        .flat_map(|(i, node)| node.output.iter().map(move |o| (o.as_str(), i)))
        .collect();
    let parameter_behind = |name: &str| -> Option<String> {
        let mut name = name;
        for _ in 0..8 {
            if parameters.contains(name) {
                return Some(name.to_string());
            }
            let node = &graph.node[*producers.get(name)?];
            if !matches!(node.op_type.as_str(), "Identity" | "Transpose" | "Cast") {
                return None;
            }
            name = node.input.first()?;
        }
        None
    };
    for node in graph.node.iter().rev() {
        let Some(weight) = node.input.get(1).and_then(|w| parameter_behind(w)) else {
            continue;
        };
        match node.op_type.as_str() {
            "Gemm" => {
                let bias = node.input.get(2).and_then(|b| parameter_behind(b));
                return Ok((weight, bias));
            }
            "MatMul" => {
                let output = node.output.first().map(String::as_str).unwrap_or_default();
                let bias = graph
                    .node
                    .iter()
                    .filter(|n| n.op_type == "Add" && n.input.iter().any(|i| i == output))
                    .flat_map(|n| n.input.iter().filter(|i| *i != output))
                    .find_map(|b| parameter_behind(b));
                return Ok((weight, bias));
            }
            _ => {}
        }
    }
    Err("found no Gemm or MatMul whose weight is an initializer: where is the classifier?".into())
}

/// The input's shape: the declared one with a symbolic (or unknown) batch dim set to `batch`.
fn input_shape(model: &OnnxModel, batch: usize) -> Result<(String, Vec<usize>), Failure> {
    let [input] = model.inputs() else {
        return Err(format!(
            "this example feeds one image input; the model has {}",
            model.inputs().len()
        )
        .into());
    };
    if input.element_type != DataType::Float as i32 {
        return Err(format!(
            "input `{}` is {}, this example feeds float images",
            input.name,
            input.element_type_name()
        )
        .into());
    }
    let dims = input
        .shape
        .as_ref()
        .ok_or_else(|| format!("input `{}` declares no shape", input.name))?;
    let mut shape = Vec::with_capacity(dims.len());
    for (i, dim) in dims.iter().enumerate() {
        shape.push(match dim {
            DeclaredDim::Fixed(size) => *size,
            _ if i == 0 => batch,
            _ => {
                return Err(format!(
                    "input `{}` {}: dim {i} is not fixed; this example needs the image size \
                     in the model (export with a fixed height and width)",
                    input.name,
                    input.shape_text()
                )
                .into())
            }
        });
    }
    Ok((input.name.clone(), shape))
}

/// A small deterministic generator (splitmix64), so that every device sees the same batch.
struct SplitMix(u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f32 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
}

/// Random images of `shape` ([batch, channels, height, width], or any shape: the last two
/// dims are taken as the image's): each channel a random brightness plus a random stripe
/// pattern plus noise, about the range of normalized pixels. Unlike pure noise, which a
/// network's global pooling averages away, such images give each image features of its own.
fn random_images(shape: &[usize], random: &mut SplitMix) -> Vec<f32> {
    let (height, width) = match shape {
        [.., h, w] => (*h, *w),
        [w] => (1, *w),
        [] => (1, 1),
    };
    let planes = shape.iter().product::<usize>() / (height * width).max(1);
    let mut pixels = Vec::with_capacity(planes * height * width);
    for _ in 0..planes {
        let brightness = random.normal();
        let (fy, fx) = (random.uniform() as f32 * 0.6, random.uniform() as f32 * 0.6);
        let phase = random.uniform() as f32 * std::f32::consts::TAU;
        for y in 0..height {
            for x in 0..width {
                let stripes = (fy * y as f32 + fx * x as f32 + phase).sin();
                pixels.push(brightness + stripes + 0.3 * random.normal());
            }
        }
    }
    pixels
}

/// The model's first output for `images`: `[batch, classes]` logits.
fn logits(model: &OnnxModel, input: &str, images: &Tensor) -> Result<Tensor, Failure> {
    let outputs = model.run(&[(input, Value::Tensor(images.clone()))])?;
    let (name, value) = outputs
        .into_iter()
        .next()
        .ok_or("the model has no output")?;
    match value {
        Value::Tensor(t) if t.dtype().is_float() && t.rank() == 2 => Ok(t),
        other => Err(format!(
            "output `{name}` is {}, expected [batch, classes] float scores",
            other.describe()
        )
        .into()),
    }
}

/// The largest absolute difference between two tensors' values.
fn max_difference(a: &Tensor, b: &Tensor) -> Result<f32, Failure> {
    let (a, b) = (a.to_vec_f32()?, b.to_vec_f32()?);
    Ok(a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max))
}

fn main() {
    if let Err(error) = run() {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Failure> {
    let options = options()?;

    // 1. The device and the model.
    let (device, why) = choose_device(&options.device)?;
    println!("device: {} ({why})", device.description());
    let bytes = std::fs::read(&options.model)
        .map_err(|e| format!("reading {}: {e}", options.model.display()))?;
    let model = OnnxModel::load(&options.model, &device)?;
    let (input, shape) = input_shape(&model, options.batch)?;
    println!(
        "model: {} ({}, {} nodes, {} parameters), input `{input}` {} -> {shape:?}",
        options.model.display(),
        if model.producer().is_empty() {
            "unknown producer"
        } else {
            model.producer()
        },
        model.operator_counts().values().sum::<usize>(),
        model.parameter_count(),
        model.inputs()[0].shape_text(),
    );

    // 2. Inference on a fixed batch of random images.
    let batch = shape[0];
    let mut random = SplitMix(2024);
    let images = Tensor::from_vec(random_images(&shape, &mut random), &shape, &device)?;
    let started = Instant::now();
    let scores = {
        let _inference = no_grad();
        logits(&model, &input, &images)?
    };
    device.synchronize()?;
    let elapsed = started.elapsed().as_secs_f64() * 1e3;
    let classes = scores.shape()[1];
    let top = classes.min(5);
    let (probabilities, indices) = scores.softmax(1)?.topk(top, 1, true, true)?;
    let (probabilities, indices) = (probabilities.to_vec_f32()?, indices.to_vec::<i32>()?);
    println!(
        "inference: batch {batch}, {classes} classes, {elapsed:.1} ms (a first run: on a GPU \
         that includes compiling its kernels)"
    );
    let names: Vec<String> = match &options.labels {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?
            .lines()
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    };
    println!("top-{top} classes of image 0 (a random image, so the classes mean nothing):");
    for (probability, class) in probabilities.iter().zip(&indices).take(top) {
        let name = match names.get(*class as usize) {
            Some(name) => format!("  {name}"),
            None => String::new(),
        };
        println!("  class {class:>4}  p = {probability:.4}{name}");
    }

    // 3. Fine-tune the last layer only. `parameters()` marks every float initializer as
    // requiring a gradient; everything but the classifier's weight and bias is frozen again.
    let parameters = model.parameters();
    let names_of: HashSet<String> = parameters.iter().map(|(n, _)| n.clone()).collect();
    let proto = ModelProto::decode(bytes.as_slice())?;
    let graph = proto.graph.as_ref().ok_or("the file holds no graph")?;
    let (weight, bias) = classifier_layer(graph, &names_of)?;
    let chosen: Vec<&str> = std::iter::once(weight.as_str())
        .chain(bias.as_deref())
        .collect();
    let mut trainable = Vec::new();
    let mut frozen = Vec::new();
    for (name, tensor) in &parameters {
        if chosen.contains(&name.as_str()) {
            trainable.push((name.clone(), tensor.clone()));
        } else {
            frozen.push(tensor.requires_grad_(false));
        }
    }
    let shapes: Vec<String> = trainable
        .iter()
        .map(|(n, t)| format!("{n} {:?}", t.shape()))
        .collect();
    println!(
        "fine-tuning the classifier only: {} (the other {} initializers are frozen)",
        shapes.join(", "),
        frozen.len()
    );
    // The optimizer updates `Parameter` slots. A slot made from a tensor shares its storage,
    // so the optimizer's in-place updates change the model's own initializers; the gradient
    // that backward leaves on the model's tensor is handed to the slot before each step.
    let slots: Vec<(String, Parameter)> = trainable
        .iter()
        .map(|(n, t)| (n.clone(), Parameter::new(t.clone())))
        .collect();
    let mut optimizer = Adam::new(slots.clone(), AdamConfig::new(options.learning_rate))?;
    let labels: Vec<i32> = (0..batch)
        .map(|_| (random.next_u64() % classes as u64) as i32)
        .collect();
    println!(
        "data: the same {batch} random images with random labels {labels:?}, which the \
         classifier learns to fit (a stand-in for a small labelled data set); Adam, lr {}",
        options.learning_rate
    );
    let targets = Tensor::from_vec(labels.clone(), &[batch], &device)?;
    let every = options.steps.div_ceil(20).max(1);
    let mut first_loss = None;
    let started = Instant::now();
    for step in 1..=options.steps {
        let loss = cross_entropy(&logits(&model, &input, &images)?, &targets)?;
        loss.backward()?;
        for ((_, tensor), (_, slot)) in trainable.iter().zip(&slots) {
            slot.set_grad(tensor.grad());
            tensor.zero_grad();
        }
        optimizer.step()?;
        optimizer.zero_grad();
        let value = loss.item_f64()?;
        first_loss.get_or_insert(value);
        if step % every == 0 || step == 1 || step == options.steps {
            println!("  step {step:>4}  loss {value:.4}");
        }
    }
    let tuned_scores = {
        let _inference = no_grad();
        logits(&model, &input, &images)?
    };
    let final_loss = cross_entropy(&tuned_scores, &targets)?.item_f64()?;
    let predicted = tuned_scores.argmax(1, false)?.to_vec::<i32>()?;
    let fitted = predicted
        .iter()
        .zip(&labels)
        .filter(|(p, l)| p == l)
        .count();
    println!(
        "after {} steps ({:.2} s): loss {final_loss:.4}, {fitted} of {batch} labels fitted",
        options.steps,
        started.elapsed().as_secs_f64()
    );
    if let Some(first) = first_loss {
        if final_loss >= first {
            return Err(format!("the loss did not fall ({first:.4} -> {final_loss:.4})").into());
        }
        println!("loss fell: {first:.4} -> {final_loss:.4}");
    }
    if frozen.iter().any(|t| t.grad().is_some()) {
        return Err("a frozen initializer received a gradient".into());
    }

    // 4. Save the fine-tuned initializers, load them into a fresh copy, compare the outputs.
    model.save_safetensors(&options.output)?;
    println!("saved the initializers to {}", options.output.display());
    let fresh = OnnxModel::load(&options.model, &device)?;
    let _inference = no_grad();
    let untouched = max_difference(&logits(&fresh, &input, &images)?, &tuned_scores)?;
    fresh.load_safetensors(&options.output)?;
    let reloaded = max_difference(&logits(&fresh, &input, &images)?, &tuned_scores)?;
    let scale = tuned_scores.abs()?.max_all()?.item_f64()?.max(1.0) as f32;
    println!(
        "reload check: a fresh copy differs from the fine-tuned model by up to {untouched:.4}; \
         with the saved weights loaded, by {reloaded:.2e}"
    );
    if reloaded > 1e-5 * scale {
        return Err(format!("reload check failed: outputs differ by {reloaded:e}").into());
    }
    println!("reload check: passed (same outputs)");
    Ok(())
}
