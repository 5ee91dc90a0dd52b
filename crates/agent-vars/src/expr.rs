//! The expression AST (R15) and its canonical display.

use agent_core::Reference;
use std::fmt;

/// `reference { "&&" reference }`: satisfied when every reference is present (R17).
///
/// Never empty: its fields are private so that every alternative prints as
/// text that parses back (R15).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Alternative {
    /// The `&&`-joined references, at least one.
    pub(crate) references: Vec<Reference>,
}

impl Alternative {
    /// The `&&` of `references`; `None` when there are none.
    pub fn new(references: Vec<Reference>) -> Option<Self> {
        (!references.is_empty()).then_some(Alternative { references })
    }

    /// The `&&`-joined references, at least one.
    pub fn references(&self) -> &[Reference] {
        &self.references
    }

    /// Consumes the alternative, returning its references.
    pub fn into_references(self) -> Vec<Reference> {
        self.references
    }
}

/// `alternative { "||" alternative }`: the first satisfied alternative wins (R17).
///
/// `Display` prints the canonical form — single spaces around operators,
/// canonical paths — and parsing it gives back an equal expression. Never
/// empty (its fields are private), so that holds for every expression.
///
/// ```
/// use agent_core::Reference;
/// use agent_vars::{Alternative, Expression};
/// let a: Reference = "†a.x".parse()?;
/// let b: Reference = "†b".parse()?;
/// let both = Alternative::new(vec![a.clone(), b]).ok_or("empty")?;
/// let e = Expression::new(vec![both, Alternative::new(vec![a]).ok_or("empty")?]).ok_or("empty")?;
/// assert_eq!(e.to_string(), "†a.x && †b || †a.x");
/// assert_eq!(Expression::parse(&e.to_string())?, e);
/// assert_eq!(Expression::new(vec![]), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Expression {
    /// The `||`-joined alternatives, at least one.
    pub(crate) alternatives: Vec<Alternative>,
}

impl Expression {
    /// The `||` of `alternatives`; `None` when there are none.
    pub fn new(alternatives: Vec<Alternative>) -> Option<Self> {
        (!alternatives.is_empty()).then_some(Expression { alternatives })
    }

    /// The `||`-joined alternatives, at least one.
    pub fn alternatives(&self) -> &[Alternative] {
        &self.alternatives
    }

    /// Consumes the expression, returning its alternatives.
    pub fn into_alternatives(self) -> Vec<Alternative> {
        self.alternatives
    }

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
