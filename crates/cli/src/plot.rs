//! Loss and accuracy curves of a training run, drawn into a PNG with plotters. Text is drawn
//! by plotters' pure-Rust `ab_glyph` renderer with DejaVu Sans embedded in the binary
//! (assets/fonts, license beside it), so the binary needs no fontconfig or freetype.

use std::path::Path;
use std::sync::OnceLock;

use anygrad::train::EpochReport;
use plotters::prelude::*;

/// DejaVu Sans, the chart font (see assets/fonts/DejaVuSans-LICENSE.txt).
static FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");

/// Register the embedded font as plotters' `sans-serif` family (once per process).
fn register_font() -> Result<(), String> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err("the embedded chart font could not be loaded".to_string())
    }
}

/// Check before a run that `path` can take the chart: a `.png` name and a writable place.
pub fn check_plot_path(path: &Path) -> Result<(), String> {
    let is_png = path
        .extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("png"));
    if !is_png {
        return Err(format!(
            "--plot {}: the chart is a PNG image; give a file name ending in .png",
            path.display()
        ));
    }
    anygrad::nn::check_writable(path).map_err(|error| format!("--plot {}: {error}", path.display()))
}

/// Two panels: training loss, and train/test accuracy, per epoch.
pub fn plot_training(epochs: &[EpochReport], path: &Path) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    register_font()?;
    let root = BitMapBackend::new(path, (1000, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let (left, right) = root.split_horizontally(500);
    let last = epochs.last().map(|e| e.epoch).unwrap_or(1).max(2) as f64;
    let first = epochs.first().map(|e| e.epoch).unwrap_or(1) as f64;
    let max_loss = epochs
        .iter()
        .map(|e| e.train_loss.max(e.test_loss))
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.05;

    let mut loss_chart = ChartBuilder::on(&left)
        .caption("loss", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(32)
        .y_label_area_size(48)
        .build_cartesian_2d(first..last, 0.0..max_loss)
        .map_err(|e| fail(&e))?;
    loss_chart
        .configure_mesh()
        .x_desc("epoch")
        .draw()
        .map_err(|e| fail(&e))?;
    loss_chart
        .draw_series(LineSeries::new(
            epochs.iter().map(|e| (e.epoch as f64, e.train_loss)),
            &BLUE,
        ))
        .map_err(|e| fail(&e))?
        .label("train")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE));
    loss_chart
        .draw_series(LineSeries::new(
            epochs.iter().map(|e| (e.epoch as f64, e.test_loss)),
            &RED,
        ))
        .map_err(|e| fail(&e))?
        .label("test")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
    loss_chart
        .configure_series_labels()
        .border_style(BLACK)
        .draw()
        .map_err(|e| fail(&e))?;

    let low = epochs
        .iter()
        .map(|e| e.train_accuracy.min(e.test_accuracy))
        .fold(1.0f64, f64::min);
    let mut accuracy_chart = ChartBuilder::on(&right)
        .caption("accuracy", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(32)
        .y_label_area_size(48)
        .build_cartesian_2d(first..last, (low - 0.02).max(0.0)..1.0)
        .map_err(|e| fail(&e))?;
    accuracy_chart
        .configure_mesh()
        .x_desc("epoch")
        .draw()
        .map_err(|e| fail(&e))?;
    accuracy_chart
        .draw_series(LineSeries::new(
            epochs.iter().map(|e| (e.epoch as f64, e.train_accuracy)),
            &BLUE,
        ))
        .map_err(|e| fail(&e))?
        .label("train")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE));
    accuracy_chart
        .draw_series(LineSeries::new(
            epochs.iter().map(|e| (e.epoch as f64, e.test_accuracy)),
            &RED,
        ))
        .map_err(|e| fail(&e))?
        .label("test")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
    accuracy_chart
        .configure_series_labels()
        .border_style(BLACK)
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}
