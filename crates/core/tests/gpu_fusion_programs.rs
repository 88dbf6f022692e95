//! Random programs of elementwise ops run on the GPU with fusion on and on the CPU, compared
//! value by value. The programs mix unary, binary and scalar ops with transposed and broadcast
//! operands, drop values early (so that their producers are inlined into later kernels), read
//! values back in the middle (draining at arbitrary points) and put reductions between
//! elementwise ops — the situations where deferring and fusing could go wrong.

use anygrad_core::op::{BinaryOp, UnaryOp};
use anygrad_core::{Device, Tensor};
use anygrad_testing::{assert_close, gpu_or_skip};
use proptest::prelude::*;

const UNARY: [UnaryOp; 6] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Relu,
    UnaryOp::Sin,
];
const BINARY: [BinaryOp; 5] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Maximum,
    BinaryOp::Minimum,
];

/// How an operand is read.
#[derive(Debug, Clone, Copy)]
enum View {
    Whole,
    Transposed,
    /// Row 0 broadcast over the rows (stride 0, and an offset when the row is not row 0).
    Row(usize),
}

#[derive(Debug, Clone)]
enum Step {
    Unary(usize, usize),
    Binary(usize, usize, View, usize, View),
    Scalar(usize, usize, i8, bool),
    Drop(usize),
    Read(usize),
    /// `x * sum(x)`: a reduction between elementwise ops, broadcast back as a 0-d operand.
    ScaleBySum(usize),
}

fn view_strategy() -> impl Strategy<Value = View> {
    prop_oneof![
        3 => Just(View::Whole),
        1 => Just(View::Transposed),
        1 => (0usize..8).prop_map(View::Row),
    ]
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0..UNARY.len(), any::<usize>()).prop_map(|(op, x)| Step::Unary(op, x)),
        4 => (0..BINARY.len(), any::<usize>(), view_strategy(), any::<usize>(), view_strategy())
            .prop_map(|(op, a, va, b, vb)| Step::Binary(op, a, va, b, vb)),
        2 => (0..BINARY.len(), any::<usize>(), -3i8..4, any::<bool>())
            .prop_map(|(op, x, s, left)| Step::Scalar(op, x, s, left)),
        2 => any::<usize>().prop_map(Step::Drop),
        1 => any::<usize>().prop_map(Step::Read),
        1 => any::<usize>().prop_map(Step::ScaleBySum),
    ]
}

/// A value on both devices.
struct Pair {
    gpu: Tensor,
    cpu: Tensor,
}

fn view(t: &Tensor, how: View, n: usize) -> Tensor {
    match how {
        View::Whole => t.clone(),
        View::Transposed => t.t().unwrap(),
        View::Row(row) => t
            .narrow(0, row % n, 1)
            .unwrap()
            .broadcast_to(&[n, n])
            .unwrap(),
    }
}

fn assert_same(pair: &Pair, what: &str) {
    let (gpu, cpu) = (
        pair.gpu.to_vec::<f32>().unwrap(),
        pair.cpu.to_vec::<f32>().unwrap(),
    );
    assert_close(&gpu, &cpu, 1e-4, 1e-4, what);
}

/// The live value picked by `index` (modulo the number of live values).
fn pick(values: &[Option<Pair>], index: usize) -> usize {
    let live: Vec<usize> = (0..values.len()).filter(|&i| values[i].is_some()).collect();
    live[index % live.len()]
}

fn run_program(gpu: &Device, n: usize, seed: u64, steps: &[Step]) {
    anygrad_core::manual_seed(seed);
    let mut values: Vec<Option<Pair>> = (0..3)
        .map(|_| {
            let cpu = Tensor::randn(&[n, n], anygrad_core::DType::F32, &Device::Cpu).unwrap();
            Some(Pair {
                gpu: cpu.to_device(gpu).unwrap(),
                cpu,
            })
        })
        .collect();
    for (number, step) in steps.iter().enumerate() {
        let what = format!("step {number} {step:?}");
        let new = match *step {
            Step::Unary(op, x) => {
                let x = values[pick(&values, x)].as_ref().unwrap();
                Some(Pair {
                    gpu: x.gpu.unary(UNARY[op]).unwrap(),
                    cpu: x.cpu.unary(UNARY[op]).unwrap(),
                })
            }
            Step::Binary(op, a, va, b, vb) => {
                let a = values[pick(&values, a)].as_ref().unwrap();
                let b = values[pick(&values, b)].as_ref().unwrap();
                let on = |t: &Tensor, how: View| view(t, how, n);
                Some(Pair {
                    gpu: on(&a.gpu, va).binary(&on(&b.gpu, vb), BINARY[op]).unwrap(),
                    cpu: on(&a.cpu, va).binary(&on(&b.cpu, vb), BINARY[op]).unwrap(),
                })
            }
            Step::Scalar(op, x, s, left) => {
                let x = values[pick(&values, x)].as_ref().unwrap();
                Some(Pair {
                    gpu: x.gpu.binary_scalar(BINARY[op], s as f64, left).unwrap(),
                    cpu: x.cpu.binary_scalar(BINARY[op], s as f64, left).unwrap(),
                })
            }
            Step::Drop(x) => {
                if values.iter().flatten().count() > 1 {
                    let index = pick(&values, x);
                    values[index] = None;
                }
                None
            }
            Step::Read(x) => {
                assert_same(values[pick(&values, x)].as_ref().unwrap(), &what);
                None
            }
            Step::ScaleBySum(x) => {
                let x = values[pick(&values, x)].as_ref().unwrap();
                // Bounded: tanh keeps the sum's factor within [-1, 1].
                let scale = |t: &Tensor| t.mul(&t.sum_all().unwrap().tanh().unwrap()).unwrap();
                Some(Pair {
                    gpu: scale(&x.gpu),
                    cpu: scale(&x.cpu),
                })
            }
        };
        values.extend(new.map(Some));
    }
    for (index, pair) in values.iter().enumerate() {
        if let Some(pair) = pair {
            assert_same(pair, &format!("value {index} at the end of {steps:?}"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn fused_programs_match_the_cpu(
        n in 1usize..7,
        seed in any::<u64>(),
        steps in prop::collection::vec(step_strategy(), 1..16),
    ) {
        if let Some(gpu) = gpu_or_skip("fused_programs_match_the_cpu") {
            run_program(&gpu, n, seed, &steps);
        }
    }
}
