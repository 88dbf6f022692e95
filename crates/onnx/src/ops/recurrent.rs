//! Recurrent layers: RNN, GRU and LSTM (forward, reverse and bidirectional; `layout` 0 and
//! 1; biases, initial states, LSTM peepholes, `clip`, the activation list with its alphas
//! and betas, GRU's `linear_before_reset`), unrolled over the sequence as tensor ops so that
//! gradients flow to the weights. `sequence_lens` shorter than the sequence is refused.

use anygrad_core::Tensor;

use super::{any_opset, OperatorEntry};
use crate::context::NodeContext;
use crate::error::Result;
use crate::value::Value;

/// The recurrent operators.
pub(crate) const OPERATORS: &[OperatorEntry] = &[
    any_opset("RNN", |c| recurrent(c, Cell::Rnn)),
    any_opset("GRU", |c| recurrent(c, Cell::Gru)),
    any_opset("LSTM", |c| recurrent(c, Cell::Lstm)),
];

/// Which cell.
#[derive(Clone, Copy, PartialEq)]
enum Cell {
    Rnn,
    Gru,
    Lstm,
}

impl Cell {
    /// Gates per step.
    fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }

    /// The default activations of one direction.
    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// A named activation with its optional alpha and beta.
#[derive(Clone)]
struct Activation {
    name: String,
    alpha: Option<f64>,
    beta: Option<f64>,
}

impl Activation {
    fn apply(&self, x: &Tensor) -> anygrad_core::Result<Tensor> {
        let alpha = |d: f64| self.alpha.unwrap_or(d);
        let beta = |d: f64| self.beta.unwrap_or(d);
        match self.name.to_ascii_lowercase().as_str() {
            "tanh" => x.tanh(),
            "sigmoid" => x.sigmoid(),
            "relu" => x.relu(),
            "leakyrelu" => Tensor::where_(&x.gt_scalar(0.0)?, x, &x.mul_scalar(alpha(0.01))?),
            "hardsigmoid" => x
                .mul_scalar(alpha(0.2))?
                .add_scalar(beta(0.5))?
                .clamp(0.0, 1.0),
            "affine" => x.mul_scalar(alpha(1.0))?.add_scalar(beta(0.0)),
            "scaledtanh" => x.mul_scalar(beta(1.0))?.tanh()?.mul_scalar(alpha(1.0)),
            "thresholdedrelu" => Tensor::where_(&x.gt_scalar(alpha(1.0))?, x, &x.zeros_like()?),
            "elu" => {
                let below = x
                    .minimum_scalar(0.0)?
                    .exp()?
                    .sub_scalar(1.0)?
                    .mul_scalar(alpha(1.0))?;
                Tensor::where_(&x.gt_scalar(0.0)?, x, &below)
            }
            "softsign" => x.div(&x.abs()?.add_scalar(1.0)?),
            "softplus" => x
                .relu()?
                .add(&x.abs()?.neg()?.exp()?.add_scalar(1.0)?.log()?),
            other => Err(anygrad_core::Error::invalid(
                "recurrent",
                format!("activation `{other}` is not supported"),
            )),
        }
    }
}

/// Direction `d` of a `[directions, ...]` input.
fn direction(ctx: &NodeContext, t: &Tensor, d: usize) -> Result<Tensor> {
    ctx.core(t.narrow(0, d, 1).and_then(|x| x.squeeze(0)))
}

fn recurrent(ctx: &NodeContext, cell: Cell) -> Result<Vec<Value>> {
    let layout = ctx.attr_int("layout", 0)?;
    let mut x = ctx.tensor(0)?;
    if layout != 0 {
        x = ctx.core(x.transpose(0, 1))?;
    }
    let w = ctx.tensor(1)?;
    let r = ctx.tensor(2)?;
    let bias = ctx.optional_tensor(3)?;
    if x.rank() != 3 || w.rank() != 3 || r.rank() != 3 {
        return Err(ctx.error("X, W and R must be 3-D"));
    }
    let (steps, batch) = (x.shape()[0], x.shape()[1]);
    let hidden = match ctx.attr_opt_int("hidden_size")? {
        Some(h) if h > 0 => h as usize,
        _ => r.shape()[2],
    };
    let g = cell.gates();
    let directions = match ctx.attr_string("direction", "forward")?.as_str() {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        other => return Err(ctx.error(format!("direction `{other}` is not supported"))),
    };
    if w.shape()[0] != directions.len() || w.shape()[1] != g * hidden || r.shape()[1] != g * hidden
    {
        return Err(ctx.error("W and R do not match the direction count and hidden size"));
    }
    if let Some(lengths) = ctx.optional_ints(4)? {
        if lengths.iter().any(|&l| l != steps as i64) {
            return Err(ctx.error("sequence_lens shorter than the sequence are not supported"));
        }
    }
    let mut initial_h = ctx.optional_tensor(5)?;
    let mut initial_c = if cell == Cell::Lstm {
        ctx.optional_tensor(6)?
    } else {
        None
    };
    let peepholes = if cell == Cell::Lstm {
        ctx.optional_tensor(7)?
    } else {
        None
    };
    if layout != 0 {
        initial_h = initial_h
            .map(|h| h.transpose(0, 1))
            .transpose()
            .map_err(|e| ctx.error(e))?;
        initial_c = initial_c
            .map(|c| c.transpose(0, 1))
            .transpose()
            .map_err(|e| ctx.error(e))?;
    }
    let clip = ctx.attr_float("clip", 0.0)? as f64;
    let names: Vec<String> = match ctx.attribute("activations") {
        Some(a) => a
            .strings
            .iter()
            .map(|s| String::from_utf8_lossy(s).to_string())
            .collect(),
        None => Vec::new(),
    };
    let alphas = ctx.attr_floats("activation_alpha")?.unwrap_or_default();
    let betas = ctx.attr_floats("activation_beta")?.unwrap_or_default();
    let per_direction = cell.default_activations().len();
    let linear_before_reset = ctx.attr_int("linear_before_reset", 0)? != 0;
    let input_forget = ctx.attr_int("input_forget", 0)? != 0;
    let zeros = ctx.core(Tensor::zeros(&[batch, hidden], x.dtype(), x.device()))?;

    let mut all_y = Vec::new();
    let mut all_h = Vec::new();
    let mut all_c = Vec::new();
    for (d, &reverse) in directions.iter().enumerate() {
        let activations: Vec<Activation> = (0..per_direction)
            .map(|k| {
                let i = d * per_direction + k;
                Activation {
                    name: names
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| cell.default_activations()[k].to_string()),
                    alpha: alphas.get(i).map(|&a| a as f64),
                    beta: betas.get(i).map(|&b| b as f64),
                }
            })
            .collect();
        let wd = direction(ctx, &w, d)?;
        let rd = direction(ctx, &r, d)?;
        let (wb, rb) = match &bias {
            Some(b) => {
                let bd = direction(ctx, b, d)?;
                (
                    Some(ctx.core(bd.narrow(0, 0, g * hidden))?),
                    Some(ctx.core(bd.narrow(0, g * hidden, g * hidden))?),
                )
            }
            None => (None, None),
        };
        let mut h = match &initial_h {
            Some(h0) => direction(ctx, h0, d)?,
            None => zeros.clone(),
        };
        let mut c = match &initial_c {
            Some(c0) => direction(ctx, c0, d)?,
            None => zeros.clone(),
        };
        let p = match &peepholes {
            Some(p) => Some(direction(ctx, p, d)?),
            None => None,
        };
        // X W^T (+ Wb) for every step at once: [steps, batch, G * hidden].
        let mut xw = ctx.core(x.matmul(&wd.t().map_err(|e| ctx.error(e))?))?;
        if let Some(wb) = &wb {
            xw = ctx.core(xw.add(wb))?;
        }
        let rt = ctx.core(rd.t())?;
        let mut outputs: Vec<Option<Tensor>> = vec![None; steps];
        let order: Vec<usize> = if reverse {
            (0..steps).rev().collect()
        } else {
            (0..steps).collect()
        };
        for t in order {
            let step = ctx.core((|| {
                let xt = xw.narrow(0, t, 1)?.squeeze(0)?;
                let gate = |k: usize, base: &Tensor| base.narrow(1, k * hidden, hidden);
                let clipped = |v: Tensor| {
                    if clip > 0.0 {
                        v.clamp(-clip, clip)
                    } else {
                        Ok(v)
                    }
                };
                let mut hr = h.matmul(&rt)?;
                if let Some(rb) = &rb {
                    hr = hr.add(rb)?;
                }
                match cell {
                    Cell::Rnn => {
                        let new_h = activations[0].apply(&clipped(xt.add(&hr)?)?)?;
                        Ok((new_h, c.clone()))
                    }
                    Cell::Gru => {
                        let z =
                            activations[0].apply(&clipped(gate(0, &xt)?.add(&gate(0, &hr)?)?)?)?;
                        let reset =
                            activations[0].apply(&clipped(gate(1, &xt)?.add(&gate(1, &hr)?)?)?)?;
                        let candidate_input = if linear_before_reset {
                            gate(2, &xt)?.add(&reset.mul(&gate(2, &hr)?)?)?
                        } else {
                            let r_h = rd.narrow(0, 2 * hidden, hidden)?;
                            let mut recurrent = reset.mul(&h)?.matmul(&r_h.t()?)?;
                            if let Some(rb) = &rb {
                                recurrent = recurrent.add(&rb.narrow(0, 2 * hidden, hidden)?)?;
                            }
                            gate(2, &xt)?.add(&recurrent)?
                        };
                        let candidate = activations[1].apply(&clipped(candidate_input)?)?;
                        let new_h = z.rsub_scalar(1.0)?.mul(&candidate)?.add(&z.mul(&h)?)?;
                        Ok((new_h, c.clone()))
                    }
                    Cell::Lstm => {
                        let peep =
                            |k: usize, state: &Tensor| -> anygrad_core::Result<Option<Tensor>> {
                                match &p {
                                    Some(p) => {
                                        Ok(Some(p.narrow(0, k * hidden, hidden)?.mul(state)?))
                                    }
                                    None => Ok(None),
                                }
                            };
                        let with = |v: Tensor, extra: Option<Tensor>| match extra {
                            Some(e) => v.add(&e),
                            None => Ok(v),
                        };
                        let i = activations[0].apply(&clipped(with(
                            gate(0, &xt)?.add(&gate(0, &hr)?)?,
                            peep(0, &c)?,
                        )?)?)?;
                        let f = if input_forget {
                            i.rsub_scalar(1.0)?
                        } else {
                            activations[0].apply(&clipped(with(
                                gate(2, &xt)?.add(&gate(2, &hr)?)?,
                                peep(2, &c)?,
                            )?)?)?
                        };
                        let candidate =
                            activations[1].apply(&clipped(gate(3, &xt)?.add(&gate(3, &hr)?)?)?)?;
                        let new_c = f.mul(&c)?.add(&i.mul(&candidate)?)?;
                        let o = activations[0].apply(&clipped(with(
                            gate(1, &xt)?.add(&gate(1, &hr)?)?,
                            peep(1, &new_c)?,
                        )?)?)?;
                        let new_h = o.mul(&activations[2].apply(&new_c)?)?;
                        Ok((new_h, new_c))
                    }
                }
            })())?;
            h = step.0;
            c = step.1;
            outputs[t] = Some(h.clone());
        }
        let outputs: Vec<Tensor> = outputs.into_iter().flatten().collect();
        let refs: Vec<&Tensor> = outputs.iter().collect();
        let y = if refs.is_empty() {
            ctx.core(Tensor::zeros(&[0, batch, hidden], x.dtype(), x.device()))?
        } else {
            ctx.core(Tensor::stack(&refs, 0))?
        };
        all_y.push(y);
        all_h.push(h);
        all_c.push(c);
    }
    let stack = |items: &[Tensor], dim: isize| -> Result<Tensor> {
        let refs: Vec<&Tensor> = items.iter().collect();
        ctx.core(Tensor::stack(&refs, dim))
    };
    let mut y = stack(&all_y, 1)?;
    let mut y_h = stack(&all_h, 0)?;
    let mut y_c = stack(&all_c, 0)?;
    if layout != 0 {
        y = ctx.core(y.permute(&[2, 0, 1, 3]))?;
        y_h = ctx.core(y_h.transpose(0, 1))?;
        y_c = ctx.core(y_c.transpose(0, 1))?;
    }
    Ok(vec![
        Value::Tensor(y),
        Value::Tensor(y_h),
        Value::Tensor(y_c),
    ])
}
