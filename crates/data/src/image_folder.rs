//! `ImageFolder`: a directory with one sub-folder per class, read like torchvision's
//! `datasets.ImageFolder`, and [`write_image_folder`], its inverse (for making test sets).
//!
//! ```text
//! root/cat/001.png     -> class 0 ("cat")
//! root/cat/nested/x.jpg-> class 0 (sub-folders of a class folder are searched too)
//! root/dog/002.jpeg    -> class 1 ("dog")
//! ```
//!
//! Classes are the sub-folder names sorted by code point (Python's `sorted`), so the class
//! indices agree with torchvision's for the same folder. Files ending in `.png`, `.jpg` or
//! `.jpeg` (any case) are samples, in sorted path order; other files are skipped.
//!
//! **Bad files are errors, found by the scan.** A folder that cannot be read already stops
//! the scan with an error naming it; so does an entry with an image name that is not a
//! regular file of at most [`MAX_IMAGE_FILE_BYTES`] (a FIFO, which would block the reader
//! forever, a link to a device such as `/dev/zero`, which would be read until memory runs
//! out, a broken link, an oversized file). Skipping such entries would silently change the
//! data set, and finding them only when the image is loaded would stop a run in the middle
//! of an epoch. Loading checks again, since the folder may change after the scan.
//! Scanning happens once in [`ImageFolder::new`]; images are read and decoded in
//! [`sample`](crate::SampleDataset::sample), on the loader's worker threads. Like
//! torchvision's default loader, every image is converted to RGB unless
//! [`gray`](ImageFolder::gray) is asked for.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anygrad_core::files::regular_file_metadata;
use anygrad_core::{Error, Result};

use crate::image::{Image, PixelImage, MAX_IMAGE_FILE_BYTES};
use crate::rng::SplitMix64;
use crate::sample::{out_of_range, with_source, Sample, SampleDataset};
use crate::transforms::Transform;

/// The file name endings read as images (compared case-insensitively).
pub const IMAGE_EXTENSIONS: [&str; 3] = ["png", "jpg", "jpeg"];

/// Images in class sub-folders (torchvision's `ImageFolder`).
#[derive(Clone)]
pub struct ImageFolder {
    root: PathBuf,
    classes: Vec<String>,
    samples: Arc<Vec<(PathBuf, i32)>>,
    gray: bool,
    transform: Option<Arc<dyn Transform>>,
}

impl std::fmt::Debug for ImageFolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageFolder")
            .field("root", &self.root)
            .field("classes", &self.classes)
            .field("samples", &self.samples.len())
            .field("gray", &self.gray)
            .field("transform", &self.transform)
            .finish()
    }
}

/// The entries of `dir`, sorted by name.
fn sorted_entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    let read =
        std::fs::read_dir(dir).map_err(|error| Error::io(dir.display().to_string(), error))?;
    let mut entries = Vec::new();
    for entry in read {
        entries.push(entry.map_err(|error| Error::io(dir.display().to_string(), error))?);
    }
    entries.sort_by_key(|entry| entry.file_name());
    Ok(entries)
}

/// True for an entry that is a directory (following symbolic links, like `os.walk(...,
/// followlinks=True)`).
fn is_dir(path: &Path) -> bool {
    std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false)
}

fn has_image_extension(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        IMAGE_EXTENSIONS
            .iter()
            .any(|known| e.eq_ignore_ascii_case(known))
    })
}

/// Collect the image files under `dir` (recursively), in sorted order. `depth` guards
/// against symbolic-link cycles.
///
/// Errors: [`Error::Io`] or [`Error::Format`] naming the entry when a folder cannot be read,
/// or an entry with an image name is not a regular file of at most
/// [`MAX_IMAGE_FILE_BYTES`] (see the module notes).
fn collect_images(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<()> {
    if depth > 32 {
        return Err(Error::format(
            dir.display().to_string(),
            "folders nest more than 32 levels deep (a symbolic-link cycle?)",
        ));
    }
    for entry in sorted_entries(dir)? {
        let path = entry.path();
        if is_dir(&path) {
            collect_images(&path, depth + 1, out)?;
        } else if has_image_extension(&path) {
            // Only the metadata: opening a FIFO would block.
            regular_file_metadata(&path, MAX_IMAGE_FILE_BYTES, "image")?;
            out.push(path);
        }
    }
    Ok(())
}

impl ImageFolder {
    /// Scan `root`: its sub-folders are the classes (sorted by name), the PNG and JPEG files
    /// inside each (searched recursively) its samples.
    ///
    /// Errors: [`Error::Io`] naming `root` when it cannot be read (missing, not a
    /// directory); [`Error::Format`] naming it when it has no class sub-folders, when a class
    /// folder holds no image file, or when a folder name is not valid UTF-8;
    /// [`Error::Io`] or [`Error::Format`] naming the entry when a file with an image name is
    /// not a regular file of at most [`MAX_IMAGE_FILE_BYTES`] (a FIFO, a device, a broken
    /// link, an oversized file).
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref().to_path_buf();
        let mut classes = Vec::new();
        let mut samples = Vec::new();
        for entry in sorted_entries(&root)? {
            let path = entry.path();
            if !is_dir(&path) {
                continue;
            }
            let name = entry.file_name().into_string().map_err(|name| {
                Error::format(
                    root.display().to_string(),
                    format!("class folder name {name:?} is not valid UTF-8"),
                )
            })?;
            let label = i32::try_from(classes.len()).map_err(|_| {
                Error::format(root.display().to_string(), "more classes than fit in i32")
            })?;
            let mut files = Vec::new();
            collect_images(&path, 0, &mut files)?;
            if files.is_empty() {
                return Err(Error::format(
                    path.display().to_string(),
                    format!(
                        "class folder `{name}` holds no image file (extensions {})",
                        IMAGE_EXTENSIONS.join(", ")
                    ),
                ));
            }
            samples.extend(files.into_iter().map(|file| (file, label)));
            classes.push(name);
        }
        if classes.is_empty() {
            return Err(Error::format(
                root.display().to_string(),
                "no class sub-folders: an image folder holds one sub-folder of images per class",
            ));
        }
        Ok(ImageFolder {
            root,
            classes,
            samples: Arc::new(samples),
            gray: false,
            transform: None,
        })
    }

    /// Apply `transform` to every decoded image (replacing any earlier one).
    pub fn transform(mut self, transform: impl Transform + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// Decode to one grey channel (PIL's `convert("L")`) instead of RGB.
    pub fn gray(mut self, gray: bool) -> Self {
        self.gray = gray;
        self
    }

    /// The folder scanned.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Class names in index order (torchvision's `classes`).
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// The index of class `name` (torchvision's `class_to_idx[name]`).
    pub fn class_index(&self, name: &str) -> Option<usize> {
        self.classes.iter().position(|class| class == name)
    }

    /// Every sample's file and class (torchvision's `samples`).
    pub fn samples(&self) -> &[(PathBuf, i32)] {
        &self.samples
    }

    /// Every sample's class (torchvision's `targets`).
    pub fn targets(&self) -> Vec<i32> {
        self.samples.iter().map(|(_, label)| *label).collect()
    }

    /// Read and decode sample `index` without the transform: RGB (or grey with
    /// [`gray`](Self::gray)).
    ///
    /// Errors: [`Error::InvalidArgument`] for an index out of range, [`Error::Io`] or
    /// [`Error::Format`] naming the file when it cannot be read or decoded, or is no longer
    /// a regular file of at most [`MAX_IMAGE_FILE_BYTES`].
    pub fn load(&self, index: usize) -> Result<PixelImage> {
        let (path, _) = self
            .samples
            .get(index)
            .ok_or_else(|| out_of_range("ImageFolder", index, self.samples.len()))?;
        let image = PixelImage::open(path)?;
        if self.gray {
            image.into_gray()
        } else {
            image.into_rgb()
        }
    }
}

impl SampleDataset for ImageFolder {
    fn len(&self) -> usize {
        self.samples.len()
    }

    fn sample(&self, index: usize, rng: &mut SplitMix64) -> Result<Sample> {
        let image = Image::Pixels(self.load(index)?);
        let label = self.samples[index].1;
        let image = match &self.transform {
            Some(transform) => transform
                .apply(image, rng)
                .map_err(|error| with_source(error, self.source(index)))?,
            None => image,
        };
        Ok(Sample { image, label })
    }

    /// The image file of sample `index`.
    fn source(&self, index: usize) -> Option<String> {
        self.samples
            .get(index)
            .map(|(path, _)| path.display().to_string())
    }
}

/// Write images into an image-folder tree: `root/<class name>/<index>.png`, five-digit
/// indices counting per class. `class_names[label]` names each image's folder. Existing
/// files of the same name are replaced.
///
/// Errors: [`Error::InvalidArgument`] when a label has no class name or the counts differ,
/// [`Error::Io`] naming the path that cannot be created or written.
pub fn write_image_folder(
    root: impl AsRef<Path>,
    class_names: &[String],
    images: &[PixelImage],
    labels: &[usize],
) -> Result<()> {
    let root = root.as_ref();
    if images.len() != labels.len() {
        return Err(Error::invalid(
            "write_image_folder",
            format!("{} images but {} labels", images.len(), labels.len()),
        ));
    }
    if let Some(&bad) = labels.iter().find(|&&label| label >= class_names.len()) {
        return Err(Error::invalid(
            "write_image_folder",
            format!(
                "label {bad} has no name among {} classes",
                class_names.len()
            ),
        ));
    }
    for name in class_names {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir)
            .map_err(|error| Error::io(dir.display().to_string(), error))?;
    }
    let mut counts = vec![0usize; class_names.len()];
    for (image, &label) in images.iter().zip(labels) {
        let path = root
            .join(&class_names[label])
            .join(format!("{:05}.png", counts[label]));
        counts[label] += 1;
        image.save_png(&path)?;
    }
    Ok(())
}
