//! The model's code layout (docs/model.md, "Code layout"), read from the source itself:
//! every file of `hw/src` has a layer in [`LAYERS`], and the paths it names into the crate
//! (its `use crate::...` lines, `crate::` paths in code, `super::` / `self::` paths and the
//! re-exports of its child modules) point at files of its own layer or of a lower one, with
//! no import cycle between files. Comments and string literals are not read. A new file must
//! be placed in the table (and in docs/model.md) before this passes.
//!
//! The second rule of the layout is the project's: no source file over 800 lines unless its
//! opening comment says why, on a line starting `Long:`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers of `hw/src`, bottom first: a file may use files of its own layer and of the
/// layers before it, never those after it. docs/model.md, "Code layout", says what each
/// holds and why it sits where it does.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "formats and primitives",
        &[
            "host.rs",
            "clock.rs",
            "pcie/config.rs",
            "pcie/tlp.rs",
            "pcie/mod.rs",
            "types/device.rs",
            "types/config.rs",
            "types/params.rs",
            "types/events.rs",
            "types/stats.rs",
            "types/eth.rs",
            "types/mcast.rs",
            "types/xrc.rs",
            "types/pacing.rs",
            "types/mod.rs",
            "channel.rs",
            "cqe.rs",
            "wqe.rs",
            "xfer.rs",
            "roce.rs",
            "eth/mod.rs",
            "eth/frame.rs",
            "eth/seg.rs",
            "eth/tso.rs",
            "eth/flow.rs",
            "eth/rss.rs",
        ],
    ),
    (
        "state",
        &[
            "state/consts.rs",
            "state/fence.rs",
            "state/faults.rs",
            "state/dm.rs",
            "state/mr.rs",
            "state/cq.rs",
            "state/qp.rs",
            "state/srq.rs",
            "state/eth.rs",
            "state/mcast.rs",
            "state/xrc.rs",
            "state/pace.rs",
            "state/paced.rs",
            "state/mod.rs",
            "state/access.rs",
        ],
    ),
    ("completion", &["cq.rs", "cqz.rs", "complete.rs"]),
    ("queues", &["qp.rs", "dm.rs"]),
    (
        "responder",
        &["resp.rs", "xrc.rs", "eth/rx.rs", "eth/switch.rs"],
    ),
    (
        "requester",
        &[
            "req.rs",
            "mcast.rs",
            "ud.rs",
            "dc.rs",
            "uc.rs",
            "eth/tx.rs",
            "fast.rs",
        ],
    ),
    ("send queue", &["sq.rs", "mmio.rs"]),
    (
        "API",
        &[
            "nic/mod.rs",
            "nic/mem.rs",
            "nic/queues.rs",
            "nic/qp.rs",
            "nic/eth.rs",
            "nic/events.rs",
            "nic/mcast.rs",
            "nic/xrc.rs",
            "nic/pacing.rs",
            "lib.rs",
        ],
    ),
];

/// Lines a source file may have without a `Long:` reason.
const MAX_LINES: usize = 800;

/// One use of another file: where, and the path as written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Use {
    from: String,
    to: String,
    line: usize,
    path: String,
}

/// The module path of a file under `src` (`state/mod.rs` -> `["state"]`, `lib.rs` -> `[]`).
fn module_of(file: &str) -> Vec<String> {
    let stem = file.strip_suffix(".rs").expect("a .rs file");
    let mut segs: Vec<String> = stem.split('/').map(str::to_string).collect();
    if segs == ["lib"] || segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    segs
}

/// The code of a Rust source as tokens (identifiers, `::` and single punctuation) with
/// their line numbers; comments, string, byte-string and char literals are dropped.
fn tokens(src: &str) -> Vec<(String, usize)> {
    let b = src.as_bytes();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        line += usize::from(b[i] == b'\n');
                        i += 1;
                    }
                }
            }
            b'r' | b'b' if raw_string_at(b, i).is_some() => {
                let (hashes, start) = raw_string_at(b, i).expect("checked");
                let end = [b"\"".as_slice(), &vec![b'#'; hashes]].concat();
                i = start;
                while i < b.len() && !b[i..].starts_with(&end) {
                    line += usize::from(b[i] == b'\n');
                    i += 1;
                }
                i += end.len();
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    line += usize::from(b[i] == b'\n');
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
                let close = b[i + 1..]
                    .iter()
                    .take(12)
                    .position(|&x| x == b'\'')
                    .filter(|&p| p == 1 || b[i + 1] == b'\\');
                i += close.map_or(1, |p| p + 2);
            }
            b':' if b.get(i + 1) == Some(&b':') => {
                out.push(("::".to_string(), line));
                i += 2;
            }
            _ if ident(c) => {
                let start = i;
                while i < b.len() && ident(b[i]) {
                    i += 1;
                }
                out.push((src[start..i].to_string(), line));
            }
            _ if c.is_ascii_whitespace() => i += 1,
            _ => {
                out.push(((c as char).to_string(), line));
                i += 1;
            }
        }
    }
    out
}

/// If a raw (byte) string starts at `i` (`r"`, `r#"`, `br"`, ...): its `#` count and where
/// its text starts.
fn raw_string_at(b: &[u8], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i + usize::from(b[i] == b'b');
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&x| x == b'#').count();
    (b.get(j + hashes) == Some(&b'"')).then_some((hashes, j + hashes + 1))
}

/// The paths of a `use` tree starting at token `i` (after `use`), up to its `;`: each as its
/// segments (`{a, b::c}` expanded; `as` renames, `*` and `self` ends dropped).
fn use_tree(t: &[(String, usize)], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    while *i < t.len() {
        match t[*i].0.as_str() {
            "{" => {
                *i += 1;
                loop {
                    use_tree(t, i, &path, out);
                    match t.get(*i).map(|x| x.0.as_str()) {
                        Some(",") => *i += 1,
                        _ => break,
                    }
                    if t.get(*i).is_some_and(|x| x.0 == "}") {
                        break;
                    }
                }
                *i += 1; // the `}`
                return;
            }
            "::" => *i += 1,
            "," | "}" | ";" => break,
            "as" => *i += 2,
            "*" | "self" if !path.is_empty() => *i += 1,
            seg => {
                path.push(seg.to_string());
                *i += 1;
            }
        }
    }
    out.push(path);
}

/// Every path of `src` (the file `file`) into the crate, as a module path from the crate
/// root, with its line and the path as written. A `use` path that starts with a module the
/// file declares (`mod x;` ... `use x::Y;`, in either order) is that module's.
fn paths_of(file: &str, src: &str) -> Vec<(Vec<String>, usize, String)> {
    let t = tokens(src);
    let here = module_of(file);
    // Inline modules (`mod tests { .. }`) open a scope of their own: (path, depth).
    let mut scopes: Vec<(Vec<String>, usize)> = vec![(here.clone(), 0)];
    let mut depth = 0;
    let mut declared: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    let mut out = Vec::new();
    // `use` paths starting with a plain name, kept until every `mod` of the file is known.
    let mut bare = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let scope = scopes.last().expect("the file's scope").0.clone();
        match t[i].0.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if scopes
                    .last()
                    .is_some_and(|s| s.1 == depth + 1 && scopes.len() > 1)
                {
                    scopes.pop();
                }
            }
            "mod" if t.get(i + 2).is_some_and(|x| x.0 == ";" || x.0 == "{") => {
                let name = t[i + 1].0.clone();
                declared
                    .entry(scope.clone())
                    .or_default()
                    .insert(name.clone());
                if t[i + 2].0 == "{" {
                    let mut inner = scope.clone();
                    inner.push(name);
                    depth += 1;
                    scopes.push((inner, depth));
                }
                i += 3;
                continue;
            }
            "use" => {
                let line = t[i].1;
                i += 1;
                let mut paths = Vec::new();
                use_tree(&t, &mut i, &[], &mut paths);
                for p in paths {
                    let written = p.join("::");
                    match p.first().map(String::as_str) {
                        Some("crate" | "super" | "self") => {
                            if let Some(abs) = resolve(&scope, &p) {
                                out.push((abs, line, written));
                            }
                        }
                        Some(_) => bare.push((scope.clone(), p, line, written)),
                        None => {}
                    }
                }
                continue;
            }
            "crate" | "super" | "self" if t.get(i + 1).is_some_and(|x| x.0 == "::") => {
                let line = t[i].1;
                let mut p = vec![t[i].0.clone()];
                let mut j = i + 1;
                while t.get(j).is_some_and(|x| x.0 == "::")
                    && t.get(j + 1)
                        .is_some_and(|x| x.0.chars().all(|c| c.is_alphanumeric() || c == '_'))
                {
                    p.push(t[j + 1].0.clone());
                    j += 2;
                }
                if let Some(abs) = resolve(&scope, &p) {
                    out.push((abs, line, p.join("::")));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    for (scope, p, line, written) in bare {
        // Anything else (`std`, `libc`, a type in scope) is outside the crate's files.
        if declared.get(&scope).is_some_and(|d| d.contains(&p[0])) {
            let mut abs = scope;
            abs.extend(p);
            out.push((abs, line, written));
        }
    }
    out
}

/// A path starting with `crate`, `super` or `self`, seen from module `scope`, as segments from
/// the crate root.
fn resolve(scope: &[String], p: &[String]) -> Option<Vec<String>> {
    let mut abs = scope.to_vec();
    let mut rest = p;
    match p.first()?.as_str() {
        "crate" => {
            abs.clear();
            rest = &p[1..];
        }
        _ => {
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "super" => {
                        abs.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
    }
    abs.extend(rest.iter().cloned());
    Some(abs)
}

/// The file a module path names: the longest prefix that is a file's module.
fn file_of(abs: &[String], modules: &BTreeMap<Vec<String>, String>) -> String {
    (0..=abs.len())
        .rev()
        .find_map(|n| modules.get(&abs[..n]))
        .cloned()
        .expect("the crate root is a module")
}

/// Every use of one file by another in `sources` (file -> text).
fn uses(sources: &BTreeMap<String, String>) -> Vec<Use> {
    let modules: BTreeMap<Vec<String>, String> =
        sources.keys().map(|f| (module_of(f), f.clone())).collect();
    let mut out = BTreeSet::new();
    for (file, src) in sources {
        for (abs, line, path) in paths_of(file, src) {
            let to = file_of(&abs, &modules);
            if &to != file {
                out.insert(Use {
                    from: file.clone(),
                    to,
                    line,
                    path,
                });
            }
        }
    }
    out.into_iter().collect()
}

/// What is wrong with the layout of `sources` under `layers`: files without a layer, uses
/// that point up, and import cycles (each with the uses that close it).
fn violations(sources: &BTreeMap<String, String>, layers: &[(&str, &[&str])]) -> Vec<String> {
    let layer: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(n, (_, files))| files.iter().map(move |f| (*f, n)))
        .collect();
    let mut bad = Vec::new();
    for f in sources.keys() {
        if !layer.contains_key(f.as_str()) {
            bad.push(format!(
                "{f} has no layer: add it to LAYERS and to docs/model.md"
            ));
        }
    }
    for f in layer.keys() {
        if !sources.contains_key(*f) {
            bad.push(format!("{f} is in LAYERS but not in the source"));
        }
    }
    let uses = uses(sources);
    for u in &uses {
        let (Some(&a), Some(&b)) = (layer.get(u.from.as_str()), layer.get(u.to.as_str())) else {
            continue;
        };
        if b > a {
            bad.push(format!(
                "upward: {}:{} ({}) uses `{}` of {} ({})",
                u.from, u.line, layers[a].0, u.path, u.to, layers[b].0
            ));
        }
    }
    for cycle in cycles(&uses) {
        // One use per pair of files: the first, by line.
        let mut pairs = BTreeMap::new();
        for u in uses
            .iter()
            .filter(|u| cycle.contains(&u.from) && cycle.contains(&u.to))
        {
            pairs.entry((&u.from, &u.to)).or_insert(u);
        }
        let inside: Vec<String> = pairs
            .values()
            .map(|u| format!("{}:{} -> {} (`{}`)", u.from, u.line, u.to, u.path))
            .collect();
        bad.push(format!(
            "import cycle through {}: {}",
            cycle.iter().cloned().collect::<Vec<_>>().join(", "),
            inside.join("; ")
        ));
    }
    bad
}

/// The strongly connected sets of more than one file (Tarjan).
fn cycles(uses: &[Use]) -> Vec<BTreeSet<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for u in uses {
        next.entry(&u.from).or_default().push(&u.to);
        next.entry(&u.to).or_default();
    }
    struct Tarjan<'a> {
        next: &'a BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for &w in &self.next[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    self.low.insert(v, self.low[v].min(self.low[w]));
                } else if self.stack.contains(&w) {
                    self.low.insert(v, self.low[v].min(self.index[w]));
                }
            }
            if self.low[v] == self.index[v] {
                let mut set = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    set.insert(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    self.found.push(set);
                }
            }
        }
    }
    let mut t = Tarjan {
        next: &next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for &v in next.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.found
}

/// Every `.rs` file under `dir`, by its path relative to `dir` (with `/`).
fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in fs::read_dir(dir).expect("a readable directory") {
            let p: PathBuf = e.expect("a directory entry").path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(root).expect("under the root");
                let rel = rel.to_string_lossy().replace('\\', "/");
                out.insert(rel, fs::read_to_string(&p).expect("a UTF-8 source"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn hw() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_model_file_imports_only_its_layer_and_below_without_cycles() {
    let sources = read_tree(&hw().join("src"));
    let bad = violations(&sources, LAYERS);
    assert!(
        bad.is_empty(),
        "hw/src breaks its layout (docs/model.md, \"Code layout\"):\n{}",
        bad.join("\n")
    );
    // The reading is not vacuous: the model's files do name each other.
    assert!(uses(&sources).len() > 100);
}

#[test]
fn the_checker_finds_an_upward_use_a_cycle_and_a_file_without_a_layer() {
    let src = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(f, s)| (f.to_string(), s.to_string()))
            .collect()
    };
    let layers: &[(&str, &[&str])] = &[
        ("low", &["lib.rs", "a.rs", "b/mod.rs", "b/c.rs"]),
        ("high", &["d.rs"]),
    ];
    // Allowed: down, sideways without a cycle, a child re-exported by its parent, paths in
    // comments and strings, an inline test module's `super::*`.
    let fine = src(&[
        ("lib.rs", "mod a;\nmod b;\nmod d;\n"),
        (
            "a.rs",
            "use crate::b::c::X; // crate::d\nfn f() { let s = \"crate::d::Y\"; }\n",
        ),
        ("b/mod.rs", "mod c;\npub(crate) use c::X;\n"),
        (
            "b/c.rs",
            "pub struct X;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
        (
            "d.rs",
            "use crate::{a::f, b::X};\nfn g() { crate::b::c::X; }\n",
        ),
    ]);
    assert_eq!(violations(&fine, layers), Vec::<String>::new());
    let broken = src(&[
        ("lib.rs", "mod a;\nmod b;\nmod d;\nmod e;\n"),
        ("a.rs", "fn f() { crate::d::g(); }\n"),
        ("b/mod.rs", "pub(crate) use c::X;\nmod c;\n"),
        ("b/c.rs", "use crate::b::Y;\n"),
        ("d.rs", "\n"),
        ("e.rs", "\n"),
    ]);
    let bad = violations(&broken, layers);
    assert!(
        bad.iter().any(|b| b.starts_with("e.rs has no layer")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|b| b.starts_with("upward: a.rs:1 (low) uses `crate::d::g` of d.rs")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|b| b.starts_with("import cycle through b/c.rs, b/mod.rs")),
        "{bad:?}"
    );
}

#[test]
fn docs_list_every_model_file_in_its_layer() {
    let doc = fs::read_to_string(hw().join("../docs/model.md")).expect("docs/model.md");
    let section = doc
        .split("\n## Code layout")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/model.md has a \"Code layout\" section");
    for (name, files) in LAYERS {
        let row = section
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no row for layer \"{name}\" in docs/model.md"));
        for f in *files {
            assert!(
                row.contains(&format!("`{f}`")),
                "docs/model.md's row for \"{name}\" does not list `{f}`"
            );
        }
    }
}

#[test]
fn no_model_file_is_over_800_lines_without_a_reason() {
    let mut long = Vec::new();
    for dir in ["src", "tests", "benches"] {
        for (file, text) in read_tree(&hw().join(dir)) {
            let lines = text.lines().count();
            let opening = text.lines().take_while(|l| l.starts_with("//"));
            let reason = opening
                .map(|l| {
                    l.trim_start_matches('/')
                        .trim_start_matches('!')
                        .trim_start()
                })
                .any(|l| l.starts_with("Long:"));
            if lines > MAX_LINES && !reason {
                long.push(format!("hw/{dir}/{file}: {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these by what they hold, or give the reason on a `Long:` line of the opening \
         comment:\n{}",
        long.join("\n")
    );
}
