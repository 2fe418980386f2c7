//! XRC: OPEN_XRCD and CLOSE_XRCD (uverbs_cmd.c `ib_uverbs_open_xrcd`,
//! `uverbs_free_xrcd`; mlx5_ib's `mlx5_ib_alloc_xrcd`), and the XRC target QP of CREATE_QP
//! (`IB_QPT_XRC_TGT`: uverbs' `create_qp` takes the XRC domain's handle where the PD's
//! goes and no CQ; mlx5_ib's `create_xrc_tgt_qp` ignores the program's rings). XRC SRQs
//! are CREATE_XSRQ's (objects.rs), XRC initiators ordinary CREATE_QP QPs (qp.rs).
//!
//! A domain shared between processes through a file (`fd` other than -1, the kernel's
//! `xrcd_table_insert` by inode) is not emulated: EOPNOTSUPP.

use super::cmd::{request, Bundle, Res};
use super::context::Ctx;
use super::objects::errno;
use crate::abi::mlx5::{mlx5_ib_create_qp, MLX5_QP_FLAG_SCATTER_CQE};
use crate::abi::uverbs::*;

/// An XRC domain of the context.
#[derive(Debug)]
pub(crate) struct Xrcd {
    /// The model's domain number.
    pub(crate) xrcdn: u32,
}

impl Ctx<'_> {
    /// The XRC domain of a handle (`uobj_get_read(UVERBS_OBJECT_XRCD)`: EINVAL).
    pub(crate) fn xrcd(&self, handle: u32) -> Result<&Xrcd, i32> {
        self.xrcds.get(&handle).ok_or(libc::EINVAL)
    }

    /// OPEN_XRCD: a new domain of this context for `fd` -1 (what `ibv_open_xrcd` sends
    /// for a domain of one process); EOPNOTSUPP when the device has no XRC
    /// (`mlx5_ib_alloc_xrcd` without the HCA cap `xrc`).
    pub(crate) fn open_xrcd(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_open_xrcd = request(b, false)?;
        if cmd.fd != u32::MAX {
            return Err(libc::EOPNOTSUPP);
        }
        let xrcdn = self.nic.alloc_xrcd().map_err(errno)?;
        let handle = self.handle();
        if let Err(e) = self.respond(
            b,
            &ib_uverbs_open_xrcd_resp {
                xrcd_handle: handle,
            },
        ) {
            let _ = self.nic.dealloc_xrcd(xrcdn);
            return Err(e);
        }
        self.xrcds.insert(handle, Xrcd { xrcdn });
        Ok(())
    }

    /// CLOSE_XRCD: EBUSY while an XRC SRQ or target QP is in the domain
    /// (`ib_dealloc_xrcd_user` while its use count is not 0).
    pub(crate) fn close_xrcd(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_close_xrcd = request(b, false)?;
        let xrcdn = self.xrcd(cmd.xrcd_handle)?.xrcdn;
        self.nic.dealloc_xrcd(xrcdn).map_err(errno)?;
        self.xrcds.remove(&cmd.xrcd_handle);
        Ok(())
    }

    /// CREATE_QP of an XRC target: the domain named by `pd_handle` (EINVAL if it names
    /// none); no CQ, SRQ or ring is looked up or kept. Its number.
    pub(crate) fn create_xrc_tgt_qp(
        &mut self,
        c: &ib_uverbs_ex_create_qp,
        drv: &mlx5_ib_create_qp,
    ) -> Result<u32, i32> {
        if drv.flags & !MLX5_QP_FLAG_SCATTER_CQE != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let xrcdn = self.xrcd(c.pd_handle)?.xrcdn;
        self.nic.create_xrc_tgt_qp(xrcdn).map_err(errno)
    }
}
