#!/usr/bin/env bash
# The published packages as a crates.io user gets them: `cargo publish --dry-run` of the four
# (packaging and each verification build), then, from the tarballs alone (unpacked outside
# the repository, the unpublished 0.1.0 dependencies patched to their unpacked tarballs as
# crates.io would serve them): mlx5-direct's doctests, and `cargo install` of mlx5-perf,
# run on the model; and `cargo install --path perf` from the repository. Called by .ci/run;
# runs from anywhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(-p mlx5-hw -p mlx5-direct -p mlx5-cpu-bench -p mlx5-perf)
# CI runs on a clean clone; a developer's tree may have uncommitted changes.
dirty=()
[[ ${CI:-} == true ]] || dirty=(--allow-dirty)

timed() {
    local start=$SECONDS
    "$@"
    printf '    (%d s) %s\n' $((SECONDS - start)) "$*"
}

# The dry run serves the packages to each other from a temporary registry, and cargo unpacks
# each into its own source cache (~/.cargo/registry/src) once per version: a second run with
# the same unpublished version would build the first run's sources. Drop those copies.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rm -rf "$cargo_home"/registry/src/*/mlx5-{hw,direct,cpu-bench,perf}-0.1.0 \
    "$cargo_home"/registry/cache/*/mlx5-{hw,direct,cpu-bench,perf}-0.1.0.crate
timed cargo publish --dry-run "${dirty[@]}" "${packages[@]}"
timed cargo package --no-verify "${dirty[@]}" "${packages[@]}"
ls -l target/package/*.crate

# Outside the repository, so cargo does not take the packages for workspace members.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for crate in target/package/mlx5-{hw,direct,cpu-bench,perf}-0.1.0.crate; do
    tar -xzf "$crate" -C "$work"
done
cat >"$work/patch.toml" <<EOF
[patch.crates-io]
mlx5-hw = { path = "$work/mlx5-hw-0.1.0" }
mlx5-direct = { path = "$work/mlx5-direct-0.1.0" }
mlx5-cpu-bench = { path = "$work/mlx5-cpu-bench-0.1.0" }
EOF
# One target directory for what follows (the registry crates build once), removed at the
# end: the release builds of the installs take about 2 GB.
export CARGO_TARGET_DIR=$PWD/target/package-check
trap 'rm -rf "$work" "$CARGO_TARGET_DIR"' EXIT

# mlx5-direct from its tarball: build and doctests, default features and all of them
# (`verbs` needs rdma-core's headers and libclang, which CI installs).
(
    cd "$work/mlx5-direct-0.1.0"
    timed cargo test --doc --config "$work/patch.toml"
    timed cargo test --doc --all-features --config "$work/patch.toml"
)

# cargo install, from the unpacked package and from the repository, into throwaway roots;
# each installed tool runs on the model.
check_tool() {
    local bin=$1/bin/mlx5-perf out
    out=$("$bin" write_lat -n 200)
    [[ $out == *"ON THE MODEL"* ]] || { echo "$out"; return 1; }
    out=$("$bin" explain write --size 8 --inline --mode bf)
    [[ $out == *BlueFlame* ]] || { echo "$out"; return 1; }
    echo "    $bin: write_lat and explain ran on the model"
}
timed cargo install --quiet --path "$work/mlx5-perf-0.1.0" --root "$work/from-package" \
    --config "$work/patch.toml"
check_tool "$work/from-package"
timed cargo install --quiet --path perf --root "$work/from-repo"
check_tool "$work/from-repo"
