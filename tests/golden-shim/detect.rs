// Where rdma-core's `infiniband/mlx5dv.h` is installed, if anywhere.
//
// Shared through `include!` by the build scripts of `mlx5-direct` (which sets
// `cfg(rdma_headers)` so the golden tests run) and `mlx5-golden` (which compiles the C shim
// against the header), so both always reach the same decision.

/// The include directory holding `infiniband/mlx5dv.h`: the directories of the path list in
/// `MLX5_DIRECT_INCLUDE` first, then `/usr/include`. Prints the cargo rerun lines.
///
/// Panics when the header is absent and `MLX5_DIRECT_REQUIRE_GOLDEN=1` (CI sets it), so the
/// golden tests cannot be skipped there unnoticed.
fn rdma_include_dir() -> Option<std::path::PathBuf> {
    println!("cargo::rerun-if-env-changed=MLX5_DIRECT_INCLUDE");
    println!("cargo::rerun-if-env-changed=MLX5_DIRECT_REQUIRE_GOLDEN");
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("MLX5_DIRECT_INCLUDE")
        .map(|list| std::env::split_paths(&list).collect())
        .unwrap_or_default();
    dirs.push("/usr/include".into());
    if let Some(dir) = dirs
        .iter()
        .find(|dir| dir.join("infiniband/mlx5dv.h").is_file())
    {
        println!(
            "cargo::rerun-if-changed={}",
            dir.join("infiniband/mlx5dv.h").display()
        );
        return Some(dir.clone());
    }
    if std::env::var("MLX5_DIRECT_REQUIRE_GOLDEN").as_deref() == Ok("1") {
        panic!(
            "MLX5_DIRECT_REQUIRE_GOLDEN=1 but infiniband/mlx5dv.h is in none of {dirs:?}: \
             install libibverbs-dev (or point MLX5_DIRECT_INCLUDE at rdma-core's include \
             directory) so the golden tests run"
        );
    }
    // Watching the directories that exist (a path that does not exist would rerun this script
    // on every build) notices the header being installed later.
    for dir in dirs.iter().filter(|dir| dir.is_dir()) {
        println!("cargo::rerun-if-changed={}", dir.display());
    }
    None
}
