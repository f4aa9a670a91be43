//! Parsing a row filter (`--where`) into an [`Expr`] tree, with the position of every column
//! and value so that errors can point at them.
//!
//! Grammar (keywords in any case; a column named like a keyword is written `"quoted"`):
//! ```text
//! expr      := and (OR and)*
//! and       := not (AND not)*
//! not       := NOT not | '(' expr ')' | condition
//! condition := operand cmp operand             cmp: = == != <> < <= > >=
//!            | column [NOT] IN '(' value (',' value)* ')'
//!            | column IS [NOT] NULL
//!            | column [NOT] BETWEEN value AND value
//! operand   := column | value                  (exactly one column and one value)
//! value     := ['-'] number | NaN | ['-'] Infinity | 'string' | TRUE | FALSE
//!            | DATE 'text' | TIME 'text' | TIMESTAMP 'text' | X'hex'
//! ```

use std::fmt;

use super::predicate::CmpOp;

/// A parse or binding error: what went wrong and where (a 0-based character offset into the
/// expression text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ExprError {
    /// The expression text.
    pub text: String,
    /// Character offset of the offending token.
    pub pos: usize,
    /// What is wrong there.
    pub message: String,
}

impl ExprError {
    pub(crate) fn new(text: &str, pos: usize, message: impl Into<String>) -> ExprError {
        ExprError {
            text: text.to_string(),
            pos,
            message: message.into(),
        }
    }

    /// `at column N: message (in: text with » before the position)`, on one line.
    fn render(&self) -> String {
        let line: String = self.text.replace(['\n', '\r', '\t'], " ");
        let cut = line
            .char_indices()
            .nth(self.pos)
            .map_or(line.len(), |(i, _)| i);
        format!(
            "at column {}: {} (in: {}»{})",
            self.pos + 1,
            self.message,
            &line[..cut],
            &line[cut..]
        )
    }
}

/// A column name as written, with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRef {
    pub name: String,
    pub pos: usize,
}

/// How a value was written (its type comes from the column it is compared with).
#[derive(Debug, Clone, PartialEq)]
pub enum ValueKind {
    /// A number as written (`-1.5e3`), or `NaN` / `Infinity` / `-Infinity`.
    Number(String),
    /// A quoted string (quotes removed, `''` unescaped).
    String(String),
    Boolean(bool),
    /// `DATE '…'`, `TIME '…'`, `TIMESTAMP '…'`: the text, checked against the column type.
    Typed(TypedKeyword, String),
    /// `X'…'`.
    Bytes(Vec<u8>),
}

/// The keyword of a typed literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypedKeyword {
    Date,
    Time,
    Timestamp,
}

/// A value with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueRef {
    pub kind: ValueKind,
    pub pos: usize,
}

/// A parsed filter, not yet bound to a schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Cmp {
        column: ColumnRef,
        op: CmpOp,
        value: ValueRef,
    },
    In {
        column: ColumnRef,
        values: Vec<ValueRef>,
        negated: bool,
    },
    IsNull {
        column: ColumnRef,
        negated: bool,
    },
    Between {
        column: ColumnRef,
        low: ValueRef,
        high: ValueRef,
        negated: bool,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
}

/// A parsed filter with its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub text: String,
    pub expr: Expr,
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Filter {
    type Err = ExprError;

    fn from_str(s: &str) -> Result<Filter, ExprError> {
        parse(s)
    }
}

/// Parses a filter expression.
pub fn parse(text: &str) -> Result<Filter, ExprError> {
    let tokens = lex(text)?;
    let mut p = Parser {
        text,
        tokens,
        at: 0,
    };
    let expr = p.or()?;
    match p.peek() {
        Tok::End => Ok(Filter {
            text: text.to_string(),
            expr,
        }),
        t => Err(p.error(format!(
            "expected AND, OR or the end, found {}",
            t.describe()
        ))),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A bare word (keyword or column name); the flag says it was "quoted" (never a keyword).
    Word(String, bool),
    Number(String),
    Str(String),
    Bytes(Vec<u8>),
    Op(CmpOp),
    LParen,
    RParen,
    Comma,
    Minus,
    End,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Word(w, true) => format!("\"{w}\""),
            Tok::Word(w, false) => w.clone(),
            Tok::Number(n) => n.clone(),
            Tok::Str(s) => format!("'{s}'"),
            Tok::Bytes(_) => "a byte string".into(),
            Tok::Op(op) => op.symbol().into(),
            Tok::LParen => "(".into(),
            Tok::RParen => ")".into(),
            Tok::Comma => ",".into(),
            Tok::Minus => "-".into(),
            Tok::End => "the end of the expression".into(),
        }
    }

    fn is_keyword(&self, k: &str) -> bool {
        matches!(self, Tok::Word(w, false) if w.eq_ignore_ascii_case(k))
    }
}

/// Words that cannot be bare column names.
const KEYWORDS: &[&str] = &[
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "BETWEEN",
    "TRUE",
    "FALSE",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "NAN",
    "INFINITY",
];

fn lex(text: &str) -> Result<Vec<(Tok, usize)>, ExprError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |pos: usize, m: &str| ExprError::new(text, pos, m);
    // The text of a quoted run starting at `i` (the quote), `''` or `""` standing for one quote.
    let quoted = |start: usize, q: char| -> Result<(String, usize), ExprError> {
        let mut s = String::new();
        let mut j = start + 1;
        loop {
            match chars.get(j) {
                None => {
                    return Err(err(
                        start,
                        &format!("unterminated {}", if q == '\'' { "string" } else { "name" }),
                    ))
                }
                Some(&c) if c == q => {
                    if chars.get(j + 1) == Some(&q) {
                        s.push(q);
                        j += 2;
                    } else {
                        return Ok((s, j + 1));
                    }
                }
                Some(&c) => {
                    s.push(c);
                    j += 1;
                }
            }
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let tok = match c {
            '(' => {
                i += 1;
                Tok::LParen
            }
            ')' => {
                i += 1;
                Tok::RParen
            }
            ',' => {
                i += 1;
                Tok::Comma
            }
            '-' => {
                i += 1;
                Tok::Minus
            }
            '=' => {
                i += if chars.get(i + 1) == Some(&'=') { 2 } else { 1 };
                Tok::Op(CmpOp::Eq)
            }
            '!' if chars.get(i + 1) == Some(&'=') => {
                i += 2;
                Tok::Op(CmpOp::NotEq)
            }
            '<' => match chars.get(i + 1) {
                Some('=') => {
                    i += 2;
                    Tok::Op(CmpOp::LtEq)
                }
                Some('>') => {
                    i += 2;
                    Tok::Op(CmpOp::NotEq)
                }
                _ => {
                    i += 1;
                    Tok::Op(CmpOp::Lt)
                }
            },
            '>' => {
                if chars.get(i + 1) == Some(&'=') {
                    i += 2;
                    Tok::Op(CmpOp::GtEq)
                } else {
                    i += 1;
                    Tok::Op(CmpOp::Gt)
                }
            }
            '\'' => {
                let (s, end) = quoted(i, '\'')?;
                i = end;
                Tok::Str(s)
            }
            '"' => {
                let (s, end) = quoted(i, '"')?;
                if s.is_empty() {
                    return Err(err(start, "empty column name"));
                }
                i = end;
                Tok::Word(s, true)
            }
            'x' | 'X' if chars.get(i + 1) == Some(&'\'') => {
                let (s, end) = quoted(i + 1, '\'')?;
                let bytes = crate::spec::literal::decode_hex(&s)
                    .ok_or_else(|| err(start, "X'…' holds an even number of hex digits"))?;
                i = end;
                Tok::Bytes(bytes)
            }
            c if c.is_ascii_digit()
                || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                let mut j = i;
                while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                    j += 1;
                }
                if j < chars.len() && matches!(chars[j], 'e' | 'E') {
                    let mut k = j + 1;
                    if k < chars.len() && matches!(chars[k], '+' | '-') {
                        k += 1;
                    }
                    if k < chars.len() && chars[k].is_ascii_digit() {
                        while k < chars.len() && chars[k].is_ascii_digit() {
                            k += 1;
                        }
                        j = k;
                    }
                }
                let n: String = chars[i..j].iter().collect();
                if n.matches('.').count() > 1 {
                    return Err(err(start, &format!("{n} is not a number")));
                }
                if chars
                    .get(j)
                    .is_some_and(|c| c.is_alphanumeric() || *c == '_')
                {
                    return Err(err(
                        j,
                        "a number must be followed by a space or an operator",
                    ));
                }
                i = j;
                Tok::Number(n)
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut j = i;
                while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                let w: String = chars[i..j].iter().collect();
                i = j;
                Tok::Word(w, false)
            }
            c => return Err(err(start, &format!("unexpected character {c:?}"))),
        };
        out.push((tok, start));
    }
    out.push((Tok::End, chars.len()));
    Ok(out)
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(Tok, usize)>,
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.at].0
    }

    fn pos(&self) -> usize {
        self.tokens[self.at].1
    }

    fn bump(&mut self) -> (Tok, usize) {
        let t = self.tokens[self.at].clone();
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
        t
    }

    fn error(&self, m: String) -> ExprError {
        ExprError::new(self.text, self.pos(), m)
    }

    fn eat_keyword(&mut self, k: &str) -> bool {
        if self.peek().is_keyword(k) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_keyword(&mut self, k: &str, after: &str) -> Result<(), ExprError> {
        if self.eat_keyword(k) {
            Ok(())
        } else {
            Err(self.error(format!(
                "expected {k} {after}, found {}",
                self.peek().describe()
            )))
        }
    }

    fn or(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.and()?;
        while self.eat_keyword("OR") {
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.not()?;
        while self.eat_keyword("AND") {
            let right = self.not()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Expr, ExprError> {
        if self.eat_keyword("NOT") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        if *self.peek() == Tok::LParen {
            self.bump();
            let e = self.or()?;
            if *self.peek() != Tok::RParen {
                return Err(self.error(format!(
                    "expected ) to close the parenthesis, found {}",
                    self.peek().describe()
                )));
            }
            self.bump();
            return Ok(e);
        }
        self.condition()
    }

    /// A column or a value.
    fn operand(&mut self) -> Result<Result<ColumnRef, ValueRef>, ExprError> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Word(w, quoted) => {
                let upper = w.to_ascii_uppercase();
                if !quoted && KEYWORDS.contains(&upper.as_str()) {
                    self.value().map(Err)
                } else {
                    self.bump();
                    Ok(Ok(ColumnRef { name: w, pos }))
                }
            }
            _ => self.value().map(Err),
        }
    }

    fn value(&mut self) -> Result<ValueRef, ExprError> {
        let pos = self.pos();
        let kind = match self.bump().0 {
            Tok::Number(n) => ValueKind::Number(n),
            Tok::Minus => match self.bump().0 {
                Tok::Number(n) => ValueKind::Number(format!("-{n}")),
                t if t.is_keyword("INFINITY") => ValueKind::Number("-Infinity".into()),
                t => {
                    self.at -= 1;
                    return Err(
                        self.error(format!("expected a number after -, found {}", t.describe()))
                    );
                }
            },
            Tok::Str(s) => ValueKind::String(s),
            Tok::Bytes(b) => ValueKind::Bytes(b),
            t if t.is_keyword("TRUE") => ValueKind::Boolean(true),
            t if t.is_keyword("FALSE") => ValueKind::Boolean(false),
            t if t.is_keyword("NAN") => ValueKind::Number("NaN".into()),
            t if t.is_keyword("INFINITY") => ValueKind::Number("Infinity".into()),
            t if t.is_keyword("NULL") => {
                self.at -= 1;
                return Err(self.error(
                    "NULL is not a value: comparisons with NULL are never true; write IS NULL or IS NOT NULL".into(),
                ));
            }
            t @ Tok::Word(_, false)
                if t.is_keyword("DATE") || t.is_keyword("TIME") || t.is_keyword("TIMESTAMP") =>
            {
                let k = if t.is_keyword("DATE") {
                    TypedKeyword::Date
                } else if t.is_keyword("TIME") {
                    TypedKeyword::Time
                } else {
                    TypedKeyword::Timestamp
                };
                match self.bump().0 {
                    Tok::Str(s) => ValueKind::Typed(k, s),
                    other => {
                        self.at -= 1;
                        return Err(self.error(format!(
                            "expected a quoted string after {}, found {}",
                            t.describe(),
                            other.describe()
                        )));
                    }
                }
            }
            t => {
                if t != Tok::End {
                    self.at -= 1;
                }
                let found = match &t {
                    Tok::Word(w, false) if KEYWORDS.contains(&w.to_ascii_uppercase().as_str()) => {
                        format!("the keyword {w} (write \"{w}\" for a column of that name)")
                    }
                    t => t.describe(),
                };
                return Err(self.error(format!("expected a value, found {found}")));
            }
        };
        Ok(ValueRef { kind, pos })
    }

    fn condition(&mut self) -> Result<Expr, ExprError> {
        let start = self.pos();
        let left = self.operand()?;
        let column = match &left {
            Ok(c) => c.clone(),
            Err(v) => {
                // `value op column`.
                let Tok::Op(op) = *self.peek() else {
                    return Err(self.error(format!(
                        "expected a comparison operator after the value, found {}",
                        self.peek().describe()
                    )));
                };
                self.bump();
                return match self.operand()? {
                    Ok(column) => Ok(Expr::Cmp {
                        column,
                        op: op.commute(),
                        value: v.clone(),
                    }),
                    Err(_) => Err(ExprError::new(
                        self.text,
                        start,
                        "a comparison needs a column on one side",
                    )),
                };
            }
        };
        if let Tok::Op(op) = *self.peek() {
            self.bump();
            let at = self.pos();
            return match self.operand()? {
                Err(value) => Ok(Expr::Cmp { column, op, value }),
                Ok(_) => Err(ExprError::new(
                    self.text,
                    at,
                    "columns compare with values, not with other columns",
                )),
            };
        }
        if self.eat_keyword("IS") {
            let negated = self.eat_keyword("NOT");
            self.expect_keyword("NULL", if negated { "after IS NOT" } else { "after IS" })?;
            return Ok(Expr::IsNull { column, negated });
        }
        let negated = self.eat_keyword("NOT");
        if self.eat_keyword("IN") {
            if *self.peek() != Tok::LParen {
                return Err(self.error(format!(
                    "expected ( after IN, found {}",
                    self.peek().describe()
                )));
            }
            self.bump();
            let mut values = vec![self.value()?];
            loop {
                match self.peek() {
                    Tok::Comma => {
                        self.bump();
                        values.push(self.value()?);
                    }
                    Tok::RParen => {
                        self.bump();
                        break;
                    }
                    t => {
                        return Err(self.error(format!(
                            "expected , or ) in the IN list, found {}",
                            t.describe()
                        )))
                    }
                }
            }
            return Ok(Expr::In {
                column,
                values,
                negated,
            });
        }
        if self.eat_keyword("BETWEEN") {
            let low = self.value()?;
            self.expect_keyword("AND", "between the bounds of BETWEEN")?;
            let high = self.value()?;
            return Ok(Expr::Between {
                column,
                low,
                high,
                negated,
            });
        }
        Err(self.error(format!(
            "expected a comparison, IN, BETWEEN or IS [NOT] NULL after column {}, found {}",
            column.name,
            self.peek().describe()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, pos: usize) -> ColumnRef {
        ColumnRef {
            name: name.into(),
            pos,
        }
    }

    fn num(n: &str, pos: usize) -> ValueRef {
        ValueRef {
            kind: ValueKind::Number(n.into()),
            pos,
        }
    }

    #[test]
    fn precedence_and_positions() {
        let f = parse("a = 1 OR NOT b < -2 AND c IS NOT NULL").unwrap();
        let want = Expr::Or(
            Box::new(Expr::Cmp {
                column: col("a", 0),
                op: CmpOp::Eq,
                value: num("1", 4),
            }),
            Box::new(Expr::And(
                Box::new(Expr::Not(Box::new(Expr::Cmp {
                    column: col("b", 13),
                    op: CmpOp::Lt,
                    value: num("-2", 17),
                }))),
                Box::new(Expr::IsNull {
                    column: col("c", 24),
                    negated: true,
                }),
            )),
        );
        assert_eq!(f.expr, want);
    }

    #[test]
    fn literals_and_forms() {
        let f = parse("5 <= \"and\" AND s NOT IN ('it''s', 'x') AND t NOT BETWEEN TIMESTAMP '2024-01-01' AND 'b' AND z = X'0aFF' AND n <> NaN AND m = -Infinity AND ok == true").unwrap();
        let s = format!("{:?}", f.expr);
        assert!(s.contains("op: GtEq"), "{s}");
        assert!(s.contains("\"it's\""), "{s}");
        assert!(s.contains("Typed(Timestamp, \"2024-01-01\")"), "{s}");
        assert!(s.contains("Bytes([10, 255])"), "{s}");
        assert!(
            s.contains("Number(\"NaN\")") && s.contains("Number(\"-Infinity\")"),
            "{s}"
        );
        assert!(s.contains("Boolean(true)"), "{s}");
        assert!(parse("((a = 1))").is_ok());
    }

    #[test]
    fn errors_point_at_the_token() {
        let e = parse("id = AND").unwrap_err();
        assert_eq!(e.pos, 5);
        assert!(e.message.contains("found the keyword AND"), "{}", e.message);
        assert!(e.to_string().starts_with("at column 6:"), "{e}");
        assert!(e.to_string().ends_with("(in: id = »AND)"), "{e}");
        let pos = |t: &str| parse(t).unwrap_err().pos;
        assert_eq!(pos("a = 'x"), 4);
        assert_eq!(pos("a = 1 b"), 6);
        assert_eq!(pos("(a = 1"), 6);
        assert_eq!(pos("a IN (1, )"), 9);
        assert_eq!(pos("a = b"), 4);
        assert_eq!(pos("1 = 2"), 0);
        assert_eq!(pos("a IS 3"), 5);
        assert_eq!(pos("a BETWEEN 1 OR 2"), 12);
        assert_eq!(pos("a = NULL"), 4);
        assert_eq!(pos("a # 1"), 2);
        assert_eq!(pos(""), 0);
        assert_eq!(pos("a = 1.2.3"), 4);
        assert_eq!(pos("a = X'abc'"), 4);
    }
}
