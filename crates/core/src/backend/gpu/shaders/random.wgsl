// random.wgsl — counter-based random numbers, the same integer hash as random.rs, so element i
// of a draw is the same number on the CPU and on any GPU, whatever the thread count.
// params: RandomParams (random.rs; uniform: a = low, b = high; normal: a = mean, b = std)
@group(0) @binding(1) var<storage, read_write> output: array<S>;

// The PCG output permutation as a 32-bit hash (u32 arithmetic wraps, as wrapping_* in Rust).
fn pcg_hash(value: u32) -> u32 {
    let state = value * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

fn random_bits(key: u32, counter: u32) -> u32 {
    return pcg_hash(pcg_hash(counter ^ key) + key);
}

// 24 random bits scaled to [0, 1): exact in f32.
fn unit_uniform(bits: u32) -> f32 {
    return f32(bits >> 8u) * (1.0 / 16777216.0);
}

// Box–Muller from two independent streams; u1 is in (0, 1] so log never sees 0.
fn standard_normal(key: u32, counter: u32) -> f32 {
    let u1 = f32((random_bits(key, counter) >> 8u) + 1u) * (1.0 / 16777216.0);
    let u2 = unit_uniform(random_bits(key ^ 0x9E3779B9u, counter));
    return sqrt(-2.0 * log(u1)) * cos(6.2831855 * u2);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) workgroup: vec3<u32>, @builtin(num_workgroups) workgroups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = linear_id(workgroup, workgroups, local);
    if (i >= params.numel) {
        return;
    }
    let key = params.key;
    let counter = params.first_counter + i;
    let a = bitcast<f32>(params.a_bits);
    let b = bitcast<f32>(params.b_bits);
    var value: f32;
    if (NORMAL) {
        value = a + b * standard_normal(key, counter);
    } else {
        value = a + (b - a) * unit_uniform(random_bits(key, counter));
    }
    output[i] = S(value);
}
