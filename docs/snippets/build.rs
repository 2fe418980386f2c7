//! Writes `$OUT_DIR/snippets.rs`: one doc-commented item per ```` ```rust ```` block of the
//! repository's Markdown, under `cfg(doctest)` and the feature the block needs (see lib.rs).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The Markdown files whose snippets are compiled, relative to the workspace root: every
/// `.md` of the root and of docs/, and each package's README. (README.md is the library's
/// own doctest.)
fn sources(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    // docs/ is watched whole (a new file there reruns this); the root only file by file,
    // since watching it would scan target/ on every build.
    println!("cargo::rerun-if-changed={}", root.join("docs").display());
    for dir in [root.to_path_buf(), root.join("docs")] {
        for entry in std::fs::read_dir(&dir).expect("a directory of the workspace") {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_some_and(|e| e == "md") && !path.ends_with("README.md") {
                files.push(path);
            }
        }
    }
    for package in ["hw", "perf", "cpu-bench"] {
        files.push(root.join(package).join("README.md"));
    }
    files.sort();
    files
}

/// The feature a snippet needs, from the items it names.
fn feature(code: &str) -> Option<&'static str> {
    [
        ("backend::verbs", "verbs"),
        ("AsyncCompChannel", "tokio"),
        ("tokio::", "tokio"),
        ("serde", "serde"),
    ]
    .into_iter()
    .find(|(needle, _)| code.contains(needle))
    .map(|(_, feature)| feature)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = String::new();
    let mut count = 0;
    for file in sources(&root) {
        println!("cargo::rerun-if-changed={}", file.display());
        let text = std::fs::read_to_string(&file).expect("a Markdown file of the workspace");
        let name = file
            .strip_prefix(&root)
            .expect("under the root")
            .display()
            .to_string();
        let mut lines = text.lines().enumerate();
        while let Some((at, line)) = lines.next() {
            let indent = line.len() - line.trim_start().len();
            let Some(info) = line.trim_start().strip_prefix("```") else {
                continue;
            };
            let is_rust = info
                .split(',')
                .next()
                .is_some_and(|tag| tag.trim() == "rust");
            let mut code = String::new();
            for (_, body) in lines.by_ref() {
                if body.trim_start().starts_with("```") {
                    break;
                }
                code.push_str(body.get(indent..).unwrap_or(body.trim_start()));
                code.push('\n');
            }
            if !is_rust {
                continue;
            }
            let ident: String = format!("{name}_{}", at + 1)
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            let cfg = match feature(&code) {
                Some(f) => format!("all(doctest, feature = {f:?})"),
                None => "doctest".to_string(),
            };
            let doc = format!("{name}, line {}:\n\n```{info}\n{code}```\n", at + 1);
            writeln!(
                out,
                "#[cfg({cfg})]\n#[allow(non_camel_case_types)]\n#[doc = {doc:?}]\npub struct {ident};\n"
            )
            .expect("writing to a String");
            count += 1;
        }
    }
    println!("cargo::rustc-check-cfg=cfg(doctest)");
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("snippets.rs");
    std::fs::write(&dest, format!("// {count} snippets\n{out}")).expect("writing snippets.rs");
}
