//! Compiles `c/golden.c`, `c/ffi.c` and `c/eth.c` (and on x86 `c/golden_x86.c`) against
//! rdma-core's `mlx5dv.h` when it is installed, with `c/uverbs.c`, `c/mlx5_abi.c`,
//! `c/uverbs_ioctl.c` and `c/ucma.c` (the kernel uapi headers `rdma/*.h` that come with it),
//! and sets `cfg(rdma_headers)` for `src/lib.rs`; with librdmacm's `rdma/rdma_cma.h` also
//! `c/rdmacm.c` and `cfg(rdmacm_headers)`. Without the header no C is compiled and the
//! crate's functions are stubs that panic.

include!("detect.rs");

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rdma_headers)");
    println!("cargo::rustc-check-cfg=cfg(rdmacm_headers)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=detect.rs");
    println!("cargo::rerun-if-changed=c");
    let Some(dir) = rdma_include_dir() else {
        return;
    };
    println!("cargo::rustc-cfg=rdma_headers");
    let system = std::path::Path::new("/usr/include");
    let mut build = cc::Build::new();
    build
        .file("c/golden.c")
        .file("c/ffi.c")
        .file("c/uverbs.c")
        .file("c/mlx5_abi.c")
        .file("c/uverbs_ioctl.c")
        .file("c/eth.c")
        .file("c/ucma.c")
        .warnings_into_errors(true);
    if dir.join("rdma/rdma_cma.h").is_file() {
        build.file("c/rdmacm.c");
        println!("cargo::rustc-cfg=rdmacm_headers");
    }
    if dir != system {
        build.include(&dir);
    }
    build.compile("mlx5_golden");

    // The SSE variants of the helpers exist only when `__SSE3__` is defined; they use
    // `_mm_shuffle_epi8`, an SSSE3 instruction, so this one file is built with -mssse3.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if arch == "x86_64" || arch == "x86" {
        let mut x86 = cc::Build::new();
        x86.file("c/golden_x86.c")
            .flag("-mssse3")
            .warnings_into_errors(true);
        if dir != system {
            x86.include(&dir);
        }
        x86.compile("mlx5_golden_x86");
    }
}
