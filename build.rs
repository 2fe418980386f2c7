//! Sets `cfg(rdma_headers)` when rdma-core's `infiniband/mlx5dv.h` is installed, so the
//! golden tests (`tests/golden.rs`) run instead of being ignored. Nothing else: a default
//! build needs no RDMA package.

include!("tests/golden-shim/detect.rs");

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=tests/golden-shim/detect.rs");
    println!("cargo::rustc-check-cfg=cfg(rdma_headers)");
    if rdma_include_dir().is_some() {
        println!("cargo::rustc-cfg=rdma_headers");
    }
}
