//! `icefloe completions` and `icefloe man`: generated from the command definitions, so they
//! never drift from `--help`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap::{CommandFactory, ValueEnum};

/// Shells `icefloe completions` writes scripts for.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Prints the completion script for `shell`.
pub fn completions(shell: Shell) -> Result<()> {
    let mut cmd = crate::Cli::command();
    let mut out = std::io::stdout().lock();
    let gen = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(gen, &mut cmd, "icefloe", &mut out);
    out.flush()?;
    Ok(())
}

/// Prints the manual page `icefloe(1)` (roff), or with `dir` writes it and one page per
/// subcommand (`icefloe-cat(1)`…) into `dir`.
pub fn man(dir: Option<&Path>) -> Result<()> {
    let cmd = crate::Cli::command();
    match dir {
        Some(dir) => {
            clap_mangen::generate_to(cmd, dir)
                .with_context(|| format!("cannot write manual pages into {}", dir.display()))?;
        }
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            out.flush()?;
        }
    }
    Ok(())
}
