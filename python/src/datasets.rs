//! The library's data sets for Python: the bundled 8×8 digits (what
//! `anygrad.vision.datasets.load_digits` returns, scikit-learn's `load_digits` data) and the
//! image-folder reader behind `vision.datasets.ImageFolder` (the library finds and decodes
//! the PNG/JPEG files; Python applies the transforms).

use anygrad::data::{Image, ImageFolder, PixelImage, SampleDataset, SplitMix64};
use anygrad::{Device, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::dtype::Logical;
use crate::errors::run;
use crate::tensor::PyTensor;

/// The embedded digits: features `float32 [1797, 64]` (raw intensities 0..16) and labels
/// `int64 [1797]` (0..9), on the CPU.
#[pyfunction]
pub fn load_digits() -> PyResult<(PyTensor, PyTensor)> {
    let (features, labels): (Tensor, Tensor) = run("load_digits", || {
        anygrad::data::digits_tensors(&Device::Cpu)
    })?;
    Ok((
        PyTensor::wrap(features),
        PyTensor::with_logical(labels, Logical::Int64),
    ))
}

/// One sub-folder per class of PNG/JPEG images, decoded to 8-bit RGB (or grey) pixels.
#[pyclass(frozen, name = "ImageFolderReader", module = "anygrad._native")]
pub struct ImageFolderReader {
    folder: ImageFolder,
}

#[pymethods]
impl ImageFolderReader {
    /// Scan `root` (classes sorted by name, images found recursively); `gray` decodes one
    /// channel.
    #[new]
    #[pyo3(signature = (root, gray=false))]
    fn new(py: Python<'_>, root: std::path::PathBuf, gray: bool) -> PyResult<ImageFolderReader> {
        let folder = py.allow_threads(|| run("ImageFolder", || ImageFolder::new(&root)))?;
        Ok(ImageFolderReader {
            folder: folder.gray(gray),
        })
    }

    fn __len__(&self) -> usize {
        self.folder.len()
    }

    /// The class names, in index order.
    fn classes(&self) -> Vec<String> {
        self.folder.classes().to_vec()
    }

    /// The file of image `index`.
    fn source(&self, index: usize) -> Option<String> {
        self.folder.source(index)
    }

    /// Image `index` decoded: `(pixels as HWC bytes, height, width, channels, label)`.
    fn load<'py>(
        &self,
        py: Python<'py>,
        index: usize,
    ) -> PyResult<(Bound<'py, PyBytes>, usize, usize, usize, i32)> {
        let sample = py.allow_threads(|| {
            run("ImageFolder", || {
                self.folder.sample(index, &mut SplitMix64::new(0))
            })
        })?;
        match sample.image {
            Image::Pixels(pixels) => Ok((
                PyBytes::new(py, pixels.data()),
                pixels.height(),
                pixels.width(),
                pixels.channels(),
                sample.label,
            )),
            Image::Chw(_) => Err(crate::errors::runtime_error(
                "ImageFolder",
                "the reader returned a converted image; expected pixels",
            )),
        }
    }
}

/// Write 8-bit pixels (height × width × channels, 1 or 3 channels) as a PNG file at `path`
/// (`torchvision.utils.save_image`'s last step).
#[pyfunction]
pub fn save_png(
    py: Python<'_>,
    path: std::path::PathBuf,
    pixels: &[u8],
    height: usize,
    width: usize,
    channels: usize,
) -> PyResult<()> {
    let pixels = pixels.to_vec();
    py.allow_threads(|| {
        run("save_image", || {
            PixelImage::new(height, width, channels, pixels)?.save_png(&path)
        })
    })
}

/// Register the data functions and classes on the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(load_digits, module)?)?;
    module.add_function(wrap_pyfunction!(save_png, module)?)?;
    module.add_class::<ImageFolderReader>()?;
    Ok(())
}
