//! Reading a TOML text an administrator wrote (a rules file, a control configuration)
//! with errors that say where: `site.toml:12:7: invalid type: …`, on one line.
//!
//! ```
//! #[derive(Debug, serde::Deserialize)]
//! struct Doc {
//!     rate: String,
//! }
//! let e = sluice_core::toml_text::parse::<Doc>("rate = 5\n", "site.toml").unwrap_err();
//! assert_eq!((e.line, e.column), (1, 8));
//! assert!(e.to_string().starts_with("site.toml:1:8: invalid type"), "{e}");
//! ```

use serde::de::DeserializeOwned;

/// A TOML text that is not TOML, or not in the schema (an unknown key, a wrong type, a
/// missing field).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct TomlError {
    /// The file, or what the text is (`config`, `rules file`) when it came from no file.
    pub file: String,
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column of the problem, in characters.
    pub column: usize,
    /// What the TOML reader says, on one line.
    pub message: String,
}

/// Reads `text` as a `T`; `file` names it in the error.
pub fn parse<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, TomlError> {
    toml::from_str(text).map_err(|err: toml::de::Error| {
        let (line, column) = err
            .span()
            .map_or((1, 1), |span| line_and_column(text, span.start));
        TomlError {
            file: file.to_owned(),
            line,
            column,
            // Some messages span lines; a log line wants one.
            message: err
                .message()
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .collect::<Vec<_>>()
                .join(": "),
        }
    })
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}
