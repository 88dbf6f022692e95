//! `Display` and `Debug` for tensors, shaped like PyTorch's printout: nested brackets, aligned
//! columns, `...` when a dim has more than 6 entries (first and last 3 shown), then shape, dtype
//! and device.

use std::fmt;

use super::Tensor;
use crate::dtype::DType;

const EDGE_ITEMS: usize = 3;
const SUMMARIZE_ABOVE: usize = 1000;

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = match self.to_vec_f64() {
            Ok(values) => values,
            Err(error) => return write!(f, "tensor(<unreadable: {error}>)"),
        };
        let summarize = values.len() > SUMMARIZE_ABOVE;
        let dtype = self.dtype();
        let render = |v: f64| -> String {
            match dtype {
                DType::Bool => if v != 0.0 { "True" } else { "False" }.to_string(),
                DType::I32 | DType::U32 | DType::U8 => format!("{}", v as i64),
                DType::F32 | DType::F16 | DType::BF16 | DType::F64 => {
                    if v.is_nan() {
                        "nan".into()
                    } else if v.is_infinite() {
                        if v > 0.0 { "inf" } else { "-inf" }.into()
                    } else {
                        format!("{v:.4}")
                    }
                }
            }
        };
        let cells: Vec<String> = values.iter().map(|&v| render(v)).collect();
        let width = cells.iter().map(String::len).max().unwrap_or(0);
        let mut body = String::new();
        write_nested(&mut body, self.shape(), &cells, 0, 0, width, summarize);
        write!(
            f,
            "tensor({body}, shape={:?}, dtype={}, device={})",
            self.shape(),
            dtype,
            self.device()
        )
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, dtype={}, device={}, requires_grad={})",
            self.shape(),
            self.dtype(),
            self.device(),
            self.requires_grad()
        )
    }
}

fn write_nested(
    out: &mut String,
    shape: &[usize],
    cells: &[String],
    depth: usize,
    start: usize,
    width: usize,
    summarize: bool,
) {
    if shape.is_empty() {
        out.push_str(cells.get(start).map(String::as_str).unwrap_or(""));
        return;
    }
    let size = shape[0];
    let stride: usize = shape[1..].iter().product();
    let indices: Vec<Option<usize>> = if summarize && size > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((size - EDGE_ITEMS..size).map(Some))
            .collect()
    } else {
        (0..size).map(Some).collect()
    };
    out.push('[');
    for (n, index) in indices.iter().enumerate() {
        if n > 0 {
            if shape.len() > 1 {
                out.push(',');
                out.push_str(&"\n".repeat(shape.len() - 1));
                out.push_str(&" ".repeat(depth + 8));
            } else {
                out.push_str(", ");
            }
        }
        match index {
            Some(i) if shape.len() == 1 => out.push_str(&format!("{:>width$}", cells[start + i])),
            Some(i) => write_nested(
                out,
                &shape[1..],
                cells,
                depth + 1,
                start + i * stride,
                width,
                summarize,
            ),
            None => out.push_str("..."),
        }
    }
    out.push(']');
}
