/* The plain C interface of the golden shim (see src/lib.rs for the Rust side). */
#ifndef MLX5_GOLDEN_H
#define MLX5_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

/* One field of a header struct. primary is 0 for the alternative members of a union (the
 * tag-matching views of mlx5_cqe64, the qkey/dc_key views of mlx5_wqe_av); the primary
 * fields of a struct tile it exactly. */
struct golden_field {
	const char *strct;
	const char *field;
	size_t offset;
	size_t size;
	int primary;
};

/* One struct's size. */
struct golden_struct {
	const char *strct;
	size_t size;
};

/* A named integer: a header constant, or a field value read the way rdma-core reads it. */
struct golden_value {
	const char *name;
	int64_t value;
};

const struct golden_field *golden_fields(size_t *count);
const struct golden_struct *golden_structs(size_t *count);
const struct golden_value *golden_constants(size_t *count);

/* The same three tables for the FFI structs and constants of the driver's `verbs` backend
 * (its hand-written mlx5dv declarations, and the verbs structs rdma-sys writes by hand). Struct
 * padding is allowed here: the primary fields leave only alignment gaps. */
const struct golden_field *golden_ffi_fields(size_t *count);
const struct golden_struct *golden_ffi_structs(size_t *count);
const struct golden_value *golden_ffi_constants(size_t *count);

/* The same three tables for the kernel's uverbs write() ABI (uverbs.c: <rdma/ib_user_verbs.h>,
 * <rdma/ib_user_ioctl_verbs.h>) and mlx5_ib's driver data (mlx5_abi.c: <rdma/mlx5-abi.h>), which
 * the emulator mirrors. Their constants also hold each struct's alignment, named
 * "_Alignof(struct NAME)"; flexible trailing arrays are size-0, non-primary fields. */
const struct golden_field *golden_uverbs_fields(size_t *count);
const struct golden_struct *golden_uverbs_structs(size_t *count);
const struct golden_value *golden_uverbs_constants(size_t *count);
const struct golden_field *golden_mlx5_abi_fields(size_t *count);
const struct golden_struct *golden_mlx5_abi_structs(size_t *count);
const struct golden_value *golden_mlx5_abi_constants(size_t *count);
/* And for the ioctl interface (uverbs_ioctl.c: <rdma/rdma_user_ioctl_cmds.h>, the ioctl ids of
 * <rdma/ib_user_ioctl_cmds.h> and <rdma/mlx5_user_ioctl_cmds.h> and their values). */
const struct golden_field *golden_uverbs_ioctl_fields(size_t *count);
const struct golden_struct *golden_uverbs_ioctl_structs(size_t *count);
const struct golden_value *golden_uverbs_ioctl_constants(size_t *count);

/* The same three tables for raw Ethernet (eth.c): the Ethernet segment, the striding RQ WQE
 * and attributes of <infiniband/mlx5dv.h>, and the constants of raw packet QPs, flows, RSS
 * and work queues. mlx5dv_set_eth_seg on the 32 bytes at seg32, with at most 18 header
 * bytes. */
const struct golden_field *golden_eth_fields(size_t *count);
const struct golden_struct *golden_eth_structs(size_t *count);
const struct golden_value *golden_eth_constants(size_t *count);
void golden_set_eth_seg(uint8_t *seg32, uint8_t cs_flags, uint16_t mss, uint16_t inline_hdr_sz,
			const uint8_t *inline_hdr_start);

/* The same three tables for the kernel's rdma_ucm write() ABI (ucma.c:
 * <rdma/rdma_user_cm.h>, <rdma/ib_user_sa.h>, the socket addresses of <linux/in.h> and
 * <linux/in6.h>), and for the values of librdmacm's and libibverbs' own headers that the
 * emulator's rdma_cm answers use (rdmacm.c: <rdma/rdma_cma.h>, <infiniband/ib.h>,
 * <infiniband/sa.h>; compiled only when librdmacm's header is installed). */
const struct golden_field *golden_ucma_fields(size_t *count);
const struct golden_struct *golden_ucma_structs(size_t *count);
const struct golden_value *golden_ucma_constants(size_t *count);
const struct golden_field *golden_rdmacm_fields(size_t *count);
const struct golden_struct *golden_rdmacm_structs(size_t *count);
const struct golden_value *golden_rdmacm_constants(size_t *count);

/* Writes the fields of the 64-byte CQE at cqe (no alignment needed) into out[0..cap] and
 * returns how many it wrote. */
size_t golden_read_cqe64(const uint8_t *cqe, struct golden_value *out, size_t cap);
size_t golden_read_err_cqe(const uint8_t *cqe, struct golden_value *out, size_t cap);

/* mlx5dv_get_cqe_owner/se/format/opcode on the 64-byte CQE at cqe, packed as
 * owner | se << 8 | format << 16 | opcode << 24. */
uint32_t golden_get_cqe_bits(const uint8_t *cqe);
uint64_t golden_ts_to_ns(const uint64_t info[4], uint32_t mult, uint32_t shift, uint64_t ts);
uint16_t golden_flow_label_to_udp_sport(uint32_t flow_label);

/* The header's inline helpers, run on a copy of the caller's bytes which are then copied
 * back: bytes a helper does not write keep the caller's values. */
void golden_set_ctrl_seg(uint8_t *seg16, uint16_t pi, uint8_t opcode, uint8_t opmod,
			 uint32_t qp_num, uint8_t fm_ce_se, uint8_t ds, uint8_t signature,
			 uint32_t imm);
void golden_set_data_seg(uint8_t *seg16, uint32_t length, uint32_t lkey, uint64_t address);
void golden_set_dgram_seg(uint8_t *seg48, uint64_t key, uint32_t dqp_dct, uint8_t ext,
			  uint8_t stat_rate_sl, uint8_t fl_mlid, uint16_t rlid,
			  const uint8_t *rmac6, uint8_t tclass, uint8_t hop_limit,
			  uint32_t grh_gid_fl, const uint8_t *rgid16);

/* The SSE variants (golden_x86.c, x86 only). */
void golden_x86_set_ctrl_seg(uint8_t *seg16, uint16_t pi, uint8_t opcode, uint8_t opmod,
			     uint32_t qp_num, uint8_t fm_ce_se, uint8_t ds, uint8_t signature,
			     uint32_t imm);
void golden_x86_set_data_seg(uint8_t *seg16, uint32_t length, uint32_t lkey,
			     uint64_t address);

#endif
