//! `CpuStorage::sgd_step`: one SGD step in place over contiguous views, element by element
//! with `update::SgdStep::element` (f32 arithmetic for F32 and F16, f64 for F64), and
//! `CpuStorage::unscale` — the references of the GPU kernels (`backend/gpu/optimizer/`).

use super::CpuStorage;
use crate::backend::checks::{check_sgd_step, check_skip_flag, check_unscale};
use crate::backend::contract::Update;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::update::SgdStep;

impl Update for CpuStorage {
    /// One SGD step in place (`Update::sgd_step`).
    fn sgd_step(
        &mut self,
        layout: &Layout,
        (grad, grad_layout): (&CpuStorage, &Layout),
        buffer: Option<(&mut CpuStorage, &Layout)>,
        step: &SgdStep,
        skip: Option<&CpuStorage>,
    ) -> Result<()> {
        let numel = check_sgd_step(
            (layout, self.len(), self.dtype()),
            (grad_layout, grad.len(), grad.dtype()),
            buffer.as_ref().map(|(b, l)| (*l, b.len(), b.dtype())),
            step,
        )?;
        if let Some(skip) = skip {
            check_skip_flag(skip.len(), skip.dtype())?;
            if let CpuStorage::U32(flag) = skip {
                if flag[0] != 0 {
                    return Ok(());
                }
            }
        }
        let (p_at, g_at) = (layout.offset, grad_layout.offset);
        let b_at = buffer.as_ref().map_or(0, |(_, l)| l.offset);
        let buffer = buffer.filter(|_| step.uses_buffer()).map(|(b, _)| b);
        match (self, grad, buffer) {
            (CpuStorage::F32(p), CpuStorage::F32(g), None) => {
                for (p, &g) in p[p_at..p_at + numel].iter_mut().zip(&g[g_at..g_at + numel]) {
                    *p = step.element(*p, g, 0.0).0;
                }
            }
            (CpuStorage::F32(p), CpuStorage::F32(g), Some(CpuStorage::F32(b))) => {
                let items = p[p_at..p_at + numel]
                    .iter_mut()
                    .zip(&g[g_at..g_at + numel])
                    .zip(&mut b[b_at..b_at + numel]);
                for ((p, &g), b) in items {
                    (*p, *b) = step.element(*p, g, *b);
                }
            }
            (CpuStorage::F64(p), CpuStorage::F64(g), None) => {
                for (p, &g) in p[p_at..p_at + numel].iter_mut().zip(&g[g_at..g_at + numel]) {
                    *p = step.element_f64(*p, g, 0.0).0;
                }
            }
            (CpuStorage::F64(p), CpuStorage::F64(g), Some(CpuStorage::F64(b))) => {
                let items = p[p_at..p_at + numel]
                    .iter_mut()
                    .zip(&g[g_at..g_at + numel])
                    .zip(&mut b[b_at..b_at + numel]);
                for ((p, &g), b) in items {
                    (*p, *b) = step.element_f64(*p, g, *b);
                }
            }
            (CpuStorage::F16(p), CpuStorage::F16(g), None) => {
                for (p, &g) in p[p_at..p_at + numel].iter_mut().zip(&g[g_at..g_at + numel]) {
                    let next = step.element(p.to_f32(), g.to_f32(), 0.0).0;
                    *p = half::f16::from_f32(next);
                }
            }
            (CpuStorage::F16(p), CpuStorage::F16(g), Some(CpuStorage::F16(b))) => {
                let items = p[p_at..p_at + numel]
                    .iter_mut()
                    .zip(&g[g_at..g_at + numel])
                    .zip(&mut b[b_at..b_at + numel]);
                for ((p, &g), b) in items {
                    let (next_p, next_b) = step.element(p.to_f32(), g.to_f32(), b.to_f32());
                    *p = half::f16::from_f32(next_p);
                    *b = half::f16::from_f32(next_b);
                }
            }
            (p, _, _) => {
                return Err(Error::invalid(
                    "sgd_step",
                    format!("a parameter of dtype {:?} cannot be stepped", p.dtype()),
                ))
            }
        }
        Ok(())
    }

    /// Gradient unscaling in place (`Update::unscale`).
    fn unscale(&mut self, layout: &Layout, scale: f64, found: &mut CpuStorage) -> Result<()> {
        let numel = check_unscale(
            (layout, self.len(), self.dtype()),
            (found.len(), found.dtype()),
        )?;
        let at = layout.offset;
        let mut bad = false;
        match self {
            CpuStorage::F32(values) => {
                for value in &mut values[at..at + numel] {
                    bad |= !value.is_finite();
                    *value /= scale as f32;
                }
            }
            CpuStorage::F64(values) => {
                for value in &mut values[at..at + numel] {
                    bad |= !value.is_finite();
                    *value /= scale;
                }
            }
            CpuStorage::F16(values) => {
                for value in &mut values[at..at + numel] {
                    let wide = value.to_f32();
                    bad |= !wide.is_finite();
                    *value = half::f16::from_f32(wide / scale as f32);
                }
            }
            other => {
                return Err(Error::invalid(
                    "unscale",
                    format!("a gradient of dtype {:?} cannot be unscaled", other.dtype()),
                ))
            }
        }
        if let (true, CpuStorage::U32(flag)) = (bad, found) {
            flag[0] = 1;
        }
        Ok(())
    }
}
