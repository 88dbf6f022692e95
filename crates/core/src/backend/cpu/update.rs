//! `CpuStorage::sgd_step` and `CpuStorage::adam_step`: one optimizer step in place over
//! contiguous views, element by element with `update::SgdStep::element` /
//! `update::AdamStep::element` (f32 arithmetic for F32 and F16, f64 for F64; Adam's chunks of
//! a large parameter in parallel), and `CpuStorage::unscale` — the references of the GPU
//! kernels (`backend/gpu/optimizer/`).

use super::CpuStorage;
use rayon::prelude::*;

use crate::backend::checks::{check_adam_step, check_sgd_step, check_skip_flag, check_unscale};
use crate::backend::contract::{AdamMoments, Update};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::update::{AdamStep, SgdStep};

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

    /// One Adam / AdamW step in place (`Update::adam_step`).
    fn adam_step(
        &mut self,
        layout: &Layout,
        (grad, grad_layout): (&CpuStorage, &Layout),
        moments: AdamMoments<'_, CpuStorage>,
        step: &AdamStep,
    ) -> Result<()> {
        let AdamMoments {
            exp_avg: (m, m_layout),
            exp_avg_sq: (v, v_layout),
            maximum,
        } = moments;
        let maximum = maximum.filter(|_| step.amsgrad);
        let numel = check_adam_step(
            (layout, self.len(), self.dtype()),
            [
                Some((grad_layout, grad.len(), grad.dtype())),
                Some((m_layout, m.len(), m.dtype())),
                Some((v_layout, v.len(), v.dtype())),
                maximum.as_ref().map(|(x, l)| (*l, x.len(), x.dtype())),
            ],
            step,
        )?;
        let x_at = maximum.as_ref().map_or(0, |(_, l)| l.offset);
        let maximum = maximum.map(|(x, _)| x);
        let at = [
            layout.offset,
            grad_layout.offset,
            m_layout.offset,
            v_layout.offset,
        ];
        let range = |i: usize| at[i]..at[i] + numel;
        let x_range = x_at..x_at + numel;
        let narrow_scalars = step.scalars().map(|s| s as f32);
        match (self, grad, m, v, maximum) {
            (CpuStorage::F32(p), CpuStorage::F32(g), CpuStorage::F32(m), CpuStorage::F32(v), x) => {
                let x = match x {
                    Some(CpuStorage::F32(x)) => Some(&mut x[x_range]),
                    _ => None,
                };
                let slices = (
                    &mut p[range(0)],
                    &g[range(1)],
                    &mut m[range(2)],
                    &mut v[range(3)],
                );
                adam_elements(slices, x, |p, g, m, v, x| {
                    step.apply(narrow_scalars, (p, g, m, v, x), f32::sqrt, f32::max)
                });
            }
            (CpuStorage::F64(p), CpuStorage::F64(g), CpuStorage::F64(m), CpuStorage::F64(v), x) => {
                let x = match x {
                    Some(CpuStorage::F64(x)) => Some(&mut x[x_range]),
                    _ => None,
                };
                let slices = (
                    &mut p[range(0)],
                    &g[range(1)],
                    &mut m[range(2)],
                    &mut v[range(3)],
                );
                let scalars = step.scalars();
                adam_elements(slices, x, |p, g, m, v, x| {
                    step.apply(scalars, (p, g, m, v, x), f64::sqrt, f64::max)
                });
            }
            (CpuStorage::F16(p), CpuStorage::F16(g), CpuStorage::F16(m), CpuStorage::F16(v), x) => {
                let x = match x {
                    Some(CpuStorage::F16(x)) => Some(&mut x[x_range]),
                    _ => None,
                };
                let slices = (
                    &mut p[range(0)],
                    &g[range(1)],
                    &mut m[range(2)],
                    &mut v[range(3)],
                );
                let narrow = half::f16::from_f32;
                adam_elements(slices, x, |p, g, m, v, x| {
                    let wide = (p.to_f32(), g.to_f32(), m.to_f32(), v.to_f32(), x.to_f32());
                    let (p, m, v, x) = step.apply(narrow_scalars, wide, f32::sqrt, f32::max);
                    (narrow(p), narrow(m), narrow(v), narrow(x))
                });
            }
            (p, ..) => {
                return Err(Error::invalid(
                    "adam_step",
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

/// Elements per parallel chunk of an Adam step.
const ADAM_CHUNK: usize = 1 << 15;

/// Apply `rule` (parameter, gradient, first and second moment, maximum → new parameter,
/// moments and maximum) to every element, writing the results in place; without a maximum
/// slice the rule sees zeros there and its maximum is dropped. Chunks run in parallel.
fn adam_elements<T: Copy + Default + Send + Sync>(
    (p, g, m, v): (&mut [T], &[T], &mut [T], &mut [T]),
    maximum: Option<&mut [T]>,
    rule: impl Fn(T, T, T, T, T) -> (T, T, T, T) + Sync,
) {
    let chunks = p
        .par_chunks_mut(ADAM_CHUNK)
        .zip(g.par_chunks(ADAM_CHUNK))
        .zip(m.par_chunks_mut(ADAM_CHUNK))
        .zip(v.par_chunks_mut(ADAM_CHUNK));
    match maximum {
        Some(x) => chunks
            .zip(x.par_chunks_mut(ADAM_CHUNK))
            .for_each(|((((p, g), m), v), x)| {
                for i in 0..p.len() {
                    (p[i], m[i], v[i], x[i]) = rule(p[i], g[i], m[i], v[i], x[i]);
                }
            }),
        None => chunks.for_each(|(((p, g), m), v)| {
            for i in 0..p.len() {
                let next = rule(p[i], g[i], m[i], v[i], T::default());
                (p[i], m[i], v[i]) = (next.0, next.1, next.2);
            }
        }),
    }
}
