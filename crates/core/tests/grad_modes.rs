//! The gradient-recording modes, as PyTorch's: `no_grad` stops recording until its guard
//! drops, `enable_grad` turns it back on inside, and each guard restores the mode it found.

use anygrad_core::{enable_grad, is_grad_enabled, no_grad, Tensor};

fn leaf() -> Tensor {
    Tensor::from_vec(vec![1.0f32, 2.0], &[2], &anygrad_core::Device::Cpu)
        .unwrap()
        .requires_grad_(true)
}

#[test]
fn guards_restore_the_mode_they_found() {
    let x = leaf();
    assert!(is_grad_enabled());
    assert!(x.mul_scalar(2.0).unwrap().requires_grad());
    {
        let _outer = no_grad();
        assert!(!is_grad_enabled());
        assert!(!x.mul_scalar(2.0).unwrap().requires_grad());
        {
            let _inner = enable_grad();
            assert!(is_grad_enabled());
            assert!(x.mul_scalar(2.0).unwrap().requires_grad());
        }
        assert!(!is_grad_enabled(), "leaving enable_grad restores no_grad");
        assert!(!x.mul_scalar(2.0).unwrap().requires_grad());
        {
            let _nested = no_grad();
            assert!(!is_grad_enabled());
        }
        assert!(
            !is_grad_enabled(),
            "a nested no_grad leaves the outer one in force"
        );
    }
    assert!(is_grad_enabled(), "leaving no_grad records again");
    assert!(x.mul_scalar(2.0).unwrap().requires_grad());
}
