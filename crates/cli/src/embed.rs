//! `anygrad embed --model DIR [--device D] [--json] [--f16] [--batch-size N]
//! (SENTENCE... | --input FILE|-)`: sentence embeddings from a sentence-transformers directory
//! (all-MiniLM-L6-v2 and other BERT encoders), one per sentence: a line of numbers each, or
//! with `--json` one JSON array of arrays.
//!
//! Inference only: the encoder runs under `no_grad` (no graph is kept) in batches of
//! `--batch-size` sentences (default 32, like sentence-transformers' `encode`), and each
//! batch's rows are written as soon as they are computed, so memory is that of one batch
//! whatever the number of sentences. With `--json` the output is still one JSON array, written
//! a row at a time.
//!
//! Sentences come from the arguments or, with `--input`, from a file (`-`: standard input),
//! one per line and read as the batches need them. Every line is one sentence, empty lines
//! included (they embed the empty string, as sentence-transformers' `encode([""])` does), so
//! row `i` of the output is line `i` of the input; a final newline ends the last line (it does
//! not start an empty one) and a `\r` before a newline is dropped. Giving both arguments and
//! `--input` is refused. An input without lines prints nothing (`[]` with `--json`).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use anygrad::files::regular_file_metadata;
use anygrad::models::bert::DEFAULT_BATCH_SIZE;
use anygrad::models::SentenceEncoder;
use anygrad::{DType, Device};
use clap::Args;

/// The longest input line read (1 MiB): far beyond what any encoder keeps (sentences are
/// truncated to `max_seq_length` tokens), short enough that a stream without newlines (a
/// device, a binary file) is refused instead of read into memory.
const MAX_LINE_BYTES: u64 = 1 << 20;

/// The largest `--input` file accepted: lines are streamed, never held together, so this only
/// refuses sizes no sentence file has.
const MAX_INPUT_BYTES: u64 = 1 << 40;

/// Arguments of `anygrad embed`.
#[derive(Args)]
pub struct EmbedArgs {
    /// The model directory (config.json, model.safetensors, tokenizer.json, 1_Pooling/...).
    #[arg(long)]
    model: PathBuf,
    /// Device: cpu, gpu, gpu:N or best.
    #[arg(long, default_value = "best")]
    device: String,
    /// Print one JSON array of arrays instead of one line per sentence.
    #[arg(long)]
    json: bool,
    /// Run under f16 autocast (matmuls in f16; the output stays f32).
    #[arg(long)]
    f16: bool,
    /// Sentences per forward pass; each batch's embeddings are printed as soon as they are
    /// computed.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH_SIZE)]
    batch_size: usize,
    /// Read the sentences from FILE, one per line (empty lines are sentences too), or from
    /// standard input with `-`; instead of SENTENCE arguments.
    #[arg(long, value_name = "FILE|-")]
    input: Option<PathBuf>,
    /// The sentences to embed (or use --input).
    sentences: Vec<String>,
}

/// Where the sentences come from.
enum Sentences {
    /// The positional arguments.
    Arguments(std::vec::IntoIter<String>),
    /// Lines of a file or of standard input, read as needed.
    Lines {
        reader: Box<dyn BufRead>,
        name: String,
        line: usize,
    },
}

impl Sentences {
    /// The sentences of `args`, with the `--input` file checked (a regular file) and opened.
    fn open(args: &EmbedArgs) -> Result<Sentences, String> {
        let Some(input) = &args.input else {
            if args.sentences.is_empty() {
                return Err(
                    "no sentences: give them as arguments or with --input FILE (- for standard \
                     input)"
                        .into(),
                );
            }
            return Ok(Sentences::Arguments(args.sentences.clone().into_iter()));
        };
        if !args.sentences.is_empty() {
            return Err(format!(
                "give the sentences either as arguments or with --input, not both ({} argument(s) \
                 and --input {})",
                args.sentences.len(),
                input.display()
            ));
        }
        if input == Path::new("-") {
            return Ok(Sentences::Lines {
                reader: Box::new(std::io::stdin().lock()),
                name: "standard input".into(),
                line: 0,
            });
        }
        let what = "--input sentence file";
        regular_file_metadata(input, MAX_INPUT_BYTES, what).map_err(|e| e.to_string())?;
        let name = format!("--input {}", input.display());
        let file = File::open(input).map_err(|e| format!("reading {name}: {e}"))?;
        // The path may have been replaced by a pipe between the check and the open.
        let is_file = file
            .metadata()
            .map_err(|e| format!("reading {name}: {e}"))?
            .is_file();
        if !is_file {
            return Err(format!(
                "{name}: not a regular file (it changed while being opened)"
            ));
        }
        Ok(Sentences::Lines {
            reader: Box::new(BufReader::new(file)),
            name,
            line: 0,
        })
    }

    /// Up to `size` more sentences; empty when there are none left.
    fn next_batch(&mut self, size: usize) -> Result<Vec<String>, String> {
        match self {
            Sentences::Arguments(rest) => Ok(rest.by_ref().take(size).collect()),
            Sentences::Lines { reader, name, line } => {
                // No capacity up front: a batch size of usize::MAX means "all in one batch".
                let mut batch = Vec::new();
                while batch.len() < size {
                    match read_line(reader, name, *line + 1)? {
                        Some(sentence) => {
                            *line += 1;
                            batch.push(sentence);
                        }
                        None => break,
                    }
                }
                Ok(batch)
            }
        }
    }
}

/// Line `number` of `reader` without its newline (and a `\r` before it), or `None` at the end.
fn read_line(
    reader: &mut Box<dyn BufRead>,
    name: &str,
    number: usize,
) -> Result<Option<String>, String> {
    let mut bytes = Vec::new();
    let read = reader
        .by_ref()
        .take(MAX_LINE_BYTES + 1)
        .read_until(b'\n', &mut bytes)
        .map_err(|e| format!("reading line {number} of {name}: {e}"))?;
    if read == 0 {
        return Ok(None);
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    }
    if bytes.len() as u64 > MAX_LINE_BYTES {
        return Err(format!(
            "line {number} of {name} is longer than {MAX_LINE_BYTES} bytes; give one sentence \
             per line"
        ));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("line {number} of {name} is not UTF-8 text"))
}

/// Writes rows as they come: lines of numbers, or one JSON array of arrays.
struct Printer<W: Write> {
    out: W,
    json: bool,
    rows: usize,
}

impl<W: Write> Printer<W> {
    fn row(&mut self, row: &[f32]) -> std::io::Result<()> {
        if self.json {
            let separator = if self.rows == 0 { "[" } else { ",\n" };
            let values = serde_json::to_string(row).map_err(std::io::Error::other)?;
            write!(self.out, "{separator}{values}")?;
        } else {
            let line: Vec<String> = row.iter().map(|v| format!("{v:.6}")).collect();
            writeln!(self.out, "{}", line.join(" "))?;
        }
        self.rows += 1;
        Ok(())
    }

    fn finish(&mut self) -> std::io::Result<()> {
        if self.json {
            let opening = if self.rows == 0 { "[" } else { "" };
            writeln!(self.out, "{opening}]")?;
        }
        self.out.flush()
    }
}

/// An output error as the command reports it; `None` when the reader went away (`| head`),
/// which ends the command quietly.
fn output_error(error: std::io::Error) -> Option<String> {
    (error.kind() != std::io::ErrorKind::BrokenPipe)
        .then(|| format!("writing the embeddings: {error}"))
}

/// Run `anygrad embed`.
pub fn run(args: EmbedArgs) -> Result<(), String> {
    if args.batch_size == 0 {
        return Err("--batch-size 0: give at least 1 sentence per batch".into());
    }
    // The input is checked before the model is loaded: a bad path fails at once.
    let mut sentences = Sentences::open(&args)?;
    let device = Device::parse(&args.device).map_err(|e| e.to_string())?;
    let encoder = SentenceEncoder::from_dir(&args.model, &device).map_err(|e| e.to_string())?;
    let _no_graph = anygrad::no_grad();
    let _autocast = if args.f16 {
        Some(anygrad::autocast(DType::F16, &device).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let mut printer = Printer {
        out: std::io::stdout().lock(),
        json: args.json,
        rows: 0,
    };
    loop {
        let batch = sentences.next_batch(args.batch_size)?;
        if batch.is_empty() {
            break;
        }
        let texts: Vec<&str> = batch.iter().map(String::as_str).collect();
        let embeddings = encoder
            .encode_in_batches(&texts, args.batch_size)
            .map_err(|e| e.to_string())?;
        let width = embeddings.shape()[1].max(1);
        let values = embeddings.to_vec_f32().map_err(|e| e.to_string())?;
        let written = values
            .chunks(width)
            .try_for_each(|row| printer.row(row))
            .and_then(|()| printer.out.flush());
        if let Err(error) = written {
            return output_error(error).map_or(Ok(()), Err);
        }
    }
    printer
        .finish()
        .map_or_else(|error| output_error(error).map_or(Ok(()), Err), Ok)
}
