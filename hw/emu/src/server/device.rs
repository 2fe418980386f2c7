//! The device's own commands: GET_CONTEXT (`ib_uverbs_get_context` +
//! `mlx5_ib_alloc_ucontext`), QUERY_DEVICE and its extended form (`ib_uverbs_query_device`,
//! `ib_uverbs_ex_query_device`, `mlx5_ib_query_device`), QUERY_PORT (`mlx5_ib_query_port`).
//!
//! What the model enforces comes from the model (`Nic::caps`, `Nic::port`, the fabric's
//! `NicConfig`); the rest is what a ConnectX-5 reports (docs/emulator.md lists each value
//! and its source), and 0 for what the model does not have (memory windows); multicast and
//! XRC (`XrcConfig`) as the model has them. On an Ethernet port the raw Ethernet caps are
//! the model's (`Nic::eth_caps`), reported where `mlx5_ib_query_device` reports them:
//! checksum offload and flow steering in the device flags, TSO, enhanced MPW and striding
//! RQ in mlx5's driver part, the inline header in `mlx5_ib_alloc_ucontext`'s
//! `eth_min_inline`.

use super::cmd::{driver_request, request, Bundle, Res};
use super::context::Ctx;
use super::uar::BF_REG_SIZE;
use crate::abi::mlx5::*;
use crate::abi::uverbs::*;
use crate::sysfs::{node_guid, FW_VER, PCI_DEVICE};
use mlx5_hw::LinkLayer;

/// `IB_ODP_SUPPORT` and the per-transport `IB_ODP_SUPPORT_*` bits (rdma/ib_verbs.h).
mod odp {
    pub const SUPPORT: u64 = 1 << 0;
    pub const SEND: u32 = 1 << 0;
    pub const RECV: u32 = 1 << 1;
    pub const WRITE: u32 = 1 << 2;
    pub const READ: u32 = 1 << 3;
    pub const ATOMIC: u32 = 1 << 4;
    pub const SRQ_RECV: u32 = 1 << 5;
}

/// `IB_ATOMIC_HCA` (`enum ib_atomic_cap`).
const ATOMIC_HCA: u32 = 1;
/// Mellanox's IEEE OUI, what mlx5 reports as `vendor_id` (`MLX5_CAP_GEN(vendor_id)`).
const VENDOR_ID: u32 = 0x02c9;
/// `IB_PORT_ACTIVE`, `IB_PORT_PHYS_STATE_LINK_UP`.
const PORT_ACTIVE: u8 = 4;
const PHYS_LINK_UP: u8 = 5;
/// `IB_LINK_LAYER_INFINIBAND`, `IB_LINK_LAYER_ETHERNET` (the uverbs values).
const LINK_LAYER_IB: u8 = 1;
const LINK_LAYER_ETH: u8 = 2;
/// `IB_WIDTH_4X`, `IB_SPEED_EDR`.
const WIDTH_4X: u8 = 2;
const SPEED_EDR: u8 = 32;
/// The P_Key table (one entry, the default P_Key).
const PKEY_TABLE_LEN: u16 = 1;
/// The completion vectors the context offers (EQs for completion events).
pub(crate) const COMP_VECTORS: u32 = 1;

/// `enum ib_mtu` of a byte count.
pub(crate) fn mtu_enum(bytes: u32) -> u8 {
    match bytes {
        256 => 1,
        512 => 2,
        1024 => 3,
        2048 => 4,
        _ => 5,
    }
}

impl Ctx<'_> {
    /// GET_CONTEXT: the static-bfreg UAR scheme (`tot_bfregs` as asked, rounded as the
    /// kernel's `calc_total_bfregs` rounds), CQE version 1, no DEVX.
    pub(crate) fn get_context(&mut self, b: &Bundle<'_>) -> Res {
        if self.ready {
            return Err(libc::EINVAL);
        }
        let req: mlx5_ib_alloc_ucontext_req_v2 = driver_request(b, true)?;
        // Without a DEVX interface, the kernel's `mlx5_ib_devx_create` fails and so does the
        // context; libmlx5 asks again without the flag (mlx5_alloc_context).
        if req.flags & MLX5_IB_ALLOC_UCTX_DEVX != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        if req.flags != 0 || req.comp_mask != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let total = self
            .uars
            .configure(req.total_num_bfregs, req.num_low_latency_bfregs)?;
        let (queue, fd) = b.events.clone().ok_or(libc::EINVAL)?;
        let caps = self.nic.caps();
        self.respond(
            b,
            &ib_uverbs_get_context_resp {
                async_fd: fd as u32,
                num_comp_vectors: COMP_VECTORS,
            },
        )?;
        let cfg = &self.shared.config;
        let resp = mlx5_ib_alloc_ucontext_resp {
            qp_tab_size: 1 << 18,
            bf_reg_size: BF_REG_SIZE,
            tot_bfregs: total,
            cache_line_size: 64,
            max_sq_desc_sz: caps.max_sq_desc_sz as u16,
            max_rq_desc_sz: 16 * caps.max_recv_sge as u16,
            max_send_wqebb: caps.max_qp_wr,
            max_recv_wr: caps.max_qp_wr,
            max_srq_recv_wr: caps.max_qp_wr - 1,
            num_ports: 1,
            flow_action_flags: 0,
            // The core-clock page: the internal timer at offset 0 of the page the kernel maps
            // (`offsetof(struct mlx5_init_seg, internal_timer_h) % PAGE_SIZE`).
            comp_mask: if self.nic.read_clock().is_some() {
                MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET
            } else {
                0
            },
            response_length: std::mem::size_of::<mlx5_ib_alloc_ucontext_resp>() as u32,
            cqe_version: cfg.cqe_version.min(req.max_cqe_version),
            cmds_supp_uhw: MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE
                | if cfg.link_layer == LinkLayer::Ethernet {
                    MLX5_USER_CMDS_SUPP_UHW_CREATE_AH
                } else {
                    0
                },
            // The firmware's inline mode plus one (`MLX5_USER_INLINE_MODE_*`).
            eth_min_inline: match cfg.eth.min_inline {
                mlx5_hw::MinInline::None => MLX5_USER_INLINE_MODE_NONE,
                mlx5_hw::MinInline::L2 => MLX5_USER_INLINE_MODE_L2,
            },
            clock_info_versions: if self.nic.clock_info().is_some() {
                1 << MLX5_IB_CLOCK_INFO_V1
            } else {
                0
            },
            hca_core_clock_offset: 0,
            log_uar_size: 12,
            num_uars_per_page: 1,
            num_dyn_bfregs: 0,
            dump_fill_mkey: 0,
        };
        self.respond_driver(b, &resp)?;
        self.async_events = Some((queue, fd));
        self.cqe_version = resp.cqe_version;
        self.ready = true;
        Ok(())
    }

    /// The attributes of `ibv_query_device`.
    fn device_attr(&self) -> ib_uverbs_query_device_resp {
        let caps = self.nic.caps();
        let (major, minor, sub) = fw_parts();
        let guid = node_guid(self.nic, self.index as u32).to_be_bytes();
        ib_uverbs_query_device_resp {
            fw_ver: major << 32 | minor << 16 | sub,
            node_guid: guid.into(),
            sys_image_guid: guid.into(),
            max_mr_size: u64::MAX,
            page_size_cap: !0xfff,
            vendor_id: VENDOR_ID,
            vendor_part_id: u32::from(PCI_DEVICE),
            hw_ver: 0,
            max_qp: 1 << 18,
            max_qp_wr: caps.max_qp_wr,
            // XRC as the model's `XrcConfig::supported` (mlx5_ib's `IB_DEVICE_XRC` from the
            // HCA cap `xrc`).
            device_cap_flags: (IB_UVERBS_DEVICE_CURR_QP_STATE_MOD
                | IB_UVERBS_DEVICE_SYS_IMAGE_GUID
                | IB_UVERBS_DEVICE_RC_RNR_NAK_GEN
                | if self.ethernet() {
                    // The ETH `csum_cap` (the legacy bit beside `raw_packet_caps`) and flow
                    // steering, which `ibv_create_flow` needs.
                    IB_UVERBS_DEVICE_RAW_IP_CSUM | IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING
                } else {
                    0
                }
                | if caps.xrc { IB_UVERBS_DEVICE_XRC } else { 0 })
                as u32,
            max_sge: caps.max_send_sge.min(caps.max_recv_sge),
            max_sge_rd: caps.max_send_sge,
            max_cq: 1 << 24,
            max_cqe: caps.max_cqe - 1,
            max_mr: 1 << 24,
            max_pd: 1 << 24,
            max_qp_rd_atom: caps.max_rd_atomic.into(),
            max_ee_rd_atom: 0,
            max_res_rd_atom: u32::from(caps.max_rd_atomic) << 18,
            max_qp_init_rd_atom: caps.max_rd_atomic.into(),
            max_ee_init_rd_atom: 0,
            atomic_cap: ATOMIC_HCA,
            max_ee: 0,
            max_rdd: 0,
            max_mw: 0,
            max_raw_ipv6_qp: 0,
            max_raw_ethy_qp: 0,
            // mlx5_ib_query_device: the groups, QPs per group, and their product.
            max_mcast_grp: caps.max_mcast_grp,
            max_mcast_qp_attach: caps.max_mcast_qp_attach,
            max_total_mcast_qp_attach: caps.max_mcast_grp * caps.max_mcast_qp_attach,
            max_ah: i32::MAX as u32,
            max_fmr: 0,
            max_map_per_fmr: 0,
            max_srq: 1 << 23,
            max_srq_wr: caps.max_qp_wr - 1,
            max_srq_sge: caps.max_recv_sge - 1,
            max_pkeys: PKEY_TABLE_LEN,
            local_ca_ack_delay: 16,
            phys_port_cnt: 1,
            reserved: [0; 4],
        }
    }

    /// QUERY_DEVICE (legacy).
    pub(crate) fn query_device(&self, b: &Bundle<'_>) -> Res {
        self.respond(b, &self.device_attr())
    }

    /// QUERY_DEVICE_EX, with mlx5's driver part (`mlx5_ib_query_device_resp`).
    pub(crate) fn query_device_ex(&self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_ex_query_device = request(b, true)?;
        if cmd.comp_mask != 0 || cmd.reserved != 0 {
            return Err(libc::EINVAL);
        }
        let cfg = &self.shared.config;
        let odp = cfg.odp;
        let rc_odp = odp::SEND | odp::RECV | odp::WRITE | odp::READ | odp::ATOMIC | odp::SRQ_RECV;
        let resp = ib_uverbs_ex_query_device_resp {
            base: self.device_attr(),
            comp_mask: 0,
            response_length: b
                .core_out
                .1
                .min(std::mem::size_of::<ib_uverbs_ex_query_device_resp>())
                as u32,
            odp_caps: ib_uverbs_odp_caps {
                general_caps: if odp { odp::SUPPORT } else { 0 },
                per_transport_caps: ib_uverbs_odp_caps_per_transport_caps {
                    rc_odp_caps: if odp { rc_odp } else { 0 },
                    uc_odp_caps: 0,
                    ud_odp_caps: 0,
                },
                reserved: 0,
            },
            timestamp_mask: if cfg.clock_khz != 0 { (1 << 63) - 1 } else { 0 },
            hca_core_clock: cfg.clock_khz.into(),
            max_dm_size: self.nic.caps().max_dm_size,
            raw_packet_caps: if self.ethernet() {
                IB_UVERBS_RAW_PACKET_CAP_IP_CSUM
            } else {
                0
            },
            ..Default::default()
        };
        self.respond(b, &resp)?;
        let zip = cfg.cqe_zip;
        let driver = mlx5_ib_query_device_resp {
            comp_mask: 0,
            response_length: b
                .driver_out
                .1
                .min(std::mem::size_of::<mlx5_ib_query_device_resp>())
                as u32,
            cqe_comp_caps: mlx5_ib_cqe_comp_caps {
                max_num: zip.max_num.into(),
                supported_format: MLX5_IB_CQE_RES_FORMAT_HASH | MLX5_IB_CQE_RES_FORMAT_CSUM,
            },
            flags: if zip.compress_128 {
                MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP
            } else {
                0
            },
            dci_streams_caps: mlx5_ib_dci_streams_caps {
                max_log_num_concurent: cfg.dci_streams.max_log_channels,
                max_log_num_errored: cfg.dci_streams.max_log_errored,
            },
            packet_pacing_caps: self.pacing_caps(),
            ..self.eth_driver_caps()
        };
        self.respond_driver(b, &driver)
    }

    /// `packet_pacing_caps` as `mlx5_ib_query_device` reports the QoS caps: the model's
    /// rate range, raw packet QPs in `supported_qpts` whenever it paces (and UD, UC and
    /// the what-if RC where `PacketPacing` names them), the burst flag; all 0 without
    /// pacing.
    fn pacing_caps(&self) -> mlx5_packet_pacing_caps {
        let pp = self.nic.caps().packet_pacing;
        if pp.max_kbps == 0 {
            return mlx5_packet_pacing_caps::default();
        }
        let qpt = |on: bool, t: u8| if on { 1u32 << t } else { 0 };
        mlx5_packet_pacing_caps {
            qp_rate_limit_min: pp.min_kbps,
            qp_rate_limit_max: pp.max_kbps,
            supported_qpts: qpt(true, IB_UVERBS_QPT_RAW_PACKET)
                | qpt(pp.ud, IB_UVERBS_QPT_UD)
                | qpt(pp.uc, IB_UVERBS_QPT_UC)
                | qpt(pp.rc, IB_UVERBS_QPT_RC),
            cap_flags: if pp.burst {
                MLX5_IB_PP_SUPPORT_BURST
            } else {
                0
            },
            reserved: [0; 3],
        }
    }

    /// Whether the port is Ethernet (raw Ethernet's caps are reported there only, as
    /// `mlx5_ib_query_device`'s `raw_support`).
    fn ethernet(&self) -> bool {
        self.shared.config.link_layer == LinkLayer::Ethernet
    }

    /// The raw Ethernet part of `mlx5_ib_query_device_resp` on an Ethernet port: TSO and
    /// striding RQ for raw packet QPs (`supported_qpts`), enhanced MPW.
    fn eth_driver_caps(&self) -> mlx5_ib_query_device_resp {
        if !self.ethernet() {
            return mlx5_ib_query_device_resp::default();
        }
        let eth = self.nic.eth_caps();
        let raw_qpt = 1 << IB_UVERBS_QPT_RAW_PACKET;
        let striding = eth
            .striding
            .map_or_else(Default::default, |s| mlx5_ib_striding_rq_caps {
                min_single_stride_log_num_of_bytes: s.min_log_stride_bytes.into(),
                max_single_stride_log_num_of_bytes: s.max_log_stride_bytes.into(),
                min_single_wqe_log_num_of_strides: s.min_log_num_strides.into(),
                max_single_wqe_log_num_of_strides: s.max_log_num_strides.into(),
                supported_qpts: raw_qpt,
                reserved: 0,
            });
        mlx5_ib_query_device_resp {
            tso_caps: mlx5_ib_tso_caps {
                max_tso: eth.max_tso,
                supported_qpts: if eth.max_tso != 0 { raw_qpt } else { 0 },
            },
            mlx5_ib_support_multi_pkt_send_wqes: if eth.enhanced_mpw {
                MLX5_IB_SUPPORT_EMPW
            } else {
                0
            },
            striding_rq_caps: striding,
            ..Default::default()
        }
    }

    /// QUERY_PORT: the model's port, as `mlx5_ib_query_port` reports it.
    pub(crate) fn query_port(&self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_query_port = request(b, false)?;
        let port = self.nic.port(cmd.port_num).map_err(|_| libc::EINVAL)?;
        let caps = self.nic.caps();
        let roce = port.link_layer == LinkLayer::Ethernet;
        self.respond(
            b,
            &ib_uverbs_query_port_resp {
                port_cap_flags: 0,
                max_msg_sz: caps.max_msg_sz,
                bad_pkey_cntr: 0,
                qkey_viol_cntr: 0,
                gid_tbl_len: port.gid_table_len,
                pkey_tbl_len: PKEY_TABLE_LEN,
                lid: port.lid,
                sm_lid: if roce { 0 } else { 1 },
                state: PORT_ACTIVE,
                max_mtu: mtu_enum(4096),
                active_mtu: mtu_enum(port.active_mtu),
                lmc: 0,
                max_vl_num: if roce { 0 } else { 4 },
                sm_sl: 0,
                subnet_timeout: if roce { 0 } else { 18 },
                init_type_reply: 0,
                active_width: WIDTH_4X,
                active_speed: SPEED_EDR,
                phys_state: PHYS_LINK_UP,
                link_layer: if roce { LINK_LAYER_ETH } else { LINK_LAYER_IB },
                flags: 0,
                reserved: 0,
            },
        )
    }
}

/// [`FW_VER`] as the kernel packs it into `fw_ver` (major << 32 | minor << 16 | subminor).
fn fw_parts() -> (u64, u64, u64) {
    let mut it = FW_VER.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    (
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
    )
}
