//! The shape docs/architecture.md promises inside each crate, held by a
//! test so that it is measured rather than hoped for: no production file
//! over 500 lines, no function over 80, no module importing its parent's
//! items, and no import cycle between modules. `layers.rs` holds the shape
//! between crates.
//!
//! The crates are read with `syn` from their roots, following `mod`
//! declarations, so test modules (`#[cfg(test)]`) are left out the way the
//! compiler leaves them out of a release build.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use syn::visit::Visit;
use syn::{Attribute, Item, UseTree};

const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 80;

/// The workspace's production crates: the host's layers, the SDK and the
/// controllers built from `plugins/`.
fn crate_dirs() -> Vec<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs = vec![workspace.join("sdk")];
    for group in ["host", "plugins"] {
        let mut members: Vec<PathBuf> = fs::read_dir(workspace.join(group))
            .expect("a workspace folder")
            .filter_map(|entry| Some(entry.ok()?.path()))
            .filter(|dir| dir.join("Cargo.toml").is_file())
            .collect();
        members.sort();
        dirs.extend(members);
    }
    dirs
}

/// One module of a crate: where it is, what it defines and what it imports.
#[derive(Default)]
struct Module {
    /// `crate::a::b` as `["a", "b"]`; empty for the crate root.
    path: Vec<String>,
    file: PathBuf,
    /// Lines of this file outside test modules (only for modules that
    /// own their file).
    lines: Option<usize>,
    submodules: BTreeSet<String>,
    /// Items defined here (types, functions, traits, constants, macros).
    defined: BTreeSet<String>,
    /// Names brought in by `use`, with the path they stand for.
    aliases: BTreeMap<String, Vec<String>>,
    /// `use path::*`.
    globs: Vec<Vec<String>>,
    /// Every path this module names that may lead inside the crate, with
    /// the line it is on.
    references: Vec<(Vec<String>, usize)>,
}

struct Crate {
    name: String,
    modules: Vec<Module>,
    long_functions: Vec<String>,
}

fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn span_lines(span: proc_macro2::Span) -> usize {
    span.end().line + 1 - span.start().line
}

fn use_paths(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut full = prefix.clone();
            if name != "self" {
                full.push(name.clone());
            }
            let alias = if name == "self" {
                prefix.last().cloned().unwrap_or_default()
            } else {
                name
            };
            out.push((full, alias));
        }
        UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            out.push((full, r.rename.to_string()));
        }
        UseTree::Glob(_) => out.push((prefix.clone(), "*".into())),
        UseTree::Group(g) => {
            for tree in &g.items {
                use_paths(tree, prefix, out);
            }
        }
    }
}

/// Collects a module's definitions and references, leaving nested modules
/// to their own `Module`.
struct Collector<'a> {
    module: &'a mut Module,
    nested: Vec<(syn::ItemMod, Vec<String>)>,
    long_functions: &'a mut Vec<String>,
    file: &'a Path,
}

/// A function that is a table: its body is one `match` (at least three
/// quarters of its lines) whose arms are single expressions, one row per
/// case, like a kind's metadata or a schema per kind. Splitting it would
/// only scatter the rows.
fn is_table(block: &syn::Block) -> bool {
    let lines = span_lines(block.brace_token.span.join());
    block.stmts.iter().any(|stmt| {
        let expr = match stmt {
            syn::Stmt::Expr(expr, _) => expr,
            _ => return false,
        };
        let syn::Expr::Match(m) = expr else {
            return false;
        };
        let rows_only = m.arms.iter().all(|arm| match &*arm.body {
            syn::Expr::Block(b) => b.block.stmts.len() <= 1,
            _ => true,
        });
        rows_only && span_lines(m.brace_token.span.join()) * 4 >= lines * 3
    })
}

impl Collector<'_> {
    fn function(&mut self, name: &str, block: &syn::Block) {
        let span = block.brace_token.span.join();
        let lines = span_lines(span);
        if lines > MAX_FN_LINES && !is_table(block) {
            self.long_functions.push(format!(
                "{}:{} fn {name}: {lines} lines",
                self.file.display(),
                span.start().line
            ));
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        let attrs: &[Attribute] = match item {
            Item::Fn(i) => &i.attrs,
            Item::Impl(i) => &i.attrs,
            Item::Mod(i) => &i.attrs,
            Item::Use(i) => &i.attrs,
            Item::Struct(i) => &i.attrs,
            Item::Enum(i) => &i.attrs,
            Item::Trait(i) => &i.attrs,
            Item::Const(i) => &i.attrs,
            Item::Static(i) => &i.attrs,
            Item::Macro(i) => &i.attrs,
            _ => &[],
        };
        if is_test_only(attrs) {
            return;
        }
        let name = match item {
            Item::Fn(i) => Some(i.sig.ident.to_string()),
            Item::Struct(i) => Some(i.ident.to_string()),
            Item::Enum(i) => Some(i.ident.to_string()),
            Item::Union(i) => Some(i.ident.to_string()),
            Item::Trait(i) => Some(i.ident.to_string()),
            Item::Type(i) => Some(i.ident.to_string()),
            Item::Const(i) => Some(i.ident.to_string()),
            Item::Static(i) => Some(i.ident.to_string()),
            Item::Macro(i) => i.ident.as_ref().map(|id| id.to_string()),
            _ => None,
        };
        if let Some(name) = name {
            self.module.defined.insert(name);
        }
        match item {
            Item::Mod(m) => {
                self.module.submodules.insert(m.ident.to_string());
                let mut path = self.module.path.clone();
                path.push(m.ident.to_string());
                self.nested.push((m.clone(), path));
            }
            Item::Use(u) => {
                let line = u.use_token.span.start().line;
                let mut found = Vec::new();
                use_paths(&u.tree, &mut Vec::new(), &mut found);
                for (path, alias) in found {
                    if alias == "*" {
                        self.module.globs.push(path.clone());
                    } else {
                        self.module.aliases.insert(alias, path.clone());
                    }
                    self.module.references.push((path, line));
                }
            }
            _ => syn::visit::visit_item(self, item),
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.sig.ident.to_string(), &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_test_only(&f.attrs) {
            return;
        }
        self.function(&f.sig.ident.to_string(), &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.function(&f.sig.ident.to_string(), block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.segments.len() > 1 {
            let segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = path.segments[0].ident.span().start().line;
            self.module.references.push((segments, line));
        }
        syn::visit::visit_path(self, path);
    }
}

/// The lines of `source` that belong to test modules or test functions.
fn test_lines(file: &syn::File) -> usize {
    file.items
        .iter()
        .filter_map(|item| match item {
            Item::Mod(m) if is_test_only(&m.attrs) => {
                let end = m
                    .content
                    .as_ref()
                    .map_or(m.ident.span(), |(brace, _)| brace.span.close());
                Some(end.end().line + 1 - m.mod_token.span.start().line)
            }
            Item::Fn(f) if is_test_only(&f.attrs) => {
                Some(span_lines(f.block.brace_token.span.join()))
            }
            _ => None,
        })
        .sum()
}

fn read_module(
    file: &Path,
    path: Vec<String>,
    items: Option<Vec<Item>>,
    dir: &Path,
    krate: &mut Crate,
) {
    let (items, lines) = match items {
        Some(items) => (items, None),
        None => {
            let source = fs::read_to_string(file).expect("a module's file");
            let parsed = syn::parse_file(&source).unwrap_or_else(|e| {
                panic!("{} does not parse: {e}", file.display());
            });
            let lines = source.lines().count() - test_lines(&parsed);
            (parsed.items, Some(lines))
        }
    };
    let mut module = Module {
        path,
        file: file.to_path_buf(),
        lines,
        ..Module::default()
    };
    let mut collector = Collector {
        module: &mut module,
        nested: Vec::new(),
        long_functions: &mut krate.long_functions,
        file,
    };
    for item in &items {
        collector.visit_item(item);
    }
    let nested = std::mem::take(&mut collector.nested);
    krate.modules.push(module);
    for (m, child_path) in nested {
        let name = m.ident.to_string();
        match m.content {
            Some((_, items)) => read_module(file, child_path, Some(items), &dir.join(&name), krate),
            None => {
                let child = match path_attr(&m.attrs) {
                    Some(explicit) => file.parent().expect("a folder").join(explicit),
                    None if dir.join(format!("{name}.rs")).is_file() => {
                        dir.join(format!("{name}.rs"))
                    }
                    None => dir.join(&name).join("mod.rs"),
                };
                // A module's own folder is its name beside its file, or
                // the folder of a mod.rs.
                let child_dir = if child.file_name().is_some_and(|f| f == "mod.rs") {
                    child.parent().expect("a folder").to_path_buf()
                } else {
                    child.with_extension("")
                };
                read_module(&child, child_path, None, &child_dir, krate);
            }
        }
    }
}

fn read_crate(dir: &Path) -> Vec<Crate> {
    let src = dir.join("src");
    let mut roots = vec![src.join("lib.rs"), src.join("main.rs")];
    if let Ok(bins) = fs::read_dir(src.join("bin")) {
        roots.extend(bins.filter_map(|e| Some(e.ok()?.path())));
    }
    roots
        .into_iter()
        .filter(|root| root.is_file())
        .map(|root| {
            let mut krate = Crate {
                name: root
                    .strip_prefix(dir.join("../.."))
                    .unwrap_or(&root)
                    .display()
                    .to_string(),
                modules: Vec::new(),
                long_functions: Vec::new(),
            };
            read_module(&root, Vec::new(), None, &src, &mut krate);
            krate
        })
        .collect()
}

/// Where a name used in a module resolves to: the module that defines the
/// item, or a module itself when the path names one.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Item(Vec<String>, String),
    Module(Vec<String>),
}

impl Crate {
    fn module(&self, path: &[String]) -> Option<&Module> {
        self.modules.iter().find(|m| m.path == path)
    }

    /// Resolves `path` as written in module `from`; `None` for paths that
    /// leave the crate or that this reading cannot follow (macros,
    /// associated items of foreign types).
    fn resolve(&self, from: &[String], path: &[String], depth: usize) -> Option<Target> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let (mut at, rest): (Vec<String>, &[String]) = match path[0].as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (from.to_vec(), &path[1..]),
            "super" => {
                let mut at = from.to_vec();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    at.pop()?;
                    rest = &rest[1..];
                }
                (at, rest)
            }
            _ => (from.to_vec(), path),
        };
        let mut rest = rest.to_vec();
        loop {
            let Some(first) = rest.first().cloned() else {
                return Some(Target::Module(at));
            };
            let module = self.module(&at)?;
            if module.submodules.contains(&first) {
                at.push(first);
                rest.remove(0);
            } else if module.defined.contains(&first) {
                return Some(Target::Item(at, first));
            } else if let Some(alias) = module.aliases.get(&first) {
                let mut through = alias.clone();
                through.extend(rest.into_iter().skip(1));
                return self.resolve(&at, &through, depth + 1);
            } else {
                return module.globs.iter().find_map(|glob| {
                    let mut through = glob.clone();
                    through.extend(rest.iter().cloned());
                    self.resolve(&at, &through, depth + 1)
                });
            }
        }
    }
}

fn is_ancestor(ancestor: &[String], of: &[String]) -> bool {
    ancestor.len() < of.len() && of.starts_with(ancestor)
}

struct Findings {
    long_files: Vec<String>,
    long_functions: Vec<String>,
    parent_imports: Vec<String>,
    cycles: Vec<String>,
}

fn survey() -> Findings {
    let mut findings = Findings {
        long_files: Vec::new(),
        long_functions: Vec::new(),
        parent_imports: Vec::new(),
        cycles: Vec::new(),
    };
    for dir in crate_dirs() {
        for krate in read_crate(&dir) {
            findings
                .long_functions
                .extend(krate.long_functions.iter().cloned());
            // Edges between sibling modules: a module that reaches into
            // another is counted as its ancestor just below their common
            // ancestor reaching into the other's.
            let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
            for module in &krate.modules {
                if let Some(lines) = module.lines.filter(|&l| l > MAX_FILE_LINES) {
                    findings
                        .long_files
                        .push(format!("{}: {lines} lines", module.file.display()));
                }
                for (path, line) in &module.references {
                    let Some(target) = krate.resolve(&module.path, path, 0) else {
                        continue;
                    };
                    let target_module = match &target {
                        Target::Item(at, name) => {
                            // An inline module (`mod rows { use super::… }`)
                            // is part of its parent's file; only a file that
                            // reaches back into its parent's is counted.
                            let other_file =
                                krate.module(at).is_some_and(|m| m.file != module.file);
                            if is_ancestor(at, &module.path) && other_file {
                                findings.parent_imports.push(format!(
                                    "{}:{line} uses {name} from its ancestor crate::{}",
                                    module.file.display(),
                                    at.join("::")
                                ));
                            }
                            at.clone()
                        }
                        Target::Module(at) => at.clone(),
                    };
                    let common = module
                        .path
                        .iter()
                        .zip(&target_module)
                        .take_while(|(a, b)| a == b)
                        .count();
                    if common < module.path.len() && common < target_module.len() {
                        edges
                            .entry(module.path[..=common].to_vec())
                            .or_default()
                            .insert(target_module[..=common].to_vec());
                    }
                }
            }
            for cycle in cycles(&edges) {
                findings.cycles.push(format!(
                    "{}: {}",
                    krate.name,
                    cycle
                        .iter()
                        .map(|m| format!("crate::{}", m.join("::")))
                        .collect::<Vec<_>>()
                        .join(" -> ")
                ));
            }
        }
    }
    findings
}

/// One cycle per strongly connected group of modules, found by walking
/// from each module back to itself.
fn cycles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    let mut seen: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut found = Vec::new();
    for start in edges.keys() {
        if seen.contains(start) {
            continue;
        }
        // Breadth-first from `start`, remembering how each module was
        // reached, until `start` is reached again.
        let mut came_from: BTreeMap<&Vec<String>, &Vec<String>> = BTreeMap::new();
        let mut frontier = vec![start];
        let mut closed = None;
        while let Some(at) = frontier.pop() {
            for next in edges.get(at).into_iter().flatten() {
                if next == start {
                    closed = Some(at);
                    break;
                }
                if !came_from.contains_key(next) {
                    came_from.insert(next, at);
                    frontier.push(next);
                }
            }
            if closed.is_some() {
                break;
            }
        }
        if let Some(mut at) = closed {
            let mut cycle = vec![start.clone()];
            let mut back = Vec::new();
            while at != start {
                back.push(at.clone());
                at = came_from[at];
            }
            back.reverse();
            cycle.extend(back);
            cycle.push(start.clone());
            seen.extend(cycle.iter().cloned());
            found.push(cycle);
        }
    }
    found
}

fn report(what: &str, findings: &[String]) -> String {
    if findings.is_empty() {
        String::new()
    } else {
        format!(
            "{what} ({}):\n  {}\n",
            findings.len(),
            findings.join("\n  ")
        )
    }
}

#[test]
fn the_crates_keep_their_shape() {
    let findings = survey();
    let text = [
        report(
            &format!("production files over {MAX_FILE_LINES} lines"),
            &findings.long_files,
        ),
        report(
            &format!("functions over {MAX_FN_LINES} lines"),
            &findings.long_functions,
        ),
        report(
            "modules importing their parent's items",
            &findings.parent_imports,
        ),
        report("import cycles between modules", &findings.cycles),
    ]
    .concat();
    assert!(text.is_empty(), "{text}");
}
