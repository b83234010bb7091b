//! Template errors, classified for the analysis code.

use std::fmt;

/// Why compiling or rendering a chat template failed.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    /// The template's name as given to [`ChatTemplate::new`](super::ChatTemplate::new).
    pub file: String,
    /// 1-based line in the template, when known.
    pub line: Option<usize>,
    pub kind: TemplateErrorKind,
    /// For [`TemplateErrorKind::Raised`], exactly the template's own message.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateErrorKind {
    /// The source does not parse.
    Syntax,
    /// The template called `raise_exception(message)`: it rejects this input.
    Raised,
    /// Rendering took more steps (or deeper recursion) than any real chat template needs.
    OutOfFuel,
    /// Any other failure while rendering (undefined attribute, bad operand, ...).
    Render,
}

impl TemplateErrorKind {
    fn label(self) -> &'static str {
        match self {
            TemplateErrorKind::Syntax => "syntax error",
            TemplateErrorKind::Raised => "template raised",
            TemplateErrorKind::OutOfFuel => "out of fuel",
            TemplateErrorKind::Render => "render error",
        }
    }
}

impl fmt::Display for TemplateError {
    /// One line: `FILE:LINE: syntax error: msg`, `FILE:LINE: template raised: msg`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}: {}", self.kind.label(), self.message)
    }
}

impl std::error::Error for TemplateError {}

/// Attached as the source of the minijinja error that `raise_exception` returns, so the
/// template's own message can be told apart from engine errors after it has propagated
/// through macros and filters.
#[derive(Debug)]
pub(crate) struct RaisedByTemplate(pub(crate) String);

impl fmt::Display for RaisedByTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RaisedByTemplate {}

impl TemplateError {
    pub(crate) fn new(
        file: &str,
        line: Option<usize>,
        kind: TemplateErrorKind,
        message: impl Into<String>,
    ) -> Self {
        TemplateError {
            file: file.to_owned(),
            line,
            kind,
            message: message.into(),
        }
    }

    /// Classifies a minijinja error raised while compiling or rendering `file`.
    pub(crate) fn from_minijinja(file: &str, err: &minijinja::Error) -> Self {
        use minijinja::ErrorKind as K;
        let line = err.line();
        if let Some(raised) = find_raised(err) {
            return TemplateError::new(file, line, TemplateErrorKind::Raised, raised.0.clone());
        }
        let detail = err.detail().unwrap_or_default();
        let kind = match err.kind() {
            K::SyntaxError | K::BadEscape | K::InvalidDelimiter => TemplateErrorKind::Syntax,
            K::OutOfFuel => TemplateErrorKind::OutOfFuel,
            // Unbounded macro recursion is the same runaway as an endless loop.
            K::InvalidOperation if detail.contains("recursion limit exceeded") => {
                TemplateErrorKind::OutOfFuel
            }
            _ => TemplateErrorKind::Render,
        };
        let message = match (kind, detail.is_empty()) {
            (TemplateErrorKind::Syntax, false) => detail.to_owned(),
            (_, true) => err.kind().to_string(),
            (_, false) => format!("{}: {detail}", err.kind()),
        };
        TemplateError::new(file, line, kind, message)
    }
}

fn find_raised(err: &minijinja::Error) -> Option<&RaisedByTemplate> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(raised) = e.downcast_ref::<RaisedByTemplate>() {
            return Some(raised);
        }
        current = e.source();
    }
    None
}
