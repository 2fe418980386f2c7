#!/usr/bin/env bash
# docs.rs's build of mlx5-direct (Cargo.toml, [package.metadata.docs.rs]: every feature,
# `verbs` included) on a machine without rdma-core. CI has rdma-core's development packages
# (the golden tests and the `verbs` builds need them), so this step hides them: in a private
# mount namespace (`unshare -m`, as root) empty mounts cover rdma-core's headers and its
# pkg-config files, and pkg-config and libclang are pointed at nothing. Any build step
# that read rdma-core (rdma-sys's build script: pkg-config, then bindgen over the headers)
# fails there. Then:
#   1. `cargo doc --all-features` with docs.rs's flags (`--cfg mlx5_direct_docs`), with
#      warnings as errors; rdma-sys must not appear in the build.
#   2. The feature badges: rustdoc again with `--cfg docsrs` as docs.rs adds it. docs.rs
#      runs nightly, where `feature(doc_cfg)` is allowed; on this stable toolchain
#      RUSTC_BOOTSTRAP=1 allows it for that one rustdoc run, which must show the `verbs`
#      and `tokio` badges. (A stable build without `docsrs` never sees the feature.)
# Its own target directory (target/docsrs) keeps the flags from rebuilding target/debug.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# A private mount namespace: as root, or as a user through a user namespace. Where neither
# is allowed, the headers stay visible and the step relies on its second proof alone: with
# pkg-config and libclang pointed at nothing, rdma-sys (the only reader of rdma-core in
# mlx5-direct's build) must not be built.
if [[ ${1:-} != --hidden && ${1:-} != --visible ]]; then
    for ns in "unshare --mount" "unshare --user --map-root-user --mount"; do
        if $ns --propagation private true 2>/dev/null; then
            exec $ns --propagation private bash "$0" --hidden
        fi
    done
    echo "docsrs: no mount namespace here; rdma-core's files stay visible, pkg-config and libclang are hidden"
    exec bash "$0" --visible
fi

hide=()
[[ $1 == --hidden ]] && hide=(/usr/include/infiniband /usr/include/rdma)
[[ $1 == --hidden ]] && for pc in libibverbs librdmacm; do
    for dir in /usr/lib/*/pkgconfig /usr/lib/pkgconfig /usr/share/pkgconfig; do
        [[ -e $dir/$pc.pc ]] && hide+=("$dir/$pc.pc")
    done
done
for path in "${hide[@]}"; do
    if [[ -d $path ]]; then
        mount -t tmpfs -o ro,size=4k none "$path"
    elif [[ -e $path ]]; then
        mount --bind -o ro /dev/null "$path"
    fi
done
export PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH=/nonexistent LIBCLANG_PATH=/nonexistent
export DOCS_RS=1
# The golden tests' header check (build.rs) must not insist on the headers here.
unset MLX5_DIRECT_REQUIRE_GOLDEN

if pkg-config --exists libibverbs 2>/dev/null ||
    [[ $1 == --hidden && -e /usr/include/infiniband/verbs.h ]]; then
    echo "docsrs: rdma-core is still visible" >&2
    exit 1
fi
echo "docsrs: rdma-core hidden (${hide[*]:-pkg-config and libclang only})"

target=target/docsrs
log=$target/doc.log
mkdir -p "$target"
RUSTFLAGS="--cfg mlx5_direct_docs" RUSTDOCFLAGS="--cfg mlx5_direct_docs -D warnings" \
    cargo doc -p mlx5-direct --all-features --no-deps --target-dir "$target" 2>&1 | tee "$log"
if grep -q 'rdma-sys' "$log" || compgen -G "$target/debug/build/rdma-sys-*" >/dev/null; then
    echo "docsrs: rdma-sys was built" >&2
    exit 1
fi

# RUSTC_BOOTSTRAP for rustdoc alone (a RUSTDOC wrapper), so the dependencies' build scripts
# see the same environment as above and nothing is rebuilt.
wrapper=$target/rustdoc-doc-cfg
printf '#!/bin/sh\nRUSTC_BOOTSTRAP=1 exec rustdoc "$@"\n' >"$wrapper"
chmod +x "$wrapper"
RUSTDOC=$wrapper RUSTFLAGS="--cfg mlx5_direct_docs" \
    RUSTDOCFLAGS="--cfg mlx5_direct_docs --cfg docsrs -D warnings" \
    cargo doc -p mlx5-direct --all-features --no-deps --target-dir "$target"
html=$target/doc/mlx5_direct
for badge in "$html/backend/index.html:verbs" "$html/index.html:tokio"; do
    if ! grep -q "Available on crate feature \`${badge##*:}\` only" "${badge%:*}"; then
        echo "docsrs: no \`${badge##*:}\` badge in ${badge%:*}" >&2
        exit 1
    fi
done
echo "docsrs: verbs documented without rdma-core, feature badges present"
