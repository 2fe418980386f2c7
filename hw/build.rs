//! Sets `cfg(rdma_headers)` when rdma-core's headers are installed, so the model's golden
//! tests (`tests/raw_golden.rs`) compare with them instead of being ignored; the same
//! decision as the `mlx5-golden` shim's (`detect.rs`, shared). The library does not use it.

include!("../tests/golden-shim/detect.rs");

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../tests/golden-shim/detect.rs");
    println!("cargo::rustc-check-cfg=cfg(rdma_headers)");
    if rdma_include_dir().is_some() {
        println!("cargo::rustc-cfg=rdma_headers");
    }
}
