//! `--where EXPR` of `cat` and `files`: the core's row filter, parsed here so that a typo is
//! reported before the table is opened.

use clap::Args;
use icefloe_core::ScanBuilder;

/// The row filter of a command.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Filter")]
pub struct FilterArgs {
    /// Only rows where EXPR is true (SQL-like: = != < <= > >=, IN (…), BETWEEN … AND …,
    /// IS [NOT] NULL, AND, OR, NOT, parentheses; 'strings', numbers, TRUE/FALSE,
    /// '2024-01-31T12:00:00+02:00' timestamps; see the README)
    #[arg(long = "where", value_name = "EXPR")]
    pub filter: Option<String>,
}

impl FilterArgs {
    /// Adds the filter, if any, to a scan. Errors: the expression does not parse.
    pub fn apply(&self, builder: ScanBuilder) -> anyhow::Result<ScanBuilder> {
        match &self.filter {
            None => Ok(builder),
            Some(text) => {
                let f = icefloe_core::expr::parse(text)
                    .map_err(|e| anyhow::anyhow!("invalid --where expression {e}"))?;
                Ok(builder.filter(f))
            }
        }
    }
}
