//! `mlx5-emu`: the `mlx5-hw` model behind an emulated kernel interface, so that unmodified
//! rdma-core (libibverbs and libmlx5), its example programs, perftest and the crate's own
//! `verbs` backend run on model NICs.
//!
//! Two halves meet over a Unix socket:
//! - the **preload** (`mlx5-emu-preload`, a `cdylib` put in `LD_PRELOAD`) stands in for the
//!   kernel inside each program: the `uverbs` character device, the netlink refusal, the
//!   `write()` command channel, the `mmap`s of UAR and clock pages, and the CPU's stores to
//!   the UAR pages, caught one by one ([`trap`]);
//! - the **fabric server** (`mlx5-emu serve`, started by the first `mlx5-emu run` of a fabric)
//!   owns the model NICs, answers the commands as `ib_uverbs` + `mlx5_ib` would (and
//!   `rdma_ucm`'s, [`cm_client`]), and reaches each program's registered memory as DMA would
//!   (`process_vm_readv` / `process_vm_writev`).
//!
//! See `docs/emulator.md` in the workspace.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
pub mod client;
pub mod cm_client;
pub mod proto;
pub mod server;
pub mod sysfs;
pub mod trap;
