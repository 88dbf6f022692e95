//! The dense-copy kernel families that `copy_strided` and `cast` take where they apply: a
//! view with contiguous rows (`rows.rs`) and a batch of transposed matrices (`transpose.rs`).
//! The strided element-by-element copy is the elementwise family's `Copy`.

pub(crate) mod kernel;
pub(crate) mod rows;
pub(crate) mod transpose;
