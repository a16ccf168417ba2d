//! [`ConfigError`]: what is wrong with a config file, and where.

use std::fmt;
use std::path::{Path, PathBuf};

/// A config file that cannot be used: where (file, line, column, field) and what.
///
/// Its text never contains a secret: values are not quoted back, only field names.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The file, when the config came from one.
    pub path: Option<PathBuf>,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The field, as a dotted path (`servers.files.command`), when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// An error with just a message.
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError { path: None, line: None, column: None, field: None, message: message.into() }
    }

    /// The same error about `field`.
    #[must_use]
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The same error in `path`.
    #[must_use]
    pub fn in_file(mut self, path: &Path) -> Self {
        self.path = Some(path.to_path_buf());
        self
    }

    /// The same error at a 1-based line and column.
    #[must_use]
    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    /// The same error at the line and column of byte `offset` in `text`.
    #[must_use]
    pub fn at_offset(self, text: &str, offset: usize) -> Self {
        let (line, column) = line_column(text, offset);
        self.at(line, column)
    }
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}:", path.display())?;
            if let Some(line) = self.line {
                write!(f, "{line}:")?;
                if let Some(column) = self.column {
                    write!(f, "{column}:")?;
                }
            }
            f.write_str(" ")?;
        } else if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_column_and_field() {
        let e = ConfigError::new("expected a string").field("servers.a.command").in_file(Path::new("p.toml")).at(3, 9);
        assert_eq!(e.to_string(), "p.toml:3:9: servers.a.command: expected a string");
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("ab\ncd", 0), (1, 1));
    }
}
