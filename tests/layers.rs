//! The driver's layers (docs/architecture.md, "Layers of the driver"), checked from the
//! code's own imports: every `crate::` and `super::` path in `src/**/*.rs` (test modules
//! left out) is resolved to the file that defines the item, through the crate's module
//! tree and its `use` / `pub use` lines, and each file's layer comes from [`LAYERS`]. The
//! test fails on a file no row places, a row that places no file, an import of a higher
//! layer, and an import circle between rooms (a room is one row's file or folder; the files
//! of one folder may use each other). It also keeps the house rule on length: no file of
//! `src/` or `tests/` over 800 lines unless its opening comment has a line starting `Long:`.
//!
//! The only exceptions are [`KEPT_PATHS`]: `pub use` lines that keep an old public path
//! working after its item moved up; they name the item, the code around them uses nothing
//! of it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The layers, lowest first: (name, the rooms in it as paths under `src/`; a folder ends
/// in `/`).
const LAYERS: &[(&str, &[&str])] = &[
    ("device formats", &["prm/"]),
    (
        "plain types and errors",
        &[
            "types.rs",
            "qp_state.rs",
            "error.rs",
            "eth.rs",
            "cm.rs",
            "event.rs",
            "clock.rs",
            "sizing.rs",
            "mcast.rs",
        ],
    ),
    ("device-visible memory", &["mmio.rs", "ring.rs", "mem.rs"]),
    ("queues", &["sq/", "rq.rs", "cq/", "cqz.rs"]),
    ("backends", &["backend/", "null.rs"]),
    ("control objects", &["device/", "dm.rs", "channel.rs"]),
    ("helpers", &["dci_pool.rs", "grh.rs", "rdma_cm.rs"]),
];

/// `pub use` lines that keep an old public path after the item moved up a layer:
/// (file, the path it re-exports).
const KEPT_PATHS: &[(&str, &str)] = &[
    // `connect_qp` moves a `Qp`, so it lives in `rdma_cm.rs` above the control objects;
    // applications import it as `backend::verbs::cm::connect_qp`.
    ("backend/verbs/cm.rs", "crate::rdma_cm::connect_qp"),
    // The QP states and transitions moved out of `types.rs` (its length); applications
    // import them as `types::QpState` and `types::Transition`.
    ("types.rs", "crate::qp_state::QpState"),
    ("types.rs", "crate::qp_state::Transition"),
];

/// One source file: its module path and its code without comments and test modules.
struct Source {
    module: Vec<String>,
    code: String,
}

fn main_src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a/b.rs` -> [a, b]; `a/mod.rs` -> [a]; `lib.rs` -> [].
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code without comments, string literals and `#[cfg(test)]` items.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 4 + e);
            i = end;
        } else if b[i] == b'"' && (i == 0 || b[i - 1] != b'\'') {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    // Drop every item under `#[cfg(test)]`: up to its `;` or its balanced braces.
    while let Some(at) = out.find("#[cfg(test)]") {
        let rest = &out[at..];
        let semi = rest.find(';');
        let brace = rest.find('{');
        let end = match (semi, brace) {
            (Some(s), Some(b)) if s < b => at + s + 1,
            (_, Some(b)) => {
                let mut depth = 0;
                let mut end = out.len();
                for (k, ch) in out[at + b..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = at + b + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(s), None) => at + s + 1,
            (None, None) => out.len(),
        };
        out.replace_range(at..end, "");
    }
    out
}

/// The modules declared under `#[cfg(test)]` in `text` (`#[cfg(test)] mod tests;`).
fn test_modules(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == "#[cfg(test)]" {
            if let Some(next) = lines.next() {
                if let Some(name) = next.strip_prefix("mod ").and_then(|n| n.strip_suffix(';')) {
                    names.push(name.to_string());
                }
            }
        }
    }
    names
}

/// Parses a use tree (or a plain path) at the start of `s`: every full path it names, as
/// segments, with `prefix` before each.
fn paths(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    let mut segs = prefix.to_vec();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
                    i += 1;
                }
                if i >= b.len() || b[i] == b'}' {
                    return i + 1;
                }
                i += paths(&s[i..], &segs, out);
            }
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'*') {
            i += 1;
        }
        if i > start && &s[start..i] != "*" {
            segs.push(s[start..i].to_string());
        }
        if s[i..].starts_with("::") {
            i += 2;
            continue;
        }
        // `as name` renames the last segment; the path stays.
        out.push(segs);
        let rest = s[i..].trim_start();
        if let Some(r) = rest.strip_prefix("as ") {
            let r = r.trim_start();
            let n = r
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(r.len());
            return s.len() - r.len() + n;
        }
        return i;
    }
}

/// Whether position `at` of `code` starts a path (not the tail of an identifier).
fn starts_path(code: &str, at: usize) -> bool {
    at == 0 || {
        let c = code.as_bytes()[at - 1];
        !(c.is_ascii_alphanumeric() || c == b'_' || c == b':')
    }
}

/// Every `crate::` and `super::` path of `code`.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for key in ["crate::", "super::"] {
        for (at, _) in code.match_indices(key) {
            if !starts_path(code, at) {
                continue;
            }
            paths(&code[at..], &[], &mut out);
        }
    }
    out
}

/// The `use` declarations of `code`: the name each brings in -> the path it names.
fn uses(code: &str) -> BTreeMap<String, Vec<String>> {
    let mut map = BTreeMap::new();
    for (at, _) in code.match_indices("use ") {
        if !starts_path(code, at) {
            continue;
        }
        let tree = &code[at + 4..];
        let end = tree.find(';').unwrap_or(tree.len());
        let tree = &tree[..end];
        let mut found = Vec::new();
        paths(tree, &[], &mut found);
        // Renames: `X as Y` brings in Y.
        let renamed: Vec<(String, String)> = tree
            .split([',', '{', '}'])
            .filter_map(|part| {
                let (from, to) = part.split_once(" as ")?;
                let from = from.rsplit("::").next()?.trim().to_string();
                Some((from, to.trim().to_string()))
            })
            .collect();
        for path in found {
            let named: Vec<&String> = path.iter().filter(|s| *s != "self").collect();
            let Some(&last) = named.last() else { continue };
            let name = renamed
                .iter()
                .find(|(f, _)| f == last)
                .map_or(last.clone(), |(_, t)| t.clone());
            map.insert(name, path);
        }
    }
    map
}

struct Crate {
    files: BTreeMap<Vec<String>, String>,
    uses: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
}

impl Crate {
    /// The file defining what `segs` names, from inside module `from`.
    fn resolve(&self, from: &[String], segs: &[String], depth: usize) -> Option<String> {
        if depth > 16 {
            return None;
        }
        let (mut module, rest): (Vec<String>, &[String]) = match segs.first()?.as_str() {
            "crate" => (Vec::new(), &segs[1..]),
            "super" => {
                let mut m = from.to_vec();
                let mut rest = segs;
                while rest.first().is_some_and(|s| s == "super") {
                    m.pop();
                    rest = &rest[1..];
                }
                (m, rest)
            }
            "self" => (from.to_vec(), &segs[1..]),
            first => {
                let mut child = from.to_vec();
                child.push(first.to_string());
                if self.files.contains_key(&child) {
                    (from.to_vec(), segs)
                } else {
                    return None; // another crate
                }
            }
        };
        for (k, seg) in rest.iter().enumerate() {
            let mut child = module.clone();
            child.push(seg.clone());
            if self.files.contains_key(&child) {
                module = child;
                continue;
            }
            if seg == "self" {
                continue;
            }
            // An item of `module`: where its `use` lines take it from, if they do.
            if let Some(target) = self.uses.get(&module).and_then(|u| u.get(seg)) {
                let mut full = target.clone();
                full.extend_from_slice(&rest[k + 1..]);
                if let Some(file) = self.resolve(&module, &full, depth + 1) {
                    return Some(file);
                }
            }
            break;
        }
        self.files.get(&module).cloned()
    }
}

/// The room of file `rel` (its row's entry) and its layer.
fn room(rel: &str) -> Option<(&'static str, usize)> {
    LAYERS.iter().enumerate().find_map(|(layer, (_, rooms))| {
        rooms
            .iter()
            .find(|r| {
                if r.ends_with('/') {
                    rel.starts_with(**r)
                } else {
                    rel == **r
                }
            })
            .map(|r| (*r, layer))
    })
}

/// The import edges between files of `src/`, with the path each comes from.
fn edges() -> (Vec<String>, Vec<(String, String, String)>) {
    let src = main_src();
    let mut all = Vec::new();
    walk(&src, &mut all);
    let mut sources = BTreeMap::new();
    let mut tests = BTreeSet::new();
    for path in &all {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = fs::read_to_string(path).expect("read source");
        let module = module_of(&rel);
        for t in test_modules(&text) {
            let mut m = module.clone();
            m.push(t);
            tests.insert(m);
        }
        sources.insert(
            rel,
            Source {
                module,
                code: strip(&text),
            },
        );
    }
    // Files of test modules, and everything under them, are not the layers' business.
    sources.retain(|_, s| !tests.iter().any(|t| s.module.starts_with(t)));
    let krate = Crate {
        files: sources
            .iter()
            .map(|(rel, s)| (s.module.clone(), rel.clone()))
            .collect(),
        uses: sources
            .values()
            .map(|s| (s.module.clone(), uses(&s.code)))
            .collect(),
    };
    let mut edges = Vec::new();
    for (rel, s) in &sources {
        for path in crate_paths(&s.code) {
            if let Some(to) = krate.resolve(&s.module, &path, 0) {
                if &to != rel {
                    edges.push((rel.clone(), to, path.join("::")));
                }
            }
        }
    }
    (sources.into_keys().collect(), edges)
}

fn kept(from: &str, path: &str) -> bool {
    KEPT_PATHS.iter().any(|(f, p)| *f == from && *p == path)
}

#[test]
fn every_file_has_a_layer_and_every_room_a_file() {
    let (files, _) = edges();
    let unplaced: Vec<&String> = files
        .iter()
        .filter(|f| *f != "lib.rs" && room(f).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "files no row of LAYERS places: {unplaced:?}"
    );
    for (_, rooms) in LAYERS {
        for r in *rooms {
            assert!(
                files.iter().any(|f| room(f).is_some_and(|(x, _)| x == *r)),
                "LAYERS names {r}, which holds no file"
            );
        }
    }
}

#[test]
fn kept_paths_are_still_there_and_only_re_exports() {
    for (file, path) in KEPT_PATHS {
        let text = fs::read_to_string(main_src().join(file)).expect("read kept file");
        let line = format!("pub use {path};");
        assert!(
            text.contains(&line),
            "{file} no longer has `{line}`: drop it from KEPT_PATHS"
        );
    }
}

#[test]
fn no_file_imports_a_higher_layer() {
    let (_, edges) = edges();
    let mut upward = Vec::new();
    for (from, to, path) in &edges {
        if from == "lib.rs" || kept(from, path) {
            continue;
        }
        let (Some((_, lf)), Some((_, lt))) = (room(from), room(to)) else {
            continue;
        };
        if lt > lf {
            upward.push(format!(
                "{from} ({}) imports {path} from {to} ({})",
                LAYERS[lf].0, LAYERS[lt].0
            ));
        }
    }
    assert!(
        upward.is_empty(),
        "imports of a higher layer:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_import_circle_between_rooms() {
    let (_, edges) = edges();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to, path) in &edges {
        if from == "lib.rs" || to == "lib.rs" || kept(from, path) {
            continue;
        }
        let (Some((a, _)), Some((b, _))) = (room(from), room(to)) else {
            continue;
        };
        if a != b {
            graph.entry(a).or_default().insert(b);
        }
    }
    // A circle is a room that reaches itself.
    for &start in graph.keys() {
        let mut stack = vec![vec![start]];
        let mut seen = BTreeSet::new();
        while let Some(trail) = stack.pop() {
            let at = *trail.last().unwrap();
            for &next in graph.get(at).into_iter().flatten() {
                if next == start {
                    let mut circle = trail.clone();
                    circle.push(start);
                    panic!("import circle: {}", circle.join(" -> "));
                }
                if seen.insert(next) {
                    let mut t = trail.clone();
                    t.push(next);
                    stack.push(t);
                }
            }
        }
    }
}

#[test]
fn the_resolver_sees_imports() {
    // The check is only as good as its reading of `use` lines: pin a few known edges.
    let (_, edges) = edges();
    let has = |from: &str, to: &str| edges.iter().any(|(f, t, _)| f == from && t == to);
    assert!(has("sq/mod.rs", "sq/dm.rs") || has("sq/mod.rs", "mmio.rs"));
    assert!(has("rq.rs", "mem.rs"), "rq.rs imports Sge from mem.rs");
    assert!(has("dm.rs", "sq/dm.rs"), "dm.rs re-exports DmSlots");
    assert!(has("channel.rs", "backend/mod.rs"));
    assert!(
        has("cqz.rs", "types.rs"),
        "cqz.rs re-exports CqeCompression from types.rs"
    );
}

#[test]
fn no_file_over_800_lines_without_a_long_reason() {
    // The house rule (issue 28): a longer file says why in its opening comment, on a line
    // starting `Long:`.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("src"), &mut files);
    walk(&root.join("tests"), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let text = fs::read_to_string(path).expect("read source");
            let opening = text.lines().take_while(|l| l.starts_with("//"));
            let reason = opening
                .map(|l| {
                    l.trim_start_matches('/')
                        .trim_start_matches('!')
                        .trim_start()
                })
                .any(|l| l.starts_with("Long:"));
            let lines = text.lines().count();
            (lines > 800 && !reason).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over 800 lines without a `Long:` reason: {long:?}"
    );
}
