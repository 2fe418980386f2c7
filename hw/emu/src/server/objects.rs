//! PDs, memory regions, completion channels, CQs, SRQs and address handles: the uverbs
//! commands (drivers/infiniband/core/uverbs_cmd.c) with mlx5's driver data
//! (drivers/infiniband/hw/mlx5: main.c `mlx5_ib_alloc_pd`, mr.c `mlx5_ib_reg_user_mr`,
//! cq.c `create_cq_user`, srq.c `create_srq_user`, ah.c `mlx5_ib_create_ah`), each object
//! created in the model with its memory named in the context's address space.

use super::cmd::{driver_request, request, Bundle, Res};
use super::context::{Cq, Ctx, Mr, Pd, Srq};
use super::events::Kind;
use crate::abi::mlx5::*;
use crate::abi::uverbs::*;
use mlx5_hw::{
    in_space, Access, CqCompression, CqParams, HwError, MiniFormat, RemoteMemory, SrqParams,
    XrcSrqParams, ZipLayout,
};

/// `MLX5_IB_DEFAULT_UIDX`: the user index of an object without one (CQE version 0).
const DEFAULT_UIDX: u32 = 0xff_ffff;

/// mlx5_ib's `get_srq_user_index` and `verify_assign_uidx` for an XRC SRQ's driver data of
/// `len` bytes under CQE version `cqe_version`: under version 1 the data must carry a
/// user index of 24 bits other than the default; under 0 it may carry only the default,
/// and the SRQ gets it.
pub(crate) fn srq_user_index(cqe_version: u8, len: usize, uidx: u32) -> Result<u32, i32> {
    let has = len >= std::mem::offset_of!(mlx5_ib_create_srq, uidx) + 4;
    if cqe_version == 0 {
        return match !has || uidx == DEFAULT_UIDX {
            true => Ok(DEFAULT_UIDX),
            false => Err(libc::EINVAL),
        };
    }
    if !has || uidx == DEFAULT_UIDX || uidx & !DEFAULT_UIDX != 0 {
        return Err(libc::EINVAL);
    }
    Ok(uidx)
}

/// The errno the kernel answers for what the model refuses.
pub(crate) fn errno(e: HwError) -> i32 {
    match e {
        HwError::NoSuchObject | HwError::InvalidParam(_) | HwError::InvalidTransition => {
            libc::EINVAL
        }
        HwError::Busy => libc::EBUSY,
        HwError::OutOfResources => libc::ENOMEM,
        HwError::BadAddress => libc::EFAULT,
        HwError::NotSupported(_) => libc::EOPNOTSUPP,
    }
}

/// The access flags a registration or a QP may carry, as `ib_check_mr_access` /
/// `ib_check_qp_access` take them: remote write or atomic needs local write.
pub(crate) fn access(flags: u32, allowed: u32) -> Result<Access, i32> {
    if flags & !allowed != 0 {
        return Err(libc::EINVAL);
    }
    let remote = IB_UVERBS_ACCESS_REMOTE_WRITE | IB_UVERBS_ACCESS_REMOTE_ATOMIC;
    if flags & remote != 0 && flags & IB_UVERBS_ACCESS_LOCAL_WRITE == 0 {
        return Err(libc::EINVAL);
    }
    Ok(Access(flags))
}

impl Ctx<'_> {
    /// The PD of a handle (`uobj_get_obj_read`: EINVAL when there is none).
    pub(crate) fn pd(&self, handle: u32) -> Result<&Pd, i32> {
        self.pds.get(&handle).ok_or(libc::EINVAL)
    }

    /// ALLOC_PD.
    pub(crate) fn alloc_pd(&mut self, b: &Bundle<'_>) -> Res {
        let pdn = self.nic.alloc_pd();
        let handle = self.handle();
        if let Err(e) = self
            .respond(b, &ib_uverbs_alloc_pd_resp { pd_handle: handle })
            .and_then(|()| self.respond_driver(b, &mlx5_ib_alloc_pd_resp { pdn }))
        {
            let _ = self.nic.dealloc_pd(pdn);
            return Err(e);
        }
        self.pds.insert(handle, Pd { pdn });
        Ok(())
    }

    /// DEALLOC_PD: EBUSY while objects use it.
    pub(crate) fn dealloc_pd(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_dealloc_pd = request(b, false)?;
        let pd = self.pd(cmd.pd_handle)?;
        self.nic.dealloc_pd(pd.pdn).map_err(errno)?;
        self.pds.remove(&cmd.pd_handle);
        Ok(())
    }

    /// REG_MR: the program's pages (which must be mapped, as `ib_umem_get` pins them) in
    /// the context's space. An IOVA other than the address is not modelled.
    pub(crate) fn reg_mr(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_reg_mr = request(b, false)?;
        if (cmd.start ^ cmd.hca_va) & 0xfff != 0 {
            return Err(libc::EINVAL);
        }
        if cmd.hca_va != cmd.start {
            return Err(libc::EOPNOTSUPP);
        }
        let allowed = IB_UVERBS_ACCESS_LOCAL_WRITE
            | IB_UVERBS_ACCESS_REMOTE_WRITE
            | IB_UVERBS_ACCESS_REMOTE_READ
            | IB_UVERBS_ACCESS_REMOTE_ATOMIC
            | IB_UVERBS_ACCESS_ON_DEMAND
            | IB_UVERBS_ACCESS_RELAXED_ORDERING;
        let rights = access(
            cmd.access_flags & !IB_UVERBS_ACCESS_RELAXED_ORDERING,
            allowed,
        )?;
        let pdn = self.pd(cmd.pd_handle)?.pdn;
        let on_demand = rights.contains(Access::ON_DEMAND);
        if !on_demand && !self.shared.spaces.mapped(self.space, cmd.start, cmd.length) {
            return Err(libc::EFAULT);
        }
        // SAFETY: the range is the program's, reached through its address space; a range it
        // unmaps later reads as zeros (remote::Spaces), never this process's memory.
        let key = unsafe {
            self.nic
                .reg_mr(pdn, in_space(self.space, cmd.start), cmd.length, rights)
        }
        .map_err(errno)?;
        let handle = self.handle();
        let resp = ib_uverbs_reg_mr_resp {
            mr_handle: handle,
            lkey: key,
            rkey: key,
        };
        if let Err(e) = self.respond(b, &resp) {
            let _ = self.nic.dereg_mr(key);
            return Err(e);
        }
        self.mrs.insert(
            handle,
            Mr {
                key,
                pdn,
                access: cmd.access_flags,
                addr: cmd.start,
                len: cmd.length,
            },
        );
        Ok(())
    }

    /// DEREG_MR.
    pub(crate) fn dereg_mr(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_dereg_mr = request(b, false)?;
        let mr = self.mrs.get(&cmd.mr_handle).ok_or(libc::EINVAL)?;
        self.nic.dereg_mr(mr.key).map_err(errno)?;
        self.mrs.remove(&cmd.mr_handle);
        Ok(())
    }

    /// CREATE_COMP_CHANNEL: a model channel whose events go to the program's pipe.
    pub(crate) fn create_comp_channel(&mut self, b: &Bundle<'_>) -> Res {
        let (queue, fd) = b.events.clone().ok_or(libc::EINVAL)?;
        let channel = self.nic.create_channel().map_err(errno)?;
        self.respond(b, &ib_uverbs_create_comp_channel_resp { fd: fd as u32 })?;
        self.shared
            .events
            .add_channel(self.index, channel, queue.clone());
        // A number the program closed and got again names the new channel.
        self.channels.insert(fd, (channel, queue));
        Ok(())
    }

    /// CREATE_CQ (legacy and extended): `roundup_pow_of_two(cqe + 1)` entries of 64 or 128
    /// bytes at the program's buffer, its doorbell record, optionally compressed.
    pub(crate) fn create_cq(&mut self, b: &Bundle<'_>, ex: bool) -> Res {
        let (user_handle, cqe, comp_vector, comp_channel, flags) = if ex {
            let c: ib_uverbs_ex_create_cq = request(b, true)?;
            if c.comp_mask != 0 {
                return Err(libc::EINVAL);
            }
            (c.user_handle, c.cqe, c.comp_vector, c.comp_channel, c.flags)
        } else {
            let c: ib_uverbs_create_cq = request(b, false)?;
            (c.user_handle, c.cqe, c.comp_vector, c.comp_channel, 0)
        };
        let known = IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION | IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN;
        if flags & !known != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        if comp_vector >= super::device::COMP_VECTORS {
            return Err(libc::EINVAL);
        }
        let channel = match comp_channel {
            -1 => None,
            fd => Some(self.channels.get(&fd).ok_or(libc::EINVAL)?.0),
        };
        let drv: mlx5_ib_create_cq = driver_request(b, false)?;
        let entries = (cqe as u64 + 1).next_power_of_two();
        if cqe as i32 <= 0 && cqe != 0 || entries > u64::from(self.nic.caps().max_cqe) {
            return Err(libc::EINVAL);
        }
        if drv.cqe_size != 64 && drv.cqe_size != 128 {
            return Err(libc::EINVAL);
        }
        if drv.flags & !MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let compression = match drv.cqe_comp_en {
            0 => None,
            1 => Some(CqCompression {
                layout: ZipLayout::Basic,
                format: match u32::from(drv.cqe_comp_res_format) {
                    MLX5_IB_CQE_RES_FORMAT_HASH => MiniFormat::Hash,
                    MLX5_IB_CQE_RES_FORMAT_CSUM => MiniFormat::Csum,
                    _ => return Err(libc::EOPNOTSUPP),
                },
            }),
            _ => return Err(libc::EINVAL),
        };
        let params = CqParams {
            buf: in_space(self.space, drv.buf_addr),
            log_cqe_cnt: entries.trailing_zeros() as u8,
            cqe_size: drv.cqe_size,
            dbrec: in_space(self.space, drv.db_addr),
            overrun_ignore: flags & IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN != 0,
            channel,
            compression,
        };
        // SAFETY: the buffer and record are the program's, reached through its space.
        let info = unsafe { self.nic.create_cq(&params) }.map_err(errno)?;
        let handle = self.handle();
        let base = ib_uverbs_create_cq_resp {
            cq_handle: handle,
            cqe: entries as u32 - 1,
        };
        let done = if ex {
            self.respond(
                b,
                &ib_uverbs_ex_create_cq_resp {
                    base,
                    comp_mask: 0,
                    response_length: std::mem::size_of::<ib_uverbs_ex_create_cq_resp>() as u32,
                },
            )
        } else {
            self.respond(b, &base)
        }
        .and_then(|()| {
            self.respond_driver(
                b,
                &mlx5_ib_create_cq_resp {
                    cqn: info.cqn,
                    reserved: 0,
                },
            )
        });
        if let Err(e) = done {
            let _ = self.nic.destroy_cq(info.cqn);
            return Err(e);
        }
        let queue = self.async_events.clone().ok_or(libc::EINVAL)?.0;
        self.shared
            .events
            .add(Kind::Cq, self.index, info.cqn, user_handle, queue);
        self.cqs.insert(handle, Cq { cqn: info.cqn });
        Ok(())
    }

    /// DESTROY_CQ: the events delivered, for `ibv_destroy_cq` to wait for their acks.
    pub(crate) fn destroy_cq(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_destroy_cq = request(b, false)?;
        let cq = self.cqs.get(&cmd.cq_handle).ok_or(libc::EINVAL)?;
        self.nic.destroy_cq(cq.cqn).map_err(errno)?;
        let (comp, asynchronous) = self.shared.events.remove(Kind::Cq, self.index, cq.cqn);
        self.cqs.remove(&cmd.cq_handle);
        self.respond(
            b,
            &ib_uverbs_destroy_cq_resp {
                comp_events_reported: comp,
                async_events_reported: asynchronous,
            },
        )
    }

    /// CREATE_SRQ / CREATE_XSRQ (basic and XRC SRQs): `roundup_pow_of_two(max_wr + 1)`
    /// WQEs of `max(32, roundup_pow_of_two(16 + 16 * max_sge))` bytes (`create_srq_user`).
    /// An XRC SRQ (`__uverbs_create_xsrq`) names its domain and CQ (EINVAL for a handle
    /// that names none) and carries the driver's user index, which its completions report
    /// under CQE version 1; tag-matching SRQs are EOPNOTSUPP.
    pub(crate) fn create_srq(&mut self, b: &Bundle<'_>, xsrq: bool) -> Res {
        // The model raises no SRQ event, so the SRQ's user handle is never named.
        let (pd_handle, max_wr, max_sge, srq_limit, xrc) = if xsrq {
            let c: ib_uverbs_create_xsrq = request(b, false)?;
            let xrc = match c.srq_type {
                IB_UVERBS_SRQT_BASIC => None,
                IB_UVERBS_SRQT_XRC => Some((
                    c.xrcd_handle,
                    XrcSrqParams {
                        xrcd: self.xrcd(c.xrcd_handle)?.xrcdn,
                        cqn: self.cqs.get(&c.cq_handle).ok_or(libc::EINVAL)?.cqn,
                        user_index: 0,
                    },
                )),
                _ => return Err(libc::EOPNOTSUPP),
            };
            (c.pd_handle, c.max_wr, c.max_sge, c.srq_limit, xrc)
        } else {
            let c: ib_uverbs_create_srq = request(b, false)?;
            (c.pd_handle, c.max_wr, c.max_sge, c.srq_limit, None)
        };
        let caps = self.nic.caps();
        if max_wr >= caps.max_qp_wr || max_sge >= caps.max_recv_sge {
            return Err(libc::EINVAL);
        }
        let pdn = self.pd(pd_handle)?.pdn;
        let drv: mlx5_ib_create_srq = driver_request(b, true)?;
        if drv.flags != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let wqes = (u64::from(max_wr) + 1).next_power_of_two();
        let stride = (16 + 16 * u64::from(max_sge)).next_power_of_two().max(32);
        let params = SrqParams {
            pdn,
            buf: in_space(self.space, drv.buf_addr),
            log_wqe_cnt: wqes.trailing_zeros() as u8,
            log_stride: stride.trailing_zeros() as u8,
            dbrec: in_space(self.space, drv.db_addr),
        };
        let srqn = match xrc {
            // SAFETY: the ring and record are the program's, reached through its space.
            None => unsafe { self.nic.create_srq(&params) },
            Some((_, x)) => {
                let x = XrcSrqParams {
                    user_index: srq_user_index(self.cqe_version, b.driver.len(), drv.uidx)?,
                    ..x
                };
                // SAFETY: as for a basic SRQ.
                unsafe { self.nic.create_xrc_srq(&params, &x) }
            }
        }
        .map_err(errno)?;
        let handle = self.handle();
        let done = self
            .respond(
                b,
                &ib_uverbs_create_srq_resp {
                    srq_handle: handle,
                    max_wr: wqes as u32 - 1,
                    max_sge,
                    srqn,
                },
            )
            .and_then(|()| self.respond_driver(b, &mlx5_ib_create_srq_resp { srqn, reserved: 0 }));
        if let Err(e) = done {
            let _ = self.nic.destroy_srq(srqn);
            return Err(e);
        }
        self.srqs.insert(
            handle,
            Srq {
                srqn,
                max_wr: wqes as u32 - 1,
                max_sge,
                limit: srq_limit,
                xrcd: xrc.map(|(h, _)| h),
            },
        );
        if let Some((h, _)) = xrc {
            self.xrcd_user(h, true);
        }
        Ok(())
    }

    /// MODIFY_SRQ: the limit (kept and reported; the model raises no limit event); a
    /// resize is refused as mlx5 refuses it (`mlx5_ib_modify_srq`: EINVAL).
    pub(crate) fn modify_srq(&mut self, b: &Bundle<'_>) -> Res {
        /// `IB_SRQ_MAX_WR`, `IB_SRQ_LIMIT` (`enum ib_srq_attr_mask`).
        const MAX_WR: u32 = 1;
        const LIMIT: u32 = 2;
        let cmd: ib_uverbs_modify_srq = request(b, false)?;
        let srq = self.srqs.get_mut(&cmd.srq_handle).ok_or(libc::EINVAL)?;
        if cmd.attr_mask & MAX_WR != 0 || cmd.attr_mask & !(MAX_WR | LIMIT) != 0 {
            return Err(libc::EINVAL);
        }
        if cmd.attr_mask & LIMIT != 0 {
            if cmd.srq_limit > srq.max_wr {
                return Err(libc::EINVAL);
            }
            srq.limit = cmd.srq_limit;
        }
        Ok(())
    }

    /// QUERY_SRQ.
    pub(crate) fn query_srq(&self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_query_srq = request(b, false)?;
        let srq = self.srqs.get(&cmd.srq_handle).ok_or(libc::EINVAL)?;
        self.respond(
            b,
            &ib_uverbs_query_srq_resp {
                max_wr: srq.max_wr,
                max_sge: srq.max_sge,
                srq_limit: srq.limit,
                reserved: 0,
            },
        )
    }

    /// DESTROY_SRQ: EBUSY while a QP uses it.
    pub(crate) fn destroy_srq(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_destroy_srq = request(b, false)?;
        let srq = self.srqs.get(&cmd.srq_handle).ok_or(libc::EINVAL)?;
        self.nic.destroy_srq(srq.srqn).map_err(errno)?;
        if let Some(h) = srq.xrcd {
            self.xrcd_user(h, false);
        }
        self.srqs.remove(&cmd.srq_handle);
        self.respond(b, &ib_uverbs_destroy_srq_resp { events_reported: 0 })
    }

    /// CREATE_AH (libmlx5 asks the kernel only on RoCE, for the destination MAC; the AV
    /// itself it builds in userspace): a link-local GID's MAC as `rdma_get_ll_mac` derives
    /// it, any other GID's a locally administered MAC made from its last four bytes.
    pub(crate) fn create_ah(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_create_ah = request(b, false)?;
        self.pd(cmd.pd_handle)?;
        if cmd.attr.port_num != 1 || cmd.attr.is_global == 0 {
            return Err(libc::EINVAL);
        }
        let handle = self.handle();
        self.respond(b, &ib_uverbs_create_ah_resp { ah_handle: handle })?;
        self.respond_driver(
            b,
            &mlx5_ib_create_ah_resp {
                response_length: std::mem::size_of::<mlx5_ib_create_ah_resp>() as u32,
                dmac: dmac(&cmd.attr.grh.dgid),
                reserved: [0; 6],
            },
        )?;
        self.ahs.insert(handle);
        Ok(())
    }

    /// DESTROY_AH.
    pub(crate) fn destroy_ah(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_destroy_ah = request(b, false)?;
        match self.ahs.remove(&cmd.ah_handle) {
            true => Ok(()),
            false => Err(libc::EINVAL),
        }
    }
}

/// The destination MAC of a RoCE GID (see [`Ctx::create_ah`]).
fn dmac(gid: &[u8; 16]) -> [u8; 6] {
    if gid[..8] == [0xfe, 0x80, 0, 0, 0, 0, 0, 0] {
        // EUI-64 back to a MAC: drop ff:fe, flip the universal/local bit.
        [gid[8] ^ 2, gid[9], gid[10], gid[13], gid[14], gid[15]]
    } else {
        [0x02, 0x00, gid[12], gid[13], gid[14], gid[15]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_srqs_user_index_is_checked_as_mlx5_ib_checks_it() {
        let full = std::mem::size_of::<mlx5_ib_create_srq>();
        let short = std::mem::offset_of!(mlx5_ib_create_srq, uidx);
        assert_eq!(srq_user_index(1, full, 7), Ok(7));
        assert_eq!(srq_user_index(1, full, DEFAULT_UIDX), Err(libc::EINVAL));
        assert_eq!(srq_user_index(1, full, 1 << 24), Err(libc::EINVAL));
        assert_eq!(srq_user_index(1, short, 0), Err(libc::EINVAL), "none given");
        assert_eq!(srq_user_index(0, full, DEFAULT_UIDX), Ok(DEFAULT_UIDX));
        assert_eq!(srq_user_index(0, short, 0), Ok(DEFAULT_UIDX));
        assert_eq!(srq_user_index(0, full, 7), Err(libc::EINVAL));
    }

    #[test]
    fn access_flags_follow_ib_check_mr_access() {
        let all = IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE;
        assert_eq!(
            access(IB_UVERBS_ACCESS_REMOTE_WRITE, all),
            Err(libc::EINVAL)
        );
        assert_eq!(access(all, all), Ok(Access(3)));
        assert_eq!(access(IB_UVERBS_ACCESS_REMOTE_READ, all), Err(libc::EINVAL));
    }

    #[test]
    fn a_link_local_gid_gives_its_eui64_mac() {
        let mut gid = [0u8; 16];
        gid[..2].copy_from_slice(&[0xfe, 0x80]);
        gid[8..].copy_from_slice(&[0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55]);
        assert_eq!(dmac(&gid), [0x00, 0x11, 0x22, 0x33, 0x44, 0x55]);
    }
}
