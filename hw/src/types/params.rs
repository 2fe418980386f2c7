//! Parameters and results of creating CQs, SRQs, QPs and address handles, and the QP's
//! states and transitions.

use crate::types::device::Access;

/// A CQ's request for compressed CQEs (CQC `cqe_comp_en`, `cqe_comp_layout`,
/// `mini_cqe_res_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqCompression {
    /// The block layout.
    pub layout: ZipLayout,
    /// What responder mini-CQEs carry besides the byte count.
    pub format: MiniFormat,
}

/// `cqe_comp_layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZipLayout {
    /// 0: a title CQE, then arrays of 8 mini-CQEs at title+1, +8, +16, ...
    Basic,
    /// 1: after a normal title CQE, slots of up to 7 mini-CQEs; validity counts in byte 62.
    Enhanced,
}

/// `mini_cqe_res_format` of responder mini-CQEs (bytes 0..4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MiniFormat {
    /// RX hash (BE32). The model computes no RSS hash on IB: 0.
    Hash,
    /// Checksum (BE16); bytes 2..4 reserved. The model writes 0 (no IP checksum on IB).
    Csum,
    /// Checksum and stride index (BE16 each); the model writes 0 for both.
    CsumStridx,
}

/// CQ creation parameters (the CQC fields the kernel would fill).
#[derive(Clone, Copy, Debug, Default)]
pub struct CqParams {
    /// CQ buffer: `cqe_size << log_cqe_cnt` bytes, 64-byte aligned.
    pub buf: u64,
    /// log2 of the number of CQEs.
    pub log_cqe_cnt: u8,
    /// 64 or 128.
    pub cqe_size: u32,
    /// Doorbell record: BE32 consumer index at +0, BE32 arm word at +4.
    pub dbrec: u64,
    /// Do not check the consumer index for overrun.
    pub overrun_ignore: bool,
    /// The completion channel ([`Nic::create_channel`](crate::Nic::create_channel)) its
    /// events go to; `None`: the NIC's own event queue ([`Nic::poll_event`](crate::Nic::poll_event)).
    pub channel: Option<u32>,
    /// Compressed CQEs (`cqe_comp_en`), when the NIC's
    /// [`ZipConfig::policy`](crate::ZipConfig::policy) compresses.
    pub compression: Option<CqCompression>,
}

/// Result of CQ creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqInfo {
    /// CQ number.
    pub cqn: u32,
    /// UAR page whose offset 0x20 is this CQ's arm doorbell.
    pub uar: u32,
}

/// SRQ creation parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct SrqParams {
    /// Protection domain.
    pub pdn: u32,
    /// WQE buffer: `1 << (log_wqe_cnt + log_stride)` bytes, 64-byte aligned.
    pub buf: u64,
    /// log2 of the number of WQEs.
    pub log_wqe_cnt: u8,
    /// log2 of the WQE stride in bytes (5..=10: next segment + at least one data segment).
    pub log_stride: u8,
    /// Doorbell record: one BE32 counter (16 bits used).
    pub dbrec: u64,
}

/// The transport service of a QP (QPC `st`: RC 0, UC 1, UD 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// Reliable connection.
    #[default]
    Rc,
    /// Unreliable datagram: SEND / SEND_IMM of at most one packet to any QP named by an
    /// address vector in each WQE; no acknowledgements.
    Ud,
    /// DC initiator (mlx5 Dynamically Connected): RC operations to any DCT named by the
    /// address vector, DCT number and DC key in each WQE; send queue only.
    Dci,
    /// DC target: executes the requests of any DCI that carries its DC key, taking receives
    /// from its SRQ; no send queue.
    Dct,
    /// Unreliable connection: SEND (with immediate or invalidate) and WRITE (with
    /// immediate) to the one connected QP; no acknowledgements, no retries, a message with
    /// a lost packet is dropped by the responder.
    Uc,
    /// Raw packet (`IBV_QPT_RAW_PACKET`): the send queue sends Ethernet frames, the
    /// receive queue takes the frames flow-steering rules give it (docs/model.md, "Raw
    /// Ethernet"). An Ethernet port only.
    Raw,
    /// XRC initiator (`IBV_QPT_XRC_SEND`): an RC send queue whose WQEs name the SRQ at the
    /// target that receives them (the XRC segment after the control segment); no
    /// receive queue.
    XrcIni,
    /// XRC target (`IBV_QPT_XRC_RECV`): the receive side of an XRC connection, in an XRC
    /// domain, with no send queue, PD or CQ of its own; each request lands in the XRC SRQ
    /// its XRC segment names ([`Nic::create_xrc_tgt_qp`](crate::Nic::create_xrc_tgt_qp)).
    XrcTgt,
}

/// The stream channels of a DCI (QPC `log_num_dci_stream_channels` and
/// `log_num_dci_errored_streams`, which the kernel's `create_dci` fills from rdma-core's
/// `mlx5dv_dci_streams` when `MLX5_QP_FLAG_DCI_STREAM` is set; both 0 otherwise). Each WQE
/// names its stream in control-segment bytes 9..10 (`dci_stream_channel_id`, BE16,
/// `mlx5dv_wr_set_dc_addr_stream`). The default (both 0) is a plain DCI: one stream, id 0,
/// and its first error takes the DCI to ERR.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DciStreams {
    /// log2 of the stream channels (`log_num_concurent`): ids `0..1 << log_channels`.
    pub log_channels: u8,
    /// log2 of the errored streams that take the DCI to ERR (`log_num_errored`): a stream
    /// error is confined to its stream while fewer than `1 << log_errored` streams are in
    /// error; the one that reaches it fails the DCI (mlx5dv_dci_stream_id_reset(3)).
    pub log_errored: u8,
}

/// QP creation parameters.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpParams {
    /// Transport service.
    pub transport: Transport,
    /// Protection domain.
    pub pdn: u32,
    /// CQ for send completions.
    pub send_cqn: u32,
    /// CQ for receive completions.
    pub recv_cqn: u32,
    /// Shared receive queue; the RQ fields are ignored when set.
    pub srqn: Option<u32>,
    /// Send ring: `64 << log_sq_wqe_cnt` bytes, 64-byte aligned.
    pub sq_buf: u64,
    /// log2 of the number of 64-byte WQEBBs in the send ring.
    pub log_sq_wqe_cnt: u8,
    /// Receive ring: `1 << (log_rq_wqe_cnt + log_rq_stride)` bytes, 16-byte aligned.
    pub rq_buf: u64,
    /// log2 of the number of receive WQEs.
    pub log_rq_wqe_cnt: u8,
    /// log2 of the receive WQE stride in bytes (4..=10).
    pub log_rq_stride: u8,
    /// Doorbell record: BE32 RQ counter at +0, BE32 SQ counter at +4.
    pub dbrec: u64,
    /// User index (24 bits) for CQE version 1 (`NicConfig::cqe_version`).
    pub user_index: u32,
    /// Scatter to CQE on the responder (`MLX5_QP_FLAG_SCATTER_CQE`: the kernel sets the
    /// QPC's `cs_res` to 32 bytes with a 64-byte receive CQ, 64 with a 128-byte one): a
    /// SEND of at most that many bytes is written into its CQE instead of the receive's
    /// buffers. The model applies it on RC and UC QPs (docs/model.md).
    pub scatter_to_cqe: bool,
    /// A DCI's stream channels ([`DciStreams`]); must be the default on other QPs.
    pub dci_streams: DciStreams,
}

/// The global route of an address handle (`ibv_global_route`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalRoute {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Source GID index (the model's ports have one GID: index 0).
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
}

/// Address handle attributes (`ibv_ah_attr`), from which [`Nic::create_ah`] builds the
/// 48-byte address vector.
///
/// [`Nic::create_ah`]: crate::Nic::create_ah
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AhAttr {
    /// Local port (1-based).
    pub port: u8,
    /// Destination LID.
    pub dlid: u16,
    /// Service level (4 bits).
    pub sl: u8,
    /// Source path bits (7 bits).
    pub src_path_bits: u8,
    /// The GRH to send with, if any.
    pub grh: Option<GlobalRoute>,
}

/// Result of QP creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpInfo {
    /// QP number.
    pub qpn: u32,
    /// UAR page holding this QP's doorbell/BlueFlame register.
    pub uar: u32,
    /// Offset of the register in the UAR page (0x800).
    pub bf_offset: u32,
    /// BlueFlame half size (0 = 8-byte doorbells only).
    pub bf_size: u32,
}

/// QP state machine commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpTransition {
    /// RESET -> INIT of a UD QP (`IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY`).
    InitUd {
        /// Port number (1-based).
        port: u8,
        /// Q_Key incoming datagrams must carry.
        qkey: u32,
        /// P_Key table index: below the port's table length, as for [`QpTransition::Init`].
        pkey_index: u16,
    },
    /// INIT -> RTR of a UD QP: nothing remote.
    RtrUd,
    /// RTR -> RTS of a UD QP (`IBV_QP_SQ_PSN` only).
    RtsUd {
        /// First PSN sent.
        sq_psn: u32,
    },
    /// RESET -> INIT.
    Init {
        /// Port number (1-based).
        port: u8,
        /// Remote access rights granted by the QP.
        access: Access,
        /// P_Key table index (`IBV_QP_PKEY_INDEX`): below the port's table length.
        pkey_index: u16,
    },
    /// INIT -> INIT of an RC or UC QP (firmware `INIT2INIT_QP`; mlx5_ib's `opt_mask` for
    /// the transition: the remote access bits, the P_Key index and the port): the same
    /// attributes as [`QpTransition::Init`], taken again. librdmacm moves every QP it
    /// connects through it with the access rights the CM negotiated.
    InitToInit {
        /// Port number (1-based).
        port: u8,
        /// Remote access rights granted by the QP.
        access: Access,
        /// P_Key table index: below the port's table length.
        pkey_index: u16,
    },
    /// INIT -> RTR. On a RoCE port (`NicConfig::link_layer = Ethernet`) the address must be
    /// global (`global`), as for every RTR that carries one ([`QpTransition::RtrUc`],
    /// [`QpTransition::RtrDci`], [`QpTransition::RtrDct`]): the kernel's
    /// `rdma_check_ah_attr` (`drivers/infiniband/core/verbs.c`, from `_ib_modify_qp`
    /// through `rdma_fill_sgid_attr` for `IB_QP_AV`) answers EINVAL before the device is
    /// asked; the model refuses it as
    /// [`HwError::InvalidParam`](crate::HwError::InvalidParam) and the QP stays in INIT. On
    /// InfiniBand either is taken (the model sends no GRH on a connected QP).
    Rtr {
        /// Destination LID (0: resolve by GID).
        dest_lid: u16,
        /// Destination GID (used when `dest_lid` is 0).
        dest_gid: [u8; 16],
        /// Destination QP number.
        dest_qpn: u32,
        /// Expected PSN of the first incoming request.
        rq_psn: u32,
        /// Path MTU in bytes (256..=4096, a power of two).
        path_mtu: u32,
        /// Incoming READ/atomic depth.
        max_dest_rd_atomic: u8,
        /// RNR NAK timer code.
        min_rnr_timer: u8,
        /// Service level of the primary path (4 bits).
        sl: u8,
        /// The address carries a global route (`ah_attr.is_global`, the kernel's
        /// `IB_AH_GRH`): required on a RoCE port (see [`QpTransition::Rtr`]).
        global: bool,
    },
    /// RTR -> RTS.
    Rts {
        /// First PSN to send.
        sq_psn: u32,
        /// Local ACK timeout code.
        timeout: u8,
        /// Transport retries (0..=7).
        retry_cnt: u8,
        /// RNR retries (0..=7, 7 = forever).
        rnr_retry: u8,
        /// Outgoing READ/atomic depth.
        max_rd_atomic: u8,
    },
    /// RESET -> INIT of a DCI (`IBV_QP_PKEY_INDEX | IBV_QP_PORT`: no access flags,
    /// `modify_dci_qp_is_ok`). A DCT's RESET -> INIT is [`QpTransition::Init`].
    InitDci {
        /// Port number (1-based).
        port: u8,
        /// P_Key table index: below the port's table length, as for [`QpTransition::Init`].
        pkey_index: u16,
    },
    /// INIT -> RTR of a DCI (`IBV_QP_PATH_MTU`, and the local half of an address:
    /// nothing remote).
    RtrDci {
        /// Path MTU in bytes (256..=4096, a power of two).
        path_mtu: u32,
        /// The address carries a global route (`ah_attr.is_global`, the kernel's
        /// `IB_AH_GRH`): required on a RoCE port (see [`QpTransition::Rtr`]).
        global: bool,
    },
    /// INIT -> RTR of a DCT (`IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU`): the
    /// firmware creates the DCT here (`mlx5_core_create_dct` runs at RTR), with its access
    /// key from `dctc.dc_access_key`; DCIs reach it from now on. A DCI's RTR -> RTS is
    /// [`QpTransition::Rts`]; a DCT has no other transition (`mlx5_ib_modify_dct`).
    RtrDct {
        /// Path MTU in bytes (256..=4096, a power of two).
        path_mtu: u32,
        /// RNR NAK timer code.
        min_rnr_timer: u8,
        /// The DC access key every DCI's WQE must carry.
        dc_key: u64,
        /// The address carries a global route (`ah_attr.is_global`, the kernel's
        /// `IB_AH_GRH`): required on a RoCE port (see [`QpTransition::Rtr`]).
        global: bool,
    },
    /// INIT -> RTR of a UC QP (`IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
    /// IBV_QP_RQ_PSN`: no READ/atomic depth, no RNR timer).
    RtrUc {
        /// Destination LID (0: resolve by GID).
        dest_lid: u16,
        /// Destination GID (used when `dest_lid` is 0).
        dest_gid: [u8; 16],
        /// Destination QP number.
        dest_qpn: u32,
        /// Expected PSN of the first incoming packet.
        rq_psn: u32,
        /// Path MTU in bytes (256..=4096, a power of two).
        path_mtu: u32,
        /// Service level of the primary path (4 bits).
        sl: u8,
        /// The address carries a global route (`ah_attr.is_global`, the kernel's
        /// `IB_AH_GRH`): required on a RoCE port (see [`QpTransition::Rtr`]).
        global: bool,
    },
    /// RTR -> RTS of a UC QP (`IBV_QP_SQ_PSN` only: no timeout, retry counts or READ
    /// depth).
    RtsUc {
        /// First PSN sent.
        sq_psn: u32,
    },
    /// RESET -> INIT of a raw packet QP (`IBV_QP_PORT` alone, the kernel's
    /// `qp_state_table`): its receive queue takes frames from here on (the kernel's
    /// `modify_raw_packet_qp` makes the RQ ready at RST2INIT).
    InitRaw {
        /// Port number (1-based).
        port: u8,
    },
    /// INIT -> RTR of a raw packet QP: no attributes.
    RtrRaw,
    /// RTR -> RTS of a raw packet QP: its send queue sends from here on (the SQ is made
    /// ready at RTR2RTS).
    RtsRaw,
    /// SQE -> RTS of a UD or UC QP (`SQERR2RTS_QP`; verbs: `IBV_QP_STATE |
    /// IBV_QP_CUR_STATE`).
    SqeToRts,
    /// Any state -> ERR.
    Err,
    /// Any state -> RESET.
    Reset,
}

/// A QP's sequence numbers, as [`Nic::qp_psn`](crate::Nic::qp_psn) reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpPsn {
    /// PSN of the next new request packet the QP sends.
    pub sq_psn: u32,
    /// PSN the QP expects on the next incoming request.
    pub rq_psn: u32,
}

/// QP states visible to the driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QpState {
    /// RST.
    #[default]
    Reset,
    /// INIT.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue error (UD and UC only, QPC state SQER): a send WQE failed; the rest of
    /// the send queue is flushed, receives go on. [`QpTransition::SqeToRts`] resumes.
    Sqe,
    /// Error.
    Err,
}
