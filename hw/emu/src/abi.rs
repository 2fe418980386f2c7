//! The uverbs `write()` command ABI and mlx5's driver data (kernel uapi
//! `rdma/ib_user_verbs.h`, `rdma/mlx5-abi.h`).
