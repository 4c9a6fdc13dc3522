//! Every `coopcache` command the documentation shows parses as this binary
//! parses its arguments (an inline mention, such as `coopcache mount` or
//! `coopcache sim --algorithms`, only has to name subcommands and flags
//! that exist). The README's tour and the guides run as written
//! (`crates/cli/tests/readme_tour.rs`, `guides.rs`); the rest of `docs/`
//! records measurements whose commands take minutes to hours (benchmarks,
//! reproductions, soaks), so what CI can check of them is that each still
//! names subcommands and flags that exist, with values they accept. A flag
//! renamed or removed fails here, naming the file and the command.

use super::Cli;
use clap::Parser;
use clap::error::ErrorKind;
use std::path::{Path, PathBuf};

/// Placeholders the docs write for a value, and a value of that kind.
const PLACEHOLDERS: &[(&str, &str)] = &[
    ("F", "csv"),
    ("N", "1"),
    ("S", "1"),
    ("M", "safety"),
    ("P", "lru"),
];

/// Inline code that names the binary but is not a command: a key
/// derivation's context string (docs/PROTOCOL.md).
const NOT_COMMANDS: &[&str] = &["coopcache file v1"];

/// Synopses, not commands: optional parts, alternatives, repetition or a
/// subcommand's placeholder.
fn is_synopsis(cmd: &str) -> bool {
    cmd.contains('[')
        || cmd.contains("...")
        || cmd.contains('<')
        || cmd.split_whitespace().any(|w| w.contains('|') && w != "|")
        || cmd.ends_with("bench NAME")
}

/// The documentation files: the README, `docs/` (and its folders) and
/// `deploy/`.
fn doc_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs"), root.join("deploy")];
    while let Some(dir) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files
}

/// Whether `line` starts a `coopcache` command (after any `VAR=value`
/// assignments, and with a path to the binary allowed).
fn command_start(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        let word = rest.split_whitespace().next()?;
        if word.contains('=') && !word.starts_with('-') {
            rest = rest[word.len()..].trim_start();
            continue;
        }
        let binary =
            word == "coopcache" || word.ends_with("/coopcache") && word.contains("target/");
        return binary.then_some(rest);
    }
}

/// The commands of one file: inline code spans that start with
/// `coopcache ` (`true`: a mention), and lines of fenced blocks that do
/// (continuation lines joined).
fn commands(text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut joined: Option<String> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            joined = None;
            continue;
        }
        if in_block {
            let line = match joined.take() {
                Some(head) => head + line.trim_start(),
                None => match command_start(line) {
                    Some(cmd) => cmd.to_string(),
                    None => continue,
                },
            };
            match line.strip_suffix('\\') {
                Some(head) => joined = Some(head.to_string()),
                None => out.push((line, false)),
            }
            continue;
        }
        for span in line.split('`').skip(1).step_by(2) {
            if let Some(cmd) = command_start(span).filter(|c| !NOT_COMMANDS.contains(c)) {
                out.push((cmd.to_string(), true));
            }
        }
    }
    out
}

/// The first simple command of `cmd`: no comment, pipe, redirection or
/// list after it.
fn first_simple(cmd: &str) -> &str {
    let mut end = cmd.len();
    for sep in [" #", " | ", " > ", " < ", " && ", " || ", "; ", " 2>", " &"] {
        if let Some(i) = cmd.find(sep) {
            end = end.min(i);
        }
    }
    cmd[..end].trim()
}

/// `cmd` as the binary's arguments, placeholders (and shell variables)
/// given values.
fn args(cmd: &str) -> Option<Vec<String>> {
    let words = shlex::split(first_simple(cmd))?;
    let words = words
        .into_iter()
        .map(|w| match PLACEHOLDERS.iter().find(|(p, _)| *p == w) {
            Some((_, v)) => v.to_string(),
            None => without_variables(&w),
        });
    let mut out: Vec<String> = words.collect();
    out[0] = "coopcache".into();
    Some(out)
}

/// `word` with each `$NAME` a number (`seek_us=$SEEK`, `$T/file`).
fn without_variables(word: &str) -> String {
    let mut out = String::new();
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        while chars
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            chars.next();
        }
        out.push('1');
    }
    out
}

/// Errors a mention may give: it names a command without all it needs.
fn is_incomplete(kind: ErrorKind, argv: &[String]) -> bool {
    let dangling = argv.last().is_some_and(|a| a.starts_with("--"));
    matches!(
        kind,
        ErrorKind::MissingRequiredArgument
            | ErrorKind::MissingSubcommand
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) || dangling && matches!(kind, ErrorKind::InvalidValue)
}

#[test]
fn every_command_in_the_docs_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (mut parsed, mut synopses) = (0, 0);
    let mut failures = Vec::new();
    for file in doc_files(&root) {
        let text = std::fs::read_to_string(&file).expect("a doc file");
        let name = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (cmd, mention) in commands(&text) {
            if is_synopsis(&cmd) {
                synopses += 1;
                continue;
            }
            let Some(argv) = args(&cmd) else {
                failures.push(format!("{name}: unbalanced quotes in `{cmd}`"));
                continue;
            };
            match Cli::try_parse_from(&argv) {
                Ok(_) => parsed += 1,
                Err(e)
                    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) =>
                {
                    parsed += 1
                }
                Err(e) if mention && is_incomplete(e.kind(), &argv) => parsed += 1,
                Err(e) => failures.push(format!("{name}: `{cmd}`: {}", e.kind())),
            }
        }
    }
    eprintln!("{parsed} commands in the docs parse; {synopses} synopses skipped");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The docs have hundreds; a broken extraction finds few.
    assert!(parsed > 200, "only {parsed} commands found");
}

#[test]
fn a_renamed_flag_in_a_doc_command_is_caught() {
    let doc = "Run `coopcache sim faults --seeds 10 --mode liveness` or\n\
               ```sh\nRUST_LOG=info target/release/coopcache bench stream \\\n    --size 1GiB | tail -1\n```\n";
    let cmds = commands(doc);
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    for (cmd, _) in &cmds {
        let argv = args(cmd).expect("quotes balance");
        assert!(Cli::try_parse_from(&argv).is_ok(), "{cmd}");
        let broken: Vec<String> = argv.iter().map(|a| a.replace("--s", "--zz")).collect();
        assert!(Cli::try_parse_from(&broken).is_err(), "{cmd}");
    }
}
