//! Gradient buckets: the parameters grouped, in reverse registration order (the order in which
//! backward finishes their gradients), into groups of about `bucket_bytes`, each exchanged as
//! one flat f32 vector. Moving one bucket between a device and the host is one device-side
//! concatenation and one readback, or one upload and views into it, instead of one transfer
//! per parameter.

use anygrad_core::{no_grad, DType, Result, Tensor};

use crate::module::Parameter;

/// The default bucket size, 4 MB. Our exchange goes through host memory, so a bucket can only
/// start once its last gradient is final; with PyTorch DDP's 25 MB, ResNet-18's 46.8 MB of
/// gradients form 2 buckets and the second waits for the end of backward. Measured on two
/// H200s (docs/PERFORMANCE.md): 4 MB buckets scale 1.82×, 25 MB buckets 1.69×.
pub const DEFAULT_BUCKET_BYTES: usize = 4 * 1024 * 1024;

/// The bucket size data parallelism uses unless told otherwise: `ANYGRAD_BUCKET_MB`
/// (megabytes, may be fractional, e.g. `4` or `0.5`) when set to a positive number, else
/// [`DEFAULT_BUCKET_BYTES`]. Smaller buckets start exchanging earlier in backward and leave
/// less to exchange after it (the last bucket, holding the first layers, is only complete
/// when backward ends), at the cost of more transfers.
pub fn default_bucket_bytes() -> usize {
    std::env::var("ANYGRAD_BUCKET_MB")
        .ok()
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|mb| mb.is_finite() && *mb > 0.0)
        .map(|mb| ((mb * 1024.0 * 1024.0) as usize).max(4))
        .unwrap_or(DEFAULT_BUCKET_BYTES)
}

/// One bucket: which parameters (indices into the parameter list) and how many elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bucket {
    pub(crate) parameters: Vec<usize>,
    pub(crate) numel: usize,
}

/// The size cap of the *tail* bucket, 256 KB: the first parameters of the model, whose
/// gradients backward finishes last. Nothing of the tail can be exchanged before backward
/// ends, so it is kept small: the bucket before it is exchanged while the device still runs
/// the first layers' backward, and what is left after backward is one small transfer.
pub const DEFAULT_TAIL_BYTES: usize = 256 * 1024;

/// The tail bucket's cap: `ANYGRAD_BUCKET_TAIL_MB` (megabytes, may be fractional) when set to
/// a positive number, else [`DEFAULT_TAIL_BYTES`]; never above `bucket_bytes`.
pub fn tail_bucket_bytes(bucket_bytes: usize) -> usize {
    std::env::var("ANYGRAD_BUCKET_TAIL_MB")
        .ok()
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|mb| mb.is_finite() && *mb > 0.0)
        .map(|mb| ((mb * 1024.0 * 1024.0) as usize).max(4))
        .unwrap_or(DEFAULT_TAIL_BYTES)
        .min(bucket_bytes)
}

/// Group parameters of `numels` elements (registration order) into buckets, last parameter
/// first: the leading parameters that fit in `tail_bytes` (at least one) form the last
/// bucket; the others are grouped into buckets of at least `bucket_bytes` (f32 bytes; the
/// one before the tail may be smaller).
pub(crate) fn plan_buckets(
    numels: &[usize],
    bucket_bytes: usize,
    tail_bytes: usize,
) -> Vec<Bucket> {
    let limit = (bucket_bytes / 4).max(1);
    let tail_limit = (tail_bytes / 4).max(1);
    let mut tail_end = 0;
    let mut tail_numel = 0;
    while tail_end < numels.len() && (tail_end == 0 || tail_numel + numels[tail_end] <= tail_limit)
    {
        tail_numel += numels[tail_end];
        tail_end += 1;
    }
    let mut buckets = Vec::new();
    let mut current = Bucket {
        parameters: Vec::new(),
        numel: 0,
    };
    for index in (tail_end..numels.len()).rev() {
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
    if tail_end > 0 {
        buckets.push(Bucket {
            parameters: (0..tail_end).rev().collect(),
            numel: tail_numel,
        });
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

/// Give each parameter of `bucket` a view of `flat` (the bucket's averaged gradients, one
/// f32 vector on the parameter's device) as its gradient.
pub(crate) fn assign_gradients(
    parameters: &[Parameter],
    bucket: &Bucket,
    flat: &Tensor,
) -> Result<()> {
    let _guard = no_grad();
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

/// Which bucket each parameter (by its tensor's id) belongs to.
pub(crate) fn bucket_of_parameters(
    parameters: &[Parameter],
    buckets: &[Bucket],
) -> std::collections::HashMap<anygrad_core::TensorId, usize> {
    let mut owner = std::collections::HashMap::new();
    for (position, bucket) in buckets.iter().enumerate() {
        for &index in &bucket.parameters {
            owner.insert(parameters[index].tensor().id(), position);
        }
    }
    owner
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_run_last_parameter_first_and_cover_everything() {
        // 4-byte elements: a 40-byte bucket holds 10 elements, a 20-byte tail 5.
        let buckets = plan_buckets(&[4, 8, 3, 6, 2], 40, 20);
        assert_eq!(
            buckets,
            vec![
                Bucket {
                    parameters: vec![4, 3, 2],
                    numel: 11
                },
                Bucket {
                    parameters: vec![1],
                    numel: 8
                },
                Bucket {
                    parameters: vec![0],
                    numel: 4
                },
            ]
        );
        // The tail takes leading parameters while they fit, and always the first one.
        let buckets = plan_buckets(&[2, 2, 9, 1], 40, 20);
        assert_eq!(
            buckets.last().map(|b| b.parameters.clone()),
            Some(vec![1, 0])
        );
        let buckets = plan_buckets(&[30, 2], 40, 20);
        assert_eq!(buckets.last().map(|b| b.numel), Some(30));
        let covered: usize = buckets.iter().map(|b| b.numel).sum();
        assert_eq!(covered, 32);
        assert!(plan_buckets(&[], 40, 20).is_empty());
    }
}
