//! How a global batch is split over replicas (or ranks): as evenly as possible, except that
//! no replica gets fewer rows than the model needs. Batch norm in training mode normalizes
//! with the statistics of each replica's slice and cannot do that with one row, so a model
//! with batch norm needs at least 2 rows per replica; where the batch cannot give every
//! replica that many (the last, short batch of an epoch), its rows go to fewer replicas and
//! the others get none. Each replica's loss is weighted by its share of the rows, so the
//! averaged gradient stays that of the mean loss over the global batch.

use crate::layers::BatchNorm;
use crate::module::{downcast_module, named_modules_of, Kind, Module};

/// The buffer every batch-norm layer has (here and in PyTorch's `state_dict`): how a model
/// whose modules cannot be walked still shows that it normalizes over the batch.
const BATCH_NORM_BUFFER: &str = "num_batches_tracked";

/// Whether `module` contains a batch-norm layer (a [`BatchNorm`] submodule, or a buffer
/// named `num_batches_tracked`): such a model needs at least 2 rows per replica in training.
pub fn has_batch_norm(module: &dyn Module) -> bool {
    named_modules_of(module)
        .iter()
        .any(|(_, child)| downcast_module::<BatchNorm>(*child).is_some())
        || module.named_slots().iter().any(|(name, _, kind)| {
            *kind == Kind::Buffer
                && (name == BATCH_NORM_BUFFER || name.ends_with(&format!(".{BATCH_NORM_BUFFER}")))
        })
}

/// The fewest rows one replica of `module` can run in its current mode: 2 for a model with
/// batch norm in training mode, else 1.
pub fn min_rows_per_replica(module: &dyn Module) -> usize {
    if module.is_training() && has_batch_norm(module) {
        2
    } else {
        1
    }
}

/// Split `batch` rows over `parts` replicas, each getting at least `min_rows` or none: as
/// evenly as possible over as many replicas as can get `min_rows` (all of them when the
/// batch is large enough), the first replicas getting one row more. A batch smaller than
/// `min_rows` goes whole to replica 0 (the model then reports that it is too small).
///
/// ```
/// use anygrad_nn::parallel::split_rows;
/// assert_eq!(split_rows(7, 2, 1), vec![4, 3]);
/// assert_eq!(split_rows(3, 2, 1), vec![2, 1]);
/// // Batch norm in training: no replica gets a single row.
/// assert_eq!(split_rows(3, 2, 2), vec![3, 0]);
/// assert_eq!(split_rows(5, 4, 2), vec![3, 2, 0, 0]);
/// assert_eq!(split_rows(8, 4, 2), vec![2, 2, 2, 2]);
/// ```
pub fn split_rows(batch: usize, parts: usize, min_rows: usize) -> Vec<usize> {
    let parts = parts.max(1);
    let min_rows = min_rows.max(1);
    let used = (batch / min_rows).clamp(1, parts);
    (0..parts)
        .map(|i| {
            if i < used {
                batch / used + usize::from(i < batch % used)
            } else {
                0
            }
        })
        .collect()
}
