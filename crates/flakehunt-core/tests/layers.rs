//! The core's import graph, read from its sources: its top-level modules form layers, each
//! importing only from the layers below it (ARCHITECTURE.md, "Layers"), so that no two of them
//! depend on each other. Every `use` and every path (`crate::a::b`, `super::x`, a child module's
//! `m::f`) is resolved to the file that defines the name, following `pub use` re-exports, so a
//! module's `mod.rs` that re-exports its children does not hide which file depends on which. Test
//! code (`#[cfg(test)]` items and the files they declare) is left out: tests may reach anywhere.
//!
//! No import runs up the layers, no two top-level modules import each other, and no two files
//! do: a file that two others need, and that needs them, is split until what both need has a
//! file of its own. Below every layer is the schema (the record's and the summary's types): the
//! crate `flakehunt-schema`, which the core re-exports as `crate::schema`. A path into it names
//! another crate, not a file of this one. That it imports nothing of the project the compiler
//! enforces (the core depends on it, so it cannot depend on the core); checked here: that it
//! depends on no other crate of the project either, and that its own files import no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The core's top-level modules, from the bottom layer up (one module per layer). A module may
/// import only from modules before it here.
const LAYERS: &[&str] = &[
    // Leaves: depend on nothing of the project but the schema (the crate below the core).
    "error_class",
    "bounds",
    "host",
    "redact",
    "rng",
    "signature",
    // The operating system: copies of trees, and processes.
    "copy",
    "exec",
    // Mechanisms and the pure model of a hunt: profiles, oracles, plans, the record, events,
    // the analysis, the configuration.
    "profile",
    "oracle",
    "checks",
    "plan",
    "record",
    "events",
    "analysis",
    "config",
    // What runs attempts: fire's state, clean rooms, warm parents, the runner.
    "state",
    "cleanroom",
    "warm",
    "runner",
    // The machine and the jobs around a hunt.
    "snapshot",
    "drift",
    "dispatch",
    "hypo",
    // A hunt: its spec, its session, the profiles it can use, its kind, its renderings, and the
    // one driver.
    "spec",
    "session",
    "probe",
    "kind",
    "render",
    "driver",
];

fn core() -> Graph {
    Graph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The schema crate's directory, beside the core's.
fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("flakehunt-schema")
}

#[test]
fn every_top_level_module_of_the_core_has_a_layer() {
    let graph = core();
    let modules: BTreeSet<String> = (0..graph.files.len()).map(|i| graph.top(i)).filter(|m| m != "lib").collect();
    let unlisted: Vec<&String> = modules.iter().filter(|m| !LAYERS.contains(&m.as_str())).collect();
    assert!(unlisted.is_empty(), "top-level modules missing from LAYERS (and ARCHITECTURE.md): {unlisted:?}");
    let gone: Vec<&&str> = LAYERS.iter().filter(|m| !modules.contains(**m)).collect();
    assert!(gone.is_empty(), "LAYERS names modules that no longer exist: {gone:?}");
}

#[test]
fn no_import_runs_up_the_layers() {
    let graph = core();
    let layer = |m: &str| LAYERS.iter().position(|l| *l == m);
    let upward: Vec<String> = graph
        .module_edges()
        .into_iter()
        .filter(|((a, b), _)| matches!((layer(a), layer(b)), (Some(la), Some(lb)) if lb > la))
        .map(|((a, b), (fa, fb))| format!("{a} -> {b} ({fa} imports {fb})"))
        .collect();
    assert!(upward.is_empty(), "imports from a lower layer into a higher one:\n  {}", upward.join("\n  "));
}

#[test]
fn no_module_and_no_file_of_the_core_imports_itself_through_others() {
    let graph = core();
    let modules = graph.module_cycles();
    assert!(modules.is_empty(), "top-level modules that import each other: {modules:?}");
    let files = graph.file_cycles();
    assert!(files.is_empty(), "files that import each other (move what both need into a file of its own): {files:?}");
}

#[test]
fn the_schema_crate_depends_on_no_crate_of_the_project_and_its_files_import_no_cycle() {
    let dir = schema_dir();
    let manifest: toml::Table = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap().parse().unwrap();
    let mut project = Vec::new();
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        let names = manifest.get(section).and_then(toml::Value::as_table).into_iter().flat_map(|t| t.keys());
        project.extend(names.filter(|n| n.starts_with("flakehunt")).map(|n| format!("[{section}] {n}")));
    }
    assert!(project.is_empty(), "the schema depends on crates of the project: {project:?}");
    let graph = Graph::read(&dir.join("src"));
    assert!(graph.files.len() > 10, "the schema's sources were not found in {}", dir.display());
    let modules = graph.module_cycles();
    assert!(modules.is_empty(), "modules of the schema that import each other: {modules:?}");
    let files = graph.file_cycles();
    assert!(files.is_empty(), "files of the schema that import each other: {files:?}");
}

/// A crate's sources written to a temporary directory, for the reader's own tests.
fn sources(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn the_reader_finds_a_cycle_through_a_re_export_and_a_path_but_not_through_tests_comments_or_strings() {
    let dir = sources(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("a.rs", "use crate::b::Thing;\npub fn f() -> Thing { Thing }\n"),
        ("b/mod.rs", "mod inner;\npub use inner::Thing;\n"),
        ("b/inner.rs", "pub struct Thing;\npub fn g() { crate::a::f(); }\n"),
        (
            "c.rs",
            "// crate::a::f\nconst S: &str = \"crate::b::Thing\";\nconst R: &str = r#\"crate::a::f\"#;\n\
             #[cfg(test)]\nmod tests;\n#[cfg(test)]\nfn t() { crate::a::f(); }\n",
        ),
        ("c/tests.rs", "use crate::a::f;\n"),
    ]);
    let graph = Graph::read(dir.path());
    assert_eq!(graph.file_cycles(), vec![vec!["a.rs".to_owned(), "b/inner.rs".to_owned()]]);
    assert_eq!(graph.module_cycles(), vec![vec!["a".to_owned(), "b".to_owned()]]);
    let edges: Vec<(String, String)> = graph.module_edges().into_keys().collect();
    assert_eq!(edges, vec![("a".to_owned(), "b".to_owned()), ("b".to_owned(), "a".to_owned())]);
}

#[test]
fn the_reader_takes_a_path_into_a_re_exported_crate_or_a_re_export_of_it_for_no_file_of_this_one() {
    let dir = sources(&[
        ("lib.rs", "pub use other_crate as schema;\npub mod a;\npub mod b;\npub mod c;\n"),
        ("a.rs", "use crate::schema::Thing;\nuse crate::c::Other;\npub fn f(_: Thing, _: Other) { crate::b::g(); }\n"),
        ("b.rs", "pub fn g() { let _ = crate::schema::make(); }\n"),
        // A re-export of the other crate's type: naming it there is no import of this file.
        ("c.rs", "pub use crate::schema::Other;\n"),
    ]);
    let graph = Graph::read(dir.path());
    let edges: Vec<(String, String)> = graph.module_edges().into_keys().collect();
    assert_eq!(edges, vec![("a".to_owned(), "b".to_owned())]);
}

#[test]
fn the_reader_resolves_super_self_and_use_groups_to_files() {
    let dir = sources(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a/mod.rs", "pub mod x;\npub mod y;\n"),
        ("a/x.rs", "use super::y::{self, Y as Why};\npub fn f(_: Why) { y::g(); }\n"),
        ("a/y.rs", "pub struct Y;\npub fn g() { self::h(); crate::b::k(); }\nfn h() {}\n"),
        ("b.rs", "pub fn k() {}\n"),
    ]);
    let graph = Graph::read(dir.path());
    let name = |i: usize| graph.files[i].name.clone();
    let edges: BTreeSet<(String, String)> = graph
        .edges
        .iter()
        .enumerate()
        .flat_map(|(i, targets)| targets.iter().map(move |&t| (i, t)))
        .map(|(i, t)| (name(i), name(t)))
        .collect();
    let expected: BTreeSet<(String, String)> =
        [("a/x.rs", "a/y.rs"), ("a/y.rs", "b.rs")].iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect();
    assert_eq!(edges, expected);
    assert!(graph.file_cycles().is_empty());
    assert!(graph.module_cycles().is_empty());
}

/// A file of the crate: its module path and its use statements.
struct File {
    /// Relative to `src/`.
    name: String,
    /// `crate::a::b` as `["a", "b"]`.
    module: Vec<String>,
    /// Every path the file names, absolute where it could be resolved, with the module it was
    /// named in (an inline `mod x { }` adds to the file's).
    paths: Vec<Vec<String>>,
    /// `pub use` re-exports: the name they bind, and the absolute path it names.
    exports: BTreeMap<String, Vec<String>>,
}

struct Graph {
    files: Vec<File>,
    /// Module path to the index of its file.
    modules: BTreeMap<Vec<String>, usize>,
    /// Per file, the files it imports from.
    edges: Vec<BTreeSet<usize>>,
}

impl Graph {
    fn read(src: &Path) -> Self {
        let mut sources = Vec::new();
        collect_rs(src, &mut sources);
        sources.sort();
        let mut parsed = Vec::new();
        let mut test_files = BTreeSet::new();
        for path in &sources {
            let rel = path.strip_prefix(src).unwrap().to_string_lossy().into_owned();
            let module = module_of(&rel);
            let text = std::fs::read_to_string(path).unwrap();
            let tokens = tokens(&strip(&text));
            let (tokens, tests) = drop_test_items(&tokens);
            for child in tests {
                let mut m = module.clone();
                m.push(child);
                test_files.insert(m);
            }
            parsed.push((rel, module, tokens));
        }
        let module_set: BTreeSet<Vec<String>> =
            parsed.iter().map(|(_, m, _)| m.clone()).filter(|m| !test_files.contains(m)).collect();
        let mut files = Vec::new();
        for (name, module, tokens) in parsed {
            if test_files.contains(&module) {
                continue;
            }
            let (paths, exports) = paths_of(&module, &tokens, &module_set);
            files.push(File { name, module, paths, exports });
        }
        let modules: BTreeMap<Vec<String>, usize> =
            files.iter().enumerate().map(|(i, f)| (f.module.clone(), i)).collect();
        let mut graph = Graph { edges: vec![BTreeSet::new(); files.len()], files, modules };
        for i in 0..graph.files.len() {
            let targets: BTreeSet<usize> =
                graph.files[i].paths.iter().filter_map(|p| graph.resolve(p, 0)).filter(|&t| t != i).collect();
            graph.edges[i] = targets;
        }
        graph
    }

    /// The file that defines what `path` names, following re-exports; none for a name no module
    /// of the crate declares (`crate::schema::...`: the schema crate, which `lib.rs` re-exports),
    /// and none for a re-export of one (`record::Attempt` is the schema's, not `record`'s).
    fn resolve(&self, path: &[String], depth: usize) -> Option<usize> {
        let n = (0..=path.len()).rev().find(|&n| self.modules.contains_key(&path[..n]))?;
        if n == 0 && !path.is_empty() {
            return None;
        }
        let file = self.modules[&path[..n]];
        if n < path.len() && depth < 8 {
            if let Some(target) = self.files[file].exports.get(&path[n]) {
                let mut next = target.clone();
                next.extend_from_slice(&path[n + 1..]);
                return self.resolve(&next, depth + 1);
            }
        }
        Some(file)
    }

    fn file_cycles(&self) -> Vec<Vec<String>> {
        let mut cycles: Vec<Vec<String>> = strongly_connected(&self.edges)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| c.into_iter().map(|i| self.files[i].name.clone()).collect())
            .collect();
        cycles.iter_mut().for_each(|c| c.sort());
        cycles.sort_by_key(|c| std::cmp::Reverse(c.len()));
        cycles
    }

    fn top(&self, file: usize) -> String {
        self.files[file].module.first().cloned().unwrap_or_else(|| "lib".to_owned())
    }

    /// The top-level modules and the imports between them, with one file-level import each.
    fn module_edges(&self) -> BTreeMap<(String, String), (String, String)> {
        let mut edges = BTreeMap::new();
        for (i, targets) in self.edges.iter().enumerate() {
            for &t in targets {
                let (a, b) = (self.top(i), self.top(t));
                if a != b && a != "lib" {
                    edges.entry((a, b)).or_insert_with(|| (self.files[i].name.clone(), self.files[t].name.clone()));
                }
            }
        }
        edges
    }

    fn module_cycles(&self) -> Vec<Vec<String>> {
        let names: Vec<String> =
            (0..self.files.len()).map(|i| self.top(i)).collect::<BTreeSet<_>>().into_iter().collect();
        let index = |n: &str| names.iter().position(|x| x == n).unwrap();
        let mut edges = vec![BTreeSet::new(); names.len()];
        for (a, b) in self.module_edges().keys() {
            edges[index(a)].insert(index(b));
        }
        strongly_connected(&edges)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
                c.sort();
                c
            })
            .collect()
    }
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` are `["a", "b"]`; `lib.rs` is `[]`.
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.strip_suffix(".rs").unwrap();
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The source without comments, string and character literals (each replaced by a space), so
/// that what remains is code.
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !prev_is_ident(&b, i) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            'raw: while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|h| b.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                j += 1;
            }
            i = j;
            out.push(' ');
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime ('a), which stays.
            if next == Some('\\') {
                i += 2;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push(' ');
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push(' ');
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// Identifiers, `::` and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push(b[start..i].iter().collect());
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push("::".to_owned());
            i += 2;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// The tokens without `#[cfg(test)]` items, and the names of the test modules declared in other
/// files (`#[cfg(test)] mod tests;`).
fn drop_test_items(t: &[String]) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut files = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let is_cfg_test = t[i] == "#"
            && t.get(i + 1).is_some_and(|x| x == "[")
            && t.get(i + 2).is_some_and(|x| x == "cfg")
            && t.get(i + 3).is_some_and(|x| x == "(")
            && t.get(i + 4).is_some_and(|x| x == "test")
            && t.get(i + 5).is_some_and(|x| x == ")")
            && t.get(i + 6).is_some_and(|x| x == "]");
        if !is_cfg_test {
            out.push(t[i].clone());
            i += 1;
            continue;
        }
        i += 7;
        // The item: up to its `;`, or through its braces.
        let start = i;
        let mut depth = 0i32;
        while i < t.len() {
            match t[i].as_str() {
                "{" | "(" | "[" => depth += 1,
                "}" | ")" | "]" => {
                    depth -= 1;
                    if depth == 0 && t[i] == "}" {
                        i += 1;
                        break;
                    }
                }
                ";" if depth == 0 => {
                    let item = &t[start..i];
                    if let Some(p) = item.iter().position(|x| x == "mod") {
                        files.push(item[p + 1].clone());
                    }
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
    (out, files)
}

fn is_ident(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The absolute paths a file names, and its `pub use` re-exports.
fn paths_of(
    file_module: &[String],
    t: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> (Vec<Vec<String>>, BTreeMap<String, Vec<String>>) {
    let mut paths = Vec::new();
    let mut exports = BTreeMap::new();
    // Names a `use` bound in this file, for paths that start with one (`stats::wilson`).
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // Inline modules: (name, brace depth inside it).
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    let current = |inline: &[(String, i32)]| -> Vec<String> {
        let mut m = file_module.to_vec();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    while i < t.len() {
        match t[i].as_str() {
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            "mod" if t.get(i + 2).is_some_and(|x| x == "{") => {
                inline.push((t[i + 1].clone(), depth + 1));
            }
            "use" => {
                let public = i > 0 && (t[i - 1] == "pub" || t[i - 1] == ")");
                let end = (i..t.len()).find(|&j| t[j] == ";").unwrap_or(t.len());
                let module = current(&inline);
                let mut trees = Vec::new();
                use_tree(&t[i + 1..end], &mut Vec::new(), &mut trees);
                for (path, bound) in trees {
                    let Some(abs) = absolute(&module, &path, modules, &aliases) else { continue };
                    if let Some(name) = bound {
                        if public {
                            exports.insert(name.clone(), abs.clone());
                        }
                        aliases.insert(name, abs.clone());
                    }
                    // A re-export is resolved through, not an import of the file that makes it.
                    if !public {
                        paths.push(abs);
                    }
                }
                i = end;
                continue;
            }
            s if is_ident(s) && t.get(i + 1).is_some_and(|x| x == "::") && !(i > 0 && t[i - 1] == "::") => {
                let mut path = vec![s.to_owned()];
                let mut j = i + 1;
                while t.get(j).is_some_and(|x| x == "::") && t.get(j + 1).is_some_and(|x| is_ident(x)) {
                    path.push(t[j + 1].clone());
                    j += 2;
                }
                if let Some(abs) = absolute(&current(&inline), &path, modules, &aliases) {
                    paths.push(abs);
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    (paths, exports)
}

/// The paths of a use tree, each with the name it binds (none for a glob).
fn use_tree(t: &[String], prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut i = 0;
    let base = prefix.len();
    while i < t.len() {
        match t[i].as_str() {
            "::" => i += 1,
            "*" => {
                out.push((prefix.clone(), None));
                i += 1;
            }
            "{" => {
                // Split the group at its top-level commas.
                let mut depth = 0;
                let mut start = i + 1;
                let mut j = i;
                while j < t.len() {
                    match t[j].as_str() {
                        "{" => depth += 1,
                        "}" => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        "," if depth == 1 => {
                            use_tree(&t[start..j], prefix, out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                    j += 1;
                }
                use_tree(&t[start..j.min(t.len())], prefix, out);
                prefix.truncate(base);
                return;
            }
            "as" => {
                let name = t.get(i + 1).cloned().unwrap_or_default();
                out.push((prefix.clone(), Some(name)));
                prefix.truncate(base);
                return;
            }
            "self" if i > 0 || base > 0 => {
                i += 1;
            }
            s if is_ident(s) => {
                prefix.push(s.to_owned());
                i += 1;
            }
            _ => i += 1,
        }
    }
    if prefix.len() > base || (base > 0 && t.iter().any(|x| x == "self")) {
        let name = prefix.last().cloned();
        out.push((prefix.clone(), name));
    }
    prefix.truncate(base);
}

/// `path` as named in `module`, made absolute, when it names something of this crate.
fn absolute(
    module: &[String],
    path: &[String],
    modules: &BTreeSet<Vec<String>>,
    aliases: &BTreeMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    let mut abs: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => {
            let mut m = module.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                m.pop();
                rest = &rest[1..];
            }
            m.extend_from_slice(rest);
            return Some(m);
        }
        _ => {
            let mut child = module.to_vec();
            child.push(first.clone());
            if modules.contains(&child) {
                let mut m = module.to_vec();
                m.extend_from_slice(path);
                return Some(m);
            }
            let alias = aliases.get(first)?;
            let mut m = alias.clone();
            m.extend_from_slice(&path[1..]);
            return Some(m);
        }
    };
    abs.extend_from_slice(&path[1..]);
    Some(abs)
}

/// Tarjan's strongly connected components.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(i) if s.on_stack[w] => s.low[v] = s.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}
