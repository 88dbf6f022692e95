//! The backend contract's `Update` family: in-place updates of training: the optimizer's step and
//! mixed precision's unscaling. The rules every primitive keeps are in `contract/mod.rs`.

use super::BackendStorage;
use crate::error::Result;
use crate::layout::Layout;
use crate::update::{AdamStep, SgdStep};

/// In-place updates of training: the optimizer's step and mixed precision's unscaling.
pub(crate) trait Update: BackendStorage {
    /// One SGD step in place (`update::SgdStep`): `self` is the parameter, `grad` its
    /// gradient and `buffer` its momentum buffer (required when the step has momentum,
    /// ignored otherwise). All of one float dtype and one shape, each view contiguous (any
    /// offset; others are `Error::InvalidArgument`: the tensor layer takes the composite ops
    /// for them). The GPU writes the parameter and the buffer in one kernel. Where `skip` (a
    /// U32 storage whose first element the device reads, as `unscale` sets it) is nonzero,
    /// nothing is written: mixed precision skips a step with inf/NaN gradients without
    /// reading the flag back to the host.
    fn sgd_step(
        &mut self,
        layout: &Layout,
        grad: (&Self, &Layout),
        buffer: Option<(&mut Self, &Layout)>,
        step: &SgdStep,
        skip: Option<&Self>,
    ) -> Result<()>;

    /// One Adam / AdamW step in place (`update::AdamStep`): `self` is the parameter, `grad`
    /// its gradient and `moments` its first and second moments (and, with `amsgrad`, the
    /// running maximum of the second), each written in place. All of one float dtype and one
    /// shape, each view contiguous (any offset; others are `Error::InvalidArgument`: the
    /// tensor layer takes the composite ops for them). The GPU writes them all in one kernel.
    fn adam_step(
        &mut self,
        layout: &Layout,
        grad: (&Self, &Layout),
        moments: AdamMoments<'_, Self>,
        step: &AdamStep,
    ) -> Result<()>;

    /// Mixed precision's gradient unscaling in place: every element of the view (float,
    /// contiguous, any offset) becomes `x / scale`, and where an element was inf or NaN,
    /// `found` (a U32 `[1]` storage, never cleared here) becomes nonzero.
    fn unscale(&mut self, layout: &Layout, scale: f64, found: &mut Self) -> Result<()>;
}

/// The state an Adam step writes besides the parameter: each a storage and its view.
pub(crate) struct AdamMoments<'a, S> {
    /// The first moment `m`.
    pub exp_avg: (&'a mut S, &'a Layout),
    /// The second moment `v`.
    pub exp_avg_sq: (&'a mut S, &'a Layout),
    /// AMSGrad's running maximum of `v` (required with `amsgrad`, ignored otherwise).
    pub maximum: Option<(&'a mut S, &'a Layout)>,
}
