//! Property tests on random shapes (including empty tensors and size-1 dims): broadcasting
//! agrees with an index-by-index reference, views agree with copies, reductions agree with
//! plain loops.

use anygrad_core::{Device, Tensor};
use proptest::prelude::*;

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..4, 0..4)
}

/// Values 0, 1, 2, ... as f64 (exact in every float dtype we use here).
fn counting(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n).map(|i| i as f64).collect::<Vec<f64>>(),
        shape,
        &Device::Cpu,
    )
    .unwrap()
}

/// Values `(7 i) mod 5 - 2` as f64 (small integers, exact in every float dtype): out of order
/// along every dim of more than two elements, and with ties.
fn scrambled(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n)
            .map(|i| ((7 * i) % 5) as f64 - 2.0)
            .collect::<Vec<f64>>(),
        shape,
        &Device::Cpu,
    )
    .unwrap()
}

fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            index[d] = flat % shape[d];
            flat /= shape[d];
        }
    }
    index
}

fn ravel(index: &[usize], shape: &[usize]) -> usize {
    index.iter().zip(shape).fold(0, |acc, (&i, &s)| acc * s + i)
}

proptest! {
    #[test]
    fn broadcasting_matches_reference(a in shape_strategy(), pick in prop::collection::vec(any::<bool>(), 0..4)) {
        // b: a's trailing dims with some set to 1.
        let b: Vec<usize> = a.iter().rev().zip(pick.iter().chain(std::iter::repeat(&false))).map(|(&s, &one)| if one { 1 } else { s }).collect::<Vec<_>>().into_iter().rev().collect();
        let b = b[b.len().saturating_sub(pick.len().min(b.len()))..].to_vec();
        let x = counting(&a);
        let y = counting(&b);
        let sum = x.add(&y).unwrap();
        prop_assert_eq!(sum.shape(), &a[..]);
        let got = sum.to_vec::<f64>().unwrap();
        let (xv, yv) = (x.to_vec::<f64>().unwrap(), y.to_vec::<f64>().unwrap());
        for (flat, &g) in got.iter().enumerate() {
            let index = unravel(flat, &a);
            let lead = a.len() - b.len();
            let b_index: Vec<usize> = b.iter().enumerate().map(|(d, &s)| if s == 1 { 0 } else { index[lead + d] }).collect();
            prop_assert_eq!(g, xv[flat] + yv[ravel(&b_index, &b)]);
        }
    }

    #[test]
    fn permuted_views_match_copies(shape in prop::collection::vec(1usize..4, 1..4), seed in any::<u64>()) {
        let x = counting(&shape);
        let mut perm: Vec<usize> = (0..shape.len()).collect();
        // A seeded shuffle of the dims.
        let mut state = seed;
        for i in (1..perm.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            perm.swap(i, (state >> 33) as usize % (i + 1));
        }
        let view = x.permute(&perm).unwrap();
        let copy = view.contiguous().unwrap();
        prop_assert!(copy.is_contiguous());
        prop_assert_eq!(view.to_vec::<f64>().unwrap(), copy.to_vec::<f64>().unwrap());
        let values = x.to_vec::<f64>().unwrap();
        let permuted_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        for (flat, v) in copy.to_vec::<f64>().unwrap().into_iter().enumerate() {
            let index = unravel(flat, &permuted_shape);
            let mut original = vec![0; shape.len()];
            for (d, &p) in perm.iter().enumerate() {
                original[p] = index[d];
            }
            prop_assert_eq!(v, values[ravel(&original, &shape)]);
        }
    }

    #[test]
    fn reductions_match_loops(shape in shape_strategy(), dim_pick in any::<usize>(), keepdim in any::<bool>()) {
        let x = counting(&shape).mul_scalar(0.5).unwrap();
        let values = x.to_vec::<f64>().unwrap();
        if shape.is_empty() {
            prop_assert_eq!(x.sum_all().unwrap().item_f64().unwrap(), values[0]);
            return Ok(());
        }
        let dim = dim_pick % shape.len();
        let sum = x.sum(&[dim as isize], keepdim).unwrap();
        let mut expected_shape = shape.clone();
        if keepdim { expected_shape[dim] = 1 } else { expected_shape.remove(dim); }
        prop_assert_eq!(sum.shape(), &expected_shape[..]);
        let mut expected = vec![0.0; sum.numel()];
        let mut kept = shape.clone();
        kept[dim] = 1;
        for (flat, &v) in values.iter().enumerate() {
            let mut index = unravel(flat, &shape);
            index[dim] = 0;
            expected[ravel(&index, &kept)] += v;
        }
        prop_assert_eq!(sum.to_vec::<f64>().unwrap(), expected.clone());
        prop_assert!((x.sum_all().unwrap().item_f64().unwrap() - values.iter().sum::<f64>()).abs() < 1e-9);
        if shape[dim] > 0 {
            // Scrambled values (neither sorted along any dim, with ties), so the maximum's
            // position varies: a max that took the first or last element would differ.
            let scrambled = scrambled(&shape);
            let values = scrambled.to_vec::<f64>().unwrap();
            let max = scrambled.max(&[dim as isize], keepdim).unwrap();
            prop_assert_eq!(max.shape(), &expected_shape[..]);
            let mut expected_max = vec![f64::NEG_INFINITY; max.numel()];
            for (flat, &v) in values.iter().enumerate() {
                let mut index = unravel(flat, &shape);
                index[dim] = 0;
                let slot = &mut expected_max[ravel(&index, &kept)];
                *slot = slot.max(v);
            }
            prop_assert_eq!(max.to_vec::<f64>().unwrap(), expected_max);
        }
    }

    #[test]
    fn narrow_and_cat_round_trip(shape in prop::collection::vec(1usize..5, 1..4), dim_pick in any::<usize>(), cut_pick in any::<usize>()) {
        let dim = dim_pick % shape.len();
        let cut = cut_pick % (shape[dim] + 1);
        let x = counting(&shape);
        let left = x.narrow(dim as isize, 0, cut).unwrap();
        let right = x.narrow(dim as isize, cut, shape[dim] - cut).unwrap();
        let joined = Tensor::cat(&[&left, &right], dim as isize).unwrap();
        prop_assert_eq!(joined.shape(), &shape[..]);
        prop_assert_eq!(joined.to_vec::<f64>().unwrap(), x.to_vec::<f64>().unwrap());
        // The halves hold the right elements: row-major position `index` of `left` is
        // `index` of `x`, of `right` that index moved `cut` along `dim`.
        let values = x.to_vec::<f64>().unwrap();
        for (part, offset) in [(&left, 0), (&right, cut)] {
            let part_shape = part.shape().to_vec();
            for (flat, v) in part.to_vec::<f64>().unwrap().into_iter().enumerate() {
                let mut index = unravel(flat, &part_shape);
                index[dim] += offset;
                prop_assert_eq!(v, values[ravel(&index, &shape)]);
            }
        }
        // Flattening a narrowed (non-contiguous) view keeps its elements in row-major order.
        let flat = right.reshape([-1]).unwrap();
        prop_assert_eq!(flat.shape(), &[right.numel()][..]);
        prop_assert_eq!(flat.to_vec::<f64>().unwrap(), right.contiguous().unwrap().to_vec::<f64>().unwrap());
    }
}
