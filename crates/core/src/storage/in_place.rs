//! `Storage`'s dispatch of the primitives that write in place and return nothing (not profiled):
//! `copy_into`, the optimizers' `sgd_step` and mixed precision's `unscale` (the rules are on the
//! `Copying` and `Update` traits in `backend/contract/`); and the name in-place writes are logged
//! by (`write_token`). The fused updates have no BF16 kernels: a BF16 parameter or gradient is
//! `Error::Unsupported`, on which `tensor/update.rs` runs its composite ops (in f32 through
//! `dispatch`).

use super::{check_same_device, Storage};
use crate::backend::contract::{AdamMoments, Copying, Update};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;

impl Storage {
    /// The token the mutation log names this storage by (`mutation::note_write`): a GPU
    /// storage's; `None` for a CPU storage (nothing is derived from those and kept).
    pub(crate) fn write_token(&self) -> Option<u64> {
        match self {
            Storage::Cpu(_) => None,
            Storage::Gpu(storage) => storage.write_token(),
        }
    }

    /// Copy the view `layout` of `self` into the view `dst_layout` of `dst`
    /// (`Copying::copy_into`). Not profiled: it writes in place and returns nothing.
    pub fn copy_into(&self, layout: &Layout, dst: &mut Storage, dst_layout: &Layout) -> Result<()> {
        check_same_device("copy", self, dst)?;
        match (self, &mut *dst) {
            (Storage::Cpu(s), Storage::Cpu(d)) => Copying::copy_into(s, layout, d, dst_layout),
            (Storage::Gpu(s), Storage::Gpu(d)) => Copying::copy_into(s, layout, d, dst_layout),
            (s, d) => Err(Error::DeviceMismatch {
                op: "copy",
                lhs: s.device().to_string(),
                rhs: d.device().to_string(),
            }),
        }
    }

    /// One SGD step in place on this parameter (`Update::sgd_step`), skipped on the
    /// device where `skip`'s first element is nonzero. Not profiled: it writes in place and
    /// returns nothing.
    pub fn sgd_step(
        &mut self,
        layout: &Layout,
        (grad, grad_layout): (&Storage, &Layout),
        buffer: Option<(&mut Storage, &Layout)>,
        step: &crate::update::SgdStep,
        skip: Option<&Storage>,
    ) -> Result<()> {
        check_same_device("sgd_step", self, grad)?;
        refuse_bfloat16("sgd_step", self, grad)?;
        if let Some((buffer, _)) = &buffer {
            check_same_device("sgd_step", self, buffer)?;
        }
        if let Some(skip) = skip {
            check_same_device("sgd_step", self, skip)?;
        }
        let mismatch = |s: &Storage, d: &Storage| Error::DeviceMismatch {
            op: "sgd_step",
            lhs: s.device().to_string(),
            rhs: d.device().to_string(),
        };
        match (&mut *self, grad) {
            (Storage::Cpu(p), Storage::Cpu(g)) => {
                let buffer = match buffer {
                    Some((Storage::Cpu(b), l)) => Some((b, l)),
                    Some((other, _)) => return Err(mismatch(grad, other)),
                    None => None,
                };
                let skip = match skip {
                    Some(Storage::Cpu(s)) => Some(s),
                    Some(other) => return Err(mismatch(grad, other)),
                    None => None,
                };
                Update::sgd_step(p, layout, (g, grad_layout), buffer, step, skip)
            }
            (Storage::Gpu(p), Storage::Gpu(g)) => {
                let buffer = match buffer {
                    Some((Storage::Gpu(b), l)) => Some((b, l)),
                    Some((other, _)) => return Err(mismatch(grad, other)),
                    None => None,
                };
                let skip = match skip {
                    Some(Storage::Gpu(s)) => Some(s),
                    Some(other) => return Err(mismatch(grad, other)),
                    None => None,
                };
                Update::sgd_step(p, layout, (g, grad_layout), buffer, step, skip)
            }
            (p, g) => Err(mismatch(p, g)),
        }
    }

    /// One Adam / AdamW step in place on this parameter and its moments (`Update::adam_step`).
    /// Not profiled: it writes in place and returns nothing.
    pub fn adam_step(
        &mut self,
        layout: &Layout,
        (grad, grad_layout): (&Storage, &Layout),
        moments: AdamMoments<'_, Storage>,
        step: &crate::update::AdamStep,
    ) -> Result<()> {
        const OP: &str = "adam_step";
        check_same_device(OP, self, grad)?;
        refuse_bfloat16(OP, self, grad)?;
        let AdamMoments {
            exp_avg: (m, m_layout),
            exp_avg_sq: (v, v_layout),
            maximum,
        } = moments;
        check_same_device(OP, self, m)?;
        check_same_device(OP, self, v)?;
        if let Some((maximum, _)) = &maximum {
            check_same_device(OP, self, maximum)?;
        }
        let mismatch = |s: &Storage| Error::DeviceMismatch {
            op: OP,
            lhs: grad.device().to_string(),
            rhs: s.device().to_string(),
        };
        match (&mut *self, grad, m, v) {
            (Storage::Cpu(p), Storage::Cpu(g), Storage::Cpu(m), Storage::Cpu(v)) => {
                let maximum = match maximum {
                    Some((Storage::Cpu(x), l)) => Some((x, l)),
                    Some((other, _)) => return Err(mismatch(other)),
                    None => None,
                };
                let moments = AdamMoments {
                    exp_avg: (m, m_layout),
                    exp_avg_sq: (v, v_layout),
                    maximum,
                };
                Update::adam_step(p, layout, (g, grad_layout), moments, step)
            }
            (Storage::Gpu(p), Storage::Gpu(g), Storage::Gpu(m), Storage::Gpu(v)) => {
                let maximum = match maximum {
                    Some((Storage::Gpu(x), l)) => Some((x, l)),
                    Some((other, _)) => return Err(mismatch(other)),
                    None => None,
                };
                let moments = AdamMoments {
                    exp_avg: (m, m_layout),
                    exp_avg_sq: (v, v_layout),
                    maximum,
                };
                Update::adam_step(p, layout, (g, grad_layout), moments, step)
            }
            (p, ..) => Err(mismatch(p)),
        }
    }

    /// Gradient unscaling in place with an inf/NaN flag (`Update::unscale`). Not
    /// profiled: it writes in place and returns nothing.
    pub fn unscale(&mut self, layout: &Layout, scale: f64, found: &mut Storage) -> Result<()> {
        check_same_device("unscale", self, found)?;
        refuse_bfloat16("unscale", self, self)?;
        match (&mut *self, found) {
            (Storage::Cpu(g), Storage::Cpu(f)) => Update::unscale(g, layout, scale, f),
            (Storage::Gpu(g), Storage::Gpu(f)) => Update::unscale(g, layout, scale, f),
            (g, f) => Err(Error::DeviceMismatch {
                op: "unscale",
                lhs: g.device().to_string(),
                rhs: f.device().to_string(),
            }),
        }
    }
}

/// `Error::Unsupported` when the parameter or its gradient is BF16 (the fused updates have no
/// BF16 kernels; the caller runs its composite ops instead).
fn refuse_bfloat16(op: &'static str, parameter: &Storage, grad: &Storage) -> Result<()> {
    match [parameter, grad]
        .into_iter()
        .find(|storage| storage.dtype() == DType::BF16)
    {
        Some(storage) => Err(Error::Unsupported {
            op,
            dtype: DType::BF16,
            device: storage.device().to_string(),
            hint: "; the composite ops compute it in f32".into(),
        }),
        None => Ok(()),
    }
}
