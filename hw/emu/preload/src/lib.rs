//! The LD_PRELOAD half of `mlx5-emu` (see the `mlx5-emu` crate).
