//! `<rdma/mlx5-abi.h>`: mlx5_ib's driver data, the driver request after a core request and
//! the driver response after a core response (the kernel's `udata`), its flags, the
//! clock-info page, and the mmap commands with their offset encoding.
//!
//! Struct and field names are the header's; `hw/emu/tests/abi_layout.rs` compares every
//! struct, field and constant here with it, except the two mmap-offset constants that no
//! installed header defines ([`MLX5_IB_MMAP_CMD_SHIFT`], [`MLX5_IB_MMAP_CMD_MASK`]), which the
//! unit tests pin instead.
//!
//! # mmap offsets
//!
//! libmlx5 maps pages of the uverbs fd at page offset `(cmd << 8) | index`
//! (`providers/mlx5/mlx5.h` `set_command` / `set_index`); for [`MLX5_IB_MMAP_ALLOC_WC`] an index
//! of 256 or more puts its bits 8 and up at bit 16 (`set_extended_index`,
//! `get_uar_mmap_offset`). mlx5_ib reads them back with `get_command`, `get_index` and
//! `get_extended_index` (`drivers/infiniband/hw/mlx5/main.c`): [`mmap_command`],
//! [`mmap_index`], [`mmap_extended_index`]. The byte offset given to `mmap` is the page offset
//! times the page size.
#![allow(
    non_camel_case_types,
    reason = "the C struct names, so the layout test and readers match them to the header"
)]
#![allow(
    missing_docs,
    reason = "fields carry the header's names and meaning; each struct's doc names its C \
              counterpart, and fields are documented where the header's name is not enough"
)]

use zerocopy::{FromBytes, Immutable, IntoBytes};

/// `MLX5_IB_UVERBS_ABI_VERSION`: the driver ABI version a uverbs device's sysfs
/// `abi_version` holds (`/sys/class/infiniband_verbs/uverbsN/abi_version`); libmlx5 v44 matches
/// devices of version 1 only (`MLX5_UVERBS_MIN/MAX_ABI_VERSION`, libibverbs `init.c`).
pub const MLX5_IB_UVERBS_ABI_VERSION: u32 = 1;

// `mlx5_ib_create_qp.flags`.
/// `MLX5_QP_FLAG_SIGNATURE`.
pub const MLX5_QP_FLAG_SIGNATURE: u32 = 1 << 0;
/// `MLX5_QP_FLAG_SCATTER_CQE`: small receives may be scattered into the CQE.
pub const MLX5_QP_FLAG_SCATTER_CQE: u32 = 1 << 1;
/// `MLX5_QP_FLAG_TUNNEL_OFFLOADS`.
pub const MLX5_QP_FLAG_TUNNEL_OFFLOADS: u32 = 1 << 2;
/// `MLX5_QP_FLAG_BFREG_INDEX`: `bfreg_index` names the bfreg to use.
pub const MLX5_QP_FLAG_BFREG_INDEX: u32 = 1 << 3;
/// `MLX5_QP_FLAG_TYPE_DCT`.
pub const MLX5_QP_FLAG_TYPE_DCT: u32 = 1 << 4;
/// `MLX5_QP_FLAG_TYPE_DCI`.
pub const MLX5_QP_FLAG_TYPE_DCI: u32 = 1 << 5;
/// `MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC`.
pub const MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC: u32 = 1 << 6;
/// `MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC`.
pub const MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC: u32 = 1 << 7;
/// `MLX5_QP_FLAG_ALLOW_SCATTER_CQE`.
pub const MLX5_QP_FLAG_ALLOW_SCATTER_CQE: u32 = 1 << 8;
/// `MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE`.
pub const MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE: u32 = 1 << 9;
/// `MLX5_QP_FLAG_UAR_PAGE_INDEX`: `bfreg_index` is a dynamic UAR's page index.
pub const MLX5_QP_FLAG_UAR_PAGE_INDEX: u32 = 1 << 10;
/// `MLX5_QP_FLAG_DCI_STREAM`: `dci_streams` is valid.
pub const MLX5_QP_FLAG_DCI_STREAM: u32 = 1 << 11;
/// `MLX5_SRQ_FLAG_SIGNATURE` (`mlx5_ib_create_srq.flags`).
pub const MLX5_SRQ_FLAG_SIGNATURE: u32 = 1 << 0;

// `mlx5_ib_alloc_ucontext_req_v2`.
/// `MLX5_LIB_CAP_4K_UAR` (`lib_caps`): the library handles 4 KiB UARs.
pub const MLX5_LIB_CAP_4K_UAR: u64 = 1 << 0;
/// `MLX5_LIB_CAP_DYN_UAR` (`lib_caps`): the library can allocate UARs dynamically.
pub const MLX5_LIB_CAP_DYN_UAR: u64 = 1 << 1;
/// `MLX5_IB_ALLOC_UCTX_DEVX` (`flags`): a DEVX context.
pub const MLX5_IB_ALLOC_UCTX_DEVX: u32 = 1 << 0;

// `mlx5_ib_alloc_ucontext_resp`.
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET` (`comp_mask`): `hca_core_clock_offset`
/// is valid (the core clock page, mmap command [`MLX5_IB_MMAP_CORE_CLOCK`]).
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET: u32 = 1 << 0;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY` (`comp_mask`).
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY: u32 = 1 << 1;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE` (`comp_mask`).
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE: u32 = 1 << 2;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS` (`comp_mask`).
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS: u32 = 1 << 3;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_REAL_TIME_TS` (`comp_mask`).
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_REAL_TIME_TS: u32 = 1 << 4;
/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG` (`comp_mask`).
pub const MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG: u32 = 1 << 5;
/// `MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE` (`cmds_supp_uhw`): QUERY_DEVICE_EX answers driver
/// data ([`mlx5_ib_query_device_resp`]).
pub const MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE: u8 = 1 << 0;
/// `MLX5_USER_CMDS_SUPP_UHW_CREATE_AH` (`cmds_supp_uhw`): CREATE_AH answers driver data
/// ([`mlx5_ib_create_ah_resp`], the DMAC), so libmlx5 asks the "kernel" on RoCE.
pub const MLX5_USER_CMDS_SUPP_UHW_CREATE_AH: u8 = 1 << 1;
/// `MLX5_USER_INLINE_MODE_NA` (`eth_min_inline`: the firmware's value plus one).
pub const MLX5_USER_INLINE_MODE_NA: u8 = 0;
/// `MLX5_USER_INLINE_MODE_NONE`.
pub const MLX5_USER_INLINE_MODE_NONE: u8 = 1;
/// `MLX5_USER_INLINE_MODE_L2`.
pub const MLX5_USER_INLINE_MODE_L2: u8 = 2;
/// `MLX5_USER_INLINE_MODE_IP`.
pub const MLX5_USER_INLINE_MODE_IP: u8 = 3;
/// `MLX5_USER_INLINE_MODE_TCP_UDP`.
pub const MLX5_USER_INLINE_MODE_TCP_UDP: u8 = 4;
/// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM` (`flow_action_flags`).
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM: u16 = 1 << 0;
/// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_REQ_METADATA`.
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_REQ_METADATA: u16 = 1 << 1;
/// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_SPI_STEERING`.
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_SPI_STEERING: u16 = 1 << 2;
/// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_FULL_OFFLOAD`.
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_FULL_OFFLOAD: u16 = 1 << 3;
/// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_TX_IV_IS_ESN`.
pub const MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_TX_IV_IS_ESN: u16 = 1 << 4;

// `mlx5_ib_query_device_resp`.
/// `MLX5_IB_CQE_RES_FORMAT_HASH` (`cqe_comp_caps.supported_format`, `cqe_comp_res_format`).
pub const MLX5_IB_CQE_RES_FORMAT_HASH: u32 = 1 << 0;
/// `MLX5_IB_CQE_RES_FORMAT_CSUM`.
pub const MLX5_IB_CQE_RES_FORMAT_CSUM: u32 = 1 << 1;
/// `MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX`.
pub const MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX: u32 = 1 << 2;
/// `MLX5_IB_PP_SUPPORT_BURST` (`packet_pacing_caps.cap_flags`).
pub const MLX5_IB_PP_SUPPORT_BURST: u8 = 1 << 0;
/// `MLX5_IB_ALLOW_MPW` (`mlx5_ib_support_multi_pkt_send_wqes`).
pub const MLX5_IB_ALLOW_MPW: u32 = 1 << 1;
/// `MLX5_IB_SUPPORT_EMPW` (`mlx5_ib_support_multi_pkt_send_wqes`).
pub const MLX5_IB_SUPPORT_EMPW: u32 = 1 << 2;
/// `MLX5_IB_SW_PARSING` (`sw_parsing_caps.sw_parsing_offloads`).
pub const MLX5_IB_SW_PARSING: u32 = 1 << 0;
/// `MLX5_IB_SW_PARSING_CSUM`.
pub const MLX5_IB_SW_PARSING_CSUM: u32 = 1 << 1;
/// `MLX5_IB_SW_PARSING_LSO`.
pub const MLX5_IB_SW_PARSING_LSO: u32 = 1 << 2;
/// `MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP` (`flags`).
pub const MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP: u32 = 1 << 0;
/// `MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD` (`flags`).
pub const MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD: u32 = 1 << 1;
/// `MLX5_IB_QUERY_DEV_RESP_PACKET_BASED_CREDIT_MODE` (`flags`).
pub const MLX5_IB_QUERY_DEV_RESP_PACKET_BASED_CREDIT_MODE: u32 = 1 << 2;
/// `MLX5_IB_QUERY_DEV_RESP_FLAGS_SCAT2CQE_DCT` (`flags`).
pub const MLX5_IB_QUERY_DEV_RESP_FLAGS_SCAT2CQE_DCT: u32 = 1 << 3;
/// `MLX5_IB_TUNNELED_OFFLOADS_VXLAN` (`tunnel_offloads_caps`).
pub const MLX5_IB_TUNNELED_OFFLOADS_VXLAN: u32 = 1 << 0;
/// `MLX5_IB_TUNNELED_OFFLOADS_GRE`.
pub const MLX5_IB_TUNNELED_OFFLOADS_GRE: u32 = 1 << 1;
/// `MLX5_IB_TUNNELED_OFFLOADS_GENEVE`.
pub const MLX5_IB_TUNNELED_OFFLOADS_GENEVE: u32 = 1 << 2;
/// `MLX5_IB_TUNNELED_OFFLOADS_MPLS_GRE`.
pub const MLX5_IB_TUNNELED_OFFLOADS_MPLS_GRE: u32 = 1 << 3;
/// `MLX5_IB_TUNNELED_OFFLOADS_MPLS_UDP`.
pub const MLX5_IB_TUNNELED_OFFLOADS_MPLS_UDP: u32 = 1 << 4;
/// `MLX5_RX_HASH_FUNC_TOEPLITZ` (`rss_caps.rx_hash_function`).
pub const MLX5_RX_HASH_FUNC_TOEPLITZ: u8 = 1 << 0;
/// `MLX5_RX_HASH_SRC_IPV4` (`rss_caps.rx_hash_fields_mask`).
pub const MLX5_RX_HASH_SRC_IPV4: u64 = 1 << 0;
/// `MLX5_RX_HASH_DST_IPV4`.
pub const MLX5_RX_HASH_DST_IPV4: u64 = 1 << 1;
/// `MLX5_RX_HASH_SRC_IPV6`.
pub const MLX5_RX_HASH_SRC_IPV6: u64 = 1 << 2;
/// `MLX5_RX_HASH_DST_IPV6`.
pub const MLX5_RX_HASH_DST_IPV6: u64 = 1 << 3;
/// `MLX5_RX_HASH_SRC_PORT_TCP`.
pub const MLX5_RX_HASH_SRC_PORT_TCP: u64 = 1 << 4;
/// `MLX5_RX_HASH_DST_PORT_TCP`.
pub const MLX5_RX_HASH_DST_PORT_TCP: u64 = 1 << 5;
/// `MLX5_RX_HASH_SRC_PORT_UDP`.
pub const MLX5_RX_HASH_SRC_PORT_UDP: u64 = 1 << 6;
/// `MLX5_RX_HASH_DST_PORT_UDP`.
pub const MLX5_RX_HASH_DST_PORT_UDP: u64 = 1 << 7;
/// `MLX5_RX_HASH_IPSEC_SPI`.
pub const MLX5_RX_HASH_IPSEC_SPI: u64 = 1 << 8;
/// `MLX5_RX_HASH_INNER`: hash the inner headers of a tunnel.
pub const MLX5_RX_HASH_INNER: u64 = 1 << 31;

// `mlx5_ib_create_cq.flags`.
/// `MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD`.
pub const MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD: u16 = 1 << 0;
/// `MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX`: `uar_page_index` names a dynamic UAR.
pub const MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX: u16 = 1 << 1;
/// `MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS`.
pub const MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS: u16 = 1 << 2;

// `mlx5_ib_create_qp_resp.comp_mask`.
/// `MLX5_IB_CREATE_QP_RESP_MASK_TIRN`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_TIRN: u32 = 1 << 0;
/// `MLX5_IB_CREATE_QP_RESP_MASK_TISN`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_TISN: u32 = 1 << 1;
/// `MLX5_IB_CREATE_QP_RESP_MASK_RQN`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_RQN: u32 = 1 << 2;
/// `MLX5_IB_CREATE_QP_RESP_MASK_SQN`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_SQN: u32 = 1 << 3;
/// `MLX5_IB_CREATE_QP_RESP_MASK_TIR_ICM_ADDR`.
pub const MLX5_IB_CREATE_QP_RESP_MASK_TIR_ICM_ADDR: u32 = 1 << 4;

// `enum mlx5_ib_mmap_cmd`: the `cmd` of an mmap offset.
/// `MLX5_IB_MMAP_REGULAR_PAGE`: static UAR page `index`, write-combining where possible
/// (libmlx5's `MLX5_MMAP_GET_REGULAR_PAGES_CMD`).
pub const MLX5_IB_MMAP_REGULAR_PAGE: u8 = 0;
/// `MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES`: refused (`ENOSYS`) by current kernels.
pub const MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES: u8 = 1;
/// `MLX5_IB_MMAP_WC_PAGE`: static UAR page `index`, write-combining (`EPERM` without WC).
pub const MLX5_IB_MMAP_WC_PAGE: u8 = 2;
/// `MLX5_IB_MMAP_NC_PAGE`: static UAR page `index`, uncached (libmlx5's
/// `MLX5_MMAP_GET_NC_PAGES_CMD`, with `MLX5_SHUT_UP_BF=1`).
pub const MLX5_IB_MMAP_NC_PAGE: u8 = 3;
/// `MLX5_IB_MMAP_CORE_CLOCK`: the page holding the free-running counter, read-only.
pub const MLX5_IB_MMAP_CORE_CLOCK: u8 = 5;
/// `MLX5_IB_MMAP_ALLOC_WC`: dynamic bfreg page `extended index` (after the static pages).
pub const MLX5_IB_MMAP_ALLOC_WC: u8 = 6;
/// `MLX5_IB_MMAP_CLOCK_INFO`: the clock-info page ([`mlx5_ib_clock_info`]), index
/// [`MLX5_IB_CLOCK_INFO_V1`], read-only.
pub const MLX5_IB_MMAP_CLOCK_INFO: u8 = 7;
/// `MLX5_IB_MMAP_DEVICE_MEM`: device memory, at an offset an ioctl returned.
pub const MLX5_IB_MMAP_DEVICE_MEM: u8 = 8;
/// `MLX5_MMAP_GET_REGULAR_PAGES_CMD` (rdma-core `mlx5dv.h`): libmlx5's name for
/// [`MLX5_IB_MMAP_REGULAR_PAGE`].
pub const MLX5_MMAP_GET_REGULAR_PAGES_CMD: u8 = 0;
/// `MLX5_MMAP_GET_NC_PAGES_CMD` (rdma-core `mlx5dv.h`): libmlx5's name for
/// [`MLX5_IB_MMAP_NC_PAGE`].
pub const MLX5_MMAP_GET_NC_PAGES_CMD: u8 = 3;

/// `MLX5_IB_MMAP_CMD_SHIFT`: where the command sits in a page offset. Defined by mlx5_ib's
/// private `mlx5_ib.h` and by rdma-core's private `providers/mlx5/mlx5.h`, in no installed
/// header.
pub const MLX5_IB_MMAP_CMD_SHIFT: u32 = 8;
/// `MLX5_IB_MMAP_CMD_MASK`: the command's width (as [`MLX5_IB_MMAP_CMD_SHIFT`]).
pub const MLX5_IB_MMAP_CMD_MASK: u64 = 0xff;

/// `MLX5_IB_CLOCK_INFO_KERNEL_UPDATING`: `mlx5_ib_clock_info.sign` while the kernel rewrites
/// the page (a seqlock bit).
pub const MLX5_IB_CLOCK_INFO_KERNEL_UPDATING: u32 = 1;
/// `MLX5_IB_CLOCK_INFO_V1`: the bit of `clock_info_versions` and the mmap index of
/// [`mlx5_ib_clock_info`]'s version 1.
pub const MLX5_IB_CLOCK_INFO_V1: u32 = 0;

/// The command of an mmap page offset (mlx5_ib `get_command`).
pub fn mmap_command(pgoff: u64) -> u8 {
    // Masked to 8 bits, so the cast is exact.
    ((pgoff >> MLX5_IB_MMAP_CMD_SHIFT) & MLX5_IB_MMAP_CMD_MASK) as u8
}

/// The index of an mmap page offset: its low 8 bits (mlx5_ib `get_index`).
pub fn mmap_index(pgoff: u64) -> u8 {
    (pgoff & ((1 << MLX5_IB_MMAP_CMD_SHIFT) - 1)) as u8
}

/// The extended index of an mmap page offset: the low 8 bits, and bits 16..24 as bits 8..16
/// (mlx5_ib `get_extended_index`; [`MLX5_IB_MMAP_ALLOC_WC`] and device memory).
pub fn mmap_extended_index(pgoff: u64) -> u16 {
    u16::from(mmap_index(pgoff)) | (((pgoff >> 16) & 0xff) as u16) << 8
}

/// The page offset libmlx5 maps for `cmd` and an index below 256 (`set_command`,
/// `set_index`).
pub fn mmap_pgoff(cmd: u8, index: u8) -> u64 {
    u64::from(cmd) << MLX5_IB_MMAP_CMD_SHIFT | u64::from(index)
}

/// The page offset libmlx5 maps for `cmd` and an extended index (`set_command`,
/// `set_extended_index`): bits 8..16 of `index` go to bits 16..24.
pub fn mmap_pgoff_extended(cmd: u8, index: u16) -> u64 {
    let [low, high] = index.to_le_bytes();
    mmap_pgoff(cmd, low) | u64::from(high) << 16
}

/// `struct mlx5_ib_alloc_ucontext_req`: the oldest GET_CONTEXT driver request (the kernel
/// takes it when the driver data is exactly this long).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_alloc_ucontext_req {
    pub total_num_bfregs: u32,
    pub num_low_latency_bfregs: u32,
}

/// `struct mlx5_ib_alloc_ucontext_req_v2`: GET_CONTEXT's driver request from libmlx5 v44
/// (16 bfregs of which 4 low-latency, `DEVX`, CQE version 1, `4K_UAR | DYN_UAR`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_alloc_ucontext_req_v2 {
    pub total_num_bfregs: u32,
    pub num_low_latency_bfregs: u32,
    /// `MLX5_IB_ALLOC_UCTX_*`.
    pub flags: u32,
    pub comp_mask: u32,
    pub max_cqe_version: u8,
    pub reserved0: u8,
    pub reserved1: u16,
    pub reserved2: u32,
    /// `MLX5_LIB_CAP_*`.
    pub lib_caps: u64,
}

/// `struct mlx5_ib_alloc_ucontext_resp`: GET_CONTEXT's driver response.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_alloc_ucontext_resp {
    pub qp_tab_size: u32,
    /// The size of one BlueFlame register (both halves).
    pub bf_reg_size: u32,
    /// Non-zero: static bfregs, `tot_bfregs / 2` UAR pages to map.
    pub tot_bfregs: u32,
    pub cache_line_size: u32,
    pub max_sq_desc_sz: u16,
    pub max_rq_desc_sz: u16,
    pub max_send_wqebb: u32,
    pub max_recv_wr: u32,
    pub max_srq_recv_wr: u32,
    pub num_ports: u16,
    /// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_*`.
    pub flow_action_flags: u16,
    /// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_*`.
    pub comp_mask: u32,
    pub response_length: u32,
    pub cqe_version: u8,
    /// `MLX5_USER_CMDS_SUPP_UHW_*`.
    pub cmds_supp_uhw: u8,
    /// `MLX5_USER_INLINE_MODE_*`.
    pub eth_min_inline: u8,
    /// Bit `MLX5_IB_CLOCK_INFO_V1`: the clock-info page can be mapped.
    pub clock_info_versions: u8,
    /// Where the free-running counter sits in the [`MLX5_IB_MMAP_CORE_CLOCK`] page (libmlx5
    /// takes it modulo the page size, `mlx5_map_internal_clock`).
    pub hca_core_clock_offset: u64,
    pub log_uar_size: u32,
    pub num_uars_per_page: u32,
    pub num_dyn_bfregs: u32,
    pub dump_fill_mkey: u32,
}

/// `struct mlx5_ib_alloc_pd_resp`: ALLOC_PD's driver response.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_alloc_pd_resp {
    pub pdn: u32,
}

/// `struct mlx5_ib_tso_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_tso_caps {
    pub max_tso: u32,
    /// Bit `1 << qp_type` per QP type.
    pub supported_qpts: u32,
}

/// `struct mlx5_ib_rss_caps`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_rss_caps {
    /// `MLX5_RX_HASH_*` (not the function).
    pub rx_hash_fields_mask: u64,
    /// `MLX5_RX_HASH_FUNC_*`.
    pub rx_hash_function: u8,
    pub reserved: [u8; 7],
}

/// `struct mlx5_ib_cqe_comp_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_cqe_comp_caps {
    pub max_num: u32,
    /// `MLX5_IB_CQE_RES_FORMAT_*`.
    pub supported_format: u32,
}

/// `struct mlx5_packet_pacing_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_packet_pacing_caps {
    pub qp_rate_limit_min: u32,
    /// In kbps.
    pub qp_rate_limit_max: u32,
    pub supported_qpts: u32,
    /// `MLX5_IB_PP_*`.
    pub cap_flags: u8,
    pub reserved: [u8; 3],
}

/// `struct mlx5_ib_sw_parsing_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_sw_parsing_caps {
    /// `MLX5_IB_SW_PARSING*`.
    pub sw_parsing_offloads: u32,
    pub supported_qpts: u32,
}

/// `struct mlx5_ib_striding_rq_caps`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_striding_rq_caps {
    pub min_single_stride_log_num_of_bytes: u32,
    pub max_single_stride_log_num_of_bytes: u32,
    pub min_single_wqe_log_num_of_strides: u32,
    pub max_single_wqe_log_num_of_strides: u32,
    pub supported_qpts: u32,
    pub reserved: u32,
}

/// `struct mlx5_ib_dci_streams_caps` (the header's spelling, `concurent`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_dci_streams_caps {
    pub max_log_num_concurent: u8,
    pub max_log_num_errored: u8,
}

/// `struct mlx5_ib_query_device_resp`: QUERY_DEVICE_EX's driver response.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_query_device_resp {
    pub comp_mask: u32,
    pub response_length: u32,
    pub tso_caps: mlx5_ib_tso_caps,
    pub rss_caps: mlx5_ib_rss_caps,
    pub cqe_comp_caps: mlx5_ib_cqe_comp_caps,
    pub packet_pacing_caps: mlx5_packet_pacing_caps,
    /// `MLX5_IB_ALLOW_MPW` / `MLX5_IB_SUPPORT_EMPW`.
    pub mlx5_ib_support_multi_pkt_send_wqes: u32,
    /// `MLX5_IB_QUERY_DEV_RESP_*`.
    pub flags: u32,
    pub sw_parsing_caps: mlx5_ib_sw_parsing_caps,
    pub striding_rq_caps: mlx5_ib_striding_rq_caps,
    /// `MLX5_IB_TUNNELED_OFFLOADS_*`.
    pub tunnel_offloads_caps: u32,
    pub dci_streams_caps: mlx5_ib_dci_streams_caps,
    pub reserved: u16,
}

/// `struct mlx5_ib_create_cq`: CREATE_CQ's driver request.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_cq {
    /// The user address of the CQE ring.
    pub buf_addr: u64,
    /// The user address of the doorbell record (consumer index at +0, arm at +4).
    pub db_addr: u64,
    /// 64 or 128.
    pub cqe_size: u32,
    pub cqe_comp_en: u8,
    /// `MLX5_IB_CQE_RES_FORMAT_*` (one bit).
    pub cqe_comp_res_format: u8,
    /// `MLX5_IB_CREATE_CQ_FLAGS_*`.
    pub flags: u16,
    pub uar_page_index: u16,
    pub reserved0: u16,
    pub reserved1: u32,
}

/// `struct mlx5_ib_create_cq_resp`: CREATE_CQ's driver response.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_cq_resp {
    pub cqn: u32,
    pub reserved: u32,
}

/// `struct mlx5_ib_resize_cq`: RESIZE_CQ's driver request.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_resize_cq {
    pub buf_addr: u64,
    pub cqe_size: u16,
    pub reserved0: u16,
    pub reserved1: u32,
}

/// `struct mlx5_ib_create_srq`: CREATE_SRQ's / CREATE_XSRQ's driver request.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_srq {
    pub buf_addr: u64,
    pub db_addr: u64,
    /// `MLX5_SRQ_FLAG_*`.
    pub flags: u32,
    pub reserved0: u32,
    /// The user index CQEs report (CQE version 1).
    pub uidx: u32,
    pub reserved1: u32,
}

/// `struct mlx5_ib_create_srq_resp`: CREATE_SRQ's driver response.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_srq_resp {
    pub srqn: u32,
    pub reserved: u32,
}

/// `struct mlx5_ib_create_qp_dci_streams` (the header's spelling, `concurent`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_qp_dci_streams {
    pub log_num_concurent: u8,
    pub log_num_errored: u8,
}

/// `struct mlx5_ib_create_qp`: CREATE_QP's driver request. The RQ sits at `buf_addr` and the
/// SQ at `buf_addr + (rq_wqe_count << rq_wqe_shift)`; the doorbell record holds the RQ
/// counter at +0 and the SQ's at +4.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_qp {
    pub buf_addr: u64,
    pub db_addr: u64,
    pub sq_wqe_count: u32,
    pub rq_wqe_count: u32,
    pub rq_wqe_shift: u32,
    /// `MLX5_QP_FLAG_*`.
    pub flags: u32,
    /// The user index CQEs report (CQE version 1).
    pub uidx: u32,
    /// With `MLX5_QP_FLAG_BFREG_INDEX` / `MLX5_QP_FLAG_UAR_PAGE_INDEX`.
    pub bfreg_index: u32,
    /// A union in the header: `sq_buf_addr` (raw packet QPs) or `access_key` (DCTs).
    pub sq_buf_addr: u64,
    pub ece_options: u32,
    pub dci_streams: mlx5_ib_create_qp_dci_streams,
    pub reserved: u16,
}

impl mlx5_ib_create_qp {
    /// The header's union member `access_key` (a DCT's DC access key): the bytes of
    /// `sq_buf_addr`.
    pub fn access_key(&self) -> u64 {
        self.sq_buf_addr
    }
}

/// `MLX5_IB_CREATE_WQ_STRIDING_RQ` (`mlx5_ib_create_wq.comp_mask`): the striding fields
/// are valid.
pub const MLX5_IB_CREATE_WQ_STRIDING_RQ: u32 = 1 << 0;
/// `MLX5_WQ_FLAG_SIGNATURE` (`mlx5_ib_create_wq.flags`).
pub const MLX5_WQ_FLAG_SIGNATURE: u32 = 1 << 0;

/// `struct mlx5_ib_create_wq`: CREATE_WQ's driver request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_wq {
    pub buf_addr: u64,
    pub db_addr: u64,
    pub rq_wqe_count: u32,
    pub rq_wqe_shift: u32,
    pub user_index: u32,
    /// `MLX5_WQ_FLAG_*`.
    pub flags: u32,
    /// `MLX5_IB_CREATE_WQ_*`.
    pub comp_mask: u32,
    pub single_stride_log_num_of_bytes: u32,
    pub single_wqe_log_num_of_strides: u32,
    pub two_byte_shift_en: u32,
}

/// `struct mlx5_ib_create_wq_resp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_wq_resp {
    pub response_length: u32,
    pub reserved: u32,
}

/// `struct mlx5_ib_create_qp_rss`: an RSS QP's CREATE_QP driver request (instead of
/// [`mlx5_ib_create_qp`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_qp_rss {
    /// `MLX5_RX_HASH_*`.
    pub rx_hash_fields_mask: u64,
    /// `MLX5_RX_HASH_FUNC_*`.
    pub rx_hash_function: u8,
    pub rx_key_len: u8,
    pub reserved: [u8; 6],
    pub rx_hash_key: [u8; 128],
    pub comp_mask: u32,
    /// `MLX5_QP_FLAG_*`.
    pub flags: u32,
}

impl Default for mlx5_ib_create_qp_rss {
    fn default() -> Self {
        zerocopy::FromZeros::new_zeroed()
    }
}

/// `struct mlx5_ib_create_qp_resp`: CREATE_QP's driver response.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_qp_resp {
    /// The "gross" bfreg index the QP rings through (`bfregn / 2 * 4 + bfregn % 2`).
    pub bfreg_index: u32,
    pub ece_options: u32,
    /// `MLX5_IB_CREATE_QP_RESP_MASK_*`.
    pub comp_mask: u32,
    pub tirn: u32,
    pub tisn: u32,
    pub rqn: u32,
    pub sqn: u32,
    pub reserved1: u32,
    /// A plain `__u64` in the header (not `__aligned_u64`); its offset is 32 either way.
    pub tir_icm_addr: u64,
}

/// `struct mlx5_ib_create_ah_resp`: CREATE_AH's driver response (RoCE: the destination MAC).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_create_ah_resp {
    pub response_length: u32,
    pub dmac: [u8; 6],
    pub reserved: [u8; 6],
}

/// `struct mlx5_ib_burst_info`: packet pacing burst control.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_burst_info {
    pub max_burst_sz: u32,
    pub typical_pkt_sz: u16,
    pub reserved: u16,
}

/// `struct mlx5_ib_modify_qp`: MODIFY_QP_EX's driver request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_modify_qp {
    pub comp_mask: u32,
    pub burst_info: mlx5_ib_burst_info,
    /// Enhanced connection establishment options.
    pub ece_options: u32,
}

/// `struct mlx5_ib_modify_qp_resp`: MODIFY_QP_EX's driver response.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_modify_qp_resp {
    pub response_length: u32,
    /// A DCT's number, once it reaches RTR.
    pub dctn: u32,
    pub ece_options: u32,
    pub reserved: u32,
}

/// `struct mlx5_ib_clock_info`: the clock-info page ([`MLX5_IB_MMAP_CLOCK_INFO`]), read by
/// `mlx5dv_get_clock_info` under the `sign` seqlock.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable)]
pub struct mlx5_ib_clock_info {
    /// A sequence count; [`MLX5_IB_CLOCK_INFO_KERNEL_UPDATING`] while it is rewritten.
    pub sign: u32,
    pub resv: u32,
    pub nsec: u64,
    pub cycles: u64,
    pub frac: u64,
    pub mult: u32,
    pub shift: u32,
    pub mask: u64,
    pub overflow_period: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mmap_command_sits_above_the_index() {
        assert_eq!(MLX5_IB_MMAP_CMD_SHIFT, 8);
        assert_eq!(MLX5_IB_MMAP_CMD_MASK, 0xff);
        // The static UAR pages of the probe: 8 mmaps at byte offsets 0x0..0x7000 (4 KiB pages).
        for page in 0..8u8 {
            let pgoff = mmap_pgoff(MLX5_MMAP_GET_REGULAR_PAGES_CMD, page);
            assert_eq!(pgoff * 4096, u64::from(page) * 0x1000);
            assert_eq!(mmap_command(pgoff), MLX5_IB_MMAP_REGULAR_PAGE);
            assert_eq!(mmap_index(pgoff), page);
        }
        assert_eq!(mmap_pgoff(MLX5_MMAP_GET_NC_PAGES_CMD, 2), 0x302);
        assert_eq!(mmap_pgoff(MLX5_IB_MMAP_CORE_CLOCK, 0), 0x500);
        let clock_info = mmap_pgoff(MLX5_IB_MMAP_CLOCK_INFO, MLX5_IB_CLOCK_INFO_V1 as u8);
        assert_eq!(clock_info * 4096, 0x70_0000);
        assert_eq!(mmap_command(0x7ff), 7);
        assert_eq!(mmap_index(0x7ff), 0xff);
    }

    #[test]
    fn an_extended_index_puts_its_high_byte_at_bit_16() {
        assert_eq!(mmap_pgoff_extended(MLX5_IB_MMAP_ALLOC_WC, 0x12), 0x612);
        assert_eq!(
            mmap_pgoff_extended(MLX5_IB_MMAP_ALLOC_WC, 0x1234),
            0x12_0634
        );
        assert_eq!(
            mmap_pgoff_extended(MLX5_IB_MMAP_DEVICE_MEM, 0xffff),
            0xff_08ff
        );
        for index in [0u16, 1, 0xff, 0x100, 0x1ff, 0xabcd, 0xffff] {
            let pgoff = mmap_pgoff_extended(MLX5_IB_MMAP_ALLOC_WC, index);
            assert_eq!(mmap_command(pgoff), MLX5_IB_MMAP_ALLOC_WC);
            assert_eq!(mmap_extended_index(pgoff), index);
            assert_eq!(mmap_index(pgoff), index as u8);
        }
        // Bits beyond 24 are neither command nor index.
        assert_eq!(mmap_extended_index(0xff00_0000 | 0x0601), 1);
        assert_eq!(mmap_command(0xff00_0000 | 0x0601), 6);
    }

    #[test]
    fn the_union_alternative_reads_the_same_bytes() {
        let qp = mlx5_ib_create_qp {
            sq_buf_addr: 0x1122_3344_5566_7788,
            ..Default::default()
        };
        assert_eq!(qp.access_key(), 0x1122_3344_5566_7788);
    }
}
