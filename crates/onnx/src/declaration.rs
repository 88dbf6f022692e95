//! What the graph declares about its inputs and outputs: names, element types and shapes
//! whose dims are numbers, symbolic names (`dim_param`) or unknown. A negative `dim_value`
//! and the `dim_param` `?` are unknown: Paddle2ONNX writes `?` (and -1) for every free dim,
//! so a detector's height and width would otherwise have to be equal.

use crate::proto::{dimension, type_proto, DataType, ValueInfoProto};

/// The `dim_param` some exporters (Paddle2ONNX) write for an unknown dim: not a name that
/// binds dims together.
const UNKNOWN_NAME: &str = "?";

/// One dim of a declared shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeclaredDim {
    /// A fixed size.
    Fixed(usize),
    /// A symbolic size: any size, the same wherever the name appears in one run.
    Symbolic(String),
    /// Unknown.
    Unknown,
}

/// A declared graph input or output.
#[derive(Clone, Debug, PartialEq)]
pub struct Declaration {
    /// The value's name.
    pub name: String,
    /// The ONNX element type code (`DataType`), 0 when not a tensor or not given.
    pub element_type: i32,
    /// The shape, `None` when the rank is not declared.
    pub shape: Option<Vec<DeclaredDim>>,
}

impl Declaration {
    /// The declaration of a `ValueInfoProto`.
    pub fn of(info: &ValueInfoProto) -> Declaration {
        let tensor = match info.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(type_proto::Value::TensorType(t)) => Some(t),
            _ => None,
        };
        let shape = tensor.and_then(|t| t.shape.as_ref()).map(|s| {
            s.dim
                .iter()
                .map(|d| match &d.value {
                    Some(dimension::Value::DimValue(v)) if *v >= 0 => {
                        DeclaredDim::Fixed(*v as usize)
                    }
                    Some(dimension::Value::DimParam(p)) if !p.is_empty() && p != UNKNOWN_NAME => {
                        DeclaredDim::Symbolic(p.clone())
                    }
                    _ => DeclaredDim::Unknown,
                })
                .collect()
        });
        Declaration {
            name: info.name.clone(),
            element_type: tensor.map(|t| t.elem_type).unwrap_or(0),
            shape,
        }
    }

    /// The element type's name (`float`, `int64`; `?` when not declared).
    pub fn element_type_name(&self) -> String {
        if self.element_type == 0 {
            "?".into()
        } else {
            DataType::name_of(self.element_type)
        }
    }

    /// The shape as text: `[batch, 3, 224, 224]`, `?` for unknown dims or rank.
    pub fn shape_text(&self) -> String {
        match &self.shape {
            None => "?".into(),
            Some(dims) => {
                let parts: Vec<String> = dims
                    .iter()
                    .map(|d| match d {
                        DeclaredDim::Fixed(v) => v.to_string(),
                        DeclaredDim::Symbolic(s) => s.clone(),
                        DeclaredDim::Unknown => "?".into(),
                    })
                    .collect();
                format!("[{}]", parts.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Dimension, TensorShapeProto, TensorType, TypeProto};

    /// A float input declaration with these dims.
    fn info(dims: Vec<dimension::Value>) -> ValueInfoProto {
        ValueInfoProto {
            name: "x".into(),
            r#type: Some(TypeProto {
                value: Some(type_proto::Value::TensorType(TensorType {
                    elem_type: DataType::Float as i32,
                    shape: Some(TensorShapeProto {
                        dim: dims
                            .into_iter()
                            .map(|value| Dimension {
                                value: Some(value),
                                ..Default::default()
                            })
                            .collect(),
                    }),
                })),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn question_marks_and_negative_sizes_are_unknown_dims() {
        let declared = Declaration::of(&info(vec![
            dimension::Value::DimValue(-1),
            dimension::Value::DimValue(3),
            dimension::Value::DimParam("?".into()),
            dimension::Value::DimParam("width".into()),
        ]));
        assert_eq!(
            declared.shape,
            Some(vec![
                DeclaredDim::Unknown,
                DeclaredDim::Fixed(3),
                DeclaredDim::Unknown,
                DeclaredDim::Symbolic("width".into()),
            ])
        );
        assert_eq!(declared.shape_text(), "[?, 3, ?, width]");
    }
}
