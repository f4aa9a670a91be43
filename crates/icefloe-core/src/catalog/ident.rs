//! Namespace and table identifiers, as the Iceberg catalog APIs name them: a namespace is a
//! list of levels (`a.b` is two levels; the root namespace has none), a table identifier is a
//! namespace and a name.

use std::fmt;

/// A namespace: zero or more levels, outermost first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Namespace {
    levels: Vec<String>,
}

impl Namespace {
    /// The root namespace (no level): what a catalog's top-level namespaces are children of.
    pub fn root() -> Namespace {
        Namespace::default()
    }

    /// A namespace of these levels.
    pub fn new(levels: impl IntoIterator<Item = impl Into<String>>) -> Namespace {
        Namespace {
            levels: levels.into_iter().map(Into::into).collect(),
        }
    }

    /// Reads the dotted form [`Namespace`]'s `Display` writes: levels separated by `.`, a level
    /// holding a dot or a quote in double quotes (`"v3.x".sub`; `""` for a quote inside).
    /// The empty text is the root namespace.
    pub fn parse(text: &str) -> crate::Result<Namespace> {
        let bad =
            |reason: &str| crate::Error::InvalidArgument(format!("namespace {text:?} {reason}"));
        if text.is_empty() {
            return Ok(Namespace::root());
        }
        let mut levels = Vec::new();
        let mut chars = text.chars().peekable();
        loop {
            let mut level = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            level.push('"');
                        }
                        Some('"') => break,
                        Some(c) => level.push(c),
                        None => return Err(bad("has an unterminated quoted level")),
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == '.' {
                        break;
                    }
                    if c == '"' {
                        return Err(bad("has a quote inside an unquoted level"));
                    }
                    level.push(c);
                    chars.next();
                }
            }
            if level.is_empty() {
                return Err(bad("has an empty level"));
            }
            levels.push(level);
            match chars.next() {
                None => return Ok(Namespace { levels }),
                Some('.') => continue,
                Some(_) => return Err(bad("has text after a quoted level")),
            }
        }
    }

    /// The levels, outermost first.
    pub fn levels(&self) -> &[String] {
        &self.levels
    }

    /// Whether this is the root namespace.
    pub fn is_root(&self) -> bool {
        self.levels.is_empty()
    }

    /// The namespace one level below this one.
    pub fn child(&self, level: impl Into<String>) -> Namespace {
        let mut levels = self.levels.clone();
        levels.push(level.into());
        Namespace { levels }
    }

    /// The namespace this one is directly inside (`None` for the root).
    pub fn parent(&self) -> Option<Namespace> {
        let (_, rest) = self.levels.split_last()?;
        Some(Namespace {
            levels: rest.to_vec(),
        })
    }
}

/// Writes a level, quoted when it holds a dot or a quote (so [`Namespace::parse`] reads it
/// back).
fn write_level(f: &mut fmt::Formatter<'_>, level: &str) -> fmt::Result {
    if level.contains('.') || level.contains('"') {
        write!(f, "\"{}\"", level.replace('"', "\"\""))
    } else {
        f.write_str(level)
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, l) in self.levels.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write_level(f, l)?;
        }
        Ok(())
    }
}

/// A table of a catalog: its namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableIdent {
    /// The namespace holding the table.
    pub namespace: Namespace,
    /// The table's name inside it.
    pub name: String,
}

impl TableIdent {
    /// The table `name` of `namespace`.
    pub fn new(namespace: Namespace, name: impl Into<String>) -> TableIdent {
        TableIdent {
            namespace,
            name: name.into(),
        }
    }

    /// Reads `namespace.table` (the last level is the table's name; quoting as in
    /// [`Namespace::parse`]). A name without a namespace is an error, so a typo is not read
    /// as a table of the root namespace.
    pub fn parse(text: &str) -> crate::Result<TableIdent> {
        let all = Namespace::parse(text)?;
        match all.levels.split_last() {
            Some((name, ns)) if !ns.is_empty() => {
                Ok(TableIdent::new(Namespace::new(ns.to_vec()), name.clone()))
            }
            _ => Err(crate::Error::InvalidArgument(format!(
                "table {text:?} is not of the form namespace.table"
            ))),
        }
    }

    /// The namespace levels and then the name: the table's path in a tree of namespaces.
    pub fn path(&self) -> Vec<String> {
        let mut p = self.namespace.levels.clone();
        p.push(self.name.clone());
        p
    }
}

impl fmt::Display for TableIdent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.namespace.is_root() {
            write!(f, "{}.", self.namespace)?;
        }
        write_level(f, &self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_forms_round_trip() {
        for (text, levels) in [
            ("db", vec!["db"]),
            ("a.b", vec!["a", "b"]),
            ("\"v3.x\".sub", vec!["v3.x", "sub"]),
            ("\"say \"\"hi\"\"\"", vec!["say \"hi\""]),
        ] {
            let ns = Namespace::parse(text).unwrap();
            assert_eq!(ns.levels(), levels.as_slice(), "{text}");
            assert_eq!(ns.to_string(), text);
        }
        assert!(Namespace::parse("").unwrap().is_root());
        for bad in ["a..b", "a.", "\"open", "a\"b", "\"x\"y"] {
            assert!(Namespace::parse(bad).is_err(), "{bad}");
        }
        let t = TableIdent::parse("a.b.t").unwrap();
        assert_eq!(t.namespace.levels(), ["a", "b"]);
        assert_eq!(t.name, "t");
        assert_eq!(t.to_string(), "a.b.t");
        assert!(TableIdent::parse("t").is_err());
        let dotted = TableIdent::new(Namespace::new(["v3.x"]), "t.1");
        assert_eq!(TableIdent::parse(&dotted.to_string()).unwrap(), dotted);
        assert_eq!(
            Namespace::new(["a", "b"]).parent(),
            Some(Namespace::new(["a"]))
        );
    }
}
