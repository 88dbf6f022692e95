//! DataLoader and TensorDataset behaviour: batching, drop_last, seeded per-epoch shuffling,
//! prefetch / direct / device-resident modes giving identical batches, errors instead of
//! panics, and the digits / scaler glue. GPU variants run when an adapter opens and print a
//! visible SKIP otherwise (a failure when `ANYGRAD_REQUIRE_GPU=1`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anygrad_core::{Device, Error, Result, Tensor};
use anygrad_data::{
    digits_standardized_split, ArrayDataset, DataLoader, Dataset, StandardScaler, TensorDataset,
    DIGITS_FEATURES,
};

/// `n` samples of 3 features `[i, 10 i, 100 i]` with label `i`.
fn ramp(n: usize) -> TensorDataset {
    let features: Vec<f32> = (0..n)
        .flat_map(|i| [i as f32, 10.0 * i as f32, 100.0 * i as f32])
        .collect();
    let labels: Vec<i32> = (0..n as i32).collect();
    TensorDataset::from_vecs(features, &[3], labels, &Device::Cpu).unwrap()
}

/// Collect an epoch as (labels per batch), checking every feature row matches its label.
fn collect(batches: impl Iterator<Item = Result<(Tensor, Tensor)>>) -> Vec<Vec<i32>> {
    batches
        .map(|batch| {
            let (x, y) = batch.unwrap();
            let labels = y.to_vec::<i32>().unwrap();
            assert_eq!(x.shape(), &[labels.len(), 3]);
            let features = x.to_vec::<f32>().unwrap();
            for (row, &label) in features.chunks(3).zip(&labels) {
                assert_eq!(
                    row,
                    [label as f32, 10.0 * label as f32, 100.0 * label as f32]
                );
            }
            labels
        })
        .collect()
}

#[test]
fn batch_size_zero_is_invalid_argument() {
    assert!(matches!(
        DataLoader::new(ramp(4), 0),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn sequential_batches_and_drop_last() {
    let loader = DataLoader::new(ramp(10), 3).unwrap();
    assert_eq!(loader.len(), 4);
    let batches = collect(loader.iter_epoch(0));
    assert_eq!(
        batches,
        vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8], vec![9]]
    );
    let loader = loader.drop_last(true);
    assert_eq!(loader.len(), 3);
    assert_eq!(collect(loader.iter_epoch(0)).len(), 3);
    // Fewer samples than one batch with drop_last: an empty epoch.
    let tiny = DataLoader::new(ramp(2), 3).unwrap().drop_last(true);
    assert!(tiny.is_empty());
    assert_eq!(tiny.iter().count(), 0);
}

#[test]
fn shuffle_is_deterministic_per_epoch() {
    let loader = DataLoader::new(ramp(50), 8).unwrap().shuffle(7);
    let epoch0 = collect(loader.iter_epoch(0));
    assert_eq!(epoch0, collect(loader.iter_epoch(0)));
    let epoch1 = collect(loader.iter_epoch(1));
    assert_ne!(epoch0, epoch1);
    let mut seen: Vec<i32> = epoch1.concat();
    seen.sort_unstable();
    assert_eq!(seen, (0..50).collect::<Vec<_>>());
    // `iter()` walks epochs 0, 1, ...; `set_epoch` rewinds.
    let auto = DataLoader::new(ramp(50), 8).unwrap().shuffle(7);
    assert_eq!(collect(auto.iter()), epoch0);
    assert_eq!(collect((&auto).into_iter()), epoch1);
    auto.set_epoch(0);
    assert_eq!(collect(auto.iter()), epoch0);
    // Epoch e of seed s is epoch 0 of seed s + e.
    let shifted = DataLoader::new(ramp(50), 8).unwrap().shuffle(8);
    assert_eq!(collect(shifted.iter_epoch(0)), epoch1);
}

#[test]
fn all_modes_give_identical_batches() {
    let dataset = Arc::new(ramp(37));
    for shuffle in [false, true] {
        for drop_last in [false, true] {
            let make = || {
                let loader = DataLoader::from_arc(dataset.clone(), 5)
                    .unwrap()
                    .drop_last(drop_last);
                if shuffle {
                    loader.shuffle(3)
                } else {
                    loader
                }
            };
            let reference = collect(make().prefetch(0).iter_epoch(2));
            assert_eq!(reference.len(), if drop_last { 7 } else { 8 });
            assert_eq!(collect(make().prefetch(1).iter_epoch(2)), reference);
            assert_eq!(collect(make().prefetch(4).iter_epoch(2)), reference);
            let resident = make().device_resident(true);
            assert_eq!(collect(resident.iter_epoch(2)), reference);
            assert_eq!(
                collect(resident.iter_epoch(2)),
                reference,
                "second resident epoch"
            );
        }
    }
}

/// `ramp(n)` as an `ArrayDataset` (host vectors).
fn ramp_array(n: usize) -> ArrayDataset {
    let features: Vec<f32> = (0..n)
        .flat_map(|i| [i as f32, 10.0 * i as f32, 100.0 * i as f32])
        .collect();
    ArrayDataset::new(features, &[3], (0..n as i32).collect()).unwrap()
}

#[test]
fn array_dataset_matches_tensor_dataset() {
    let arrays = Arc::new(ramp_array(37));
    let tensors = Arc::new(ramp(37));
    for prefetch in [0, 2] {
        let from_arrays = DataLoader::from_arc(arrays.clone(), 5)
            .unwrap()
            .shuffle(4)
            .prefetch(prefetch);
        let from_tensors = DataLoader::from_arc(tensors.clone(), 5).unwrap().shuffle(4);
        assert_eq!(
            collect(from_arrays.iter_epoch(1)),
            collect(from_tensors.iter_epoch(1))
        );
    }
    let resident = DataLoader::from_arc(arrays.clone(), 5)
        .unwrap()
        .shuffle(4)
        .device_resident(true);
    let direct = DataLoader::from_arc(arrays.clone(), 5).unwrap().shuffle(4);
    assert_eq!(
        collect(resident.iter_epoch(3)),
        collect(direct.iter_epoch(3))
    );
    assert!(matches!(
        arrays.get_batch(&[1, 37]),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        ArrayDataset::new(vec![0.0; 7], &[3], vec![0, 1]),
        Err(Error::InvalidShape { .. })
    ));
    let converted = arrays.to_tensor_dataset(&Device::Cpu).unwrap();
    assert_eq!(converted.features().shape(), &[37, 3]);
}

#[test]
fn gpu_batches_match_cpu_batches() {
    let Some(gpu) = anygrad_testing::gpu_or_skip("gpu_batches_match_cpu_batches") else {
        return;
    };
    let dataset = Arc::new(ramp(37));
    let cpu = collect(
        DataLoader::from_arc(dataset.clone(), 6)
            .unwrap()
            .shuffle(1)
            .iter_epoch(0),
    );
    for resident in [false, true] {
        let loader = DataLoader::from_arc(dataset.clone(), 6)
            .unwrap()
            .shuffle(1)
            .to_device(&gpu)
            .device_resident(resident);
        for batch in loader.iter_epoch(0) {
            let (x, y) = batch.unwrap();
            assert_eq!(x.device(), &gpu);
            assert_eq!(y.device(), &gpu);
        }
        assert_eq!(collect(loader.iter_epoch(0)), cpu, "resident {resident}");
    }
}

/// A dataset of `len` samples (2 zero features, label 0) counting its `get_batch` calls.
struct Counted {
    len: usize,
    calls: Arc<AtomicUsize>,
}

impl Dataset for Counted {
    fn len(&self) -> usize {
        self.len
    }
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let n = indices.len();
        Ok((
            Tensor::zeros(&[n, 2], anygrad_core::DType::F32, &Device::Cpu)?,
            Tensor::zeros(&[n], anygrad_core::DType::I32, &Device::Cpu)?,
        ))
    }
}

/// Dropping a prefetching epoch after its first batch returns promptly and stops its worker:
/// the worker reads no more batches afterwards than it had prefetched. Run on a thread of its
/// own, so that a drop that hangs fails the test with a message instead of hanging it.
#[test]
fn dropping_an_epoch_early_stops_the_worker() {
    const PREFETCH: usize = 2;
    const EPOCHS: usize = 20;
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let calls = Arc::new(AtomicUsize::new(0));
        let dataset = Counted {
            len: 1000,
            calls: calls.clone(),
        };
        let loader = DataLoader::new(dataset, 1).unwrap().prefetch(PREFETCH);
        for epoch in 0..EPOCHS {
            let before = calls.load(Ordering::SeqCst);
            let mut batches = loader.iter();
            assert!(batches.next().unwrap().is_ok());
            drop(batches);
            // The worker has stopped: what it read stays read, and nothing more comes.
            let read = calls.load(Ordering::SeqCst) - before;
            std::thread::sleep(std::time::Duration::from_millis(5));
            let later = calls.load(Ordering::SeqCst) - before;
            let _ = done.send(Ok((epoch, read, later)));
        }
        let _ = done.send(Err(()));
    });
    let limit = std::time::Duration::from_secs(60);
    for epoch in 0..EPOCHS {
        match finished.recv_timeout(limit) {
            Ok(Ok((reported, read, later))) => {
                assert_eq!(reported, epoch);
                // The batch taken, the prefetched ones, and one the worker held while the
                // queue was full.
                assert!(
                    (1..=PREFETCH + 2).contains(&read),
                    "epoch {epoch}: the worker read {read} batches of 1,000 before the drop \
                     returned (prefetch {PREFETCH})"
                );
                assert_eq!(
                    later, read,
                    "epoch {epoch}: the worker went on reading after the drop"
                );
            }
            Ok(Err(())) => panic!("the epochs ended after {epoch} of {EPOCHS}"),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
                "epoch {epoch}: dropping a prefetching epoch after its first batch did not return \
                 within {limit:?}: its worker was not stopped"
            ),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("epoch {epoch}: the test thread panicked (see its message above)")
            }
        }
    }
    assert!(matches!(finished.recv_timeout(limit), Ok(Err(()))));
}

/// A dataset whose `get_batch` fails (or panics) once a sample index reaches `bad_from`.
struct Faulty {
    bad_from: usize,
    panic: bool,
    calls: AtomicUsize,
}

impl Dataset for Faulty {
    fn len(&self) -> usize {
        10
    }
    fn get_batch(&self, indices: &[usize]) -> Result<(Tensor, Tensor)> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if indices.iter().any(|&i| i >= self.bad_from) {
            if self.panic {
                panic!("faulty dataset panicked on purpose");
            }
            return Err(Error::invalid("Faulty", "bad sample"));
        }
        let n = indices.len();
        Ok((
            Tensor::zeros(&[n, 2], anygrad_core::DType::F32, &Device::Cpu)?,
            Tensor::zeros(&[n], anygrad_core::DType::I32, &Device::Cpu)?,
        ))
    }
}

#[test]
fn dataset_errors_end_the_epoch_with_an_error() {
    for prefetch in [0, 2] {
        for panic in [false, true] {
            if panic && prefetch == 0 {
                continue; // a panic on the caller's own thread is the caller's panic
            }
            let faulty = Faulty {
                bad_from: 5,
                panic,
                calls: AtomicUsize::new(0),
            };
            let loader = DataLoader::new(faulty, 2).unwrap().prefetch(prefetch);
            let results: Vec<_> = loader.iter_epoch(0).collect();
            assert_eq!(results.len(), 3, "prefetch {prefetch} panic {panic}");
            assert!(results[0].is_ok() && results[1].is_ok());
            assert!(matches!(results[2], Err(Error::InvalidArgument { .. })));
        }
    }
    // Device-resident mode fails while uploading: one error item.
    let faulty = Faulty {
        bad_from: 5,
        panic: false,
        calls: AtomicUsize::new(0),
    };
    let loader = DataLoader::new(faulty, 2).unwrap().device_resident(true);
    let results: Vec<_> = loader.iter().collect();
    assert_eq!(results.len(), 1);
    assert!(results[0].is_err());
}

#[test]
fn tensor_dataset_checks_and_get() {
    let features = Tensor::zeros(&[4, 3], anygrad_core::DType::F32, &Device::Cpu).unwrap();
    let labels = Tensor::zeros(&[5], anygrad_core::DType::I32, &Device::Cpu).unwrap();
    assert!(matches!(
        TensorDataset::new(features.clone(), labels),
        Err(Error::ShapeMismatch { .. })
    ));
    let scalar = Tensor::scalar(1.0, anygrad_core::DType::I32, &Device::Cpu).unwrap();
    assert!(TensorDataset::new(features, scalar).is_err());

    let dataset = ramp(6);
    let (x, y) = dataset.get(4).unwrap();
    assert_eq!(x.shape(), &[3]);
    assert_eq!(y.shape(), &[] as &[usize]);
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![4.0, 40.0, 400.0]);
    assert_eq!(y.item::<i32>().unwrap(), 4);
    assert!(matches!(dataset.get(6), Err(Error::InvalidArgument { .. })));
    assert!(matches!(
        dataset.get_batch(&[0, 99]),
        Err(Error::InvalidArgument { .. })
    ));

    let (train, test) = dataset.split(0.5, 9).unwrap();
    assert_eq!((train.len(), test.len()), (3, 3));
    let mut all = collect(DataLoader::new(train, 10).unwrap().iter()).concat();
    all.extend(collect(DataLoader::new(test, 10).unwrap().iter()).concat());
    all.sort_unstable();
    assert_eq!(all, (0..6).collect::<Vec<_>>());
}

#[test]
fn digits_tutorial_pipeline() {
    let (train, test, scaler) = digits_standardized_split(0.2, 42, &Device::Cpu).unwrap();
    assert_eq!((train.len(), test.len()), (1437, 360));
    assert_eq!(train.features().shape(), &[1437, DIGITS_FEATURES]);
    assert_eq!(scaler.n_features(), DIGITS_FEATURES);
    // Standardised training columns: mean 0, and std 1 except the constant (blank) pixels.
    let x = train.features().to_vec::<f32>().unwrap();
    for column in 0..DIGITS_FEATURES {
        let values: Vec<f64> = x
            .iter()
            .skip(column)
            .step_by(DIGITS_FEATURES)
            .map(|&v| v as f64)
            .collect();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64;
        assert!(mean.abs() < 1e-5, "column {column} mean {mean}");
        assert!(
            (var - 1.0).abs() < 1e-4 || var < 1e-12,
            "column {column} var {var}"
        );
    }
    let labels = test.labels().to_vec::<i32>().unwrap();
    assert!(labels.iter().all(|&l| (0..10).contains(&l)));
    let loader = DataLoader::new(train, 32).unwrap().shuffle(0);
    assert_eq!(loader.len(), 45);
    let (inputs, labels) = loader.iter().next().unwrap().unwrap();
    assert_eq!(inputs.shape(), &[32, 64]);
    assert_eq!(labels.shape(), &[32]);
}

#[test]
fn scaler_tensor_path_matches_host_path() {
    let host: Vec<f32> = (0..24).map(|i| ((i * 37) % 11) as f32).collect();
    let scaler = StandardScaler::fit(&host, 4).unwrap();
    let tensor = Tensor::from_vec(host.clone(), &[6, 2, 2], &Device::Cpu).unwrap();
    assert_eq!(StandardScaler::fit_tensor(&tensor).unwrap(), scaler);
    let transformed = scaler.transform_tensor(&tensor).unwrap();
    assert_eq!(transformed.shape(), &[6, 2, 2]);
    let expected = scaler.transform(&host).unwrap();
    for (a, b) in transformed.to_vec::<f32>().unwrap().iter().zip(&expected) {
        assert!((a - b).abs() < 1e-6);
    }
    let wrong = Tensor::zeros(&[6, 3], anygrad_core::DType::F32, &Device::Cpu).unwrap();
    assert!(scaler.transform_tensor(&wrong).is_err());
}

#[test]
fn mnist_batches_when_present() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mnist");
    if !dir.join("t10k-images-idx3-ubyte.gz").exists() {
        anygrad_testing::skip_unless_required(
            anygrad_testing::Requirement::Data,
            "mnist_batches_when_present",
            &format!("MNIST not found at {}", dir.display()),
        );
        return;
    }
    let mut test = anygrad_data::Mnist::load(&dir, false).unwrap();
    test.truncate(1000);
    let tensors = test
        .to_dataset(anygrad_data::PixelScaling::Normalized, &Device::Cpu)
        .unwrap();
    assert_eq!(tensors.features().shape(), &[1000, 1, 28, 28]);
    let dataset = test
        .to_array_dataset(anygrad_data::PixelScaling::Normalized)
        .unwrap();
    assert_eq!(dataset.len(), 1000);
    let loader = DataLoader::new(dataset, 64).unwrap().shuffle(1);
    assert_eq!(loader.len(), 16);
    let (images, labels) = loader.iter().next().unwrap().unwrap();
    assert_eq!(images.shape(), &[64, 1, 28, 28]);
    assert_eq!(images.flatten(1, -1).unwrap().shape(), &[64, 784]);
    assert_eq!(labels.shape(), &[64]);
    let min = images.min_all().unwrap().item_f64().unwrap();
    assert!((min - (-0.1307 / 0.3081)).abs() < 1e-4, "min {min}");
}
