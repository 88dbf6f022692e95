//! `anygrad kernels dump --out DIR`: write the WGSL of every kernel the GPU backend can build
//! (the catalogue the naga tests validate) to DIR, one file per kernel named after its key, so
//! generated kernels can be read, diffed and fed to other WGSL tools.

use std::collections::HashMap;
use std::path::Path;

use anygrad::gpu;

/// Write every catalogued kernel to `out` (created if missing) and print how many.
pub fn dump(out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out)
        .map_err(|error| format!("cannot create {}: {error}", out.display()))?;
    let sources = gpu::all_kernel_sources();
    let mut used: HashMap<String, usize> = HashMap::new();
    for (name, source) in &sources {
        let stem = file_stem(name);
        let count = used.entry(stem.clone()).or_insert(0);
        *count += 1;
        let file = if *count == 1 {
            format!("{stem}.wgsl")
        } else {
            format!("{stem}_{count}.wgsl")
        };
        let path = out.join(&file);
        std::fs::write(&path, source)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    }
    println!("wrote {} kernels to {}", sources.len(), out.display());
    Ok(())
}

/// A kernel name as a file name: `Unary { dtype: F32, op: Neg, access: Strided }` becomes
/// `unary_f32_neg_strided` (field values only, lower case, words joined by `_`).
fn file_stem(name: &str) -> String {
    name.split_whitespace()
        .filter(|token| !token.ends_with(':'))
        .map(|token| {
            token
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>()
                .to_ascii_lowercase()
        })
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

#[cfg(test)]
mod tests {
    use super::file_stem;

    #[test]
    fn file_stems_keep_family_and_values() {
        assert_eq!(
            file_stem("Unary { dtype: F32, op: Neg, access: Strided }"),
            "unary_f32_neg_strided"
        );
        assert_eq!(
            file_stem("MatmulCoop { variant: Staged32, emulated: true }"),
            "matmulcoop_staged32_true"
        );
        assert_eq!(
            file_stem("Fused { F16, 30 instructions, vector: true }"),
            "fused_f16_30_instructions_true"
        );
    }
}
