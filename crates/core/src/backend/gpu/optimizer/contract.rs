//! `GpuStorage`'s part of the backend contract (`backend/contract/`) for this family: Update — the
//! SGD and Adam steps and gradient unscaling, in place on whole tensors.

use crate::backend::contract::{AdamMoments, Update};
use crate::backend::gpu::runtime::storage::GpuStorage;
use crate::error::Result;
use crate::layout::Layout;
use crate::update::{AdamStep, SgdStep};

impl Update for GpuStorage {
    fn sgd_step(
        &mut self,
        layout: &Layout,
        grad: (&Self, &Layout),
        buffer: Option<(&mut Self, &Layout)>,
        step: &SgdStep,
        skip: Option<&Self>,
    ) -> Result<()> {
        GpuStorage::sgd_step(self, layout, grad, buffer, step, skip)
    }

    fn adam_step(
        &mut self,
        layout: &Layout,
        grad: (&Self, &Layout),
        moments: AdamMoments<'_, Self>,
        step: &AdamStep,
    ) -> Result<()> {
        GpuStorage::adam_step(self, layout, grad, moments, step)
    }

    fn unscale(&mut self, layout: &Layout, scale: f64, found: &mut Self) -> Result<()> {
        GpuStorage::unscale(self, layout, scale, found)
    }
}
