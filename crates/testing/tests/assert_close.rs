//! `assert_close` itself: finite values pass within `atol + rtol * |expected|` and fail
//! beyond it; an infinite expected value is matched only by the same infinity, a NaN only by
//! NaN, and a NaN or infinite result never matches a finite expected value.

use std::panic::{catch_unwind, AssertUnwindSafe};

use anygrad_testing::assert_close;

/// The label of the comparisons probed here; their expected panics are not printed.
const PROBE: &str = "probe";

/// Whether `assert_close(actual, expected, atol, rtol)` accepts the slices (a rejection is a
/// panic, caught here).
fn accepts_slices(actual: &[f32], expected: &[f32], atol: f32, rtol: f32) -> bool {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let print = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .unwrap_or_default();
            if !message.starts_with(&format!("{PROBE}:")) {
                print(info);
            }
        }));
    });
    catch_unwind(AssertUnwindSafe(|| {
        assert_close(actual, expected, atol, rtol, PROBE)
    }))
    .is_ok()
}

/// Whether `assert_close` accepts `actual` for `expected`.
fn accepts(actual: f32, expected: f32, atol: f32, rtol: f32) -> bool {
    accepts_slices(&[actual], &[expected], atol, rtol)
}

#[test]
fn finite_values_pass_within_the_tolerance_and_fail_beyond_it() {
    assert!(accepts(1.0, 1.0, 0.0, 0.0));
    assert!(accepts(1.05, 1.0, 0.0, 0.1));
    assert!(accepts(-0.95, -1.0, 0.1, 0.0));
    assert!(!accepts(1.2, 1.0, 0.0, 0.1));
    assert!(!accepts(1.0 + 1e-3, 1.0, 1e-4, 1e-4));
    assert!(!accepts(-1.0, 1.0, 0.5, 0.5));
}

#[test]
fn an_infinite_expected_value_needs_the_same_infinity() {
    for rtol in [0.0, 1e-4, 1.0] {
        assert!(accepts(f32::INFINITY, f32::INFINITY, 1e-5, rtol));
        assert!(accepts(f32::NEG_INFINITY, f32::NEG_INFINITY, 1e-5, rtol));
        assert!(!accepts(0.0, f32::INFINITY, 1e-5, rtol), "rtol {rtol}");
        assert!(!accepts(f32::MAX, f32::INFINITY, 1e-5, rtol), "rtol {rtol}");
        assert!(!accepts(-3.0, f32::NEG_INFINITY, 1e-5, rtol), "rtol {rtol}");
        assert!(
            !accepts(f32::NEG_INFINITY, f32::INFINITY, 1e-5, rtol),
            "rtol {rtol}"
        );
        assert!(
            !accepts(f32::INFINITY, f32::NEG_INFINITY, 1e-5, rtol),
            "rtol {rtol}"
        );
        assert!(!accepts(f32::NAN, f32::INFINITY, 1e-5, rtol), "rtol {rtol}");
    }
}

#[test]
fn nan_matches_only_nan() {
    assert!(accepts(f32::NAN, f32::NAN, 0.0, 0.0));
    assert!(!accepts(0.0, f32::NAN, 1.0, 1.0));
    assert!(!accepts(f32::INFINITY, f32::NAN, 1.0, 1.0));
    assert!(!accepts(f32::NAN, 0.0, 1.0, 1.0));
}

#[test]
fn a_non_finite_result_never_matches_a_finite_expected_value() {
    assert!(!accepts(f32::INFINITY, 1e30, 1.0, 1.0));
    assert!(!accepts(f32::NEG_INFINITY, -1e30, 1.0, 1.0));
}

#[test]
fn every_element_is_checked_and_lengths_must_agree() {
    let check = |actual: &[f32], expected: &[f32]| accepts_slices(actual, expected, 1e-6, 1e-6);
    assert!(check(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]));
    assert!(!check(&[1.0, 2.0, 3.5], &[1.0, 2.0, 3.0]));
    assert!(!check(&[1.0, 2.0], &[1.0, 2.0, 3.0]));
    assert!(!check(&[1.0, 2.0, 3.0], &[1.0, 2.0]));
}
