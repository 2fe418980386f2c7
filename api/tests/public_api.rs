//! The public API of each published library against its checked-in list (`api/*.txt`).
//!
//! A difference fails with the lines removed (`-`) and added (`+`). If the change is meant,
//! regenerate the lists and commit them with the change (and a CHANGELOG.md entry if a
//! line was removed or changed: that is a breaking change):
//!
//! ```text
//! MLX5_API_BLESS=1 cargo test -p mlx5-api-check
//! ```
//!
//! `mlx5-direct.txt` is the crate with every feature but `verbs`; `mlx5-direct+verbs.txt`
//! lists what `verbs` adds. That half needs rdma-core's headers and libclang (rdma-sys runs
//! bindgen); without them it is skipped with a note, unless `MLX5_DIRECT_REQUIRE_GOLDEN=1`
//! (CI) makes that a failure.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use mlx5_api_check::{public_api, rustdoc_json};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("api/ is inside the workspace")
        .to_path_buf()
}

/// A target directory of its own: the outer `cargo test` holds the workspace's.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
        .join("api-check")
}

fn api_of(package: &str, features: &str, no_default: bool) -> BTreeSet<String> {
    let json = rustdoc_json(&workspace(), &target_dir(), package, features, no_default)
        .unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("reading {}: {e}", json.display()));
    let doc: serde_json::Value = serde_json::from_str(&text).expect("rustdoc JSON");
    public_api(&doc)
        .unwrap_or_else(|e| panic!("{package}: {e}"))
        .into_iter()
        .collect()
}

/// Compares `actual` with `api/<file>`, or writes it there under `MLX5_API_BLESS=1`.
/// Returns the difference as text, empty when they agree.
fn check(file: &str, actual: &BTreeSet<String>) -> String {
    let path = workspace().join("api").join(file);
    let mut text: String = actual.iter().map(|l| format!("{l}\n")).collect();
    if text.is_empty() {
        text.push('\n');
    }
    if std::env::var("MLX5_API_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return String::new();
    }
    let expected: BTreeSet<String> = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let mut diff = String::new();
    for line in expected.difference(actual) {
        diff.push_str(&format!("-{line}\n"));
    }
    for line in actual.difference(&expected) {
        diff.push_str(&format!("+{line}\n"));
    }
    match diff.is_empty() {
        true => diff,
        false => format!("api/{file}:\n{diff}"),
    }
}

/// rdma-sys's build needs `infiniband/verbs.h` (and libclang, which the same packages bring).
fn rdma_core_headers() -> bool {
    Path::new("/usr/include/infiniband/verbs.h").is_file()
}

#[test]
fn the_public_api_is_the_checked_in_one() {
    let mut diffs = String::new();
    diffs += &check("mlx5-hw.txt", &api_of("mlx5-hw", "", false));
    diffs += &check("mlx5-cpu-bench.txt", &api_of("mlx5-cpu-bench", "", false));
    let direct = api_of("mlx5-direct", "sim,serde,tokio", false);
    diffs += &check("mlx5-direct.txt", &direct);
    if rdma_core_headers() {
        let all = api_of("mlx5-direct", "sim,serde,tokio,verbs", false);
        let added: BTreeSet<String> = all.difference(&direct).cloned().collect();
        let lost: Vec<&String> = direct.difference(&all).collect();
        assert!(lost.is_empty(), "feature `verbs` removes items: {lost:?}");
        diffs += &check("mlx5-direct+verbs.txt", &added);
    } else if std::env::var("MLX5_DIRECT_REQUIRE_GOLDEN").as_deref() == Ok("1") {
        panic!(
            "MLX5_DIRECT_REQUIRE_GOLDEN=1 but /usr/include/infiniband/verbs.h is missing: \
             the `verbs` half of the API check needs rdma-core's headers \
             (docs/hardware.md, \"Packages\")"
        );
    } else {
        eprintln!(
            "note: api/mlx5-direct+verbs.txt not checked: rdma-core's headers are not \
             installed (docs/hardware.md, \"Packages\")"
        );
    }
    assert!(
        diffs.is_empty(),
        "the public API changed; if that is meant, run `MLX5_API_BLESS=1 cargo test -p \
         mlx5-api-check`, commit the lists, and name any removed or changed line in \
         CHANGELOG.md (a breaking change):\n{diffs}"
    );
}
