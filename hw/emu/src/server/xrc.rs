//! XRC: OPEN_XRCD and CLOSE_XRCD (uverbs_cmd.c `ib_uverbs_open_xrcd`,
//! `ib_uverbs_dealloc_xrcd`, uverbs_std_types.c `uverbs_free_xrcd`; mlx5_ib's
//! `mlx5_ib_alloc_xrcd`), and the XRC target QP of CREATE_QP (`IB_QPT_XRC_TGT`: uverbs'
//! `create_qp` takes the XRC domain's handle where the PD's goes and no CQ; mlx5_ib's
//! `create_xrc_tgt_qp` ignores the program's rings). XRC SRQs are CREATE_XSRQ's
//! (objects.rs), XRC initiators ordinary CREATE_QP QPs (qp.rs).
//!
//! A domain opened through a file (`fd` other than -1, what perftest's `-c XRC` does) is
//! the NIC's domain of that file's inode, as the kernel's `xrcd_tree` keeps it: the server
//! finds the inode through `/proc/<pid>/fd/<fd>` of the program, where the kernel has the
//! file itself.

use super::cmd::{request, Bundle, Res};
use super::context::Ctx;
use super::objects::errno;
use crate::abi::mlx5::{mlx5_ib_create_qp, MLX5_QP_FLAG_SCATTER_CQE};
use crate::abi::uverbs::*;
use std::os::unix::fs::MetadataExt;

/// A file's identity for the domains opened through it: the NIC's index, the file's
/// device and inode.
pub(crate) type FileKey = (usize, u64, u64);

/// An XRC domain handle of the context.
#[derive(Debug)]
pub(crate) struct Xrcd {
    /// The model's domain number.
    pub(crate) xrcdn: u32,
    /// The file it was opened through, if any.
    file: Option<FileKey>,
    /// The XRC SRQs and target QPs created through this handle (the uobject's `refcnt`,
    /// which `uverbs_free_xrcd` finds 0 or answers EBUSY).
    pub(crate) users: u32,
}

impl Ctx<'_> {
    /// The XRC domain of a handle (`uobj_get_read(UVERBS_OBJECT_XRCD)`: EINVAL).
    pub(crate) fn xrcd(&self, handle: u32) -> Result<&Xrcd, i32> {
        self.xrcds.get(&handle).ok_or(libc::EINVAL)
    }

    /// Count an object made through XRC domain handle `handle` in (`add`) or out.
    pub(crate) fn xrcd_user(&mut self, handle: u32, add: bool) {
        if let Some(x) = self.xrcds.get_mut(&handle) {
            x.users = if add { x.users + 1 } else { x.users - 1 };
        }
    }

    /// OPEN_XRCD: for `fd` -1 a new domain of this handle alone; else the NIC's domain of
    /// the file (EBADF for no open file, EAGAIN for none yet without `O_CREAT`, EINVAL for
    /// one already there with `O_EXCL`). EOPNOTSUPP when the device has no XRC
    /// (`mlx5_ib_alloc_xrcd` without the HCA cap `xrc`).
    pub(crate) fn open_xrcd(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_open_xrcd = request(b, false)?;
        let file = match cmd.fd {
            u32::MAX => None,
            fd => Some(self.file_key(fd)?),
        };
        let xrcdn = match file {
            None => self.nic.alloc_xrcd().map_err(errno)?,
            Some(key) => {
                let mut files = self
                    .shared
                    .xrcd_files
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let oflags = cmd.oflags as i32;
                match files.get_mut(&key) {
                    Some(_) if oflags & libc::O_EXCL != 0 => return Err(libc::EINVAL),
                    Some((xrcdn, handles)) => {
                        *handles += 1;
                        *xrcdn
                    }
                    None if oflags & libc::O_CREAT == 0 => return Err(libc::EAGAIN),
                    None => {
                        let xrcdn = self.nic.alloc_xrcd().map_err(errno)?;
                        files.insert(key, (xrcdn, 1));
                        xrcdn
                    }
                }
            }
        };
        let x = Xrcd {
            xrcdn,
            file,
            users: 0,
        };
        let handle = self.handle();
        let resp = ib_uverbs_open_xrcd_resp {
            xrcd_handle: handle,
        };
        if let Err(e) = self.respond(b, &resp) {
            let _ = self.release_xrcd(&x);
            return Err(e);
        }
        self.xrcds.insert(handle, x);
        Ok(())
    }

    /// CLOSE_XRCD: EBUSY while an XRC SRQ or target QP made through the handle lives
    /// (`uverbs_free_xrcd`), or while one of the domain's does when this was its last
    /// handle (`ib_dealloc_xrcd_user`).
    pub(crate) fn close_xrcd(&mut self, b: &Bundle<'_>) -> Res {
        let cmd: ib_uverbs_close_xrcd = request(b, false)?;
        let x = self.xrcd(cmd.xrcd_handle)?;
        if x.users != 0 {
            return Err(libc::EBUSY);
        }
        self.release_xrcd(x)?;
        self.xrcds.remove(&cmd.xrcd_handle);
        Ok(())
    }

    /// Give a handle's domain back (`ib_uverbs_dealloc_xrcd`): a file's domain goes with
    /// its last handle.
    pub(crate) fn release_xrcd(&self, x: &Xrcd) -> Res {
        let Some(key) = x.file else {
            return self.nic.dealloc_xrcd(x.xrcdn).map_err(errno);
        };
        let mut files = self
            .shared
            .xrcd_files
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match files.get_mut(&key) {
            Some((_, handles)) if *handles > 1 => *handles -= 1,
            _ => {
                self.nic.dealloc_xrcd(x.xrcdn).map_err(errno)?;
                files.remove(&key);
            }
        }
        Ok(())
    }

    /// The identity of the program's open file `fd` (`fdget`: EBADF for none).
    fn file_key(&self, fd: u32) -> Result<FileKey, i32> {
        let pid = self.shared.spaces.pid(self.space).ok_or(libc::EBADF)?;
        let m = std::fs::metadata(format!("/proc/{pid}/fd/{fd}")).map_err(|_| libc::EBADF)?;
        Ok((self.index, m.dev(), m.ino()))
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
