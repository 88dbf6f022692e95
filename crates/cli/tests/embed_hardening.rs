//! `anygrad embed` as a hostile but fair user runs it: sentences from arguments, a file or
//! standard input give the same embeddings; the batch size does not change them; rows are
//! printed as each batch is computed (a pipe gets its first row before the input ends); bad
//! options, special files and model directories whose `config.json` claims more than the
//! weights hold give one `error:` line at once (never a hang or memory running out).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anygrad_testing::temp_dir;

/// The tiny random sentence-transformers directory of the model tests (2 layers, hidden 32).
const TINY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../models/tests/golden/tiny-bert"
);

/// How long a command may take before the test calls it blocked.
const DEADLINE: Duration = Duration::from_secs(60);

const SENTENCES: [&str; 4] = [
    "The cat sat on the mat.",
    "I like it!",
    "a very very very big red dog runs fast and plays",
    "Zebras? Not fun.",
];

/// `anygrad args...` on the CPU (`embed` gets `--device cpu`: no GPU probe, whose driver may
/// print lines of its own).
fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_anygrad"));
    match args.split_first() {
        Some((&"embed", rest)) => command.args(["embed", "--device", "cpu"]).args(rest),
        _ => command.args(args),
    };
    command.env("ANYGRAD_DEVICE", "cpu");
    command
}

/// Wait for `child` for at most [`DEADLINE`]; kill it and fail when it takes longer.
fn finish_within_deadline(mut child: Child, what: &str) -> Output {
    let started = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {DEADLINE:?} (blocked?)");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Run `anygrad args...` with `stdin` as its standard input, within the deadline.
fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = command(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run anygrad");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        let bytes = bytes.to_vec();
        // A writer thread: a command that does not read must not block the test.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    finish_within_deadline(child, &format!("anygrad {args:?}"))
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The command fails with exactly one `error:` line containing every `expected` text.
fn assert_clean_failure(args: &[&str], stdin: Option<&[u8]>, expected: &[&str]) -> String {
    let output = run(args, stdin);
    let stderr = stderr_of(&output);
    assert!(
        output.status.code().is_some_and(|code| code != 0),
        "{args:?} should exit non-zero (not by a signal): {:?} {stderr}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{args:?}: {stderr}");
    for text in expected {
        assert!(
            errors[0].contains(text),
            "{args:?}: `{text}` not in {stderr}"
        );
    }
    stderr
}

/// The embeddings `anygrad embed --json` prints for `args` (and `stdin`).
fn embeddings(args: &[&str], stdin: Option<&[u8]>) -> Vec<Vec<f32>> {
    let full = [&["embed", "--model", TINY, "--json"][..], args].concat();
    let output = run(&full, stdin);
    assert!(output.status.success(), "{full:?}: {}", stderr_of(&output));
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{full:?}: not one JSON array of arrays ({error}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn assert_same(actual: &[Vec<f32>], expected: &[Vec<f32>], tolerance: f32, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: row count");
    for (index, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert_eq!(a.len(), e.len(), "{what}: row {index} width");
        for (x, y) in a.iter().zip(e) {
            assert!(
                (x - y).abs() <= tolerance,
                "{what}: row {index} differs ({x} vs {y})"
            );
        }
    }
}

fn text(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

#[test]
fn sentences_from_a_file_or_standard_input_match_the_arguments() {
    let expected = embeddings(&SENTENCES, None);
    assert_eq!(expected.len(), SENTENCES.len());
    assert!(expected.iter().all(|row| row.len() == 32));
    let dir = temp_dir("embed-input");
    let lines = SENTENCES.join("\n") + "\n";
    let file = dir.join("sentences.txt");
    std::fs::write(&file, &lines).expect("write");
    assert_same(
        &embeddings(&["--input", text(&file)], None),
        &expected,
        1e-6,
        "--input FILE",
    );
    assert_same(
        &embeddings(&["--input", "-"], Some(lines.as_bytes())),
        &expected,
        1e-6,
        "--input -",
    );
    // Windows line endings and no final newline: the same sentences.
    let crlf = dir.join("crlf.txt");
    std::fs::write(&crlf, SENTENCES.join("\r\n")).expect("write");
    assert_same(
        &embeddings(&["--input", text(&crlf)], None),
        &expected,
        1e-6,
        "CRLF lines",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_batch_size_does_not_change_the_embeddings() {
    // 40 sentences of different lengths: more than one batch of 32, padded differently.
    let sentences: Vec<String> = (0..40)
        .map(|i| SENTENCES[i % SENTENCES.len()].repeat(1 + i % 3))
        .collect();
    let lines = sentences.join("\n");
    let default = embeddings(&["--input", "-"], Some(lines.as_bytes()));
    assert_eq!(default.len(), 40);
    // The largest batch size is one batch of everything, not an allocation of that size.
    for batch_size in ["1", "7", "32", "64", "18446744073709551615"] {
        let batched = embeddings(
            &["--input", "-", "--batch-size", batch_size],
            Some(lines.as_bytes()),
        );
        assert_same(
            &batched,
            &default,
            1e-5,
            &format!("--batch-size {batch_size}"),
        );
    }
    // Without --json: one line of numbers per sentence.
    let output = run(
        &[
            "embed",
            "--model",
            TINY,
            "--input",
            "-",
            "--batch-size",
            "3",
        ],
        Some(lines.as_bytes()),
    );
    assert!(output.status.success(), "{}", stderr_of(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let rows: Vec<Vec<f32>> = stdout
        .lines()
        .map(|line| {
            line.split(' ')
                .map(|v| v.parse().expect("a number"))
                .collect()
        })
        .collect();
    assert_same(&rows, &default, 1e-5, "text output");
}

#[test]
fn empty_lines_are_sentences_and_empty_input_is_no_rows() {
    let dir = temp_dir("embed-empty-lines");
    let file = dir.join("sentences.txt");
    std::fs::write(&file, "I like it!\n\nThe cat sat on the mat.").expect("write");
    let rows = embeddings(&["--input", text(&file)], None);
    let expected = embeddings(&["I like it!", "", "The cat sat on the mat."], None);
    assert_same(&rows, &expected, 1e-6, "an empty line");
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "").expect("write");
    assert!(embeddings(&["--input", text(&empty)], None).is_empty());
    let output = run(&["embed", "--model", TINY, "--input", text(&empty)], None);
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(output.stdout.is_empty(), "{:?}", output.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_options_and_input_are_refused() {
    let dir = temp_dir("embed-bad-input");
    let file = dir.join("sentences.txt");
    std::fs::write(&file, "one\n").expect("write");
    let not_utf8 = dir.join("latin1.txt");
    std::fs::write(&not_utf8, b"fine\ncaf\xe9\n").expect("write");
    let long = dir.join("long.txt");
    std::fs::write(&long, vec![b'a'; (1 << 20) + 1]).expect("write");
    let missing = dir.join("missing.txt");
    let cases: [(Vec<&str>, Vec<&str>); 8] = [
        (vec!["--batch-size", "0", "x"], vec!["--batch-size"]),
        (vec![], vec!["no sentences", "--input"]),
        (
            vec!["--input", text(&file), "x"],
            vec!["--input", "not both"],
        ),
        (vec!["--input", text(&missing)], vec!["missing.txt"]),
        (vec!["--input", text(&dir)], vec!["not a regular file"]),
        (vec!["--input", text(&not_utf8)], vec!["line 2", "UTF-8"]),
        (vec!["--input", text(&long)], vec!["line 1", "longer than"]),
        (vec!["--input", "/dev/zero"], vec!["not a regular file"]),
    ];
    for (args, expected) in cases {
        let full = [&["embed", "--model", TINY][..], &args].concat();
        assert_clean_failure(&full, None, &expected);
    }
    // Standard input without newlines (a device, a binary stream) is refused, not held.
    assert_clean_failure(
        &["embed", "--model", TINY, "--input", "-"],
        Some(&vec![b'z'; (1 << 20) + 10]),
        &["line 1", "standard input", "longer than"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Read from `stdout` until `done` says the bytes so far are enough, on a thread; fail after the
/// deadline (the command kept its rows back).
fn read_until(
    mut stdout: std::process::ChildStdout,
    done: fn(&[u8]) -> bool,
) -> (Vec<u8>, std::process::ChildStdout) {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut byte = [0u8; 1];
        while !done(&seen) {
            match stdout.read(&mut byte) {
                Ok(1) => seen.push(byte[0]),
                _ => break,
            }
        }
        let _ = sender.send((seen, stdout));
    });
    receiver
        .recv_timeout(DEADLINE)
        .expect("the first batch's row was not printed before the input ended")
}

#[test]
fn rows_are_printed_as_each_batch_is_computed() {
    for json in [false, true] {
        let mut args = vec![
            "embed",
            "--model",
            TINY,
            "--input",
            "-",
            "--batch-size",
            "1",
        ];
        if json {
            args.push("--json");
        }
        let mut child = command(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run anygrad");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"I like it!\n").expect("write");
        stdin.flush().expect("flush");
        // The input is still open: the first row must come anyway.
        let done: fn(&[u8]) -> bool = if json {
            |seen| seen.contains(&b']')
        } else {
            |seen| seen.ends_with(b"\n")
        };
        let (first, mut stdout) = read_until(child.stdout.take().expect("stdout"), done);
        assert!(
            first.len() > 10,
            "json {json}: {}",
            String::from_utf8_lossy(&first)
        );
        stdin.write_all(b"Zebras? Not fun.\n").expect("write");
        drop(stdin);
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).expect("read");
        let output = finish_within_deadline(child, "anygrad embed --input -");
        assert!(output.status.success(), "{}", stderr_of(&output));
        let all = [first, rest].concat();
        let text = String::from_utf8_lossy(&all);
        if json {
            let rows: Vec<Vec<f32>> = serde_json::from_str(&text).expect("one JSON array");
            assert_eq!(rows.len(), 2, "{text}");
        } else {
            assert_eq!(text.lines().count(), 2, "{text}");
        }
    }
}

/// A copy of the tiny model directory (with its subdirectories).
fn tiny_copy(test: &str) -> PathBuf {
    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("create directory");
        for entry in std::fs::read_dir(from).expect("read directory") {
            let entry = entry.expect("entry");
            let target = to.join(entry.file_name());
            if entry.file_type().expect("file type").is_dir() {
                copy_tree(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).expect("copy");
            }
        }
    }
    let dir = temp_dir(test).join("model");
    copy_tree(Path::new(TINY), &dir);
    dir
}

#[test]
fn a_config_claiming_more_layers_than_the_weights_hold_is_refused_at_once() {
    let dir = tiny_copy("embed-million-layers");
    let path = dir.join("config.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("config")).expect("JSON");
    config["num_hidden_layers"] = 1_000_000.into();
    std::fs::write(&path, config.to_string()).expect("write");
    let model = text(&dir);
    let shape = ["--device", "cpu", "--batch", "1", "--sequence-length", "4"];
    for args in [
        vec!["embed", "--model", model, "hello"],
        [&["bench", "minilm", "--model", model][..], &shape].concat(),
        [&["bench", "minilm-train", "--model", model][..], &shape].concat(),
    ] {
        let started = Instant::now();
        assert_clean_failure(&args, None, &["num_hidden_layers", "1000000", "2"]);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{args:?} refused only after {:?}",
            started.elapsed()
        );
    }
}

#[cfg(unix)]
fn make_fifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[cfg(unix)]
#[test]
fn fifos_are_refused_instead_of_blocking() {
    let dir = temp_dir("embed-fifo-input");
    let fifo = dir.join("sentences.txt");
    make_fifo(&fifo);
    assert_clean_failure(
        &["embed", "--model", TINY, "--input", text(&fifo)],
        None,
        &["not a regular file", "sentences.txt"],
    );
    for (index, file) in ["config.json", "tokenizer.json", "1_Pooling/config.json"]
        .into_iter()
        .enumerate()
    {
        let model = tiny_copy(&format!("embed-fifo-model-{index}"));
        let path = model.join(file);
        std::fs::remove_file(&path).expect("remove");
        make_fifo(&path);
        assert_clean_failure(
            &["embed", "--model", text(&model), "hello"],
            None,
            &["not a regular file", file],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
