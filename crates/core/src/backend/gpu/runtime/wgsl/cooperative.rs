//! The WGSL of cooperative matrices that several families generate: [`Coop`], how the
//! generated text spells the matrix operations (`coop_mat16x16` loads, multiply-adds and
//! stores) or their plain-WGSL emulation, and the staged-block pieces built on it
//! ([`store_register`], [`block_product`]); used by the f16 matmuls (`matmul/coop.rs`,
//! `matmul/coop/wide.rs`) and the tensor-core convolutions (`conv/coop/`, `conv/nhwc/`).

use std::fmt::Write;

/// How the generated text spells the cooperative-matrix operations: the real ones, or plain
/// WGSL emulating them (`emulated`). The emulation is lazy and per lane: a fragment is its
/// `(start, stride)` (the kernels use fragments before the memory under them changes), and
/// lane `l` of a subgroup holds the 8 accumulator values of row `l / 2`, columns
/// `(l % 2) * 8 + 0..8`, which its multiply-add computes from the fragments' memory.
#[derive(Clone, Copy)]
pub(crate) struct Coop {
    pub(crate) emulated: bool,
}

impl Coop {
    /// The type of an operand fragment (`role` A or B) or accumulator (`C`).
    pub(crate) fn ty(self, role: char) -> String {
        match (self.emulated, role) {
            (true, 'C') => "array<vec4<f32>, 2>".into(),
            (true, _) => "vec2<u32>".into(),
            (false, 'C') => "coop_mat16x16<f32, C>".into(),
            (false, role) => format!("coop_mat16x16<f16, {role}>"),
        }
    }

    /// A row-major 16 x 16 fragment of `source` starting at element `start`.
    pub(crate) fn load(self, role: char, source: &str, start: &str, stride: &str) -> String {
        if self.emulated {
            format!("vec2<u32>({start}, {stride})")
        } else {
            format!("coopLoadT<{}>(&{source}[{start}], {stride})", self.ty(role))
        }
    }

    /// A column-major 16 x 16 fragment of `source` (element (r, c) at `start + c * stride +
    /// r`): an operand staged transposed, read without a copy. An emulated kernel must take
    /// [`Coop::prelude_columns`] (its A fragments are then all column-major).
    pub(crate) fn load_columns(
        self,
        role: char,
        source: &str,
        start: &str,
        stride: &str,
    ) -> String {
        if self.emulated {
            format!("vec2<u32>({start}, {stride})")
        } else {
            format!("coopLoad<{}>(&{source}[{start}], {stride})", self.ty(role))
        }
    }

    /// `a x b + c`.
    pub(crate) fn multiply_add(self, a: &str, b: &str, c: &str) -> String {
        let function = if self.emulated {
            "emulated_multiply_add"
        } else {
            "coopMultiplyAdd"
        };
        format!("{function}({a}, {b}, {c})")
    }

    /// Store accumulator `c` row-major into `scratch` at the `let` `start` (stride 16).
    pub(crate) fn store_scratch(self, c: &str, start: &str) -> String {
        if self.emulated {
            format!("emulated_store_scratch({c}, {start});")
        } else {
            format!("coopStoreT({c}, &scratch[{start}], 16u);")
        }
    }

    /// What precedes `common.wgsl`: the enable directive; or, emulated, the lane variable and
    /// the functions (A's fragments in `a_source`, B's in `b_source`, scalar f16 arrays).
    pub(crate) fn prelude(self, a_source: &str, b_source: &str) -> String {
        self.prelude_for(a_source, b_source, false)
    }

    /// [`Coop::prelude`] for kernels whose A fragments are column-major
    /// ([`Coop::load_columns`]).
    pub(crate) fn prelude_columns(self, a_source: &str, b_source: &str) -> String {
        self.prelude_for(a_source, b_source, true)
    }

    fn prelude_for(self, a_source: &str, b_source: &str, a_columns: bool) -> String {
        if !self.emulated {
            return "enable wgpu_cooperative_matrix;\n".into();
        }
        let b = |offset: u32| {
            (offset..offset + 4)
                .map(|j| format!("f32({b_source}[at + {j}u])"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "var<private> emulated_lane: u32;
fn emulated_multiply_add(a: vec2<u32>, b: vec2<u32>, c: array<vec4<f32>, 2>) -> array<vec4<f32>, 2> {{
    var result = c;
    let row = a.x + (emulated_lane / 2u) * {row_step};
    let column = b.x + (emulated_lane % 2u) * 8u;
    for (var j = 0u; j < 16u; j = j + 1u) {{
        let x = f32({a_source}[{a_index}]);
        let at = column + j * b.y;
        result[0] = result[0] + x * vec4<f32>({low});
        result[1] = result[1] + x * vec4<f32>({high});
    }}
    return result;
}}
fn emulated_store_scratch(c: array<vec4<f32>, 2>, start: u32) {{
    let at = start + emulated_lane * 8u;
    for (var j = 0u; j < 4u; j = j + 1u) {{
        scratch[at + j] = c[0][j];
        scratch[at + 4u + j] = c[1][j];
    }}
}}
",
            low = b(0),
            high = b(4),
            row_step = if a_columns { "1u" } else { "a.y" },
            a_index = if a_columns { "row + j * a.y" } else { "row + j" },
        )
    }

    /// The parameters of `main` that name this invocation's subgroup and lane.
    pub(crate) fn subgroup_builtins(self) -> &'static str {
        if self.emulated {
            ""
        } else {
            ",\n        @builtin(subgroup_id) subgroup: u32, @builtin(subgroup_invocation_id) lane: u32"
        }
    }
}

/// The stores, at `indent`, of one loaded `mat2x4<f16>` register `register` (8 halves) into
/// the f16 workgroup array `tile` from the `let` `store` plus `offset` halves. Shared by
/// the wide matmuls (`matmul/coop/wide.rs`) and the channels-last convolutions.
pub(crate) fn store_register(
    w: &mut String,
    indent: &str,
    (tile, store, offset): (&str, &str, usize),
    register: &str,
) {
    for half in 0..8 {
        let _ = writeln!(
            w,
            "{indent}{tile}[{store} + {}u] = {register}[{}][{}];",
            offset + half,
            half / 4,
            half % 4
        );
    }
}

/// The product, at `indent`, of the staged blocks (one k-block of `k_block` halves) into a
/// subgroup's accumulators `c{i}{j}` (`fragment_rows` x `fragment_columns`): per 16 k, one A
/// fragment per row from the `let` `a_fragment` (rows `a_row` halves long) and one B fragment
/// per column from `sub_column` (rows `b_row` halves long). Shared by the wide
/// matmuls and the channels-last convolutions.
pub(crate) fn block_product(
    w: &mut String,
    indent: &str,
    coop: Coop,
    (k_block, a_row, b_row): (usize, usize, usize),
    (fragment_rows, fragment_columns): (usize, usize),
) {
    for kk in 0..k_block / 16 {
        let _ = writeln!(w, "{indent}{{");
        for i in 0..fragment_rows {
            let start = format!("a_fragment + {}u", i * 16 * a_row + kk * 16);
            let fragment = coop.load('A', "tile_a", &start, &format!("{a_row}u"));
            let _ = writeln!(w, "{indent}    let fa{i} = {fragment};");
        }
        for j in 0..fragment_columns {
            let start = format!("sub_column + {}u", kk * 16 * b_row + j * 16);
            let fragment = coop.load('B', "tile_b", &start, &format!("{b_row}u"));
            let _ = writeln!(w, "{indent}    let fb{j} = {fragment};");
            for i in 0..fragment_rows {
                let c = format!("c{i}{j}");
                let product = coop.multiply_add(&format!("fa{i}"), &format!("fb{j}"), &c);
                let _ = writeln!(w, "{indent}    {c} = {product};");
            }
        }
        let _ = writeln!(w, "{indent}}}");
    }
}
