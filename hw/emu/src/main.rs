//! `mlx5-emu`: run programs on model ConnectX NICs.

fn main() {
    eprintln!("mlx5-emu: not built yet");
    std::process::exit(2);
}
