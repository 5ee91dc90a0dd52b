//! The expression AST (R15) and its canonical display.

use agent_core::Reference;
use std::fmt;

/// `reference { "&&" reference }`: satisfied when every reference is present (R17).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Alternative {
    /// The `&&`-joined references, at least one.
    pub references: Vec<Reference>,
}

/// `alternative { "||" alternative }`: the first satisfied alternative wins (R17).
///
/// `Display` prints the canonical form — single spaces around operators,
/// canonical paths — and parsing it gives back an equal expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Expression {
    /// The `||`-joined alternatives, at least one.
    pub alternatives: Vec<Alternative>,
}

impl Expression {
    /// An expression of one reference.
    pub fn reference(reference: Reference) -> Self {
        Expression {
            alternatives: vec![Alternative {
                references: vec![reference],
            }],
        }
    }

    /// Every reference, in source order.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        self.alternatives.iter().flat_map(|a| a.references.iter())
    }

    /// The single reference, when the expression is exactly one.
    pub fn as_reference(&self) -> Option<&Reference> {
        match self.alternatives.as_slice() {
            [Alternative { references }] => match references.as_slice() {
                [only] => Some(only),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Writes `items` separated by `separator`.
fn join<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T], separator: &str) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(separator)?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

impl fmt::Display for Alternative {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        join(f, &self.references, " && ")
    }
}

impl fmt::Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        join(f, &self.alternatives, " || ")
    }
}
