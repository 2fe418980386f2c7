//! The uverbs ioctl interface (`ioctl(cmd_fd, RDMA_VERBS_IOCTL, hdr)`), framed and checked
//! as the kernel's `ib_uverbs_ioctl`, `ib_uverbs_cmd_verbs`, `ib_uverbs_run_method`,
//! `uverbs_set_attr` and `uverbs_process_attr` do it (drivers/infiniband/core/
//! uverbs_ioctl.c), for the methods the emulated kernel has:
//!
//! | object / method | kernel | here |
//! |---|---|---|
//! | `UVERBS_OBJECT_DM` / `DM_ALLOC` (+ mlx5's `MLX5_IB_ATTR_ALLOC_DM_*`) | uverbs_std_types_dm.c, hw/mlx5/dm.c `mlx5_ib_alloc_dm` | `Ctx::dm_alloc` |
//! | `UVERBS_OBJECT_DM` / `DM_FREE` | uverbs_std_types_dm.c `uverbs_free_dm` | `Ctx::dm_free` |
//! | `UVERBS_OBJECT_MR` / `DM_MR_REG` | uverbs_std_types_mr.c, hw/mlx5/mr.c `mlx5_ib_reg_dm_mr` | `Ctx::reg_dm_mr` |
//! | `UVERBS_OBJECT_MR` / `ADVISE_MR` | uverbs_std_types_mr.c, hw/mlx5/odp.c `mlx5_ib_advise_mr_prefetch` | `Ctx::advise_mr` |
//!
//! Every other method is `EPROTONOSUPPORT`, the kernel's answer for a method its uapi does
//! not have: libibverbs then uses `write()` for the verbs that have a write command
//! (`cmd_fallback.c` `_execute_ioctl_fallback`: GET_CONTEXT, QUERY_PORT, DEREG_MR ...),
//! concludes from its `INVOKE_WRITE` probe that commands go by `write()`
//! (`device.c` `has_ioctl_write`), reads GIDs from sysfs (`ibv_query_gid_ex`), and libmlx5
//! goes without what DEVX would have told it (`mlx5dv_devx_general_cmd`). The DM object is
//! absent from a NIC without device memory (`UAPI_DEF_OBJ_NEEDS_FN(dealloc_dm)`).
//!
//! The header and the attributes are read from the program's memory, and the kernel's
//! writes go back there: a new object's handle into its attribute's `data`, an output
//! attribute's bytes where its `data` points, and `UVERBS_ATTR_F_VALID_OUTPUT` into its
//! `flags`.

use super::context::Ctx;
use crate::abi::ioctl::*;
use crate::abi::{self, IntoBytes};
use std::mem::size_of;

use super::cmd::Res;

/// The kernel's `PAGE_SIZE`: the longest header and attribute array (`ib_uverbs_ioctl`).
const MAX_LENGTH: usize = 4096;

/// The objects an attribute's handle may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Obj {
    /// A protection domain.
    Pd,
    /// A memory region (of memory or of device memory).
    Mr,
    /// A device-memory allocation.
    Dm,
    /// Any other object of the context (CQ, SRQ, QP, AH).
    Other,
}

/// What a method does with an object handle (`enum uverbs_obj_access`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// `UVERBS_ACCESS_NEW`: the method creates it; its handle is written back.
    New,
    /// `UVERBS_ACCESS_READ` (and `_DESTROY`, which the handler then destroys).
    Existing,
}

/// The kind of an attribute (`UVERBS_ATTR_PTR_IN` / `_PTR_OUT` with their sizes, and
/// `UVERBS_ATTR_IDR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Bytes in (inline up to 8): `len` in `min..=max`.
    In {
        min: u16,
        max: u16,
        /// `UA_ALLOC_AND_COPY`: the kernel copies a pointed-to value in before the handler.
        copy: bool,
    },
    /// Bytes out, where `data` points: `len` in `min..=max`.
    Out { min: u16, max: u16 },
    /// An object handle in `data` (`len` 0).
    Handle(Obj, Access),
}

/// One attribute of a method: its id, kind, and whether the caller must give it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    id: u16,
    kind: Kind,
    mandatory: bool,
}

const fn spec(id: u16, kind: Kind, mandatory: bool) -> Spec {
    Spec {
        id,
        kind,
        mandatory,
    }
}

/// `UVERBS_ATTR_TYPE(T)` in: exactly `n` bytes.
const fn fixed_in(n: u16) -> Kind {
    Kind::In {
        min: n,
        max: n,
        copy: false,
    }
}

/// `UVERBS_ATTR_TYPE(T)` out: exactly `n` bytes.
const fn fixed_out(n: u16) -> Kind {
    Kind::Out { min: n, max: n }
}

/// `UVERBS_ATTR_CONST_IN`: a `u64`.
const CONST_IN: Kind = fixed_in(8);
/// `UVERBS_ATTR_FLAGS_IN`: a `u32` or a `u64`.
const FLAGS_IN: Kind = Kind::In {
    min: 4,
    max: 8,
    copy: false,
};

/// `UVERBS_METHOD_DM_ALLOC` with mlx5's attributes (`ADD_UVERBS_ATTRIBUTES_SIMPLE`).
const DM_ALLOC: &[Spec] = &[
    spec(
        UVERBS_ATTR_ALLOC_DM_HANDLE,
        Kind::Handle(Obj::Dm, Access::New),
        true,
    ),
    spec(UVERBS_ATTR_ALLOC_DM_LENGTH, fixed_in(8), true),
    spec(UVERBS_ATTR_ALLOC_DM_ALIGNMENT, fixed_in(4), true),
    spec(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, fixed_out(8), true),
    spec(MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX, fixed_out(2), false),
    spec(MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE, CONST_IN, false),
];
/// `UVERBS_METHOD_DM_FREE`.
const DM_FREE: &[Spec] = &[spec(
    UVERBS_ATTR_FREE_DM_HANDLE,
    Kind::Handle(Obj::Dm, Access::Existing),
    true,
)];
/// `UVERBS_METHOD_DM_MR_REG`.
const DM_MR_REG: &[Spec] = &[
    spec(
        UVERBS_ATTR_REG_DM_MR_HANDLE,
        Kind::Handle(Obj::Mr, Access::New),
        true,
    ),
    spec(UVERBS_ATTR_REG_DM_MR_OFFSET, fixed_in(8), true),
    spec(UVERBS_ATTR_REG_DM_MR_LENGTH, fixed_in(8), true),
    spec(
        UVERBS_ATTR_REG_DM_MR_PD_HANDLE,
        Kind::Handle(Obj::Pd, Access::Existing),
        true,
    ),
    spec(UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, FLAGS_IN, false),
    spec(
        UVERBS_ATTR_REG_DM_MR_DM_HANDLE,
        Kind::Handle(Obj::Dm, Access::Existing),
        true,
    ),
    spec(UVERBS_ATTR_REG_DM_MR_RESP_LKEY, fixed_out(4), true),
    spec(UVERBS_ATTR_REG_DM_MR_RESP_RKEY, fixed_out(4), true),
];
/// `UVERBS_METHOD_ADVISE_MR`.
const ADVISE_MR: &[Spec] = &[
    spec(
        UVERBS_ATTR_ADVISE_MR_PD_HANDLE,
        Kind::Handle(Obj::Pd, Access::Existing),
        true,
    ),
    spec(UVERBS_ATTR_ADVISE_MR_ADVICE, CONST_IN, true),
    spec(UVERBS_ATTR_ADVISE_MR_FLAGS, FLAGS_IN, true),
    spec(
        UVERBS_ATTR_ADVISE_MR_SGE_LIST,
        Kind::In {
            min: size_of::<ib_uverbs_sge>() as u16,
            max: u16::MAX,
            copy: true,
        },
        true,
    ),
];

/// The methods the emulated kernel has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    DmAlloc,
    DmFree,
    DmMrReg,
    AdviseMr,
}

impl Method {
    fn attrs(self) -> &'static [Spec] {
        match self {
            Method::DmAlloc => DM_ALLOC,
            Method::DmFree => DM_FREE,
            Method::DmMrReg => DM_MR_REG,
            Method::AdviseMr => ADVISE_MR,
        }
    }
}

/// One attribute the caller gave, as the kernel keeps it (`struct uverbs_attr`).
#[derive(Clone, Debug)]
struct Given {
    id: u16,
    /// Its index in the caller's array (where the kernel writes back).
    index: usize,
    uattr: ib_uverbs_attr,
    /// A pointed-to input copied in before the handler (`UA_ALLOC_AND_COPY`).
    copied: Option<Vec<u8>>,
}

/// A method call's attributes (`struct uverbs_attr_bundle`): what the handlers read and
/// write.
#[derive(Debug)]
pub(crate) struct Call {
    /// The program's address of the attribute array.
    attrs_at: u64,
    given: Vec<Given>,
}

impl Call {
    fn get(&self, id: u16) -> Option<&Given> {
        self.given.iter().find(|g| g.id == id)
    }

    /// Whether the caller gave attribute `id`.
    pub(crate) fn has(&self, id: u16) -> bool {
        self.get(id).is_some()
    }

    /// The bytes of input `id` (`uverbs_copy_from` / `uverbs_attr_get_alloced_ptr`):
    /// `ENOENT` when not given, `EFAULT` when a pointed-to value is not there.
    pub(crate) fn bytes(&self, ctx: &Ctx<'_>, id: u16) -> Result<Vec<u8>, i32> {
        let g = self.get(id).ok_or(libc::ENOENT)?;
        let len = usize::from(g.uattr.len);
        if let Some(copied) = &g.copied {
            return Ok(copied.clone());
        }
        if len <= size_of::<u64>() {
            return Ok(g.uattr.data.to_le_bytes()[..len].to_vec());
        }
        let mut out = vec![0u8; len];
        match ctx.shared.spaces.copy_in(ctx.space, g.uattr.data, &mut out) {
            true => Ok(out),
            false => Err(libc::EFAULT),
        }
    }

    /// Input `id` as a `u64` (`uverbs_copy_from` of a `u64`; the spec fixed its length).
    pub(crate) fn u64(&self, ctx: &Ctx<'_>, id: u16) -> Result<u64, i32> {
        let b = self.bytes(ctx, id)?;
        abi::read::<u64>(&b, 0).map_err(|_| libc::EINVAL)
    }

    /// Input `id` as a `u32`.
    pub(crate) fn u32(&self, ctx: &Ctx<'_>, id: u16) -> Result<u32, i32> {
        let b = self.bytes(ctx, id)?;
        abi::read::<u32>(&b, 0).map_err(|_| libc::EINVAL)
    }

    /// A constant input (`uverbs_get_const_default` for an enum of `unsigned int`): `dflt`
    /// when not given (`None`: `ENOENT`), `EINVAL` beyond `u32`.
    pub(crate) fn constant(&self, id: u16, dflt: Option<u64>) -> Result<u64, i32> {
        let value = match self.get(id) {
            Some(g) => g.uattr.data,
            None => dflt.ok_or(libc::ENOENT)?,
        };
        if value > u64::from(u32::MAX) {
            return Err(libc::EINVAL);
        }
        Ok(value)
    }

    /// A flags input (`uverbs_get_flags32`): 0 when not given; 4 or 8 bytes; `EINVAL` for
    /// a bit outside `allowed`.
    pub(crate) fn flags32(&self, id: u16, allowed: u32) -> Result<u32, i32> {
        let Some(g) = self.get(id) else {
            return Ok(0);
        };
        let flags = match g.uattr.len {
            8 => g.uattr.data,
            4 => g.uattr.data & 0xffff_ffff,
            _ => return Err(libc::EINVAL),
        };
        if flags & !u64::from(allowed) != 0 {
            return Err(libc::EINVAL);
        }
        Ok(flags as u32)
    }

    /// The handle of object attribute `id` (looked up, or allocated, before the handler).
    pub(crate) fn handle(&self, id: u16) -> Result<u32, i32> {
        self.get(id)
            .map(|g| g.uattr.data as u32)
            .ok_or(libc::ENOENT)
    }

    /// Write output `id` (`uverbs_copy_to`): `ENOENT` when not given, the first
    /// `min(len, bytes.len())` bytes where it points, and `UVERBS_ATTR_F_VALID_OUTPUT` in
    /// its flags; `EFAULT` when the memory is not there.
    pub(crate) fn copy_to(&self, ctx: &Ctx<'_>, id: u16, bytes: &[u8]) -> Res {
        let g = self.get(id).ok_or(libc::ENOENT)?;
        let n = bytes.len().min(usize::from(g.uattr.len));
        put(ctx, g.uattr.data, &bytes[..n])?;
        let flags = g.uattr.flags | UVERBS_ATTR_F_VALID_OUTPUT;
        put(ctx, self.field(g.index, 4), &flags.to_le_bytes())
    }

    /// The program's address of byte `at` of attribute `index`.
    fn field(&self, index: usize, at: u64) -> u64 {
        self.attrs_at + (index * size_of::<ib_uverbs_attr>()) as u64 + at
    }
}

/// `copy_to_user`.
fn put(ctx: &Ctx<'_>, addr: u64, bytes: &[u8]) -> Res {
    match bytes.is_empty() || ctx.shared.spaces.copy_out(ctx.space, addr, bytes) {
        true => Ok(()),
        false => Err(libc::EFAULT),
    }
}

impl Ctx<'_> {
    /// One `ioctl(cmd_fd, request, arg)`: `Ok` or the errno.
    pub(crate) fn ioctl(&mut self, request: u64, arg: u64) -> Res {
        if request != RDMA_VERBS_IOCTL {
            // `-ENOIOCTLCMD`, which the VFS turns into ENOTTY.
            return Err(libc::ENOTTY);
        }
        let mut hdr = [0u8; size_of::<ib_uverbs_ioctl_hdr>()];
        if !self.shared.spaces.copy_in(self.space, arg, &mut hdr) {
            return Err(libc::EFAULT);
        }
        let hdr: ib_uverbs_ioctl_hdr = abi::read(&hdr, 0).map_err(|e| e.errno())?;
        let n = usize::from(hdr.num_attrs);
        let length = usize::from(hdr.length);
        if length > MAX_LENGTH
            || length != size_of::<ib_uverbs_ioctl_hdr>() + n * size_of::<ib_uverbs_attr>()
        {
            return Err(libc::EINVAL);
        }
        if hdr.reserved1 != 0 || hdr.reserved2 != 0 {
            return Err(libc::EPROTONOSUPPORT);
        }
        if hdr.driver_id != RDMA_DRIVER_MLX5 {
            return Err(libc::EINVAL);
        }
        let method = self
            .method(hdr.object_id, hdr.method_id)
            .ok_or(libc::EPROTONOSUPPORT)?;
        let attrs_at = arg + size_of::<ib_uverbs_ioctl_hdr>() as u64;
        let mut raw = vec![0u8; n * size_of::<ib_uverbs_attr>()];
        if !self.shared.spaces.copy_in(self.space, attrs_at, &mut raw) {
            return Err(libc::EFAULT);
        }
        let mut call = Call {
            attrs_at,
            given: Vec::new(),
        };
        for index in 0..n {
            let uattr: ib_uverbs_attr =
                abi::read(&raw, index * size_of::<ib_uverbs_attr>()).map_err(|e| e.errno())?;
            self.set_attr(&mut call, method.attrs(), index, uattr)?;
        }
        if method
            .attrs()
            .iter()
            .any(|s| s.mandatory && !call.has(s.id))
        {
            return Err(libc::EINVAL);
        }
        let r = match method {
            Method::DmAlloc => self.dm_alloc(&call),
            Method::DmFree => self.dm_free(&call),
            Method::DmMrReg => self.reg_dm_mr(&call),
            Method::AdviseMr => self.advise_mr(&call),
        };
        self.pump();
        r
    }

    /// The method `(object, method)` names, if this kernel has it (the uapi radix tree's
    /// lookup in `ib_uverbs_cmd_verbs`).
    fn method(&self, object: u16, method: u16) -> Option<Method> {
        let has_dm = self.nic.caps().max_dm_size != 0;
        Some(match (object, method) {
            (UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC) if has_dm => Method::DmAlloc,
            (UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE) if has_dm => Method::DmFree,
            (UVERBS_OBJECT_MR, UVERBS_METHOD_DM_MR_REG) => Method::DmMrReg,
            (UVERBS_OBJECT_MR, UVERBS_METHOD_ADVISE_MR) => Method::AdviseMr,
            _ => return None,
        })
    }

    /// One attribute of the caller's array (`uverbs_set_attr`, `uverbs_process_attr`).
    fn set_attr(
        &mut self,
        call: &mut Call,
        specs: &[Spec],
        index: usize,
        mut uattr: ib_uverbs_attr,
    ) -> Res {
        let Some(spec) = specs.iter().find(|s| s.id == uattr.attr_id) else {
            // An attribute this kernel does not know: refused only if the caller needs it.
            return match uattr.flags & UVERBS_ATTR_F_MANDATORY {
                0 => Ok(()),
                _ => Err(libc::EPROTONOSUPPORT),
            };
        };
        if call.has(spec.id) {
            return Err(libc::EINVAL);
        }
        let mut copied = None;
        match spec.kind {
            Kind::In { min, max, .. } | Kind::Out { min, max } => {
                if uattr.len < min || uattr.len > max || uattr.attr_data != 0 {
                    return Err(libc::EINVAL);
                }
                if let Kind::In { copy: true, .. } = spec.kind {
                    if usize::from(uattr.len) > size_of::<u64>() {
                        let mut buf = vec![0u8; usize::from(uattr.len)];
                        if !self.shared.spaces.copy_in(self.space, uattr.data, &mut buf) {
                            return Err(libc::EFAULT);
                        }
                        copied = Some(buf);
                    }
                }
            }
            Kind::Handle(obj, access) => {
                if uattr.attr_data != 0 || uattr.len != 0 {
                    return Err(libc::EINVAL);
                }
                match access {
                    Access::New => {
                        // `rdma_alloc_begin_uobject` needs the context.
                        if !self.ready {
                            return Err(libc::EINVAL);
                        }
                        uattr.data = u64::from(self.handle());
                        put(self, call.field(index, 8), uattr.data.as_bytes())?;
                    }
                    Access::Existing => {
                        // `lookup_get_idr_uobject`, `rdma_lookup_get_uobject`.
                        let handle = u32::try_from(uattr.data).map_err(|_| libc::EINVAL)?;
                        match self.object(handle) {
                            None => return Err(libc::ENOENT),
                            Some(o) if o != obj => return Err(libc::EINVAL),
                            Some(_) => {}
                        }
                    }
                }
            }
        }
        call.given.push(Given {
            id: spec.id,
            index,
            uattr,
            copied,
        });
        Ok(())
    }

    /// What handle `handle` of this context names.
    fn object(&self, handle: u32) -> Option<Obj> {
        if self.pds.contains_key(&handle) {
            Some(Obj::Pd)
        } else if self.mrs.contains_key(&handle) {
            Some(Obj::Mr)
        } else if self.dms.contains_key(&handle) {
            Some(Obj::Dm)
        } else if self.cqs.contains_key(&handle)
            || self.srqs.contains_key(&handle)
            || self.qps.contains_key(&handle)
            || self.ahs.contains(&handle)
        {
            Some(Obj::Other)
        } else {
            None
        }
    }
}
