//! [`Backend`] for [`Sim`]: each slow-path call as the model's command.

use core::ptr::NonNull;
use core::time::Duration;
use std::sync::atomic::Ordering;

use crate::backend::{AhHandle, Backend, FlowHandle, QpParts, RssObject, WqObject};
use crate::clock::ClockInfo;
use crate::cq::mprq::WqDesc;
use crate::cq::CqDesc;
use crate::error::{DmRefusal, Error, McastRefusal};
use crate::eth::{EthCaps, FlowRule, RxHashConfig, StridingConfig};
use crate::event::AsyncEvent;
use crate::mcast::McastGroup;
use crate::mem::{MemOptions, Memory};
use crate::prm::{Av, CqeCompLayout, MiniCqeFormat, CQE_SIZE, DS, SEND_WQE_BB};
use crate::rq::RqDesc;
use crate::sizing;
use crate::sq::SqDesc;
use crate::types::{
    Access, AhAttr, CqConfig, DeviceCaps, GidEntry, GidType, PacingCaps, PortInfo, QpConfig, QpPsn,
    QpSizes, RateLimit, Transition, Transport,
};

use super::handles::{pin, PINNED};
use super::*;

impl Backend for Sim {
    type Uar = SimUar;
    type Pd = SimPd;
    type Mr = SimMr;
    type Cq = SimCq;
    type Srq = SimSrq;
    type Qp = SimQp;
    type Channel = SimChannel;
    type Dm = SimDm;
    type Xrcd = SimXrcd;

    fn name(&self) -> &str {
        "mlx5-hw model"
    }

    fn caps(&self) -> DeviceCaps {
        let c = self.nic.caps();
        // The model executes atomics; the sending limits are what rdma-core's sizing leaves
        // of the model's largest WQE (`crate::sizing`), as on hardware.
        let atomics = true;
        DeviceCaps {
            max_sq_wqebbs: c.max_qp_wr,
            max_wqe_size: c.max_sq_desc_sz,
            max_send_sge: c
                .max_send_sge
                .min(sizing::max_gather(c.max_sq_desc_sz, atomics)),
            max_recv_sge: c.max_recv_sge,
            max_cqe: c.max_cqe,
            max_inline: c
                .max_inline
                .min(sizing::max_inline(c.max_sq_desc_sz, atomics)),
            bf_size: c.bf_size,
            max_rd_atomic: c.max_rd_atomic,
            atomic_8b_host_order: c.atomic_8b_host_order,
            max_dest_rd_atomic: c.max_rd_atomic,
            atomics,
            compact_av: c.compact_av,
            max_dm_size: c.max_dm_size,
            max_mcast_grp: c.max_mcast_grp,
            xrc: c.xrc,
            pacing: PacingCaps {
                min_kbps: c.packet_pacing.min_kbps,
                max_kbps: c.packet_pacing.max_kbps,
                rc: c.packet_pacing.rc,
                uc: c.packet_pacing.uc,
                ud: c.packet_pacing.ud,
                // The model paces raw packet QPs whenever it paces (as mlx5 kernels list
                // them).
                raw: c.packet_pacing.max_kbps != 0,
            },
        }
    }

    fn default_port(&self) -> u8 {
        self.port
    }

    fn port(&self, port: u8) -> Result<PortInfo, Error> {
        let p = self.nic.port(port).map_err(device_error("query port"))?;
        Ok(PortInfo {
            lid: p.lid,
            gid: p.gid,
            // The model's ports have one GID.
            gid_index: 0,
            active_mtu: p.active_mtu,
            max_msg_size: self.nic.caps().max_msg_sz,
            roce: p.link_layer == hw::LinkLayer::Ethernet,
            gid_table_len: p.gid_table_len,
        })
    }

    fn gid(&self, port: u8, index: u32) -> Result<GidEntry, Error> {
        let e = self
            .nic
            .query_gid(port, index)
            .map_err(device_error("query GID"))?;
        Ok(GidEntry {
            gid: e.gid,
            gid_type: match e.gid_type {
                hw::GidType::Ib => GidType::Ib,
                hw::GidType::RoceV1 => GidType::RoceV1,
                hw::GidType::RoceV2 => GidType::RoceV2,
            },
        })
    }

    fn alloc_pd(&self) -> Result<SimPd, Error> {
        Ok(SimPd {
            nic: self.nic.clone(),
            pdn: self.nic.alloc_pd(),
            rings: None,
        })
    }

    fn alloc_parent_domain(&self, pd: &SimPd, ring_memory: &MemOptions) -> Result<SimPd, Error> {
        Ok(SimPd {
            nic: self.nic.clone(),
            pdn: pd.pdn,
            rings: Some(*ring_memory),
        })
    }

    unsafe fn reg_mr(
        &self,
        pd: &SimPd,
        addr: *mut u8,
        len: usize,
        page_size: usize,
        access: Access,
    ) -> Result<(SimMr, u32, u32), Error> {
        // On demand, nothing is pinned.
        let pinned = if access.contains(Access::ON_DEMAND) {
            0
        } else {
            pin(len, page_size)?
        };
        // SAFETY: the caller keeps the memory valid until the handle (which deregisters it)
        // is dropped.
        let key = unsafe {
            self.nic.reg_mr_paged(
                pd.pdn,
                addr as u64,
                len as u64,
                hw_access(access),
                page_size.max(self.mr_page_size) as u64,
            )
        };
        let key = key.map_err(|e| {
            PINNED.fetch_sub(pinned, Ordering::Relaxed);
            match e {
                hw::HwError::NotSupported(what) => {
                    Error::OnDemandPaging(format!("the device does not support {what}"))
                }
                e => device_error("register memory")(e),
            }
        })?;
        Ok((
            SimMr {
                nic: self.nic.clone(),
                key,
                pinned,
            },
            key,
            key,
        ))
    }

    fn alloc_dm(&self, len: usize, log_align: u8) -> Result<(SimDm, usize), Error> {
        let (id, size) = self
            .nic
            .alloc_dm(len as u64, log_align)
            .map_err(|e| match e {
                hw::HwError::NotSupported(_) => Error::DeviceMemory(DmRefusal::NoDeviceMemory),
                hw::HwError::OutOfResources => {
                    Error::DeviceMemory(DmRefusal::Exhausted { len: len as u64 })
                }
                e => device_error("allocate device memory")(e),
            })?;
        let dm = SimDm {
            nic: self.nic.clone(),
            id,
        };
        Ok((dm, size as usize))
    }

    fn reg_dm_mr(
        &self,
        pd: &SimPd,
        dm: &SimDm,
        offset: usize,
        len: usize,
        access: Access,
    ) -> Result<(SimMr, u32, u32), Error> {
        let key = self
            .nic
            .reg_dm_mr(pd.pdn, dm.id, offset as u64, len as u64, hw_access(access))
            .map_err(|e| match e {
                hw::HwError::NotSupported(_) => Error::Unsupported(
                    "device memory the NIC writes (the model gathers from it only)",
                ),
                e => device_error("register device memory")(e),
            })?;
        let mr = SimMr {
            nic: self.nic.clone(),
            key,
            pinned: 0,
        };
        Ok((mr, key, key))
    }

    fn advise_mr(&self, pd: &SimPd, mr: &SimMr, addr: u64, len: usize) -> Result<(), Error> {
        self.nic
            .advise_mr(pd.pdn, mr.key, addr, len as u64)
            .map_err(|e| match e {
                hw::HwError::InvalidParam(_) => {
                    Error::OnDemandPaging("the region is not registered on demand".into())
                }
                hw::HwError::BadAddress => Error::OnDemandPaging(
                    "the range is outside the region or not mapped in the process".into(),
                ),
                e => device_error("prefetch")(e),
            })
    }

    fn create_channel(&self) -> Result<SimChannel, Error> {
        let number = self
            .nic
            .create_channel()
            .map_err(device_error("create completion channel"))?;
        let fd = self
            .nic
            .channel_fd(number)
            .map_err(device_error("create completion channel"))?;
        Ok(SimChannel {
            nic: self.nic.clone(),
            number,
            fd,
        })
    }

    fn get_cq_event(&self, channel: &SimChannel) -> Result<Option<u32>, Error> {
        let event = self
            .nic
            .poll_channel(channel.number)
            .map_err(device_error("read a completion event"))?;
        Ok(event.map(|hw::Event::Completion { cqn }| cqn))
    }

    fn clock_info(&self) -> Result<ClockInfo, Error> {
        let info = self
            .nic
            .clock_info()
            .ok_or(Error::Unsupported("a device clock"))?;
        Ok(ClockInfo {
            nsec: info.nsec,
            last_cycles: info.last_cycles,
            frac: info.frac,
            mult: info.mult,
            shift: info.shift,
            mask: info.mask,
        })
    }

    fn create_cq(
        &self,
        config: &CqConfig,
        channel: &SimChannel,
    ) -> Result<(SimCq, CqDesc, SimUar), Error> {
        if config.timestamps && self.nic.clock_info().is_none() {
            return Err(Error::Unsupported(
                "completion timestamps (no device clock)",
            ));
        }
        let zip = config.compression.map(|c| hw::CqCompression {
            layout: match c.layout {
                CqeCompLayout::Basic => hw::ZipLayout::Basic,
                CqeCompLayout::Enhanced => hw::ZipLayout::Enhanced,
            },
            format: match c.format {
                MiniCqeFormat::Hash => hw::MiniFormat::Hash,
                MiniCqeFormat::Csum => hw::MiniFormat::Csum,
                MiniCqeFormat::CsumStridx => hw::MiniFormat::CsumStridx,
            },
        });
        self.cq(config.entries, config.cqe_size, channel, zip)
    }

    fn create_srq(
        &self,
        pd: &SimPd,
        entries: u32,
        max_sge: u32,
    ) -> Result<(SimSrq, RqDesc, u32), Error> {
        self.srq(pd, entries, max_sge, None)
    }

    fn open_xrcd(&self) -> Result<SimXrcd, Error> {
        self.xrcd()
    }

    fn create_xrc_srq(
        &self,
        pd: &SimPd,
        xrcd: &SimXrcd,
        cq: &SimCq,
        entries: u32,
        max_sge: u32,
    ) -> Result<(SimSrq, RqDesc, u32, u32), Error> {
        self.xrc_srq(pd, xrcd, cq, entries, max_sge)
    }

    fn create_xrc_target(&self, xrcd: &SimXrcd) -> Result<(SimQp, u32), Error> {
        self.xrc_target(xrcd)
    }

    fn create_ah(&self, pd: &SimPd, attr: &AhAttr) -> Result<(AhHandle, Av), Error> {
        let a = hw::AhAttr {
            port: attr.port,
            dlid: attr.dlid,
            sl: attr.sl,
            src_path_bits: attr.src_path_bits,
            grh: attr.grh.map(|g| hw::GlobalRoute {
                dgid: g.dgid,
                flow_label: g.flow_label,
                sgid_index: g.sgid_index,
                hop_limit: g.hop_limit,
                traffic_class: g.traffic_class,
            }),
        };
        let av = self
            .nic
            .create_ah(pd.pdn, &a)
            .map_err(device_error("create AH"))?;
        // The model keeps no object per AH: the bytes are all there is.
        Ok((Box::new(()), Av::from_bytes(&av)))
    }

    fn attach_mcast(&self, qp: &SimQp, group: &McastGroup) -> Result<(), Error> {
        self.nic
            .attach_mcast(qp.qpn, &group.mgid, group.mlid)
            .map_err(mcast_error("attach to a multicast group"))
    }

    fn detach_mcast(&self, qp: &SimQp, group: &McastGroup) -> Result<(), Error> {
        self.nic
            .detach_mcast(qp.qpn, &group.mgid, group.mlid)
            .map_err(mcast_error("detach from a multicast group"))
    }

    fn set_rate_limit(&self, qp: &SimQp, limit: &RateLimit) -> Result<(), Error> {
        let limit = hw::RateLimit {
            kbps: limit.kbps,
            max_burst_sz: limit.max_burst_sz,
            typical_pkt_sz: limit.typical_pkt_sz,
        };
        self.nic
            .modify_qp_rate_limit(qp.qpn, &limit)
            .map_err(|e| match e {
                hw::HwError::NotSupported(_) => Error::Unsupported(
                    "packet pacing of this QP's transport (packet_pacing_caps.supported_qpts)",
                ),
                hw::HwError::InvalidParam(why) => Error::InvalidArgument(why),
                hw::HwError::OutOfResources => Error::Device {
                    operation: "set the rate limit",
                    reason: "the device's rate table is full (packet_pacing_rate_table_size)"
                        .into(),
                },
                e => device_error("set the rate limit")(e),
            })
    }

    fn eth_caps(&self) -> Result<EthCaps, Error> {
        Ok(super::eth::eth_caps(&self.nic))
    }

    fn create_flow(&self, qp: &SimQp, port: u8, rule: &FlowRule) -> Result<FlowHandle, Error> {
        Ok(Box::new(super::eth::create_flow(
            &self.nic, qp.qpn, port, rule,
        )?))
    }

    fn create_striding_wq(
        &self,
        pd: &SimPd,
        cq: &SimCq,
        config: &StridingConfig,
    ) -> Result<(Box<dyn WqObject>, WqDesc), Error> {
        // The 32-byte `mlx5_mprq_wqe`s, then the record, as rdma-core's `create_wq`.
        let (rings, records) = pd.ring_memory(self.rings);
        let wqes = 1usize << config.log_wqes;
        let buf = self.ring((wqes * 32).max(SEND_WQE_BB), &rings)?;
        let dbrec = self.ring(CQE_SIZE, &records)?;
        let params = hw::WqParams {
            pdn: pd.pdn,
            cqn: cq.cqn,
            buf: addr(&buf),
            log_wqe_cnt: config.log_wqes,
            log_stride: 5,
            dbrec: addr(&dbrec),
            user_index: 0,
            striding: Some(hw::Striding {
                log_stride_bytes: config.log_stride_bytes,
                log_num_strides: config.log_num_strides,
                two_byte_shift: config.two_byte_shift,
            }),
        };
        // SAFETY: the ring and record live in the handle, which destroys the WQ first.
        let wqn =
            unsafe { self.nic.create_wq(&params) }.map_err(super::eth::refused("create WQ"))?;
        let desc = WqDesc {
            buf: buf.non_null(),
            wqe_cnt: wqes as u32,
            dbrec: dbrec.non_null().cast(),
        };
        let wq = super::eth::SimWq {
            nic: self.nic.clone(),
            wqn,
            _buf: buf,
            _dbrec: dbrec,
        };
        Ok((Box::new(wq), desc))
    }

    fn create_rss_qp(
        &self,
        pd: &SimPd,
        wqs: &[&dyn WqObject],
        hash: Option<&RxHashConfig>,
    ) -> Result<Box<dyn RssObject>, Error> {
        let params = hw::RssQpParams {
            pdn: pd.pdn,
            wqns: wqs.iter().map(|w| w.wqn()).collect(),
            hash: hash.map(|h| hw::RxHash {
                key: h.key,
                fields: hw::HashFields(h.fields),
            }),
        };
        let qpn = self
            .nic
            .create_rss_qp(&params)
            .map_err(super::eth::refused("create RSS QP"))?;
        Ok(Box::new(super::eth::SimRss {
            nic: self.nic.clone(),
            qpn,
        }))
    }

    fn create_qp(
        &self,
        pd: &SimPd,
        send_cq: &SimCq,
        recv_cq: &SimCq,
        srq: Option<&SimSrq>,
        config: &QpConfig,
        sizes: &QpSizes,
    ) -> Result<QpParts<Sim>, Error> {
        // The rings rdma-core would allocate for `config` (`QpConfig::check`).
        let log_sq = log2_ceil(sizes.sq_wqebbs);
        // A QP on an SRQ, a DCI and an XRC initiator have no receive ring.
        let rq_ring =
            srq.is_none() && !matches!(config.transport, Transport::Dci | Transport::XrcIni);
        let (log_rq, rq_stride) = match rq_ring {
            false => (0, DS),
            true => (log2_ceil(sizes.rq_wqes), sizes.rq_stride as usize),
        };
        // RQ at offset 0, SQ right after it, as rdma-core lays out an RC QP buffer.
        let rq_bytes = (rq_stride << log_rq).max(SEND_WQE_BB);
        let sq_bytes = SEND_WQE_BB << log_sq;
        let (rings, records) = pd.ring_memory(self.rings);
        let buf = self.ring(rq_bytes + sq_bytes, &rings)?;
        let dbrec = self.ring(CQE_SIZE, &records)?;
        let params =
            hw::QpParams {
                transport: match config.transport {
                    Transport::Rc => hw::Transport::Rc,
                    Transport::Ud => hw::Transport::Ud,
                    Transport::Dci => hw::Transport::Dci,
                    Transport::XrcIni => hw::Transport::XrcIni,
                    Transport::Dct | Transport::XrcTgt => return Err(Error::InvalidArgument(
                        "a DCT or XRC target is made by create_dct or create_target, not create_qp",
                    )),
                    Transport::Uc => hw::Transport::Uc,
                    Transport::Raw => hw::Transport::Raw,
                },
                pdn: pd.pdn,
                send_cqn: send_cq.cqn,
                recv_cqn: recv_cq.cqn,
                srqn: srq.map(|s| s.srqn),
                sq_buf: addr(&buf) + rq_bytes as u64,
                log_sq_wqe_cnt: log_sq,
                rq_buf: addr(&buf),
                log_rq_wqe_cnt: log_rq,
                log_rq_stride: rq_stride.trailing_zeros() as u8,
                dbrec: addr(&dbrec),
                // Written into CQEs on a NIC with CQE version 1 only; the poller keys on QPNs.
                user_index: config.user_index.unwrap_or(0),
                scatter_to_cqe: config.scatter_to_cqe,
                dci_streams: config
                    .dci_streams
                    .map_or_else(hw::DciStreams::default, |s| hw::DciStreams {
                        log_channels: s.log_concurrent,
                        log_errored: s.log_errored,
                    }),
            };
        // SAFETY: the buffers live in the handle, which destroys the QP before freeing them.
        let info = unsafe { self.nic.create_qp(&params) }.map_err(device_error("create QP"))?;
        let dbrec_ptr: NonNull<crate::prm::Be32> = dbrec.non_null().cast();
        let sq = SqDesc {
            // SAFETY: `rq_bytes` is inside the buffer of `rq_bytes + sq_bytes` bytes.
            buf: unsafe { buf.non_null().add(rq_bytes) },
            wqe_cnt: 1 << log_sq,
            dbrec: dbrec_ptr,
            bf_offset: info.bf_offset as usize,
            bf_size: info.bf_size as usize,
            qpn: info.qpn,
            max_wqe_size: self.caps().max_wqe_size as usize,
            max_inline: config.max_inline as usize,
            max_sge: config.max_send_sge as usize,
        };
        let rq = rq_ring.then(|| RqDesc {
            buf: buf.non_null(),
            wqe_cnt: 1 << log_rq,
            stride: rq_stride,
            dbrec: dbrec_ptr,
        });
        Ok(QpParts {
            handle: SimQp {
                nic: self.nic.clone(),
                qpn: info.qpn,
                dc_key: 0,
                _buf: buf,
                _dbrec: dbrec,
            },
            qpn: info.qpn,
            sq,
            rq,
            uar: SimUar {
                nic: self.nic.clone(),
                uar: info.uar,
            },
        })
    }

    fn create_dct(
        &self,
        pd: &SimPd,
        recv_cq: &SimCq,
        srq: &SimSrq,
        dc_key: u64,
    ) -> Result<SimQp, Error> {
        let params = hw::QpParams {
            transport: hw::Transport::Dct,
            pdn: pd.pdn,
            send_cqn: recv_cq.cqn,
            recv_cqn: recv_cq.cqn,
            srqn: Some(srq.srqn),
            ..hw::QpParams::default()
        };
        // SAFETY: a DCT has no rings or doorbell record of its own (its receives are the
        // SRQ's, which outlives it: the DCT's owner holds it).
        let info = unsafe { self.nic.create_qp(&params) }.map_err(device_error("create DCT"))?;
        Ok(SimQp {
            nic: self.nic.clone(),
            qpn: info.qpn,
            dc_key,
            _buf: Memory::new(0)?,
            _dbrec: Memory::new(0)?,
        })
    }

    fn dct_number(&self, dct: &SimQp) -> Result<u32, Error> {
        Ok(dct.qpn)
    }

    fn modify_qp(&self, qp: &SimQp, transition: &Transition) -> Result<(), Error> {
        // An RTR's address is global where the port sends a GRH, as the verbs backend sets
        // `is_global` (`Addressing::Gid`): on RoCE. The model's ports share one link layer.
        let port = self
            .nic
            .port(self.port)
            .map_err(device_error("query port"))?;
        let global = port.link_layer == hw::LinkLayer::Ethernet;
        // RC's RTR to `remote` (an XRC initiator's with no READ depth or RNR timer).
        let rtr =
            |remote: crate::types::Endpoint, path_mtu, max_dest_rd_atomic, min_rnr_timer, sl| {
                hw::QpTransition::Rtr {
                    dest_lid: remote.lid,
                    dest_gid: remote.gid,
                    dest_qpn: remote.qpn,
                    rq_psn: remote.psn,
                    path_mtu,
                    max_dest_rd_atomic,
                    min_rnr_timer,
                    sl,
                    global,
                }
            };
        let t = match *transition {
            Transition::Init {
                port,
                access,
                pkey_index,
            } => hw::QpTransition::Init {
                port,
                access: hw_access(access),
                pkey_index,
            },
            Transition::Rtr {
                remote,
                path_mtu,
                max_dest_rd_atomic,
                min_rnr_timer,
                sl,
                ..
            } => rtr(remote, path_mtu, max_dest_rd_atomic, min_rnr_timer, sl),
            Transition::Rts {
                sq_psn,
                timeout,
                retry_cnt,
                rnr_retry,
                max_rd_atomic,
            } => hw::QpTransition::Rts {
                sq_psn,
                timeout,
                retry_cnt,
                rnr_retry,
                max_rd_atomic,
            },
            Transition::RtrUc {
                remote,
                path_mtu,
                sl,
                ..
            } => hw::QpTransition::RtrUc {
                dest_lid: remote.lid,
                dest_gid: remote.gid,
                dest_qpn: remote.qpn,
                rq_psn: remote.psn,
                path_mtu,
                sl,
                global,
            },
            Transition::RtsUc { sq_psn } => hw::QpTransition::RtsUc { sq_psn },
            // The model's XRC QPs take RC's transitions; what the kernel leaves out for each
            // side is what it never uses (an initiator executes no requests, a target sends
            // none).
            Transition::RtrXrcIni {
                remote,
                path_mtu,
                sl,
                ..
            } => rtr(remote, path_mtu, 0, 0, sl),
            Transition::RtsXrcTgt { sq_psn, timeout } => hw::QpTransition::Rts {
                sq_psn,
                timeout,
                retry_cnt: 0,
                rnr_retry: 0,
                max_rd_atomic: 0,
            },
            Transition::InitUd {
                port,
                qkey,
                pkey_index,
            } => hw::QpTransition::InitUd {
                port,
                qkey,
                pkey_index,
            },
            Transition::RtrUd => hw::QpTransition::RtrUd,
            Transition::RtsUd { sq_psn } => hw::QpTransition::RtsUd { sq_psn },
            Transition::InitDci { port, pkey_index } => {
                hw::QpTransition::InitDci { port, pkey_index }
            }
            Transition::RtrDci { path_mtu } => hw::QpTransition::RtrDci { path_mtu, global },
            Transition::RtrDct {
                path_mtu,
                min_rnr_timer,
                ..
            } => hw::QpTransition::RtrDct {
                path_mtu,
                min_rnr_timer,
                dc_key: qp.dc_key,
                global,
            },
            Transition::InitRaw { port } => hw::QpTransition::InitRaw { port },
            Transition::RtrRaw => hw::QpTransition::RtrRaw,
            Transition::RtsRaw => hw::QpTransition::RtsRaw,
            Transition::SqeToRts => hw::QpTransition::SqeToRts,
            Transition::Err => hw::QpTransition::Err,
            Transition::Reset => hw::QpTransition::Reset,
        };
        self.nic
            .modify_qp(qp.qpn, &t)
            .map_err(device_error("modify QP"))
    }

    fn reset_dci_stream(&self, qp: &SimQp, stream: u16) -> Result<(), Error> {
        self.nic
            .reset_dci_stream(qp.qpn, stream)
            .map_err(device_error("reset DCI stream"))
    }

    fn query_psn(&self, qp: &SimQp) -> Result<QpPsn, Error> {
        let p = self.nic.qp_psn(qp.qpn).map_err(device_error("query QP"))?;
        Ok(QpPsn {
            sq_psn: p.sq_psn,
            rq_psn: p.rq_psn,
        })
    }

    fn poll_async_event(&self) -> Result<Option<AsyncEvent>, Error> {
        Ok(self.nic.poll_async_event().map(async_event))
    }

    fn wait_async_event(&self, timeout: Duration) -> Result<Option<AsyncEvent>, Error> {
        Ok(self.nic.wait_async_event(timeout).map(async_event))
    }
}

impl Sim {
    /// An SRQ of at least `entries` WQEs with `max_sge` scatter entries each in `pd`, an
    /// XRC SRQ when `xrc` says so.
    pub(super) fn srq(
        &self,
        pd: &SimPd,
        entries: u32,
        max_sge: u32,
        xrc: Option<&hw::XrcSrqParams>,
    ) -> Result<(SimSrq, RqDesc, u32), Error> {
        // rdma-core's ring for `entries` (srq.c `mlx5_alloc_srq_buf`: `align_queue_size(max_wr
        // + 1)` WQEs up to `tail`): a free WQE to link the last posted one to.
        let log_wqe_cnt = log2_ceil(entries.max(1) + 1);
        let stride = (DS * (1 + max_sge.max(1) as usize))
            .next_power_of_two()
            .max(32);
        let (rings, records) = pd.ring_memory(self.rings);
        let buf = self.ring(stride << log_wqe_cnt, &rings)?;
        let dbrec = self.ring(CQE_SIZE, &records)?;
        let params = hw::SrqParams {
            pdn: pd.pdn,
            buf: addr(&buf),
            log_wqe_cnt,
            log_stride: stride.trailing_zeros() as u8,
            dbrec: addr(&dbrec),
        };
        // SAFETY: the buffers live in the handle, which destroys the SRQ before freeing them.
        let srqn = unsafe {
            match xrc {
                None => self.nic.create_srq(&params),
                Some(x) => self.nic.create_xrc_srq(&params, x),
            }
        }
        .map_err(device_error("create SRQ"))?;
        let desc = RqDesc {
            buf: buf.non_null(),
            wqe_cnt: 1 << log_wqe_cnt,
            stride,
            dbrec: dbrec.non_null().cast(),
        };
        let handle = SimSrq {
            nic: self.nic.clone(),
            srqn,
            _buf: buf,
            _dbrec: dbrec,
        };
        Ok((handle, desc, srqn))
    }
}

/// The model's refusal of a multicast attach as the driver reports it: a full table
/// (`OutOfResources`) is [`McastRefusal::TableFull`]; the rest the driver checked before.
fn mcast_error(operation: &'static str) -> impl FnOnce(hw::HwError) -> Error {
    move |e| match e {
        hw::HwError::OutOfResources => Error::Multicast(McastRefusal::TableFull),
        e => device_error(operation)(e),
    }
}
