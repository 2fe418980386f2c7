//! Every Rust snippet of the repository's Markdown (`docs/*.md`, the crates.io READMEs,
//! CHANGELOG.md, ...), compiled and run as a doctest by `cargo test --workspace`: `build.rs`
//! copies each ```` ```rust ```` block into a doc comment of an item of its own, named
//! after its file and line (`docs_hardware_md_45`), so a failing snippet names where it is.
//! A snippet that names `backend::verbs`, `tokio` or `serde` runs only with that feature
//! (`cargo test --workspace --all-features` runs them all). Blocks without the `rust` tag
//! (command lines, tables the tool prints) are not Rust and are left alone.
//!
//! README.md is not here: the library's own doctests include it (`src/lib.rs`), so it is
//! checked from the published package too.

#![deny(missing_docs)]

include!(concat!(env!("OUT_DIR"), "/snippets.rs"));
