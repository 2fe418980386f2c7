//! Sets `cfg(perftest)` when Debian's `perftest` programs are installed, so that
//! `tests/perftest_emu.rs` pairs `mlx5-perf --perftest-exchange` with them on the emulator
//! instead of being ignored; with `MLX5_EMU_REQUIRE_PROGRAMS=1` (CI) their absence is an
//! error, as in `hw/emu/build.rs`.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=MLX5_EMU_REQUIRE_PROGRAMS");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rustc-check-cfg=cfg(perftest)");
    let installed = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("ib_write_lat").is_file()));
    if installed {
        println!("cargo::rustc-cfg=perftest");
    } else if std::env::var("MLX5_EMU_REQUIRE_PROGRAMS").as_deref() == Ok("1") {
        panic!("MLX5_EMU_REQUIRE_PROGRAMS=1 but ib_write_lat is not on PATH: install perftest");
    }
}
