//! What the two command lines (`p4rcp-host`, `p4rcp-linkem`) share: every
//! refusal is one line, `NAME: MESSAGE`, on stderr with exit status 2.

use clap::error::ErrorKind;
use clap::Parser;

/// Parse the command line. A bad argument prints the parser's message as
/// one line, `NAME: MESSAGE`, and exits with status 2; `--help` and
/// `--version` print as usual.
pub fn parse_or_exit<P: Parser>(name: &str) -> P {
    match P::try_parse() {
        Ok(p) => p,
        Err(e) if !e.use_stderr() || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        Err(e) => {
            eprintln!("{name}: {}", one_line(&e));
            std::process::exit(2)
        }
    }
}

/// The parser's message without its `error: ` prefix, usage and tips: the
/// first paragraph, its lines joined.
pub fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first: Vec<&str> = text.lines().map(str::trim).take_while(|l| !l.is_empty()).collect();
    let line = first.join(" ");
    line.strip_prefix("error: ").unwrap_or(&line).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Parser, Debug)]
    struct Args {
        #[arg(long, value_parser = crate::units::parse_rate_kbps)]
        rate: f64,
        #[arg(long)]
        name: String,
    }

    #[test]
    fn parser_errors_become_one_line() {
        let e = Args::try_parse_from(["x", "--rate", "15", "--name", "a"])
            .map(|_| ())
            .unwrap_err();
        let l = one_line(&e);
        assert!(!l.contains('\n') && !l.starts_with("error"), "{l}");
        assert!(l.contains("--rate") && l.contains("needs a unit"), "{l}");
        let e = Args::try_parse_from(["x", "--rate", "15mbit"]).map(|_| ()).unwrap_err();
        let l = one_line(&e);
        assert!(l.contains("required") && l.contains("--name <NAME>"), "{l}");
        assert!(!l.contains("Usage"), "{l}");
    }
}
