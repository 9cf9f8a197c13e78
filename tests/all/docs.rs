//! The tables in `docs/` that are written by hand but describe the code:
//! the CLI table against the binary's subcommands, and the Layout against
//! the workspace and the bench targets. Without this they drift the moment
//! someone adds a verb, a crate or a bench.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The text under the heading `heading` (a whole line, `## Layout`), up to
/// the next heading of the same level or above.
fn section(doc: &str, path: &str, heading: &str) -> String {
    let level = heading.chars().take_while(|&c| c == '#').count();
    let mut lines = doc.lines().skip_while(|line| line.trim_end() != heading);
    assert!(lines.next().is_some(), "{path} has no `{heading}` section");
    let mut fenced = false;
    let mut text = String::new();
    for line in lines {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        // A `#` line inside a code block is a shell comment, not a heading.
        if !fenced && hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
            break;
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// A table row's cells, with Markdown's `\|` (a `|` inside a cell) read as `|`.
fn cells(row: &str) -> Vec<String> {
    let row = row.trim().trim_start_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                cells.last_mut().expect("one cell").push('|');
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().expect("one cell").push(c),
        }
    }
    if cells.last().is_some_and(|cell| cell.trim().is_empty()) {
        cells.pop();
    }
    cells.iter().map(|cell| cell.trim().to_owned()).collect()
}

/// The body rows of the first table in `text` whose header's first cell is
/// `first_header`.
fn table(text: &str, what: &str, first_header: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|line| {
            line.starts_with('|') && cells(line).first().map(String::as_str) == Some(first_header)
        })
        .unwrap_or_else(|| panic!("{what} has no table whose first column is `{first_header}`"));
    lines[start + 2..]
        .iter()
        .take_while(|line| line.starts_with('|'))
        .map(|line| cells(line))
        .collect()
}

/// The contents of every `code span` in `text`.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The subcommands `wasmco --help` lists (hidden ones and clap's own `help`
/// are not there for a user, so not for the table either).
fn binary_subcommands() -> BTreeSet<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .arg("--help")
        .output()
        .expect("wasmco --help runs");
    assert!(output.status.success(), "wasmco --help: {output:?}");
    let help = String::from_utf8(output.stdout).expect("UTF-8");
    let names: BTreeSet<String> = help
        .lines()
        .skip_while(|line| line.trim_end() != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        // A description that wraps goes on deeper than a name's two spaces.
        .filter(|line| line.starts_with("  ") && !line[2..].starts_with(' '))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|&name| name != "help")
        .map(str::to_owned)
        .collect();
    assert!(
        !names.is_empty(),
        "found no subcommands in wasmco --help:\n{help}"
    );
    names
}

#[test]
fn cli_table_lists_exactly_the_binarys_subcommands() {
    let path = "docs/cli.md";
    let rows = table(&read(path), path, "command");
    // A first cell names its verbs as `wasmco VERB …` spans, several verbs
    // of one row as `wasmco approve|instantiate …`.
    let documented: BTreeSet<String> = rows
        .iter()
        .flat_map(|row| code_spans(&row[0]).into_iter())
        .filter_map(|span| span.strip_prefix("wasmco "))
        .filter_map(|rest| rest.split_whitespace().next())
        .flat_map(|verbs| verbs.split('|'))
        .map(str::to_owned)
        .collect();
    let actual = binary_subcommands();
    let missing: Vec<_> = actual.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&actual).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "{path}'s command table is out of date: subcommands of the binary it lacks: {missing:?}; \
         subcommands it names that the binary does not have: {unknown:?}"
    );
}

/// The `members` of the root Cargo.toml's `[workspace]`.
fn workspace_members() -> Vec<String> {
    let manifest = read("Cargo.toml");
    let list = manifest
        .split_once("\nmembers = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .expect("Cargo.toml's [workspace] has members = [...]");
    let members: Vec<String> = list
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .flat_map(|line| line.split('"').skip(1).step_by(2))
        .map(str::to_owned)
        .collect();
    assert!(!members.is_empty(), "no members read from Cargo.toml");
    members
}

#[test]
fn layout_names_every_member_and_bench_and_only_paths_that_exist() {
    let path = "docs/architecture.md";
    let layout = section(&read(path), path, "## Layout");
    let root = repo();
    let top_level: BTreeSet<String> = std::fs::read_dir(&root)
        .expect("the repository's root")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    // A path is a span that starts at one of the repository's top-level
    // entries; `commands/`, `…/clusters/{c}` and the like are not.
    let named: BTreeSet<String> = code_spans(&layout)
        .into_iter()
        .map(|span| span.trim().trim_end_matches('/'))
        .filter(|span| top_level.contains(span.split('/').next().unwrap_or_default()))
        .map(str::to_owned)
        .collect();

    let absent: Vec<&String> = named.iter().filter(|p| !root.join(p).exists()).collect();

    let unnamed_members: Vec<String> = workspace_members()
        .into_iter()
        .filter(|member| !named.contains(member))
        .collect();

    let benches = root.join("host/wasmco/benches");
    let mut unnamed_benches: Vec<String> = std::fs::read_dir(&benches)
        .expect("host/wasmco/benches")
        .map(|entry| entry.expect("an entry").path())
        .filter(|file| file.extension().is_some_and(|ext| ext == "rs"))
        .map(|file| {
            format!(
                "host/wasmco/benches/{}",
                file.file_name().expect("a name").to_string_lossy()
            )
        })
        .filter(|bench| !named.contains(bench))
        .collect();
    unnamed_benches.sort();

    // Every problem at once, so one run says all a stale table needs.
    let mut problems = Vec::new();
    if !absent.is_empty() {
        problems.push(format!("names paths that do not exist: {absent:?}"));
    }
    if !unnamed_members.is_empty() {
        problems.push(format!(
            "does not name these workspace members of Cargo.toml: {unnamed_members:?}"
        ));
    }
    if !unnamed_benches.is_empty() {
        problems.push(format!(
            "does not name these bench targets: {unnamed_benches:?}"
        ));
    }
    assert!(
        problems.is_empty(),
        "{path}'s Layout {}",
        problems.join("; it ")
    );
}
