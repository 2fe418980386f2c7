//! Sets `cfg(rdma_headers)` when rdma-core's headers (and the kernel uapi headers beside them)
//! are installed, so `tests/abi_layout.rs` compares the ABI mirrors with them instead of being
//! ignored; the same decision as the `mlx5-golden` shim's (`detect.rs`, shared). Sets
//! `cfg(rdmacm_headers)` when librdmacm's `rdma/rdma_cma.h` is there too (the shim's
//! `c/rdmacm.c`, which the rdma_cm mirrors are compared with).
//!
//! Sets `cfg(ibverbs_utils)` and `cfg(perftest)` when Debian's `ibverbs-utils` and
//! `perftest` programs are installed, so the tests run them on the emulator; with
//! `MLX5_EMU_REQUIRE_PROGRAMS=1` (CI) their absence is an error, so those tests cannot be
//! skipped unnoticed.

include!("../../tests/golden-shim/detect.rs");

/// Whether `program` is an executable file in one of `$PATH`'s directories.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../../tests/golden-shim/detect.rs");
    println!("cargo::rerun-if-env-changed=MLX5_EMU_REQUIRE_PROGRAMS");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rustc-check-cfg=cfg(rdma_headers)");
    println!("cargo::rustc-check-cfg=cfg(rdmacm_headers)");
    println!("cargo::rustc-check-cfg=cfg(ibverbs_utils)");
    println!("cargo::rustc-check-cfg=cfg(perftest)");
    if let Some(dir) = rdma_include_dir() {
        println!("cargo::rustc-cfg=rdma_headers");
        if dir.join("rdma/rdma_cma.h").is_file() {
            println!("cargo::rustc-cfg=rdmacm_headers");
        }
    }
    let require = std::env::var("MLX5_EMU_REQUIRE_PROGRAMS").as_deref() == Ok("1");
    for (program, cfg, package) in [
        ("ibv_rc_pingpong", "ibverbs_utils", "ibverbs-utils"),
        ("ib_write_bw", "perftest", "perftest"),
    ] {
        if on_path(program) {
            println!("cargo::rustc-cfg={cfg}");
        } else if require {
            panic!("MLX5_EMU_REQUIRE_PROGRAMS=1 but {program} is not on PATH: install {package}");
        }
    }
}
