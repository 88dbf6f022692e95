//! `anygrad onnx ...`: work with ONNX models through the anygrad-onnx importer. One file per
//! subcommand (`info.rs`, `run.rs`, `test.rs`); `npy.rs` reads `.npy` inputs and writes
//! `.npz` outputs.

mod info;
mod npy;
mod run;
mod test;

use clap::Subcommand;

/// The `anygrad onnx` subcommands.
#[derive(Subcommand)]
pub enum OnnxCommand {
    /// Inputs, outputs, opsets, operator counts, parameters and unsupported operators of a
    /// model.
    Info(info::InfoArgs),
    /// Run a model on `.npy` inputs; print the outputs' shapes or write them to an `.npz`.
    Run(run::RunArgs),
    /// Run folders in ONNX's backend-test layout (model.onnx, test_data_set_N/) and compare
    /// the outputs: one line per case, then `N passed, M failed[, K skipped]`.
    Test(test::TestArgs),
}

/// Run one `anygrad onnx` subcommand.
pub fn run(command: OnnxCommand) -> Result<(), String> {
    match command {
        OnnxCommand::Info(args) => info::run(args),
        OnnxCommand::Run(args) => run::run(args),
        OnnxCommand::Test(args) => test::run(args),
    }
}
