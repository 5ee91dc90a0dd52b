//! The expression parser (R15): one pass, byte offsets in every error.

use crate::{Alternative, Expression, SyntaxError};
use agent_core::{DAGGER, Reference};

/// What a JSON string means (R15).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text<'s> {
    /// Not an expression: used as is. For a `\†` escape, the backslash is
    /// already removed.
    Literal(std::borrow::Cow<'s, str>),
    /// An expression to evaluate.
    Expression(Expression),
}

/// Classifies a string: an expression when its first non-blank character is
/// `†`, a literal otherwise (with `\†` unescaped).
///
/// # Errors
///
/// A [`SyntaxError`], with its byte offset, for text that starts an
/// expression (`†`) that does not parse.
///
/// ```
/// use agent_vars::{parse, Text};
/// assert!(matches!(parse("  †input.name ")?, Text::Expression(_)));
/// assert_eq!(parse("\\†not a ref")?, Text::Literal("†not a ref".into()));
/// assert_eq!(parse("hello")?, Text::Literal("hello".into()));
/// # Ok::<(), agent_vars::SyntaxError>(())
/// ```
pub fn parse(text: &str) -> Result<Text<'_>, SyntaxError> {
    let trimmed = text.trim_start();
    let lead = text.len() - trimmed.len();
    if trimmed.starts_with(DAGGER) {
        Expression::parse(text).map(Text::Expression)
    } else if trimmed.starts_with('\\') && trimmed[1..].starts_with(DAGGER) {
        let mut unescaped = String::with_capacity(text.len() - 1);
        unescaped.push_str(&text[..lead]);
        unescaped.push_str(&trimmed[1..]);
        Ok(Text::Literal(unescaped.into()))
    } else {
        Ok(Text::Literal(text.into()))
    }
}

impl Expression {
    /// Parses an expression (R15); leading and trailing blanks are ignored.
    ///
    /// # Errors
    ///
    /// A [`SyntaxError`], with its byte offset, when `text` is not one
    /// expression.
    ///
    /// ```
    /// use agent_vars::Expression;
    /// let e = Expression::parse("†input.a||†state.b  &&  †state.c")?;
    /// assert_eq!(e.to_string(), "†input.a || †state.b && †state.c");
    /// let err = Expression::parse("†input.a || || †b").unwrap_err();
    /// assert_eq!(err.offset, 14);
    /// assert_eq!(err.caret(), "†input.a || || †b\n            ^");
    /// # Ok::<(), agent_vars::SyntaxError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Expression, SyntaxError> {
        Parser { text, pos: 0 }.expression()
    }
}

impl std::str::FromStr for Expression {
    type Err = SyntaxError;
    fn from_str(s: &str) -> Result<Self, SyntaxError> {
        Expression::parse(s)
    }
}

struct Parser<'t> {
    text: &'t str,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, offset: usize, reason: impl Into<String>) -> SyntaxError {
        SyntaxError {
            source: self.text.to_owned(),
            offset,
            reason: reason.into(),
        }
    }

    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn skip_blanks(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn expression(mut self) -> Result<Expression, SyntaxError> {
        self.skip_blanks();
        if !self.rest().starts_with(DAGGER) {
            return Err(self.not_an_expression());
        }
        let mut alternatives = vec![self.alternative()?];
        loop {
            self.skip_blanks();
            if self.pos == self.text.len() {
                return Ok(Expression { alternatives });
            }
            self.operator("||")?;
            alternatives.push(self.alternative()?);
        }
    }

    /// Text that does not start with `†` is not an expression: most often a
    /// forgotten `†`, or `$` typed for it, so the error suggests it.
    fn not_an_expression(&self) -> SyntaxError {
        let rest = self.rest().trim_end();
        let reason = if let Some(meant) = agent_core::dagger_meant(rest) {
            format!(
                "expected '†' (an expression starts with a reference): did you mean {}?",
                agent_core::quoted(&meant)
            )
        } else {
            "expected '†' (an expression starts with a reference, like †state.a)".to_owned()
        };
        self.error(self.pos, reason)
    }

    fn alternative(&mut self) -> Result<Alternative, SyntaxError> {
        let mut references = vec![self.reference()?];
        loop {
            let before = self.pos;
            self.skip_blanks();
            if !self.rest().starts_with("&&") {
                self.pos = before;
                return Ok(Alternative { references });
            }
            self.pos += 2;
            references.push(self.reference()?);
        }
    }

    fn operator(&mut self, op: &str) -> Result<(), SyntaxError> {
        if self.rest().starts_with(op) {
            self.pos += op.len();
            return Ok(());
        }
        let reason = match self.rest().chars().next() {
            Some('|') => "a single '|'; the operator is '||'".to_owned(),
            Some('&') => "a single '&'; the operator is '&&'".to_owned(),
            Some('(' | ')') => "parentheses are not part of the expression syntax".to_owned(),
            Some(c) => format!(
                "unexpected {}; expected '||', '&&' or the end",
                agent_core::quoted(&c.to_string())
            ),
            None => "unexpected end".to_owned(),
        };
        Err(self.error(self.pos, reason))
    }

    fn reference(&mut self) -> Result<Reference, SyntaxError> {
        self.skip_blanks();
        let rest = self.rest();
        if !rest.starts_with(DAGGER) {
            let reason = match rest.chars().next() {
                None => "expected a reference after the operator, found the end".to_owned(),
                Some('|' | '&') => "empty operand: expected a reference".to_owned(),
                Some('(' | ')') => "parentheses are not part of the expression syntax".to_owned(),
                Some(c) => format!(
                    "expected a reference starting with '†', found {}",
                    agent_core::quoted(&c.to_string())
                ),
            };
            return Err(self.error(self.pos, reason));
        }
        let (reference, used) = Reference::parse_prefix(rest, self.pos).map_err(|e| match e {
            agent_core::Error::Syntax { offset, reason } => self.error(offset, reason),
            other => self.error(self.pos, other.to_string()),
        })?;
        self.pos += used;
        Ok(reference)
    }
}
