//! Tests of the primitives below the tensor layer, inside the crate because `Storage` and the
//! backends are crate-private: GPU against CPU parity on awkward inputs (`primitives.rs`,
//! `vectorized.rs`; max pooling, also against a reference: `pooling.rs`), the GPU runtime
//! (`runtime.rs`: transfers, random numbers, memory, many threads), and the view checks of
//! every primitive on both backends (`bad_layouts.rs`). `skip` is anygrad-testing's
//! `skip.rs` (std only), included by path: these tests cannot use anygrad-testing, whose
//! `Device` is another crate's type here, and still print and record their skips alike.

mod bad_layouts;
mod pooling;
mod primitives;
mod runtime;
#[allow(dead_code)]
#[path = "../../../../testing/src/skip.rs"]
pub(crate) mod skip;
pub(crate) mod support;
mod vectorized;
