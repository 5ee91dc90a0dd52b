//! `_outputPath` as outcomes of destinations (R19).

use crate::{Error, Result};
use agent_core::Reference;
use agent_vars::{Expression, Text};
use std::fmt;

/// A parsed `_outputPath` (R19): alternatives are the call's possible
/// outcomes, and the `&&`-joined references of an outcome its destinations.
///
/// ```
/// use agent_output::OutputPath;
/// let path: OutputPath = "†state.receipt || †state.error && †state.audit".parse()?;
/// assert_eq!(path.outcomes().len(), 2);
/// assert_eq!(path.outcomes()[1].len(), 2);
/// assert_eq!(path.to_string(), "†state.receipt || †state.error && †state.audit");
/// # Ok::<(), agent_output::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPath {
    outcomes: Vec<Vec<Reference>>,
}

impl OutputPath {
    /// Parses `_outputPath` text; it must be an expression (R15, R19).
    ///
    /// # Errors
    ///
    /// [`Error::OutputPathNotExpression`](crate::Error::OutputPathNotExpression)
    /// for text that is not an expression and
    /// [`Error::OutputPathSyntax`](crate::Error::OutputPathSyntax) for one that
    /// does not parse.
    pub fn parse(text: &str) -> Result<Self> {
        match agent_vars::parse(text).map_err(Error::OutputPathSyntax)? {
            Text::Expression(expression) => Ok(Self::from(expression)),
            Text::Literal(_) => Err(Error::OutputPathNotExpression { text: text.into() }),
        }
    }

    /// The outcomes, each a list of destinations.
    pub fn outcomes(&self) -> &[Vec<Reference>] {
        &self.outcomes
    }
}

impl From<Expression> for OutputPath {
    fn from(expression: Expression) -> Self {
        OutputPath {
            outcomes: expression
                .into_alternatives()
                .into_iter()
                .map(agent_vars::Alternative::into_references)
                .collect(),
        }
    }
}

impl std::str::FromStr for OutputPath {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        OutputPath::parse(s)
    }
}

impl fmt::Display for OutputPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Built from an expression, so never empty: every part is `Some`.
        let expression = self
            .outcomes
            .iter()
            .filter_map(|references| agent_vars::Alternative::new(references.clone()))
            .collect();
        match Expression::new(expression) {
            Some(expression) => write!(f, "{expression}"),
            None => Ok(()),
        }
    }
}
