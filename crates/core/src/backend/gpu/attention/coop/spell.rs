//! How the attention kernels on cooperative matrices spell their operations in WGSL
//! ([`Spell`]: tensor-core fragments, multiply-adds, stores and barriers, or their plain-WGSL
//! emulation) and the rotated column order in which a lane walks its half of a scratch row
//! ([`rotated_columns`]): shared by the forward (`attention/coop/source.rs`,
//! `attention/coop/uniform.rs`) and the backward (`attention/coop/backward/source.rs`,
//! `attention/coop/backward/fold.rs`).

/// How the text spells fragments, multiply-adds and stores (real or emulated); the backward
/// kernels (`attention/coop/backward/source.rs`) spell theirs the same way.
pub(crate) struct Spell {
    pub(crate) emulated: bool,
}

impl Spell {
    pub(crate) fn operand(&self, role: char) -> String {
        if self.emulated {
            "vec3<u32>".into()
        } else {
            format!("coop_mat16x16<f16, {role}>")
        }
    }

    pub(crate) fn accumulator(&self) -> &'static str {
        if self.emulated {
            "array<vec4<f32>, 2>"
        } else {
            "coop_mat16x16<f32, C>"
        }
    }

    /// A row-major fragment at `start` (a `let` or literal expression) with row `stride`.
    pub(crate) fn load_rows(&self, role: char, start: &str, stride: u32) -> String {
        if self.emulated {
            format!("vec3<u32>({start}, {stride}u, 1u)")
        } else {
            format!(
                "coopLoadT<{}>(&tiles[{start}], {stride}u)",
                self.operand(role)
            )
        }
    }

    /// A column-major fragment: element (r, c) at `start + c * stride + r`.
    pub(crate) fn load_columns(&self, role: char, start: &str, stride: u32) -> String {
        if self.emulated {
            format!("vec3<u32>({start}, 1u, {stride}u)")
        } else {
            format!(
                "coopLoad<{}>(&tiles[{start}], {stride}u)",
                self.operand(role)
            )
        }
    }

    pub(crate) fn multiply_add(&self, a: &str, b: &str, c: &str) -> String {
        if self.emulated {
            format!("emulated_multiply_add({a}, {b}, {c})")
        } else {
            format!("coopMultiplyAdd({a}, {b}, {c})")
        }
    }

    /// Accumulator `c` times the f32 `factor`.
    pub(crate) fn scaled(&self, c: &str, factor: &str) -> String {
        if self.emulated {
            format!("array<vec4<f32>, 2>({c}[0] * {factor}, {c}[1] * {factor})")
        } else {
            format!("{c} * {factor}")
        }
    }

    /// Store accumulator `c` row-major into `scratch` at the `let` `start`, row `stride`.
    pub(crate) fn store(&self, c: &str, start: &str, stride: u32) -> String {
        if self.emulated {
            format!("emulated_store({c}, {start}, {stride}u);")
        } else {
            format!("coopStoreT({c}, &scratch[{start}], {stride}u);")
        }
    }

    /// A barrier for memory one subgroup shares between its lanes (its scratch rows, its P and
    /// dS rows): `subgroupBarrier` on tensor cores (the other subgroups run on), a workgroup
    /// barrier in the emulation, whose 32-lane "subgroups" are not the device's.
    pub(crate) fn local_barrier(&self) -> &'static str {
        if self.emulated {
            "workgroupBarrier();"
        } else {
            "subgroupBarrier();"
        }
    }

    pub(crate) fn prelude(&self) -> &'static str {
        if !self.emulated {
            return "";
        }
        "var<private> emulated_lane: u32;
fn emulated_multiply_add(a: vec3<u32>, b: vec3<u32>, c: array<vec4<f32>, 2>) -> array<vec4<f32>, 2> {
    var result = c;
    let row = emulated_lane / 2u;
    let column = (emulated_lane % 2u) * 8u;
    for (var j = 0u; j < 16u; j = j + 1u) {
        let x = f32(tiles[a.x + row * a.y + j * a.z]);
        let at = b.x + j * b.y + column * b.z;
        result[0] = result[0] + x * vec4<f32>(f32(tiles[at]), f32(tiles[at + b.z]), f32(tiles[at + 2u * b.z]), f32(tiles[at + 3u * b.z]));
        result[1] = result[1] + x * vec4<f32>(f32(tiles[at + 4u * b.z]), f32(tiles[at + 5u * b.z]), f32(tiles[at + 6u * b.z]), f32(tiles[at + 7u * b.z]));
    }
    return result;
}
fn emulated_store(c: array<vec4<f32>, 2>, start: u32, stride: u32) {
    let at = start + (emulated_lane / 2u) * stride + (emulated_lane % 2u) * 8u;
    for (var j = 0u; j < 4u; j = j + 1u) {
        scratch[at + j] = c[0][j];
        scratch[at + 4u + j] = c[1][j];
    }
}
"
    }
}

/// `let {name}{n} = {base}((n + lane / 2) mod columns)` for the `columns` (16 or 8) columns of
/// a lane's half of a tile: the order in which the lanes of one row of the scratch walk it,
/// rotated by the row (`lane / 2`), so that at every step the subgroup's 32 reads fall on 32
/// banks. With 16 columns (rows 36 floats apart) in plain column order rows `r`, `r + 4`,
/// `r + 8` and `r + 12` of the two halves would share banks. With 8 (rows 20 floats apart,
/// whose banks repeat every 8 rows) rows 8 to 15 turn 4 columns further than rows 0 to 7.
/// Shared with the backward kernels.
pub(crate) fn rotated_columns(name: &str, base: &str, columns: u32) -> String {
    let further = if columns == 8 {
        " + 4u * (lane / 16u)"
    } else {
        ""
    };
    (0..columns)
        .map(|n| {
            format!(
                "    let {name}{n} = {base}(({n}u + lane / 2u{further}) & {}u);\n",
                columns - 1
            )
        })
        .collect()
}
