//! The public API of a library as a sorted list of lines, one per item, from rustdoc's JSON
//! output: what `tests/public_api.rs` compares with the checked-in lists beside this
//! package (`api/*.txt`), so that a change to the public API fails `cargo test` until the
//! list is regenerated and the change is a visible diff in review (README.md, "Versions and
//! the public API").
//!
//! A line names an item by the path a user writes (the first public path that reaches it,
//! never the private module it is defined in, so moving code between private modules changes
//! nothing) with its signature: functions and methods with their generics, arguments, return
//! type and `const` / `unsafe` / `async`; struct fields and enum variants with their types;
//! constants with their values; trait implementations, including the auto traits `Send`,
//! `Sync`, `Unpin`, `UnwindSafe` and `RefUnwindSafe` (losing one breaks users). Blanket
//! implementations (`From<T> for T`, ...) are left out: they follow from the rest. Types
//! from other crates are named `crate::Name` (the standard library's by their last two
//! segments, `sync::Arc`), so a dependency reorganising its private modules changes nothing
//! either.
//!
//! rustdoc's JSON format is unstable: [`rustdoc_json`] asks the stable toolchain for it with
//! `RUSTC_BOOTSTRAP=1`, and the renderer reads it as untyped JSON, printing what it does not
//! know as compact JSON rather than failing. A new toolchain may change the lines' spelling;
//! regenerate the lists then, in a commit of its own.

#![deny(missing_docs)]

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Runs `cargo rustdoc` for `package`'s library with `features` (comma-separated; empty for
/// none beyond the defaults, `no_default` to leave those out) into `target_dir`, and returns
/// the JSON file's path.
pub fn rustdoc_json(
    workspace: &Path,
    target_dir: &Path,
    package: &str,
    features: &str,
    no_default: bool,
) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace)
        .args(["rustdoc", "--quiet", "--lib", "-p", package])
        .arg("--target-dir")
        .arg(target_dir)
        .env("RUSTC_BOOTSTRAP", "1")
        // The outer `cargo test`'s flags are for the outer build.
        .env_remove("RUSTDOCFLAGS")
        .env_remove("RUSTFLAGS");
    if !features.is_empty() {
        cmd.args(["--features", features]);
    }
    if no_default {
        cmd.arg("--no-default-features");
    }
    cmd.args(["--", "-Z", "unstable-options", "--output-format", "json"]);
    let out = cmd
        .output()
        .map_err(|e| format!("running cargo rustdoc: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo rustdoc -p {package} --features '{features}' failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(target_dir
        .join("doc")
        .join(format!("{}.json", package.replace('-', "_"))))
}

/// The public API of the crate in rustdoc JSON `doc`: sorted lines, one per item.
pub fn public_api(doc: &Value) -> Result<Vec<String>, String> {
    let lister = Lister::new(doc)?;
    let mut lines = BTreeSet::new();
    for (id, path) in &lister.order {
        lister.item(*id, path, &mut lines);
    }
    for (path, source) in &lister.external {
        lines.insert(format!("pub use {path} = {source}"));
    }
    Ok(lines.into_iter().collect())
}

/// The crate's index and the public path of each of its items.
struct Lister<'a> {
    index: &'a serde_json::Map<String, Value>,
    paths: &'a serde_json::Map<String, Value>,
    /// Each reachable item's first public path (breadth first: the shortest).
    public: HashMap<u64, String>,
    /// The items in the order they were reached, with that path.
    order: Vec<(u64, String)>,
    /// Re-exports of items of other crates: the path here and the item there.
    external: Vec<(String, String)>,
}

/// The auto traits whose implementations are part of a type's API.
const AUTO_TRAITS: [&str; 5] = ["Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe"];

impl<'a> Lister<'a> {
    fn new(doc: &'a Value) -> Result<Self, String> {
        let index = doc["index"].as_object().ok_or("no index")?;
        let paths = doc["paths"].as_object().ok_or("no paths")?;
        let root = doc["root"].as_u64().ok_or("no root")?;
        let crate_name = index
            .get(&root.to_string())
            .and_then(|r| r["name"].as_str())
            .ok_or("no root module")?;
        let mut lister = Lister {
            index,
            paths,
            public: HashMap::new(),
            order: Vec::new(),
            external: Vec::new(),
        };
        let mut queue = VecDeque::from([(root, crate_name.to_string())]);
        while let Some((id, path)) = queue.pop_front() {
            let Some(item) = lister.get(id) else { continue };
            let Some(module) = item["inner"].get("module") else {
                if let std::collections::hash_map::Entry::Vacant(e) = lister.public.entry(id) {
                    e.insert(path.clone());
                    lister.order.push((id, path));
                }
                continue;
            };
            if lister.public.insert(id, path.clone()).is_some() {
                continue;
            }
            for child in ids(&module["items"]) {
                let Some(item) = lister.get(child) else {
                    continue;
                };
                if item["visibility"] != "public" {
                    continue;
                }
                if let Some(u) = item["inner"].get("use") {
                    let name = u["name"].as_str().unwrap_or("_");
                    let target = u["id"].as_u64();
                    match target.filter(|t| lister.get(*t).is_some()) {
                        Some(t) if u["is_glob"] == true => queue.push_back((t, path.clone())),
                        Some(t) => queue.push_back((t, format!("{path}::{name}"))),
                        None => lister.external.push((
                            format!("{path}::{name}"),
                            u["source"].as_str().unwrap_or("?").to_string(),
                        )),
                    }
                } else if let Some(name) = item["name"].as_str() {
                    queue.push_back((child, format!("{path}::{name}")));
                }
            }
        }
        Ok(lister)
    }

    fn get(&self, id: u64) -> Option<&'a Value> {
        self.index.get(&id.to_string())
    }

    /// The lines of one reachable item at `path`.
    fn item(&self, id: u64, path: &str, out: &mut BTreeSet<String>) {
        let Some(item) = self.get(id) else { return };
        let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        let attrs = non_exhaustive(item);
        match kind.as_str() {
            "module" => {
                out.insert(format!("mod {path}"));
            }
            "function" => {
                out.insert(self.function(path, inner));
            }
            "constant" => {
                // The evaluated value where rustdoc has it, else the expression as written.
                let c = &inner["const"];
                let value = c["value"].as_str().or(c["expr"].as_str()).unwrap_or("_");
                out.insert(format!(
                    "const {path}: {} = {value}",
                    self.ty(&inner["type"])
                ));
            }
            "static" => {
                let m = if inner["is_mutable"] == true {
                    "mut "
                } else {
                    ""
                };
                out.insert(format!("static {m}{path}: {}", self.ty(&inner["type"])));
            }
            "type_alias" => {
                out.insert(format!(
                    "type {path}{} = {}",
                    self.generics(&inner["generics"]),
                    self.ty(&inner["type"])
                ));
            }
            "macro" | "proc_macro" => {
                out.insert(format!("macro {path}!"));
            }
            "struct" => {
                let g = self.generics(&inner["generics"]);
                let kind = &inner["kind"];
                if let Some(fields) = kind.get("tuple") {
                    let fields: Vec<String> = fields
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|f| match f.as_u64().and_then(|f| self.get(f)) {
                            Some(f) if f["visibility"] == "public" => {
                                self.ty(&f["inner"]["struct_field"])
                            }
                            _ => "_".to_string(),
                        })
                        .collect();
                    out.insert(format!("{attrs}struct {path}{g}({})", fields.join(", ")));
                } else if let Some(plain) = kind.get("plain") {
                    let hidden = if plain["has_stripped_fields"] == true {
                        " { .. }"
                    } else {
                        ""
                    };
                    out.insert(format!("{attrs}struct {path}{g}{hidden}"));
                    self.fields(path, &plain["fields"], out);
                } else {
                    out.insert(format!("{attrs}struct {path}{g};"));
                }
                self.impls(path, &inner["impls"], out);
            }
            "union" => {
                out.insert(format!("union {path}{}", self.generics(&inner["generics"])));
                self.fields(path, &inner["fields"], out);
                self.impls(path, &inner["impls"], out);
            }
            "enum" => {
                out.insert(format!(
                    "{attrs}enum {path}{}",
                    self.generics(&inner["generics"])
                ));
                for v in ids(&inner["variants"]) {
                    self.variant(path, v, out);
                }
                self.impls(path, &inner["impls"], out);
            }
            "trait" => {
                let unsafety = if inner["is_unsafe"] == true {
                    "unsafe "
                } else {
                    ""
                };
                out.insert(format!(
                    "pub {unsafety}trait {path}{}{}",
                    self.generics(&inner["generics"]),
                    self.bounds_after_colon(&inner["bounds"])
                ));
                for member in ids(&inner["items"]) {
                    self.member(path, member, out);
                }
            }
            _ => {
                out.insert(format!("{kind} {path}"));
            }
        }
    }

    fn fields(&self, path: &str, fields: &Value, out: &mut BTreeSet<String>) {
        for f in ids(fields) {
            let Some(f) = self.get(f) else { continue };
            if f["visibility"] == "public" {
                out.insert(format!(
                    "field {path}.{}: {}",
                    f["name"].as_str().unwrap_or("?"),
                    self.ty(&f["inner"]["struct_field"])
                ));
            }
        }
    }

    fn variant(&self, path: &str, id: u64, out: &mut BTreeSet<String>) {
        let Some(v) = self.get(id) else { return };
        let name = v["name"].as_str().unwrap_or("?");
        let kind = &v["inner"]["variant"]["kind"];
        let shape = if let Some(fields) = kind.get("tuple") {
            let types: Vec<String> = fields
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| match f.as_u64().and_then(|f| self.get(f)) {
                    Some(f) => self.ty(&f["inner"]["struct_field"]),
                    None => "_".to_string(),
                })
                .collect();
            format!("({})", types.join(", "))
        } else if let Some(s) = kind.get("struct") {
            let fields: Vec<String> = ids(&s["fields"])
                .filter_map(|f| self.get(f))
                .map(|f| {
                    format!(
                        "{}: {}",
                        f["name"].as_str().unwrap_or("?"),
                        self.ty(&f["inner"]["struct_field"])
                    )
                })
                .collect();
            let more = if s["has_stripped_fields"] == true {
                ", .."
            } else {
                ""
            };
            format!(" {{ {}{more} }}", fields.join(", "))
        } else {
            String::new()
        };
        let disc = v["inner"]["variant"]["discriminant"]["value"]
            .as_str()
            .map(|d| format!(" = {d}"))
            .unwrap_or_default();
        out.insert(format!(
            "{}variant {path}::{name}{shape}{disc}",
            non_exhaustive(v)
        ));
    }

    /// Inherent methods and constants, and trait implementations, of the type at `path`.
    fn impls(&self, path: &str, impls: &Value, out: &mut BTreeSet<String>) {
        for id in ids(impls) {
            let Some(imp) = self.get(id).and_then(|i| i["inner"].get("impl")) else {
                continue;
            };
            if !imp["blanket_impl"].is_null() {
                continue;
            }
            let generics = self.generics(&imp["generics"]);
            let wheres = self.where_clause(&imp["generics"]);
            let for_ty = self.ty(&imp["for"]);
            match imp["trait"].as_object() {
                Some(tr) => {
                    let name = tr["path"].as_str().unwrap_or("?");
                    let last = name.rsplit("::").next().unwrap_or(name);
                    if imp["is_synthetic"] == true && !AUTO_TRAITS.contains(&last) {
                        continue;
                    }
                    let neg = if imp["is_negative"] == true { "!" } else { "" };
                    let unsafety = if imp["is_unsafe"] == true {
                        "unsafe "
                    } else {
                        ""
                    };
                    out.insert(format!(
                        "{unsafety}impl{generics} {neg}{} for {for_ty}{wheres}",
                        self.path_of(&Value::Object(tr.clone()))
                    ));
                }
                None => {
                    let head = format!("impl{generics} {for_ty}{wheres}");
                    for member in ids(&imp["items"]) {
                        let Some(m) = self.get(member) else { continue };
                        if m["visibility"] != "public" {
                            continue;
                        }
                        let mut one = BTreeSet::new();
                        self.member(path, member, &mut one);
                        for line in one {
                            out.insert(format!("{line}  [{head}]"));
                        }
                    }
                }
            }
        }
    }

    /// A method, associated constant or associated type at `owner::name`.
    fn member(&self, owner: &str, id: u64, out: &mut BTreeSet<String>) {
        let Some(m) = self.get(id) else { return };
        let name = m["name"].as_str().unwrap_or("?");
        let path = format!("{owner}::{name}");
        let inner = &m["inner"];
        if let Some(f) = inner.get("function") {
            out.insert(self.function(&path, f));
        } else if let Some(c) = inner.get("assoc_const") {
            let value = c["value"]
                .as_str()
                .map(|v| format!(" = {v}"))
                .unwrap_or_default();
            out.insert(format!("const {path}: {}{value}", self.ty(&c["type"])));
        } else if let Some(t) = inner.get("assoc_type") {
            let value = match t.get("type") {
                Some(ty) if !ty.is_null() => format!(" = {}", self.ty(ty)),
                _ => String::new(),
            };
            out.insert(format!(
                "type {path}{}{}{value}",
                self.generics(&t["generics"]),
                self.bounds_after_colon(&t["bounds"])
            ));
        }
    }

    fn function(&self, path: &str, f: &Value) -> String {
        let header = &f["header"];
        let mut quals = String::new();
        for (key, word) in [
            ("is_const", "const "),
            ("is_async", "async "),
            ("is_unsafe", "unsafe "),
        ] {
            if header[key] == true {
                quals.push_str(word);
            }
        }
        if let Some(abi) = header["abi"].as_str().filter(|a| *a != "Rust") {
            quals.push_str(&format!("extern {abi:?} "));
        } else if let Some(abi) = header["abi"].as_object() {
            quals.push_str(&format!("extern {} ", Value::Object(abi.clone())));
        }
        format!(
            "{quals}fn {path}{}{}{}",
            self.generics(&f["generics"]),
            self.sig(&f["sig"]),
            self.where_clause(&f["generics"])
        )
    }

    fn sig(&self, sig: &Value) -> String {
        let inputs: Vec<String> = sig["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|pair| {
                let name = pair[0].as_str().unwrap_or("_");
                let ty = &pair[1];
                match (name, self.ty(ty).as_str()) {
                    ("self", "Self") => "self".to_string(),
                    ("self", "&Self") => "&self".to_string(),
                    ("self", "&mut Self") => "&mut self".to_string(),
                    (_, t) => format!("{name}: {t}"),
                }
            })
            .collect();
        let out = match &sig["output"] {
            Value::Null => String::new(),
            ty => format!(" -> {}", self.ty(ty)),
        };
        format!("({}){out}", inputs.join(", "))
    }

    fn generics(&self, g: &Value) -> String {
        let params: Vec<String> = g["params"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["kind"]["type"]["is_synthetic"] != true)
            .map(|p| {
                let name = p["name"].as_str().unwrap_or("?");
                let kind = &p["kind"];
                if let Some(l) = kind.get("lifetime") {
                    let outlives: Vec<&str> = l["outlives"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    match outlives.is_empty() {
                        true => name.to_string(),
                        false => format!("{name}: {}", outlives.join(" + ")),
                    }
                } else if let Some(t) = kind.get("type") {
                    let default = match t.get("default") {
                        Some(d) if !d.is_null() => format!(" = {}", self.ty(d)),
                        _ => String::new(),
                    };
                    format!("{name}{}{default}", self.bounds_after_colon(&t["bounds"]))
                } else if let Some(c) = kind.get("const") {
                    format!("const {name}: {}", self.ty(&c["type"]))
                } else {
                    kind.to_string()
                }
            })
            .collect();
        match params.is_empty() {
            true => String::new(),
            false => format!("<{}>", params.join(", ")),
        }
    }

    fn where_clause(&self, g: &Value) -> String {
        let preds: Vec<String> = g["where_predicates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                if let Some(b) = p.get("bound_predicate") {
                    format!(
                        "{}{}",
                        self.ty(&b["type"]),
                        self.bounds_after_colon(&b["bounds"])
                    )
                } else {
                    p.to_string()
                }
            })
            .collect();
        match preds.is_empty() {
            true => String::new(),
            false => format!(" where {}", preds.join(", ")),
        }
    }

    fn bounds_after_colon(&self, bounds: &Value) -> String {
        let list = self.bounds(bounds);
        match list.is_empty() {
            true => String::new(),
            false => format!(": {list}"),
        }
    }

    fn bounds(&self, bounds: &Value) -> String {
        let parts: Vec<String> = bounds
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| {
                if let Some(t) = b.get("trait_bound") {
                    let modifier = match t["modifier"].as_str() {
                        Some("maybe") => "?",
                        Some("maybe_const") => "~const ",
                        _ => "",
                    };
                    format!("{modifier}{}", self.path_of(&t["trait"]))
                } else if let Some(l) = b.get("outlives").and_then(Value::as_str) {
                    l.to_string()
                } else {
                    b.to_string()
                }
            })
            .collect();
        parts.join(" + ")
    }

    /// A path with its generic arguments: the public path of an item of this crate, the
    /// short name of another crate's.
    fn path_of(&self, p: &Value) -> String {
        let written = p["path"].as_str().unwrap_or("?");
        let id = p["id"].as_u64();
        let name = match id.and_then(|id| self.public.get(&id)) {
            Some(public) => public.clone(),
            None => match id.and_then(|id| self.paths.get(&id.to_string())) {
                Some(summary) if summary["crate_id"] != 0 => {
                    let segs: Vec<&str> = summary["path"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    match segs.as_slice() {
                        ["core" | "alloc" | "std", .., m, last] => format!("{m}::{last}"),
                        [first, .., last] => format!("{first}::{last}"),
                        [only] => only.to_string(),
                        [] => written.to_string(),
                    }
                }
                _ => written.rsplit("::").next().unwrap_or(written).to_string(),
            },
        };
        format!("{name}{}", self.args(&p["args"]))
    }

    fn args(&self, args: &Value) -> String {
        if let Some(a) = args.get("angle_bracketed") {
            let mut parts: Vec<String> = a["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|arg| {
                    if let Some(l) = arg.get("lifetime").and_then(Value::as_str) {
                        l.to_string()
                    } else if let Some(t) = arg.get("type") {
                        self.ty(t)
                    } else if let Some(c) = arg.get("const") {
                        c["expr"].as_str().unwrap_or("_").to_string()
                    } else {
                        arg.to_string()
                    }
                })
                .collect();
            for c in a["constraints"].as_array().into_iter().flatten() {
                let name = c["name"].as_str().unwrap_or("?");
                let binding = &c["binding"];
                if let Some(t) = binding.get("equality").and_then(|e| e.get("type")) {
                    parts.push(format!("{name} = {}", self.ty(t)));
                } else if let Some(b) = binding.get("constraint") {
                    parts.push(format!("{name}: {}", self.bounds(b)));
                } else {
                    parts.push(c.to_string());
                }
            }
            match parts.is_empty() {
                true => String::new(),
                false => format!("<{}>", parts.join(", ")),
            }
        } else if let Some(p) = args.get("parenthesized") {
            let inputs: Vec<String> = p["inputs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| self.ty(t))
                .collect();
            let out = match &p["output"] {
                Value::Null => String::new(),
                t => format!(" -> {}", self.ty(t)),
            };
            format!("({}){out}", inputs.join(", "))
        } else if args.is_null() {
            String::new()
        } else {
            args.to_string()
        }
    }

    /// A type as Rust writes it.
    fn ty(&self, t: &Value) -> String {
        let Some((kind, v)) = t.as_object().and_then(|o| o.iter().next()) else {
            return t
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| t.to_string());
        };
        match kind.as_str() {
            "resolved_path" => self.path_of(v),
            "generic" | "primitive" => v.as_str().unwrap_or("?").to_string(),
            "borrowed_ref" => {
                let lifetime = v["lifetime"]
                    .as_str()
                    .map(|l| format!("{l} "))
                    .unwrap_or_default();
                let m = if v["is_mutable"] == true { "mut " } else { "" };
                format!("&{lifetime}{m}{}", self.ty(&v["type"]))
            }
            "raw_pointer" => {
                let m = if v["is_mutable"] == true {
                    "mut"
                } else {
                    "const"
                };
                format!("*{m} {}", self.ty(&v["type"]))
            }
            "slice" => format!("[{}]", self.ty(v)),
            "array" => format!(
                "[{}; {}]",
                self.ty(&v["type"]),
                v["len"].as_str().unwrap_or("_")
            ),
            "tuple" => {
                let parts: Vec<String> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|t| self.ty(t))
                    .collect();
                match parts.len() {
                    1 => format!("({},)", parts[0]),
                    _ => format!("({})", parts.join(", ")),
                }
            }
            "impl_trait" => format!("impl {}", self.bounds(v)),
            "dyn_trait" => {
                let mut parts: Vec<String> = v["traits"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| self.path_of(&p["trait"]))
                    .collect();
                if let Some(l) = v["lifetime"].as_str() {
                    parts.push(l.to_string());
                }
                format!("dyn {}", parts.join(" + "))
            }
            "function_pointer" => {
                let header = &v["header"];
                let unsafety = if header["is_unsafe"] == true {
                    "unsafe "
                } else {
                    ""
                };
                let abi = match header["abi"].as_str() {
                    Some("Rust") | None => String::new(),
                    Some(abi) => format!("extern {abi:?} "),
                };
                format!("{unsafety}{abi}fn{}", self.sig(&v["sig"]))
            }
            "qualified_path" => {
                let self_ty = self.ty(&v["self_type"]);
                let name = v["name"].as_str().unwrap_or("?");
                match v["trait"].as_object() {
                    Some(tr) => format!(
                        "<{self_ty} as {}>::{name}{}",
                        self.path_of(&Value::Object(tr.clone())),
                        self.args(&v["args"])
                    ),
                    None => format!("{self_ty}::{name}{}", self.args(&v["args"])),
                }
            }
            "infer" => "_".to_string(),
            _ => t.to_string(),
        }
    }
}

/// `#[non_exhaustive] ` when the item has it (adding to such an item is not breaking).
fn non_exhaustive(item: &Value) -> &'static str {
    let has = item["attrs"].as_array().into_iter().flatten().any(|a| {
        a.as_str() == Some("non_exhaustive")
            || a.get("other")
                .and_then(Value::as_str)
                .is_some_and(|s| s.contains("non_exhaustive"))
            || a.get("non_exhaustive").is_some()
    });
    if has {
        "#[non_exhaustive] "
    } else {
        ""
    }
}

/// The ids of a JSON array of ids.
fn ids(v: &Value) -> impl Iterator<Item = u64> + '_ {
    v.as_array().into_iter().flatten().filter_map(Value::as_u64)
}
