//! [`Backend`] for [`Verbs`]: each slow-path call through rdma-core, the objects it makes
//! described by `mlx5dv_init_obj` (`objects`).

use core::ffi::c_int;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU8, Ordering};
use core::time::Duration;
use std::sync::Arc;

use crate::backend::ffi::{ibv_access_flags, ibv_alloc_dm_attr};
use crate::backend::ffi::{
    ibv_alloc_pd, ibv_create_ah, ibv_create_srq, ibv_qp_attr, ibv_qp_init_attr,
    ibv_qp_init_attr_ex, ibv_qp_init_attr_mask, ibv_qp_type, ibv_query_qp, ibv_reg_mr, ibv_sge,
    ibv_srq_init_attr, ibv_srq_init_attr_ex, ibv_srq_type, ibv_xrcd_init_attr,
    ibv_xrcd_init_attr_mask,
};

use super::attr::{self, Addressing};
use super::bfreg::VerbsUar;
use super::events::VerbsChannel;
use super::ext;
use super::odp::{self};
use super::rings::RingAllocator;
use super::{failed, failed_registration, Verbs};
use crate::backend::mlx5dv::{
    mlx5dv_ah, mlx5dv_create_qp, mlx5dv_dc_init_attr, mlx5dv_dci_stream_id_reset,
    mlx5dv_dci_streams, mlx5dv_dm, mlx5dv_get_clock_info, mlx5dv_qp, mlx5dv_qp_init_attr,
    MLX5DV_DCTYPE_DCT, MLX5DV_OBJ_AH, MLX5DV_OBJ_DM, MLX5DV_OBJ_QP,
};
use crate::backend::{AhHandle, Backend, FlowHandle, QpParts, RssObject, WqObject};
use crate::clock::ClockInfo;
use crate::cq::mprq::WqDesc;
use crate::cq::CqDesc;
use crate::error::{DmRefusal, Error};
use crate::eth::{EthCaps, FlowRule, RxHashConfig, StridingConfig};
use crate::event::AsyncEvent;
use crate::mcast::McastGroup;
use crate::mem::MemOptions;
use crate::mmio::MappedDm;
use crate::prm::{Av, Be32, SEND_WQE_BB};
use crate::rq::RqDesc;
use crate::sq::SqDesc;
use crate::types::{
    Access, AhAttr, CqConfig, DeviceCaps, GidEntry, PortInfo, QpConfig, QpPsn, QpSizes, RateLimit,
    Transition, Transport,
};

use super::objects::*;

impl Backend for Verbs {
    type Uar = VerbsUar;
    type Pd = VerbsPd;
    type Mr = VerbsMr;
    type Cq = VerbsCq;
    type Srq = VerbsSrq;
    type Qp = VerbsQp;
    type Channel = VerbsChannel;
    type Dm = VerbsDm;
    type Xrcd = VerbsXrcd;

    fn alloc_dm(&self, len: usize, log_align: u8) -> Result<(VerbsDm, usize), Error> {
        let mut attr = ibv_alloc_dm_attr {
            length: len,
            log_align_req: log_align.into(),
            comp_mask: 0,
        };
        // SAFETY: an open context and an attribute struct read during the call.
        let dm = unsafe { ext::alloc_dm(self.dev.ctx.as_ptr(), &mut attr) };
        let Some(dm) = NonNull::new(dm) else {
            let err = std::io::Error::last_os_error();
            return Err(match err.raw_os_error() {
                Some(libc::EOPNOTSUPP | libc::ENOSYS) => {
                    Error::DeviceMemory(DmRefusal::NoDeviceMemory)
                }
                Some(libc::ENOMEM) => Error::DeviceMemory(DmRefusal::Exhausted { len: len as u64 }),
                _ => failed("allocate device memory", 0),
            });
        };
        // SAFETY: plain C data, all-null is valid.
        let mut out: mlx5dv_dm = unsafe { core::mem::zeroed() };
        let mut obj = empty_obj();
        obj.dm.r#in = dm.as_ptr();
        obj.dm.out = &mut out;
        let mapped = init_obj(&mut obj, MLX5DV_OBJ_DM, "describe device memory").and_then(|()| {
            NonNull::new(out.buf.cast::<u8>()).ok_or(Error::InvalidArgument(
                "mlx5dv_init_obj returned no DM mapping",
            ))
        });
        let base = match mapped {
            Ok(base) => base,
            Err(e) => {
                // SAFETY: the allocation just made, never registered.
                let _ = unsafe { ext::free_dm(dm.as_ptr()) };
                return Err(e);
            }
        };
        let length = out.length as usize;
        Ok((
            VerbsDm {
                // SAFETY: libmlx5 mapped `length` bytes at `buf` (page aligned) for the life of
                // the allocation, which this value frees after dropping the mapping.
                map: unsafe { MappedDm::new(base, length) },
                dm,
                _dev: self.dev.clone(),
            },
            length,
        ))
    }

    fn reg_dm_mr(
        &self,
        pd: &VerbsPd,
        dm: &VerbsDm,
        offset: usize,
        len: usize,
        access: Access,
    ) -> Result<(VerbsMr, u32, u32), Error> {
        // libibverbs refuses a DM registration that is not zero based (`ibv_cmd_reg_dm_mr`).
        let flags = access.0 | ibv_access_flags::IBV_ACCESS_ZERO_BASED.0;
        // SAFETY: a live PD and allocation of this context; the range is inside it (checked
        // by the caller).
        let mr =
            unsafe { ext::reg_dm_mr(pd.pd.as_ptr(), dm.dm.as_ptr(), offset as u64, len, flags) };
        let mr = NonNull::new(mr).ok_or_else(|| failed("register device memory", 0))?;
        Ok(self.registered(mr, access))
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn caps(&self) -> DeviceCaps {
        self.caps
    }

    fn default_port(&self) -> u8 {
        self.port
    }

    fn port(&self, port: u8) -> Result<PortInfo, Error> {
        let p = self.port_attr(port)?;
        Ok(PortInfo {
            lid: p.lid,
            gid: p.gid,
            // At most 255: `query_port` refuses a larger index.
            gid_index: p.gid_index as u8,
            active_mtu: p.active_mtu,
            max_msg_size: p.max_msg_size,
            roce: p.link_layer == super::LinkLayer::Ethernet,
            gid_table_len: p.gid_table_len,
        })
    }

    fn gid(&self, port: u8, index: u32) -> Result<GidEntry, Error> {
        super::port::query_gid_ex(self.dev.ctx, port, index)
    }

    fn alloc_pd(&self) -> Result<VerbsPd, Error> {
        // SAFETY: an open context.
        let pd = unsafe { ibv_alloc_pd(self.dev.ctx.as_ptr()) };
        Ok(VerbsPd {
            pd: NonNull::new(pd).ok_or_else(|| failed("allocate PD", -1))?,
            odp: Arc::default(),
            rings: None,
            _dev: self.dev.clone(),
        })
    }

    fn alloc_parent_domain(
        &self,
        pd: &VerbsPd,
        ring_memory: &MemOptions,
    ) -> Result<VerbsPd, Error> {
        let rings = Box::new(RingAllocator::new(*ring_memory));
        // SAFETY: an open context and a live PD; the allocator is boxed in the returned
        // handle, which drops it after deallocating the domain (field order after `Drop`).
        let domain = unsafe { rings.parent_domain(self.dev.ctx, pd.pd) }?;
        Ok(VerbsPd {
            pd: domain,
            odp: pd.odp.clone(),
            rings: Some(rings),
            _dev: self.dev.clone(),
        })
    }

    unsafe fn reg_mr(
        &self,
        pd: &VerbsPd,
        addr: *mut u8,
        len: usize,
        _page_size: usize,
        access: Access,
    ) -> Result<(VerbsMr, u32, u32), Error> {
        if access.contains(Access::ON_DEMAND) {
            pd.odp.register(&self.info.odp)?;
        }
        // SAFETY: the caller keeps the memory valid until the handle (which deregisters it)
        // is dropped; `access` holds `ibv_access_flags` values.
        let mr = unsafe { ibv_reg_mr(pd.pd.as_ptr(), addr.cast(), len, access.0 as c_int) };
        let mr = NonNull::new(mr).ok_or_else(|| failed_registration(len, access))?;
        Ok(self.registered(mr, access))
    }

    fn advise_mr(&self, pd: &VerbsPd, mr: &VerbsMr, addr: u64, len: usize) -> Result<(), Error> {
        /// `IB_UVERBS_ADVISE_MR_FLAG_FLUSH`: return once the pages are in.
        const FLUSH: u32 = 1;
        let mut sge = [ibv_sge {
            addr,
            length: u32::try_from(len)
                .map_err(|_| Error::InvalidArgument("prefetch of 4 GiB or more"))?,
            // SAFETY: a live registration.
            lkey: unsafe { (*mr.mr.as_ptr()).lkey },
        }];
        let advice = odp::prefetch_advice(mr.access);
        // SAFETY: a live PD and a scatter entry of one of its registrations.
        let rc = unsafe { ext::advise_mr(pd.pd.as_ptr(), advice, FLUSH, &mut sge) };
        match rc {
            0 => Ok(()),
            rc => Err(Error::OnDemandPaging(format!(
                "ibv_advise_mr: {}",
                std::io::Error::from_raw_os_error(rc.abs())
            ))),
        }
    }

    fn create_channel(&self) -> Result<VerbsChannel, Error> {
        VerbsChannel::new(&self.dev)
    }

    fn get_cq_event(&self, channel: &VerbsChannel) -> Result<Option<u32>, Error> {
        channel.next()
    }

    fn clock_info(&self) -> Result<ClockInfo, Error> {
        let mut info = ClockInfo::default();
        // mlx5.c `mlx5dv_get_clock_info` answers EBUSY when the kernel was updating the page
        // through all of its seqlock retries: try once more before reporting it.
        let mut rc = libc::EBUSY;
        for _ in 0..2 {
            // SAFETY: an open context and a valid out-struct of the header's layout.
            rc = unsafe { mlx5dv_get_clock_info(self.dev.ctx.as_ptr(), &mut info) };
            if rc != libc::EBUSY {
                break;
            }
        }
        match rc {
            0 => Ok(info),
            libc::EINVAL | libc::EOPNOTSUPP => Err(Error::Unsupported(
                "a clock-info page (mlx5dv_get_clock_info)",
            )),
            rc => Err(failed("read the clock-info page", rc)),
        }
    }

    fn create_cq(
        &self,
        config: &CqConfig,
        channel: &VerbsChannel,
    ) -> Result<(VerbsCq, CqDesc, VerbsUar), Error> {
        if let Some(c) = config.compression {
            check_compression(&self.info, config.cqe_size, c)?;
        }
        self.cq(config, channel)
    }

    fn create_srq(
        &self,
        pd: &VerbsPd,
        entries: u32,
        max_sge: u32,
    ) -> Result<(VerbsSrq, RqDesc, u32), Error> {
        // SAFETY: plain C data.
        let mut attr: ibv_srq_init_attr = unsafe { core::mem::zeroed() };
        attr.attr.max_wr = entries;
        attr.attr.max_sge = max_sge;
        // SAFETY: a live PD and a valid attribute struct.
        let srq = unsafe { ibv_create_srq(pd.pd.as_ptr(), &mut attr) };
        let srq = NonNull::new(srq).ok_or_else(|| pd.creation_failed(&self.dev, "create SRQ"))?;
        let handle = VerbsSrq {
            srq,
            _dev: self.dev.clone(),
        };
        let (desc, srqn) = describe_srq(srq)?;
        Ok((handle, desc, srqn))
    }

    fn eth_caps(&self) -> Result<EthCaps, Error> {
        self.eth_caps_of(self.port)
    }

    fn create_flow(&self, qp: &VerbsQp, port: u8, rule: &FlowRule) -> Result<FlowHandle, Error> {
        Ok(Box::new(super::flow::create_flow(
            &self.dev, qp.qp, port, rule,
        )?))
    }

    fn create_striding_wq(
        &self,
        pd: &VerbsPd,
        cq: &VerbsCq,
        config: &StridingConfig,
    ) -> Result<(Box<dyn WqObject>, WqDesc), Error> {
        super::wq::create_striding_wq(&self.dev, pd, cq, config)
    }

    fn create_rss_qp(
        &self,
        pd: &VerbsPd,
        wqs: &[&dyn WqObject],
        hash: Option<&RxHashConfig>,
    ) -> Result<Box<dyn RssObject>, Error> {
        super::wq::create_rss_qp(&self.dev, pd, wqs, hash)
    }

    fn create_qp(
        &self,
        pd: &VerbsPd,
        send_cq: &VerbsCq,
        recv_cq: &VerbsCq,
        srq: Option<&VerbsSrq>,
        config: &QpConfig,
        sizes: &QpSizes,
    ) -> Result<QpParts<Verbs>, Error> {
        if config.user_index.is_some() {
            // rdma-core allocates the user index (mlx5_store_uidx); only a DevX QP sets it.
            return Err(Error::Unsupported(
                "choosing a QP's user index through verbs (rdma-core allocates it)",
            ));
        }
        pd.odp
            .create_qp(&self.info.odp, config.transport, srq.is_some())?;
        // SAFETY: plain C data.
        let mut attr: ibv_qp_init_attr_ex = unsafe { core::mem::zeroed() };
        attr.send_cq = send_cq.cq.as_ptr();
        attr.recv_cq = recv_cq.cq.as_ptr();
        attr.srq = srq.map_or(core::ptr::null_mut(), |s| s.srq.as_ptr());
        let dci = config.transport == Transport::Dci;
        attr.qp_type = match config.transport {
            Transport::Rc => ibv_qp_type::IBV_QPT_RC,
            Transport::Ud => ibv_qp_type::IBV_QPT_UD,
            // mlx5dv_create_qp(3): DC QPs are IBV_QPT_DRIVER with MLX5DV_QP_INIT_ATTR_MASK_DC.
            Transport::Dci => ibv_qp_type::IBV_QPT_DRIVER,
            Transport::Dct => {
                return Err(Error::InvalidArgument(
                    "a DCT is made by create_dct, not create_qp",
                ))
            }
            Transport::Uc => ibv_qp_type::IBV_QPT_UC,
            Transport::XrcIni => ibv_qp_type::IBV_QPT_XRC_SEND,
            Transport::XrcTgt => {
                return Err(Error::InvalidArgument(
                    "an XRC target is made by create_xrc_target, not create_qp",
                ))
            }
            // Needs CAP_NET_RAW (the kernel's EPERM otherwise).
            Transport::Raw => ibv_qp_type::IBV_QPT_RAW_PACKET,
        };
        // rdma-core sizes the ring for `max_send_wr` WRs of its worst-case WQE for the
        // operations named below (verbs.c `mlx5_calc_sq_size`): `sizes` asks for as many as
        // make that ring exactly `sizes.sq_wqebbs` (crate::sizing).
        attr.cap.max_send_wr = sizes.max_send_wr;
        // A QP on an SRQ, a DCI and an XRC initiator (send-only) have no receive queue.
        let no_rq = srq.is_some() || dci || config.transport == Transport::XrcIni;
        attr.cap.max_recv_wr = if no_rq { 0 } else { config.rq_wqes };
        attr.cap.max_send_sge = config.max_send_sge;
        attr.cap.max_recv_sge = if no_rq { 0 } else { config.max_recv_sge };
        attr.cap.max_inline_data = config.max_inline;
        attr.comp_mask = ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0
            | ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0;
        attr.pd = pd.pd.as_ptr();
        attr.send_ops_flags = send_ops(config.transport, self.caps.atomics);
        // A DCI's send_ops_flags are the crate's operations alone (above), so that
        // rdma-core's overhead is not its worst case (prm-facts-next §3.1).
        // DCI streams: `mlx5dv_dci_streams` in the union, rdma-core checks them against
        // `dci_streams_caps` (a bare EINVAL; refused here first, typed) and the kernel
        // writes them into the QPC.
        if let Some(s) = config.dci_streams {
            check_dci_streams(s, self.info.dci_streams)?;
        }
        let streams = config.dci_streams.map(|s| mlx5dv_dci_streams {
            log_num_concurent: s.log_concurrent,
            log_num_errored: s.log_errored,
        });
        let mut dv_attr = dv_qp_attr_streams(
            dci.then(|| mlx5dv_dc_init_attr::dci(streams.unwrap_or_default())),
            config.scatter_to_cqe,
            streams.is_some(),
        );
        // SAFETY: an open context, live CQs / SRQ / PD, valid attribute structs.
        let qp = unsafe { mlx5dv_create_qp(self.dev.ctx.as_ptr(), &mut attr, &mut dv_attr) };
        let qp = NonNull::new(qp).ok_or_else(|| pd.creation_failed(&self.dev, "create QP"))?;
        // SAFETY: plain C data.
        let mut out: mlx5dv_qp = unsafe { core::mem::zeroed() };
        let mut obj = empty_obj();
        obj.qp.r#in = qp.as_ptr();
        obj.qp.out = &mut out;
        let shut_up_bf = self.info.shut_up_bf;
        let mut handle = VerbsQp {
            qp,
            port: AtomicU8::new(self.port),
            bf_size: 0,
            shut_up_bf,
            // No register yet: detaching address 0 (never a register) does nothing.
            bf_reg: 0,
            bf_state: Arc::default(),
            single_threaded: self.dev.bf_regs.single_threaded(),
            _dev: self.dev.clone(),
        };
        init_obj(&mut obj, MLX5DV_OBJ_QP, "describe QP")?;
        handle.bf_size = out.bf.size;
        handle.bf_reg = out.bf.reg as usize;
        handle.bf_state = self.dev.bf_regs.attach(handle.bf_reg);
        if out.sq.stride as usize != SEND_WQE_BB {
            return Err(Error::Device {
                operation: "describe QP",
                reason: format!("send WQE stride {} (expected 64)", out.sq.stride),
            });
        }
        // SAFETY: a QP just created.
        let qpn = unsafe { (*qp.as_ptr()).qp_num };
        let dbrec = NonNull::new(out.dbrec.cast::<Be32>()).ok_or(Error::OutOfMemory)?;
        let (uar, bf_offset) = uar_page(out.bf.reg)?;
        let bf_state = handle.bf_state.clone();
        let sq = SqDesc {
            buf: NonNull::new(out.sq.buf.cast()).ok_or(Error::OutOfMemory)?,
            wqe_cnt: out.sq.wqe_cnt,
            dbrec,
            bf_offset,
            bf_size: if shut_up_bf { 0 } else { out.bf.size as usize },
            qpn,
            max_wqe_size: self.caps.max_wqe_size as usize,
            max_inline: config.max_inline as usize,
            max_sge: config.max_send_sge as usize,
        };
        let rq = match no_rq {
            true => None,
            false => Some(RqDesc {
                buf: NonNull::new(out.rq.buf.cast()).ok_or(Error::OutOfMemory)?,
                wqe_cnt: out.rq.wqe_cnt,
                stride: out.rq.stride as usize,
                dbrec,
            }),
        };
        Ok(QpParts {
            handle,
            qpn,
            sq,
            rq,
            // SAFETY: the QP's UAR page is mapped by the context, which the QP keeps alive;
            // the register at `bf_offset` is this QP's, or shared under `bf_state`'s rule.
            uar: unsafe {
                VerbsUar::qp(
                    uar,
                    bf_offset,
                    out.bf.size as usize,
                    bf_state,
                    self.dev.bf_regs.single_threaded(),
                )
            },
        })
    }

    fn create_ah(&self, pd: &VerbsPd, attr: &AhAttr) -> Result<(AhHandle, Av), Error> {
        // v44 `mlx5_create_ah` returns NULL without errno for a port out of range.
        if attr.port == 0 || attr.port > self.info.phys_port_cnt {
            return Err(Error::InvalidArgument("no such port on the device"));
        }
        let mut ah_attr = attr::ah_attr(attr);
        let roce = matches!(
            self.port_attr(attr.port)?.addressing(),
            Addressing::Gid { .. }
        );
        if roce && attr.grh.is_none() {
            // mlx5_create_ah: EINVAL on RoCE without is_global.
            return Err(Error::InvalidArgument(
                "an address handle on RoCE needs a global route",
            ));
        }
        // SAFETY: a live PD and a valid attribute struct.
        let ah = unsafe { ibv_create_ah(pd.pd.as_ptr(), &mut ah_attr) };
        let ah = NonNull::new(ah).ok_or_else(|| failed("create AH", -1))?;
        let handle = VerbsAh {
            ah,
            _dev: self.dev.clone(),
        };
        // SAFETY: plain C data.
        let mut out: mlx5dv_ah = unsafe { core::mem::zeroed() };
        let mut obj = empty_obj();
        obj.ah.r#in = ah.as_ptr();
        obj.ah.out = &mut out;
        init_obj(&mut obj, MLX5DV_OBJ_AH, "describe AH")?;
        let av = NonNull::new(out.av).ok_or(Error::Device {
            operation: "describe AH",
            reason: "mlx5dv_init_obj returned no AV".into(),
        })?;
        // SAFETY: the AH's own 48-byte AV, live while `handle` is; rdma-core wrote it at
        // creation and never again.
        let av = unsafe { av.as_ptr().read_unaligned() };
        Ok((Box::new(handle), av))
    }

    fn create_dct(
        &self,
        pd: &VerbsPd,
        recv_cq: &VerbsCq,
        srq: &VerbsSrq,
        dc_key: u64,
    ) -> Result<VerbsQp, Error> {
        pd.odp.create_qp(&self.info.odp, Transport::Dct, true)?;
        // SAFETY: plain C data.
        let mut attr: ibv_qp_init_attr_ex = unsafe { core::mem::zeroed() };
        attr.qp_type = ibv_qp_type::IBV_QPT_DRIVER;
        attr.send_cq = recv_cq.cq.as_ptr();
        attr.recv_cq = recv_cq.cq.as_ptr();
        attr.srq = srq.srq.as_ptr();
        // No send_ops_flags: rdma-core refuses them for a DCT.
        attr.comp_mask = ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0;
        attr.pd = pd.pd.as_ptr();
        let mut dv_attr = dv_qp_attr(
            Some(mlx5dv_dc_init_attr {
                dc_type: MLX5DV_DCTYPE_DCT,
                dct_access_key: dc_key,
            }),
            false,
        );
        // SAFETY: an open context, a live CQ, SRQ and PD, valid attribute structs.
        let qp = unsafe { mlx5dv_create_qp(self.dev.ctx.as_ptr(), &mut attr, &mut dv_attr) };
        let qp = NonNull::new(qp).ok_or_else(|| failed("create DCT", -1))?;
        Ok(self.queueless_qp(qp))
    }

    fn open_xrcd(&self) -> Result<VerbsXrcd, Error> {
        if !self.caps.xrc {
            return Err(Error::Unsupported(
                "XRC (the device does not report IBV_DEVICE_XRC)",
            ));
        }
        // A domain of this process alone: no file to share it through (fd -1, O_CREAT).
        let mut attr = ibv_xrcd_init_attr {
            comp_mask: (ibv_xrcd_init_attr_mask::IBV_XRCD_INIT_ATTR_FD
                | ibv_xrcd_init_attr_mask::IBV_XRCD_INIT_ATTR_OFLAGS)
                .0,
            fd: -1,
            oflags: libc::O_CREAT,
        };
        // SAFETY: an open context and a valid attribute struct.
        let xrcd = unsafe { ext::open_xrcd(self.dev.ctx.as_ptr(), &mut attr) };
        let xrcd = NonNull::new(xrcd).ok_or_else(|| failed("open XRC domain", -1))?;
        Ok(VerbsXrcd {
            xrcd,
            _dev: self.dev.clone(),
        })
    }

    fn create_xrc_srq(
        &self,
        pd: &VerbsPd,
        xrcd: &VerbsXrcd,
        cq: &VerbsCq,
        entries: u32,
        max_sge: u32,
    ) -> Result<(VerbsSrq, RqDesc, u32, u32), Error> {
        use crate::backend::ffi::ibv_srq_init_attr_mask as mask;
        // SAFETY: plain C data.
        let mut attr: ibv_srq_init_attr_ex = unsafe { core::mem::zeroed() };
        attr.attr.max_wr = entries;
        attr.attr.max_sge = max_sge;
        attr.comp_mask = (mask::IBV_SRQ_INIT_ATTR_TYPE
            | mask::IBV_SRQ_INIT_ATTR_PD
            | mask::IBV_SRQ_INIT_ATTR_XRCD
            | mask::IBV_SRQ_INIT_ATTR_CQ)
            .0;
        attr.srq_type = ibv_srq_type::IBV_SRQT_XRC;
        attr.pd = pd.pd.as_ptr();
        attr.xrcd = xrcd.xrcd.as_ptr();
        attr.cq = cq.cq.as_ptr();
        // SAFETY: an open context; live PD, domain and CQ of it.
        let srq = unsafe { ext::create_srq_ex(self.dev.ctx.as_ptr(), &mut attr) };
        let srq =
            NonNull::new(srq).ok_or_else(|| pd.creation_failed(&self.dev, "create XRC SRQ"))?;
        let handle = VerbsSrq {
            srq,
            _dev: self.dev.clone(),
        };
        let (desc, srqn) = describe_srq(srq)?;
        // SAFETY: an XRC SRQ libmlx5 just created.
        let key = unsafe { xrc_srq_key(srq, srqn, self.info.cqe_version) };
        Ok((handle, desc, srqn, key))
    }

    fn create_xrc_target(&self, xrcd: &VerbsXrcd) -> Result<(VerbsQp, u32), Error> {
        // SAFETY: plain C data.
        let mut attr: ibv_qp_init_attr_ex = unsafe { core::mem::zeroed() };
        attr.qp_type = ibv_qp_type::IBV_QPT_XRC_RECV;
        attr.comp_mask = ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_XRCD.0;
        attr.xrcd = xrcd.xrcd.as_ptr();
        let mut dv_attr = mlx5dv_qp_init_attr::default();
        // SAFETY: an open context, a live domain, valid attribute structs.
        let qp = unsafe { mlx5dv_create_qp(self.dev.ctx.as_ptr(), &mut attr, &mut dv_attr) };
        let qp = NonNull::new(qp).ok_or_else(|| failed("create XRC target QP", -1))?;
        // SAFETY: a QP just created.
        let qpn = unsafe { (*qp.as_ptr()).qp_num };
        Ok((self.queueless_qp(qp), qpn))
    }

    fn dct_number(&self, dct: &VerbsQp) -> Result<u32, Error> {
        // SAFETY: a live QP; rdma-core's `modify_dct` stores the DCT number at RTR.
        Ok(unsafe { (*dct.qp.as_ptr()).qp_num })
    }

    fn attach_mcast(&self, qp: &VerbsQp, group: &McastGroup) -> Result<(), Error> {
        qp.mcast(group, true)
    }

    fn detach_mcast(&self, qp: &VerbsQp, group: &McastGroup) -> Result<(), Error> {
        qp.mcast(group, false)
    }

    fn set_rate_limit(&self, qp: &VerbsQp, limit: &RateLimit) -> Result<(), Error> {
        qp.set_rate_limit(limit)
    }

    fn modify_qp(&self, qp: &VerbsQp, transition: &Transition) -> Result<(), Error> {
        let port = qp.port.load(Ordering::Relaxed);
        let path = match transition {
            Transition::Rtr { .. }
            | Transition::RtrUc { .. }
            | Transition::RtrXrcIni { .. }
            | Transition::RtrDci { .. }
            | Transition::RtrDct { .. } => {
                let p = self.port_attr(port)?;
                attr::PathInfo {
                    port,
                    addressing: p.addressing(),
                    active_mtu: p.active_mtu,
                }
            }
            _ => attr::PathInfo {
                port,
                addressing: Addressing::Lid,
                active_mtu: 0,
            },
        };
        let (mut attr, mask) = attr::qp_attr(transition, &path)?;
        qp.modify(&mut attr, mask)
    }

    fn reset_dci_stream(&self, qp: &VerbsQp, stream: u16) -> Result<(), Error> {
        // SAFETY: a live QP.
        let rc = unsafe { mlx5dv_dci_stream_id_reset(qp.qp.as_ptr(), stream) };
        match rc {
            0 => Ok(()),
            // v44 mlx5.c issues the reset through `mlx5dv_devx_qp_modify`: the kernel
            // (devx.c `devx_get_uid`) answers EINVAL to a context without DevX, and libmlx5
            // EOPNOTSUPP without `qpc_extension_cap` / `max_log_num_errored`.
            libc::EINVAL | libc::EOPNOTSUPP => Err(Error::Unsupported(
                "resetting a DCI stream (needs a DevX context and the device's \
                 qpc_extension_cap; or the stream id is beyond the DCI's)",
            )),
            rc => Err(failed("reset DCI stream", rc)),
        }
    }

    fn query_psn(&self, qp: &VerbsQp) -> Result<QpPsn, Error> {
        // SAFETY: both are plain C data (integers, GIDs, pointers `ibv_query_qp` does not
        // read); all zeroes is a valid value of each.
        let (mut attr, mut init): (ibv_qp_attr, ibv_qp_init_attr) =
            unsafe { (core::mem::zeroed(), core::mem::zeroed()) };
        // SAFETY: a live QP and two writable out-structs.
        let rc = unsafe {
            ibv_query_qp(
                qp.qp.as_ptr(),
                &mut attr,
                attr::PSN_QUERY.0 as c_int,
                &mut init,
            )
        };
        if rc != 0 {
            return Err(failed("query QP", rc));
        }
        Ok(QpPsn {
            sq_psn: attr.sq_psn,
            rq_psn: attr.rq_psn,
        })
    }

    fn poll_async_event(&self) -> Result<Option<AsyncEvent>, Error> {
        self.next_async_event()
    }

    fn wait_async_event(&self, timeout: Duration) -> Result<Option<AsyncEvent>, Error> {
        self.wait_next_async_event(timeout)
    }
}

impl Verbs {
    /// A QP handle without a send queue or register (a DCT, an XRC target).
    fn queueless_qp(&self, qp: NonNull<crate::backend::ffi::ibv_qp>) -> VerbsQp {
        VerbsQp {
            qp,
            port: AtomicU8::new(self.port),
            bf_size: 0,
            shut_up_bf: self.info.shut_up_bf,
            // No send queue, no register: detaching address 0 does nothing.
            bf_reg: 0,
            bf_state: Arc::default(),
            single_threaded: self.dev.bf_regs.single_threaded(),
            _dev: self.dev.clone(),
        }
    }
}
