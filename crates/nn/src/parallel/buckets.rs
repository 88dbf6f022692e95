//! Gradient buckets: the parameters grouped, in reverse registration order (the order in which
//! backward finishes their gradients), into groups of about `bucket_bytes`, each exchanged as
//! one flat f32 vector. Moving one bucket between a device and the host is one device-side
//! concatenation and one readback, or one upload and views into it, instead of one transfer
//! per parameter.

use anygrad_core::{no_grad, DType, Device, Result, Tensor};

use crate::module::Parameter;

/// The default bucket size, 25 MB (PyTorch DDP's `bucket_cap_mb`).
pub const DEFAULT_BUCKET_BYTES: usize = 25 * 1024 * 1024;

/// One bucket: which parameters (indices into the parameter list) and how many elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bucket {
    pub(crate) parameters: Vec<usize>,
    pub(crate) numel: usize,
}

/// Group parameters of `numels` elements (registration order) into buckets of at least
/// `bucket_bytes` (f32 bytes; the last may be smaller), last parameter first.
pub(crate) fn plan_buckets(numels: &[usize], bucket_bytes: usize) -> Vec<Bucket> {
    let limit = (bucket_bytes / 4).max(1);
    let mut buckets = Vec::new();
    let mut current = Bucket {
        parameters: Vec::new(),
        numel: 0,
    };
    for index in (0..numels.len()).rev() {
        current.parameters.push(index);
        current.numel += numels[index];
        if current.numel >= limit {
            buckets.push(std::mem::replace(
                &mut current,
                Bucket {
                    parameters: Vec::new(),
                    numel: 0,
                },
            ));
        }
    }
    if !current.parameters.is_empty() {
        buckets.push(current);
    }
    buckets
}

/// The bucket's gradients as one flat f32 tensor on their device (a missing gradient counts
/// as zeros). Only records device work; nothing is read back.
pub(crate) fn flatten_gradients(parameters: &[Parameter], bucket: &Bucket) -> Result<Tensor> {
    let _guard = no_grad();
    let mut pieces = Vec::with_capacity(bucket.parameters.len());
    for &index in &bucket.parameters {
        let parameter = parameters[index].tensor();
        let grad = match parameter.grad() {
            Some(grad) => grad,
            None => Tensor::zeros(parameter.shape(), DType::F32, parameter.device())?,
        };
        pieces.push(grad.to_dtype(DType::F32)?.reshape([parameter.numel()])?);
    }
    if pieces.len() == 1 {
        return pieces[0].contiguous();
    }
    let refs: Vec<&Tensor> = pieces.iter().collect();
    Tensor::cat(&refs, 0)
}

/// Upload a bucket's summed gradients and give each parameter a view of them as its gradient.
pub(crate) fn scatter_gradients(
    parameters: &[Parameter],
    bucket: &Bucket,
    values: Vec<f32>,
    device: &Device,
) -> Result<()> {
    let _guard = no_grad();
    let flat = Tensor::from_vec(values, &[bucket.numel], device)?;
    let mut offset = 0;
    for &index in &bucket.parameters {
        let parameter = parameters[index].tensor();
        let count = parameter.numel();
        let grad = flat
            .narrow(0, offset, count)?
            .reshape(parameter.shape())?
            .to_dtype(parameter.dtype())?;
        parameter.set_grad(Some(grad));
        offset += count;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_run_last_parameter_first_and_cover_everything() {
        // 4-byte elements: a 40-byte bucket holds 10 elements.
        let buckets = plan_buckets(&[4, 8, 3, 6, 2], 40);
        assert_eq!(
            buckets,
            vec![
                Bucket {
                    parameters: vec![4, 3, 2],
                    numel: 11
                },
                Bucket {
                    parameters: vec![1, 0],
                    numel: 12
                },
            ]
        );
        assert!(plan_buckets(&[], 40).is_empty());
    }
}
