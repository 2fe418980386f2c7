/*
 * The SSE variants of mlx5dv.h's segment helpers, which exist only when __SSE3__ is
 * defined. Built for x86 with -mssse3 (they use _mm_shuffle_epi8); the caller checks that
 * the CPU has SSSE3.
 */
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "golden.h"

/* The helpers store a whole __m128i, so the segments they fill must be 16-byte aligned. */
union ctrl16 {
	struct mlx5_wqe_ctrl_seg seg;
	__m128i v;
};

union data16 {
	struct mlx5_wqe_data_seg seg;
	__m128i v;
};

void golden_x86_set_ctrl_seg(uint8_t *seg16, uint16_t pi, uint8_t opcode, uint8_t opmod,
			     uint32_t qp_num, uint8_t fm_ce_se, uint8_t ds, uint8_t signature,
			     uint32_t imm)
{
	union ctrl16 u;

	memcpy(&u, seg16, sizeof(u));
	mlx5dv_x86_set_ctrl_seg(&u.seg, pi, opcode, opmod, qp_num, fm_ce_se, ds, signature, imm);
	memcpy(seg16, &u, sizeof(u));
}

void golden_x86_set_data_seg(uint8_t *seg16, uint32_t length, uint32_t lkey, uint64_t address)
{
	union data16 u;

	memcpy(&u, seg16, sizeof(u));
	mlx5dv_x86_set_data_seg(&u.seg, length, lkey, (uintptr_t)address);
	memcpy(seg16, &u, sizeof(u));
}
