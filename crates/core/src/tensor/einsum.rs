//! `Tensor::einsum`: Einstein summation over any number of operands, with `...` and implicit
//! outputs (`torch.einsum`, ONNX's Einsum). Two operands contract through one batched matrix
//! product (dims sorted into batch, left, right and contracted groups); other counts multiply
//! broadcast operands and sum. A composite of tensor ops: every device, with autograd.

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The op's name in errors.
const OP: &str = "einsum";

/// Labels of the `...` dims (outside the letters' range).
fn ellipsis_label(k: usize) -> char {
    char::from_u32(0x100 + k as u32).unwrap_or('\u{100}')
}

/// The labels of one term, `...` expanded for an operand of `rank` dims (right-aligned
/// among `width` ellipsis dims).
fn expand(term: &str, rank: usize) -> Result<(Vec<char>, usize)> {
    let letters = term.replace("...", "");
    if letters.chars().any(|c| !c.is_ascii_alphabetic()) {
        return Err(Error::invalid(
            OP,
            format!("term `{term}` holds characters other than letters and `...`"),
        ));
    }
    let named = letters.chars().count();
    if !term.contains("...") {
        if named != rank {
            return Err(Error::invalid(
                OP,
                format!("term `{term}` names {named} dims of an operand of rank {rank}"),
            ));
        }
        return Ok((letters.chars().collect(), 0));
    }
    let dots = rank.checked_sub(named).ok_or_else(|| {
        Error::invalid(
            OP,
            format!("term `{term}` names more dims than the operand's {rank}"),
        )
    })?;
    let (head, tail) = term.split_once("...").unwrap_or((term, ""));
    let mut labels: Vec<char> = head.chars().collect();
    labels.extend((0..dots).map(|_| '\0'));
    labels.extend(tail.chars());
    Ok((labels, dots))
}

impl Tensor {
    /// Einstein summation (`torch.einsum`): `equation` names each operand's dims with letters
    /// (`"bij,bjk->bik"`), `...` for any number of leading or middle dims (broadcast together),
    /// and the output's after `->` (without it: `...` then the letters used once, in
    /// alphabetical order). A letter repeated within one term takes that operand's diagonal;
    /// letters absent from the output are summed. Two operands contract through one batched
    /// matrix product; other counts multiply broadcast operands and sum. Differentiable.
    pub fn einsum(equation: &str, operands: &[&Tensor]) -> Result<Tensor> {
        einsum(equation, operands)
    }
}

fn einsum(equation: &str, operands: &[&Tensor]) -> Result<Tensor> {
    let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (equation.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    let operands: Vec<Tensor> = operands.iter().map(|&t| t.clone()).collect();
    if terms.len() != operands.len() {
        return Err(Error::invalid(
            OP,
            format!(
                "`{equation}` has {} terms for {} operands",
                terms.len(),
                operands.len()
            ),
        ));
    }
    // Labels per operand, `...` dims numbered right-aligned.
    let mut expanded = Vec::new();
    let mut width = 0;
    for (term, t) in terms.iter().zip(&operands) {
        let (labels, dots) = expand(term, t.rank())?;
        width = width.max(dots);
        expanded.push((labels, dots));
    }
    let mut labels: Vec<Vec<char>> = Vec::new();
    for (l, dots) in &expanded {
        let mut k = width - dots;
        labels.push(
            l.iter()
                .map(|&c| {
                    if c == '\0' {
                        k += 1;
                        ellipsis_label(k - 1)
                    } else {
                        c
                    }
                })
                .collect(),
        );
    }
    let output: Vec<char> = match &rhs {
        Some(r) => {
            let (head, tail) = r.split_once("...").unwrap_or((r.as_str(), ""));
            let mut out: Vec<char> = head.chars().collect();
            if r.contains("...") {
                out.extend((0..width).map(ellipsis_label));
            }
            out.extend(tail.chars());
            out
        }
        None => {
            let mut counts = std::collections::BTreeMap::new();
            for l in &labels {
                for &c in l.iter().filter(|c| c.is_ascii_alphabetic()) {
                    *counts.entry(c).or_insert(0) += 1;
                }
            }
            let mut out: Vec<char> = (0..width).map(ellipsis_label).collect();
            out.extend(counts.iter().filter(|(_, &n)| n == 1).map(|(&c, _)| c));
            out
        }
    };
    // A label repeated within one term takes the diagonal of its dims.
    let mut operands = operands;
    for (l, t) in labels.iter_mut().zip(operands.iter_mut()) {
        while let Some((p, q)) = repeated(l) {
            *t = diagonal(t, p, q)?;
            let c = l[p];
            l.remove(q);
            l.remove(p);
            l.push(c);
        }
    }
    // Every label's size (1 broadcasts).
    let mut all: Vec<char> = output.clone();
    let mut sizes = std::collections::HashMap::new();
    for (l, t) in labels.iter().zip(&operands) {
        for (&c, &s) in l.iter().zip(t.shape()) {
            if !all.contains(&c) {
                all.push(c);
            }
            let entry = sizes.entry(c).or_insert(s);
            if *entry == 1 {
                *entry = s;
            } else if s != 1 && s != *entry {
                return Err(Error::invalid(
                    OP,
                    format!("label `{c}` has sizes {entry} and {s}"),
                ));
            }
        }
    }
    if let Some(c) = output.iter().find(|c| !sizes.contains_key(c)) {
        return Err(Error::invalid(
            OP,
            format!("output label `{c}` is in no input term"),
        ));
    }
    let out_shape: Vec<usize> = output.iter().map(|c| sizes[c]).collect();
    // Each operand aligned to `all` (missing labels as size-1 dims), then multiplied and summed.
    let aligned = |l: &[char], t: &Tensor| -> Result<Tensor> {
        let mut order: Vec<usize> = (0..l.len()).collect();
        order.sort_by_key(|&i| all.iter().position(|c| *c == l[i]));
        let permuted = t.permute(&order)?;
        let shape: Vec<usize> = all
            .iter()
            .map(|c| match l.iter().position(|x| x == c) {
                Some(i) => t.shape()[i],
                None => 1,
            })
            .collect();
        permuted.reshape(shape)
    };
    if operands.len() == 2 {
        if let Some(out) = contract_pair(&labels, &operands, &output, &sizes)? {
            return Ok(out);
        }
    }
    let mut product = aligned(&labels[0], &operands[0])?;
    for (l, t) in labels.iter().zip(&operands).skip(1) {
        product = product.mul(&aligned(l, t)?)?;
    }
    let summed: Vec<isize> = (output.len()..all.len()).map(|d| d as isize).collect();
    let reduced = if summed.is_empty() {
        product
    } else {
        product.sum(&summed, false)?
    };
    reduced.broadcast_to(&out_shape)?.contiguous()
}

/// Two operands as one batched matrix product, or `None` where a label broadcasts (size 1
/// against a larger size), which the general path handles.
fn contract_pair(
    labels: &[Vec<char>],
    operands: &[Tensor],
    output: &[char],
    sizes: &std::collections::HashMap<char, usize>,
) -> Result<Option<Tensor>> {
    let (la, lb) = (&labels[0], &labels[1]);
    let (a, b) = (&operands[0], &operands[1]);
    for (l, t) in [(la, a), (lb, b)] {
        if l.iter()
            .zip(t.shape())
            .any(|(c, &s)| sizes.get(c) != Some(&s))
        {
            return Ok(None);
        }
    }
    // Labels in one operand only and not in the output are summed first.
    let presum = |l: &[char], other: &[char], t: &Tensor| -> Result<(Vec<char>, Tensor)> {
        let drop: Vec<isize> = l
            .iter()
            .enumerate()
            .filter(|(_, c)| !other.contains(c) && !output.contains(c))
            .map(|(i, _)| i as isize)
            .collect();
        if drop.is_empty() {
            return Ok((l.to_vec(), t.clone()));
        }
        let kept: Vec<char> = l
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(&(*i as isize)))
            .map(|(_, &c)| c)
            .collect();
        Ok((kept, t.sum(&drop, false)?))
    };
    let (la, a) = presum(la, lb, a)?;
    let (lb, b) = presum(lb, &la, b)?;
    let batch: Vec<char> = output
        .iter()
        .copied()
        .filter(|c| la.contains(c) && lb.contains(c))
        .collect();
    let left: Vec<char> = output
        .iter()
        .copied()
        .filter(|c| la.contains(c) && !lb.contains(c))
        .collect();
    let right: Vec<char> = output
        .iter()
        .copied()
        .filter(|c| lb.contains(c) && !la.contains(c))
        .collect();
    let contracted: Vec<char> = la
        .iter()
        .copied()
        .filter(|c| lb.contains(c) && !output.contains(c))
        .collect();
    let size = |group: &[char]| group.iter().map(|c| sizes[c]).product::<usize>();
    let arrange = |l: &[char], t: &Tensor, groups: [&[char]; 3]| -> Result<Tensor> {
        let order: Vec<usize> = groups
            .iter()
            .flat_map(|g| g.iter().map(|c| l.iter().position(|x| x == c).unwrap_or(0)))
            .collect();
        t.permute(&order)?
            .reshape([size(groups[0]), size(groups[1]), size(groups[2])])
    };
    let a3 = arrange(&la, &a, [&batch, &left, &contracted])?;
    let b3 = arrange(&lb, &b, [&batch, &contracted, &right])?;
    let product = a3.matmul(&b3)?;
    let grouped: Vec<char> = batch.iter().chain(&left).chain(&right).copied().collect();
    let shape: Vec<usize> = grouped.iter().map(|c| sizes[c]).collect();
    let order: Vec<usize> = output
        .iter()
        .map(|c| grouped.iter().position(|x| x == c).unwrap_or(0))
        .collect();
    Ok(Some(product.reshape(shape)?.permute(&order)?.contiguous()?))
}

/// The first label that appears twice in `labels`, as its two positions.
fn repeated(labels: &[char]) -> Option<(usize, usize)> {
    for p in 0..labels.len() {
        for q in p + 1..labels.len() {
            if labels[p] == labels[q] {
                return Some((p, q));
            }
        }
    }
    None
}

/// The diagonal of dims `p` and `q` (equal sizes) as a new last dim; the others keep their
/// order.
fn diagonal(t: &Tensor, p: usize, q: usize) -> Result<Tensor> {
    let n = t.shape()[p];
    if t.shape()[q] != n {
        return Err(Error::invalid(
            OP,
            format!(
                "a repeated label spans dims of sizes {n} and {}",
                t.shape()[q]
            ),
        ));
    }
    let mut order: Vec<usize> = (0..t.rank()).filter(|&d| d != p && d != q).collect();
    order.extend([p, q]);
    let moved = t.permute(&order)?;
    let mut shape: Vec<usize> = moved.shape()[..t.rank() - 2].to_vec();
    shape.push(n * n);
    let picks: Vec<i32> = (0..n).map(|i| (i * (n + 1)) as i32).collect();
    let index = Tensor::from_vec(picks, &[n], t.device())?;
    moved.reshape(shape)?.index_select(-1, &index)
}
