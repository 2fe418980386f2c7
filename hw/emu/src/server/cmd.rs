//! The uverbs `write()` dispatcher, as the kernel's `ib_uverbs_write` and `verify_hdr`
//! (drivers/infiniband/core/uverbs_main.c) frame a command: the header, for extended
//! commands the extended header, the core request and response, and the driver's input and
//! output (`udata`) after them. Each command's handler lives with its object.

use super::context::Ctx;
use super::events::EventQueue;
use crate::abi::uverbs::*;
use crate::abi::{self, Immutable, IntoBytes};
use std::fs::File;
use std::mem::size_of;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// A command's buffers, as the kernel's `uverbs_attr_bundle` holds them.
pub(crate) struct Bundle<'b> {
    /// The core request: for a legacy command exactly its struct; for an extended one
    /// `in_words * 8` bytes (read with [`abi::read_extensible`]).
    pub(crate) core: &'b [u8],
    /// The driver's input (`udata` in).
    pub(crate) driver: &'b [u8],
    /// Where the core response goes, and its room.
    pub(crate) core_out: (u64, usize),
    /// Where the driver's response goes, and its room.
    pub(crate) driver_out: (u64, usize),
    /// The queue of the program's new event fd (GET_CONTEXT, CREATE_COMP_CHANNEL) and that
    /// fd's number.
    pub(crate) events: Option<(Arc<EventQueue>, i32)>,
}

/// A command's result: `Err` is the errno `write()` fails with.
pub(crate) type Res = Result<(), i32>;

/// How the kernel's method table describes a write command (`uverbs_uapi.c`,
/// `UAPI_DEF_WRITE_*`): its request and response sizes, and whether it carries driver data
/// (whether it is extended is the table's key).
struct Method {
    req: usize,
    resp: usize,
    has_resp: bool,
    udata: bool,
}

const fn legacy<Req, Resp>(has_resp: bool, udata: bool) -> Method {
    Method {
        req: size_of::<Req>(),
        resp: if has_resp { size_of::<Resp>() } else { 0 },
        has_resp,
        udata,
    }
}

/// An extended command without a response (`UAPI_DEF_WRITE_I`).
const fn extended_in<Req>() -> Method {
    Method {
        req: size_of::<Req>(),
        resp: 0,
        has_resp: false,
        udata: true,
    }
}

const fn extended<Req, Resp>() -> Method {
    Method {
        req: size_of::<Req>(),
        resp: size_of::<Resp>(),
        has_resp: true,
        udata: true,
    }
}

/// The commands the emulated kernel answers; anything else is `EOPNOTSUPP` (the kernel's
/// `uapi_get_method` for a method it does not have).
fn method(command: u32, ex: bool) -> Option<Method> {
    Some(match (command, ex) {
        (IB_USER_VERBS_CMD_GET_CONTEXT, false) => {
            legacy::<ib_uverbs_get_context, ib_uverbs_get_context_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_QUERY_DEVICE, false) => {
            legacy::<ib_uverbs_query_device, ib_uverbs_query_device_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_QUERY_PORT, false) => {
            legacy::<ib_uverbs_query_port, ib_uverbs_query_port_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_ALLOC_PD, false) => {
            legacy::<ib_uverbs_alloc_pd, ib_uverbs_alloc_pd_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_DEALLOC_PD, false) => legacy::<ib_uverbs_dealloc_pd, ()>(false, false),
        (IB_USER_VERBS_CMD_CREATE_AH, false) => {
            legacy::<ib_uverbs_create_ah, ib_uverbs_create_ah_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_DESTROY_AH, false) => legacy::<ib_uverbs_destroy_ah, ()>(false, false),
        (IB_USER_VERBS_CMD_ATTACH_MCAST, false) => {
            legacy::<ib_uverbs_attach_mcast, ()>(false, false)
        }
        (IB_USER_VERBS_CMD_DETACH_MCAST, false) => {
            legacy::<ib_uverbs_detach_mcast, ()>(false, false)
        }
        (IB_USER_VERBS_CMD_OPEN_XRCD, false) => {
            legacy::<ib_uverbs_open_xrcd, ib_uverbs_open_xrcd_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_CLOSE_XRCD, false) => legacy::<ib_uverbs_close_xrcd, ()>(false, false),
        (IB_USER_VERBS_CMD_REG_MR, false) => {
            legacy::<ib_uverbs_reg_mr, ib_uverbs_reg_mr_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_DEREG_MR, false) => legacy::<ib_uverbs_dereg_mr, ()>(false, false),
        (IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, false) => {
            legacy::<ib_uverbs_create_comp_channel, ib_uverbs_create_comp_channel_resp>(true, false)
        }
        (IB_USER_VERBS_CMD_CREATE_CQ, false) => {
            legacy::<ib_uverbs_create_cq, ib_uverbs_create_cq_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_RESIZE_CQ, false) => {
            legacy::<ib_uverbs_resize_cq, ib_uverbs_resize_cq_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_DESTROY_CQ, false) => {
            legacy::<ib_uverbs_destroy_cq, ib_uverbs_destroy_cq_resp>(true, false)
        }
        (IB_USER_VERBS_CMD_CREATE_QP, false) => {
            legacy::<ib_uverbs_create_qp, ib_uverbs_create_qp_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_QUERY_QP, false) => {
            legacy::<ib_uverbs_query_qp, ib_uverbs_query_qp_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_MODIFY_QP, false) => legacy::<ib_uverbs_modify_qp, ()>(false, true),
        (IB_USER_VERBS_CMD_DESTROY_QP, false) => {
            legacy::<ib_uverbs_destroy_qp, ib_uverbs_destroy_qp_resp>(true, false)
        }
        (IB_USER_VERBS_CMD_CREATE_SRQ, false) => {
            legacy::<ib_uverbs_create_srq, ib_uverbs_create_srq_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_CREATE_XSRQ, false) => {
            legacy::<ib_uverbs_create_xsrq, ib_uverbs_create_srq_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_MODIFY_SRQ, false) => legacy::<ib_uverbs_modify_srq, ()>(false, true),
        (IB_USER_VERBS_CMD_QUERY_SRQ, false) => {
            legacy::<ib_uverbs_query_srq, ib_uverbs_query_srq_resp>(true, true)
        }
        (IB_USER_VERBS_CMD_DESTROY_SRQ, false) => {
            legacy::<ib_uverbs_destroy_srq, ib_uverbs_destroy_srq_resp>(true, false)
        }
        (IB_USER_VERBS_EX_CMD_QUERY_DEVICE, true) => {
            extended::<ib_uverbs_ex_query_device, ib_uverbs_ex_query_device_resp>()
        }
        (IB_USER_VERBS_EX_CMD_CREATE_CQ, true) => {
            extended::<ib_uverbs_ex_create_cq, ib_uverbs_ex_create_cq_resp>()
        }
        (IB_USER_VERBS_EX_CMD_CREATE_QP, true) => {
            extended::<ib_uverbs_ex_create_qp, ib_uverbs_ex_create_qp_resp>()
        }
        (IB_USER_VERBS_EX_CMD_MODIFY_QP, true) => {
            extended::<ib_uverbs_ex_modify_qp, ib_uverbs_ex_modify_qp_resp>()
        }
        // The specs follow the command in the core request.
        (IB_USER_VERBS_EX_CMD_CREATE_FLOW, true) => {
            extended::<ib_uverbs_create_flow, ib_uverbs_create_flow_resp>()
        }
        (IB_USER_VERBS_EX_CMD_DESTROY_FLOW, true) => extended_in::<ib_uverbs_destroy_flow>(),
        (IB_USER_VERBS_EX_CMD_CREATE_WQ, true) => {
            extended::<ib_uverbs_ex_create_wq, ib_uverbs_ex_create_wq_resp>()
        }
        (IB_USER_VERBS_EX_CMD_MODIFY_WQ, true) => extended_in::<ib_uverbs_ex_modify_wq>(),
        (IB_USER_VERBS_EX_CMD_DESTROY_WQ, true) => {
            extended::<ib_uverbs_ex_destroy_wq, ib_uverbs_ex_destroy_wq_resp>()
        }
        // The work queue handles follow the command in the core request.
        (IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, true) => {
            extended::<ib_uverbs_ex_create_rwq_ind_table, ib_uverbs_ex_create_rwq_ind_table_resp>()
        }
        (IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, true) => {
            extended_in::<ib_uverbs_ex_destroy_rwq_ind_table>()
        }
        _ => return None,
    })
}

impl Ctx<'_> {
    /// One `write()` on the command fd: `Ok` or the errno.
    pub(crate) fn command(
        &mut self,
        buf: &[u8],
        fd: Option<OwnedFd>,
        event_fd: Option<i32>,
    ) -> Res {
        let r = self.dispatch(buf, fd, event_fd);
        if super::trace() {
            let command = abi::read::<ib_uverbs_cmd_hdr>(buf, 0).map_or(u32::MAX, |h| h.command);
            eprintln!(
                "mlx5-emu: space {} command {command:#x}: {}",
                self.space,
                match r {
                    Ok(()) => "ok".to_string(),
                    Err(e) => format!("errno {e}"),
                }
            );
        }
        r
    }

    fn dispatch(&mut self, buf: &[u8], fd: Option<OwnedFd>, event_fd: Option<i32>) -> Res {
        let hdr: ib_uverbs_cmd_hdr = abi::read(buf, 0).map_err(|_| libc::EINVAL)?;
        let ex = hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED != 0;
        let command = hdr.command & IB_USER_VERBS_CMD_COMMAND_MASK;
        let m = method(command, ex).ok_or(libc::EOPNOTSUPP)?;
        let count = buf.len();
        let hdr_len = size_of::<ib_uverbs_cmd_hdr>();
        let mut b = if ex {
            // verify_hdr, extended.
            let ex_hdr: ib_uverbs_ex_cmd_hdr = abi::read(buf, hdr_len).map_err(|_| libc::EINVAL)?;
            let at = hdr_len + size_of::<ib_uverbs_ex_cmd_hdr>();
            let core_in = usize::from(hdr.in_words) * 8;
            let driver_in = usize::from(ex_hdr.provider_in_words) * 8;
            if count != at + core_in + driver_in {
                return Err(libc::EINVAL);
            }
            if core_in < m.req {
                return Err(libc::ENOSPC);
            }
            if ex_hdr.cmd_hdr_reserved != 0 {
                return Err(libc::EINVAL);
            }
            let core_out = usize::from(hdr.out_words) * 8;
            let driver_out = usize::from(ex_hdr.provider_out_words) * 8;
            if ex_hdr.response != 0 {
                if core_out == 0 && driver_out == 0 {
                    return Err(libc::EINVAL);
                }
                if core_out < m.resp {
                    return Err(libc::ENOSPC);
                }
            } else if core_out != 0 || driver_out != 0 {
                return Err(libc::EINVAL);
            }
            Bundle {
                core: &buf[at..at + core_in],
                driver: &buf[at + core_in..],
                core_out: (ex_hdr.response, core_out),
                driver_out: (ex_hdr.response + core_out as u64, driver_out),
                events: None,
            }
        } else {
            // verify_hdr, legacy: the header's words count the header.
            if usize::from(hdr.in_words) * 4 != count {
                return Err(libc::EINVAL);
            }
            if count < m.req + hdr_len {
                return Err(libc::ENOSPC);
            }
            let out_len = usize::from(hdr.out_words) * 4;
            if out_len < m.resp {
                return Err(libc::ENOSPC);
            }
            let body = &buf[hdr_len..];
            let (core, driver) = if m.udata {
                body.split_at(m.req)
            } else {
                (body, &body[body.len()..])
            };
            let response = if m.has_resp {
                abi::read::<u64>(body, 0).map_err(|_| libc::EFAULT)?
            } else {
                0
            };
            let (core_len, driver_len) = match (m.has_resp, m.udata) {
                (false, _) => (0, 0),
                (true, true) => (m.resp, out_len - m.resp),
                (true, false) => (out_len, 0),
            };
            Bundle {
                core,
                driver,
                core_out: (response, core_len),
                driver_out: (response + core_len as u64, driver_len),
                events: None,
            }
        };
        if let (Some(fd), Some(n)) = (fd, event_fd) {
            b.events = Some((EventQueue::new(File::from(fd)), n));
        }
        if command != IB_USER_VERBS_CMD_GET_CONTEXT && !self.ready {
            // Every other command needs the context (`ib_uverbs_get_ucontext`).
            return Err(libc::EINVAL);
        }
        let r = match (command, ex) {
            (IB_USER_VERBS_CMD_GET_CONTEXT, false) => self.get_context(&b),
            (IB_USER_VERBS_CMD_QUERY_DEVICE, false) => self.query_device(&b),
            (IB_USER_VERBS_EX_CMD_QUERY_DEVICE, true) => self.query_device_ex(&b),
            (IB_USER_VERBS_CMD_QUERY_PORT, false) => self.query_port(&b),
            (IB_USER_VERBS_CMD_ALLOC_PD, false) => self.alloc_pd(&b),
            (IB_USER_VERBS_CMD_DEALLOC_PD, false) => self.dealloc_pd(&b),
            (IB_USER_VERBS_CMD_OPEN_XRCD, false) => self.open_xrcd(&b),
            (IB_USER_VERBS_CMD_CLOSE_XRCD, false) => self.close_xrcd(&b),
            (IB_USER_VERBS_CMD_REG_MR, false) => self.reg_mr(&b),
            (IB_USER_VERBS_CMD_DEREG_MR, false) => self.dereg_mr(&b),
            (IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, false) => self.create_comp_channel(&b),
            (IB_USER_VERBS_CMD_CREATE_CQ, false) => self.create_cq(&b, false),
            (IB_USER_VERBS_EX_CMD_CREATE_CQ, true) => self.create_cq(&b, true),
            (IB_USER_VERBS_CMD_RESIZE_CQ, false) => Err(libc::EOPNOTSUPP),
            (IB_USER_VERBS_CMD_DESTROY_CQ, false) => self.destroy_cq(&b),
            (IB_USER_VERBS_CMD_CREATE_SRQ, false) => self.create_srq(&b, false),
            (IB_USER_VERBS_CMD_CREATE_XSRQ, false) => self.create_srq(&b, true),
            (IB_USER_VERBS_CMD_MODIFY_SRQ, false) => self.modify_srq(&b),
            (IB_USER_VERBS_CMD_QUERY_SRQ, false) => self.query_srq(&b),
            (IB_USER_VERBS_CMD_DESTROY_SRQ, false) => self.destroy_srq(&b),
            (IB_USER_VERBS_CMD_CREATE_AH, false) => self.create_ah(&b),
            (IB_USER_VERBS_CMD_DESTROY_AH, false) => self.destroy_ah(&b),
            (IB_USER_VERBS_CMD_CREATE_QP, false) => self.create_qp(&b, false),
            (IB_USER_VERBS_EX_CMD_CREATE_QP, true) => self.create_qp(&b, true),
            (IB_USER_VERBS_CMD_QUERY_QP, false) => self.query_qp(&b),
            (IB_USER_VERBS_CMD_MODIFY_QP, false) => self.modify_qp(&b, false),
            (IB_USER_VERBS_EX_CMD_MODIFY_QP, true) => self.modify_qp(&b, true),
            (IB_USER_VERBS_CMD_DESTROY_QP, false) => self.destroy_qp(&b),
            (IB_USER_VERBS_CMD_ATTACH_MCAST, false) => self.attach_mcast(&b),
            (IB_USER_VERBS_CMD_DETACH_MCAST, false) => self.detach_mcast(&b),
            (IB_USER_VERBS_EX_CMD_CREATE_FLOW, true) => self.create_flow(&b),
            (IB_USER_VERBS_EX_CMD_DESTROY_FLOW, true) => self.destroy_flow(&b),
            (IB_USER_VERBS_EX_CMD_CREATE_WQ, true) => self.create_wq(&b),
            (IB_USER_VERBS_EX_CMD_MODIFY_WQ, true) => self.modify_wq(&b),
            (IB_USER_VERBS_EX_CMD_DESTROY_WQ, true) => self.destroy_wq(&b),
            (IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, true) => self.create_ind_table(&b),
            (IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, true) => self.destroy_ind_table(&b),
            _ => Err(libc::EOPNOTSUPP),
        };
        self.pump();
        r
    }

    /// Write a core response (`uverbs_response`: what fits, zeros over the rest of the
    /// room) into the program's memory.
    pub(crate) fn respond<T: IntoBytes + Immutable>(&self, b: &Bundle<'_>, resp: &T) -> Res {
        let (addr, room) = b.core_out;
        let mut out = vec![0u8; room];
        abi::write_response(&mut out, resp);
        self.put(addr, &out)
    }

    /// Write the driver's response (`ib_copy_to_udata` of `min(outlen, sizeof)`).
    pub(crate) fn respond_driver<T: IntoBytes + Immutable>(&self, b: &Bundle<'_>, resp: &T) -> Res {
        let (addr, room) = b.driver_out;
        let n = room.min(size_of::<T>());
        self.put(addr, &resp.as_bytes()[..n])
    }

    /// Copy to the program (`copy_to_user`): `EFAULT` if it is not there.
    fn put(&self, addr: u64, bytes: &[u8]) -> Res {
        if bytes.is_empty() {
            return Ok(());
        }
        match self.shared.spaces.copy_out(self.space, addr, bytes) {
            true => Ok(()),
            false => Err(libc::EFAULT),
        }
    }
}

/// The request struct of a command (`uverbs_request`): a legacy command's exact struct, an
/// extended one's zero-extended.
pub(crate) fn request<T: abi::FromBytes + IntoBytes>(b: &Bundle<'_>, ex: bool) -> Result<T, i32> {
    if ex {
        abi::read_extensible(b.core).map_err(|e| e.errno())
    } else {
        abi::read(b.core, 0).map_err(|e| e.errno())
    }
}

/// The driver's request struct: `EINVAL` when the program sent less than the driver needs,
/// a shorter one zero-extended where the driver accepts older layouts (`extensible`).
pub(crate) fn driver_request<T: abi::FromBytes + IntoBytes>(
    b: &Bundle<'_>,
    extensible: bool,
) -> Result<T, i32> {
    if extensible {
        let mut padded = b.driver.to_vec();
        padded.resize(padded.len().max(size_of::<T>()), 0);
        abi::read(&padded, 0).map_err(|e| e.errno())
    } else {
        abi::read(b.driver, 0).map_err(|e| e.errno())
    }
}
