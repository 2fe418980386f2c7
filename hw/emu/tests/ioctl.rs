//! The emulated kernel's ioctl interface: method calls framed as libibverbs' `fill_attr_*`
//! and `execute_ioctl` frame them, straight to a fabric server in this process, each
//! answered as `ib_uverbs_ioctl` and mlx5_ib answer it: device memory (alloc, the mmap and
//! the stores libmlx5 makes, registration, free), `ibv_advise_mr`, the refusals, and
//! `EPROTONOSUPPORT` for every method the emulator does not have.

mod kernel_common;

use kernel_common::{alloc_pd, context, get_context, legacy, reg_mr_resp, report};
use mlx5_emu::abi::ioctl::*;
use mlx5_emu::abi::mlx5::{mmap_pgoff_extended, MLX5_IB_MMAP_DEVICE_MEM};
use mlx5_emu::abi::uverbs::*;
use mlx5_emu::abi::{self, IntoBytes};
use mlx5_emu::client::Context;
use mlx5_emu::proto::Mapping;
use mlx5_emu::server::DM_SIZE;
use std::mem::size_of;

/// One attribute as `_ioctl_next_attr` makes it: mandatory.
fn attr(attr_id: u16, len: u16, data: u64) -> ib_uverbs_attr {
    ib_uverbs_attr {
        attr_id,
        len,
        flags: UVERBS_ATTR_F_MANDATORY,
        attr_data: 0,
        data,
    }
}

/// `attr_optional`.
fn optional(mut a: ib_uverbs_attr) -> ib_uverbs_attr {
    a.flags &= !UVERBS_ATTR_F_MANDATORY;
    a
}

/// `fill_attr_in_uint64` / `fill_attr_const_in`.
fn in_u64(id: u16, value: u64) -> ib_uverbs_attr {
    attr(id, 8, value)
}

/// `fill_attr_in_uint32`.
fn in_u32(id: u16, value: u32) -> ib_uverbs_attr {
    attr(id, 4, u64::from(value))
}

/// `fill_attr_in_obj` (and `fill_attr_out_obj` with handle 0).
fn obj(id: u16, handle: u32) -> ib_uverbs_attr {
    attr(id, 0, u64::from(handle))
}

/// `fill_attr_out_ptr`.
fn out<T>(id: u16, to: &mut T) -> ib_uverbs_attr {
    attr(id, size_of::<T>() as u16, to as *mut T as u64)
}

/// A method call: the header and its attributes in one 8-byte aligned buffer, which the
/// server reads and writes back into while [`Call::run`] waits.
struct Call {
    words: Vec<u64>,
}

impl Call {
    fn new(object_id: u16, method_id: u16, attrs: &[ib_uverbs_attr]) -> Call {
        let hdr = ib_uverbs_ioctl_hdr {
            length: (size_of::<ib_uverbs_ioctl_hdr>() + std::mem::size_of_val(attrs)) as u16,
            object_id,
            method_id,
            num_attrs: attrs.len() as u16,
            reserved1: 0,
            driver_id: RDMA_DRIVER_MLX5,
            reserved2: 0,
        };
        let mut bytes = hdr.as_bytes().to_vec();
        for a in attrs {
            bytes.extend_from_slice(a.as_bytes());
        }
        let words = bytes
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        Call { words }
    }

    fn hdr(&mut self) -> &mut [u64] {
        &mut self.words[..3]
    }

    fn run(&mut self, ctx: &Context) -> Result<(), i32> {
        ctx.ioctl(RDMA_VERBS_IOCTL, self.words.as_mut_ptr() as u64)
    }

    /// Attribute `i` as the kernel left it.
    fn attr(&self, i: usize) -> ib_uverbs_attr {
        let at = size_of::<ib_uverbs_ioctl_hdr>() + i * size_of::<ib_uverbs_attr>();
        abi::read(self.words.as_bytes(), at).unwrap()
    }
}

/// A context with its GET_CONTEXT done, and a PD.
fn ready(name: &str) -> (Context, u32) {
    let ctx = context(name);
    get_context(&ctx, 0).unwrap();
    let pd = alloc_pd(&ctx);
    (ctx, pd)
}

/// What `ibv_alloc_dm` answers: the handle, the page index, the start offset.
#[derive(Debug, PartialEq, Eq)]
struct Dm {
    handle: u32,
    page: u16,
    start: u64,
}

/// `mlx5dv_alloc_dm` of a MEMIC allocation, as `alloc_dm_memic` asks for it (the type
/// optional), with `extra` attributes after mlx5's.
fn dm_alloc_with(
    ctx: &Context,
    len: u64,
    align: u32,
    extra: &[ib_uverbs_attr],
) -> Result<(Dm, Call), i32> {
    let (mut start, mut page) = (u64::MAX, u16::MAX);
    let mut attrs = vec![
        optional(in_u64(
            MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE,
            MLX5_IB_UAPI_DM_TYPE_MEMIC,
        )),
        out(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, &mut start),
        out(MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX, &mut page),
        obj(UVERBS_ATTR_ALLOC_DM_HANDLE, 0),
        in_u64(UVERBS_ATTR_ALLOC_DM_LENGTH, len),
        in_u32(UVERBS_ATTR_ALLOC_DM_ALIGNMENT, align),
    ];
    attrs.extend_from_slice(extra);
    let mut call = Call::new(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC, &attrs);
    call.run(ctx)?;
    let handle = call.attr(3).data as u32;
    Ok((
        Dm {
            handle,
            page,
            start,
        },
        call,
    ))
}

fn dm_alloc(ctx: &Context, len: u64) -> Result<Dm, i32> {
    dm_alloc_with(ctx, len, 0, &[]).map(|(dm, _)| dm)
}

fn dm_free(ctx: &Context, dm: u32) -> Result<(), i32> {
    Call::new(
        UVERBS_OBJECT_DM,
        UVERBS_METHOD_DM_FREE,
        &[obj(UVERBS_ATTR_FREE_DM_HANDLE, dm)],
    )
    .run(ctx)
}

/// `ibv_cmd_reg_dm_mr`: the MR's handle and its lkey and rkey.
fn reg_dm_mr(
    ctx: &Context,
    pd: u32,
    dm: u32,
    offset: u64,
    len: u64,
    access: u32,
) -> Result<(u32, u32, u32), i32> {
    let (mut lkey, mut rkey) = (0u32, 0u32);
    let mut call = Call::new(
        UVERBS_OBJECT_MR,
        UVERBS_METHOD_DM_MR_REG,
        &[
            obj(UVERBS_ATTR_REG_DM_MR_HANDLE, 0),
            out(UVERBS_ATTR_REG_DM_MR_RESP_LKEY, &mut lkey),
            out(UVERBS_ATTR_REG_DM_MR_RESP_RKEY, &mut rkey),
            obj(UVERBS_ATTR_REG_DM_MR_PD_HANDLE, pd),
            obj(UVERBS_ATTR_REG_DM_MR_DM_HANDLE, dm),
            in_u64(UVERBS_ATTR_REG_DM_MR_OFFSET, offset),
            in_u64(UVERBS_ATTR_REG_DM_MR_LENGTH, len),
            in_u32(UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, access),
        ],
    );
    call.run(ctx)?;
    assert_eq!(call.attr(1).flags & UVERBS_ATTR_F_VALID_OUTPUT, 2);
    Ok((call.attr(0).data as u32, lkey, rkey))
}

fn dereg_mr(ctx: &Context, mr: u32) -> Result<(), i32> {
    let cmd = legacy(
        IB_USER_VERBS_CMD_DEREG_MR,
        &ib_uverbs_dereg_mr { mr_handle: mr },
        &[],
        0,
    );
    ctx.command(&cmd, None)
}

/// `ibv_cmd_advise_mr` of `sges` (the list inline when it is 8 bytes or less, as
/// `fill_attr_in` puts it).
fn advise(ctx: &Context, pd: u32, advice: u32, flags: u32, list: &[u8]) -> Result<(), i32> {
    let data = if list.len() <= 8 {
        let mut inline = [0u8; 8];
        inline[..list.len()].copy_from_slice(list);
        u64::from_le_bytes(inline)
    } else {
        list.as_ptr() as u64
    };
    Call::new(
        UVERBS_OBJECT_MR,
        UVERBS_METHOD_ADVISE_MR,
        &[
            obj(UVERBS_ATTR_ADVISE_MR_PD_HANDLE, pd),
            in_u64(UVERBS_ATTR_ADVISE_MR_ADVICE, u64::from(advice)),
            in_u32(UVERBS_ATTR_ADVISE_MR_FLAGS, flags),
            attr(UVERBS_ATTR_ADVISE_MR_SGE_LIST, list.len() as u16, data),
        ],
    )
    .run(ctx)
}

fn sges(list: &[(u64, u32, u32)]) -> Vec<u8> {
    list.iter()
        .flat_map(|&(addr, length, lkey)| ib_uverbs_sge { addr, length, lkey }.as_bytes().to_vec())
        .collect()
}

/// The byte offset libmlx5's `dm_mmap` maps page index `page` at.
fn dm_offset(page: u16) -> u64 {
    mmap_pgoff_extended(MLX5_IB_MMAP_DEVICE_MEM, page) * 4096
}

/// A stat of the fabric's first NIC.
fn stat(name: &str, key: &str) -> u64 {
    report(name)["nics"][0]["stats"][key].as_u64().unwrap()
}

#[test]
fn methods_the_kernel_lacks_are_eprotonosupport_and_the_header_is_checked() {
    let ctx = context("ioctl-methods");
    let probe =
        |object, method, attrs: &[ib_uverbs_attr]| Call::new(object, method, attrs).run(&ctx);
    let write_probe = [in_u64(
        UVERBS_ATTR_WRITE_CMD,
        u64::from(IB_USER_VERBS_CMD_QUERY_DEVICE),
    )];
    // What libibverbs and libmlx5 ask before and after GET_CONTEXT: each falls back.
    for _ in 0..2 {
        for (object, method, attrs) in [
            (
                UVERBS_OBJECT_DEVICE,
                UVERBS_METHOD_INVOKE_WRITE,
                &write_probe[..],
            ),
            (UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT, &[]),
            (UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY, &[]),
            (MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER, &[]),
            (UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY, &[]),
            (UVERBS_OBJECT_PD, 0, &[]),
        ] {
            assert_eq!(
                probe(object, method, attrs),
                Err(libc::EPROTONOSUPPORT),
                "{object:#x}/{method:#x}"
            );
        }
        get_context(&ctx, 0).ok();
    }
    // Another request on the fd: ENOTTY.
    let mut call = Call::new(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE, &[]);
    let arg = call.words.as_mut_ptr() as u64;
    assert_eq!(ctx.ioctl(RDMA_VERBS_IOCTL + 1, arg), Err(libc::ENOTTY));
    // A header not there: EFAULT.
    assert_eq!(ctx.ioctl(RDMA_VERBS_IOCTL, 8), Err(libc::EFAULT));
    // A length that does not count the attributes: EINVAL.
    let free = [obj(UVERBS_ATTR_FREE_DM_HANDLE, 1)];
    let mut call = Call::new(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE, &free);
    call.hdr()[0] += 1;
    assert_eq!(call.run(&ctx), Err(libc::EINVAL));
    // Reserved words: EPROTONOSUPPORT; another driver's id: EINVAL.
    let mut call = Call::new(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE, &free);
    call.hdr()[1] = 1;
    assert_eq!(call.run(&ctx), Err(libc::EPROTONOSUPPORT));
    let mut call = Call::new(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE, &free);
    call.hdr()[2] = u64::from(RDMA_DRIVER_MLX5 + 1);
    assert_eq!(call.run(&ctx), Err(libc::EINVAL));
    // The attributes: an unknown mandatory one refuses the call, an unknown optional one
    // is ignored, a repeated one is EINVAL, a missing mandatory one EINVAL, a handle that
    // is not there ENOENT, a handle of another object EINVAL.
    let pd = alloc_pd(&ctx);
    assert_eq!(
        dm_alloc_with(&ctx, 64, 0, &[in_u64(0x2f, 1)]).map(|_| ()),
        Err(libc::EPROTONOSUPPORT)
    );
    let (dm, _) = dm_alloc_with(&ctx, 64, 0, &[optional(in_u64(0x2f, 1))]).unwrap();
    assert_eq!(
        dm_alloc_with(&ctx, 64, 0, &[in_u64(UVERBS_ATTR_ALLOC_DM_LENGTH, 64)]).map(|_| ()),
        Err(libc::EINVAL)
    );
    assert_eq!(
        probe(UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE, &[]),
        Err(libc::EINVAL)
    );
    assert_eq!(dm_free(&ctx, dm.handle + 100), Err(libc::ENOENT));
    assert_eq!(dm_free(&ctx, pd), Err(libc::EINVAL));
    // A fixed-size input of another size, a handle with a length: EINVAL.
    let mut call = Call::new(
        UVERBS_OBJECT_DM,
        UVERBS_METHOD_DM_FREE,
        &[attr(UVERBS_ATTR_FREE_DM_HANDLE, 4, u64::from(dm.handle))],
    );
    assert_eq!(call.run(&ctx), Err(libc::EINVAL));
    assert_eq!(
        dm_alloc_with(&ctx, 64, 0, &[]).map(|_| ()),
        Ok(()),
        "the calls above left the device memory as it was"
    );
    assert_eq!(dm_free(&ctx, dm.handle), Ok(()));
}

#[test]
fn device_memory_is_allocated_mapped_written_registered_and_freed() {
    let name = "ioctl-dm";
    let (ctx, pd) = ready(name);
    let (a, call) = dm_alloc_with(&ctx, 1000, 0, &[]).unwrap();
    assert_eq!((a.page, a.start), (0, 0));
    // The handle is written back, and every output attribute is marked as written.
    assert_ne!(a.handle, 0);
    for i in [1, 2] {
        assert_eq!(
            call.attr(i).flags,
            UVERBS_ATTR_F_MANDATORY | UVERBS_ATTR_F_VALID_OUTPUT
        );
    }
    // A second allocation of two pages takes the next page indices.
    let b = dm_alloc(&ctx, 4096 + 64).unwrap();
    assert_eq!(b.page, 1);
    let c = dm_alloc(&ctx, 64).unwrap();
    assert_eq!(c.page, 3);
    // libmlx5 maps each at its page index, exactly its pages.
    assert_eq!(
        ctx.mmap(dm_offset(a.page), 4096).map(|m| m.0),
        Ok(Mapping::DeviceMemory)
    );
    assert_eq!(
        ctx.mmap(dm_offset(b.page), 8192).map(|m| m.0),
        Ok(Mapping::DeviceMemory)
    );
    assert_eq!(
        ctx.mmap(dm_offset(b.page), 4096).map(|m| m.0),
        Err(libc::EINVAL)
    );
    assert_eq!(ctx.mmap(dm_offset(2), 4096).map(|m| m.0), Err(libc::EINVAL));
    // Stores reach the model as the write-combining buffer sends them: a full line as one
    // write, a 12-byte run as 8 + 4, a lone 4-byte store as it is; 3 misaligned bytes are
    // malformed; a store past the allocation's rounded size (1024) is refused by the model.
    let pgoff = dm_offset(a.page) / 4096;
    ctx.store(pgoff, 64, &[7; 64]).unwrap();
    ctx.store(pgoff, 128, &[8; 12]).unwrap();
    ctx.store(pgoff, 140, &[9; 4]).unwrap();
    assert_eq!(stat(name, "dm_writes"), 4);
    assert_eq!(stat(name, "bad_mmio"), 0);
    ctx.store(pgoff, 2, &[1; 3]).unwrap();
    ctx.store(pgoff, 1024, &[1; 8]).unwrap();
    assert_eq!((stat(name, "dm_writes"), stat(name, "bad_mmio")), (4, 2));
    // A zero-based key on it; the allocation is busy while the key lives.
    let (mr, lkey, rkey) =
        reg_dm_mr(&ctx, pd, a.handle, 0, 1000, IB_UVERBS_ACCESS_ZERO_BASED).unwrap();
    assert_eq!(lkey, rkey);
    assert_eq!(dm_free(&ctx, a.handle), Err(libc::EBUSY));
    // The PD is busy too; the key goes by the write interface (libibverbs' fallback).
    let dealloc = legacy(
        IB_USER_VERBS_CMD_DEALLOC_PD,
        &ib_uverbs_dealloc_pd { pd_handle: pd },
        &[],
        0,
    );
    assert_eq!(ctx.command(&dealloc, None), Err(libc::EBUSY));
    dereg_mr(&ctx, mr).unwrap();
    dm_free(&ctx, a.handle).unwrap();
    assert_eq!(dm_free(&ctx, a.handle), Err(libc::ENOENT));
    // Its page index is free for the next allocation; the freed mapping is not there.
    assert_eq!(
        ctx.mmap(dm_offset(a.page), 4096).map(|m| m.0),
        Err(libc::EINVAL)
    );
    let writes = stat(name, "dm_writes");
    ctx.store(pgoff, 0, &[1; 8]).unwrap();
    assert_eq!(
        stat(name, "dm_writes"),
        writes,
        "a store to a freed allocation is dropped"
    );
    assert_eq!(dm_alloc(&ctx, 64).unwrap().page, 0);
    assert_eq!(dm_free(&ctx, c.handle), Ok(()));
}

#[test]
fn device_memory_refusals_are_the_kernels() {
    let ctx = context("ioctl-dm-refusals");
    // Before GET_CONTEXT a new object has no context to live in.
    assert_eq!(dm_alloc(&ctx, 64), Err(libc::EINVAL));
    get_context(&ctx, 0).unwrap();
    let pd = alloc_pd(&ctx);
    // mlx5_cmd_alloc_memic: no length; an alignment beyond the device's; more than the
    // device has (ENOMEM: no run of free pages is that long).
    assert_eq!(dm_alloc(&ctx, 0), Err(libc::EINVAL));
    assert_eq!(
        dm_alloc_with(&ctx, 64, 13, &[]).map(|_| ()),
        Err(libc::EINVAL)
    );
    assert_eq!(dm_alloc(&ctx, DM_SIZE + 1), Err(libc::ENOMEM));
    assert_eq!(dm_alloc(&ctx, u64::MAX), Err(libc::EINVAL), "rounds to 0");
    // The steering ICM types: the device has none.
    let icm = [in_u64(
        MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE,
        MLX5_IB_UAPI_DM_TYPE_STEERING_SW_ICM,
    )];
    let mut start = 0u64;
    let mut call = Call::new(
        UVERBS_OBJECT_DM,
        UVERBS_METHOD_DM_ALLOC,
        &[
            obj(UVERBS_ATTR_ALLOC_DM_HANDLE, 0),
            in_u64(UVERBS_ATTR_ALLOC_DM_LENGTH, 64),
            in_u32(UVERBS_ATTR_ALLOC_DM_ALIGNMENT, 0),
            out(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, &mut start),
            icm[0],
        ],
    );
    assert_eq!(call.run(&ctx), Err(libc::EOPNOTSUPP));
    // Without the page index the allocation fails (uverbs_copy_to: ENOENT) and is undone.
    let mut call = Call::new(
        UVERBS_OBJECT_DM,
        UVERBS_METHOD_DM_ALLOC,
        &[
            obj(UVERBS_ATTR_ALLOC_DM_HANDLE, 0),
            in_u64(UVERBS_ATTR_ALLOC_DM_LENGTH, DM_SIZE),
            in_u32(UVERBS_ATTR_ALLOC_DM_ALIGNMENT, 0),
            out(MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, &mut start),
        ],
    );
    assert_eq!(call.run(&ctx), Err(libc::ENOENT));
    // All of it, then nothing is left; the largest alignment served (4 KiB) is fine.
    let all = dm_alloc_with(&ctx, DM_SIZE, 12, &[]).unwrap().0;
    assert_eq!(dm_alloc(&ctx, 64), Err(libc::ENOMEM));
    dm_free(&ctx, all.handle).unwrap();
    let dm = dm_alloc(&ctx, 1000).unwrap();
    // Registration (uverbs DM_MR_REG, mlx5_ib_reg_dm_mr): not zero based; a right MEMIC
    // keys do not have; remote write without local write; beyond the length asked for
    // (1000, not the 1024 allocated); a PD handle that is the DM's.
    let zb = IB_UVERBS_ACCESS_ZERO_BASED;
    let reg = |offset, len, access| reg_dm_mr(&ctx, pd, dm.handle, offset, len, access).map(|_| ());
    assert_eq!(reg(0, 64, 0), Err(libc::EINVAL));
    assert_eq!(reg(0, 64, zb | IB_UVERBS_ACCESS_MW_BIND), Err(libc::EINVAL));
    assert_eq!(
        reg(0, 64, zb | IB_UVERBS_ACCESS_ON_DEMAND),
        Err(libc::EINVAL)
    );
    assert_eq!(
        reg(0, 64, zb | IB_UVERBS_ACCESS_REMOTE_WRITE),
        Err(libc::EINVAL)
    );
    assert_eq!(reg(1000, 1, zb), Err(libc::EINVAL));
    assert_eq!(reg(0, 1001, zb), Err(libc::EINVAL));
    assert_eq!(
        reg_dm_mr(&ctx, dm.handle, dm.handle, 0, 64, zb).map(|_| ()),
        Err(libc::EINVAL)
    );
    // Rights mlx5 allows but the model does not (it models local read only).
    assert_eq!(
        reg(0, 64, zb | IB_UVERBS_ACCESS_LOCAL_WRITE),
        Err(libc::EOPNOTSUPP)
    );
    assert_eq!(reg(24, 976, zb), Ok(()));
}

#[test]
fn advise_mr_prefetches_on_demand_keys_and_refuses_the_rest() {
    let name = "ioctl-advise";
    let (ctx, pd) = ready(name);
    let other_pd = alloc_pd(&ctx);
    let buf = vec![0u8; 4 * 4096];
    let base = (buf.as_ptr() as u64 + 4095) & !4095;
    let odp = IB_UVERBS_ACCESS_ON_DEMAND;
    let lw = IB_UVERBS_ACCESS_LOCAL_WRITE;
    let key = |pd, access| reg_mr_resp(&ctx, pd, base, 3 * 4096, access).unwrap().lkey;
    let writable = key(pd, odp | lw);
    let read_only = key(pd, odp);
    let pinned = key(pd, lw);
    let elsewhere = key(other_pd, odp | lw);
    let flush = IB_UVERBS_ADVISE_MR_FLAG_FLUSH;
    let write = IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
    let read = IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH;
    // Two pages of the writable key come in, with no fault.
    assert_eq!(stat(name, "odp_pages_mapped"), 0);
    advise(
        &ctx,
        pd,
        write,
        flush,
        &sges(&[(base + 100, 4096, writable)]),
    )
    .unwrap();
    assert_eq!(stat(name, "odp_pages_mapped"), 2);
    assert_eq!(stat(name, "odp_faults"), 0);
    // get_prefetchable_mr: not on demand (ENOENT), another PD's or a write prefetch of a
    // key that cannot be written (EPERM); a read prefetch of it is fine.
    assert_eq!(
        advise(&ctx, pd, write, flush, &sges(&[(base, 8, pinned)])),
        Err(libc::ENOENT)
    );
    assert_eq!(
        advise(&ctx, pd, write, flush, &sges(&[(base, 8, elsewhere)])),
        Err(libc::EPERM)
    );
    assert_eq!(
        advise(&ctx, pd, write, flush, &sges(&[(base, 8, read_only)])),
        Err(libc::EPERM)
    );
    advise(
        &ctx,
        pd,
        read,
        flush,
        &sges(&[(base + 2 * 4096, 8, read_only)]),
    )
    .unwrap();
    assert_eq!(stat(name, "odp_pages_mapped"), 3);
    // Outside the key: EFAULT when flushed; queued work fails quietly.
    let outside = sges(&[(base + 3 * 4096, 8, writable)]);
    assert_eq!(advise(&ctx, pd, write, flush, &outside), Err(libc::EFAULT));
    assert_eq!(advise(&ctx, pd, write, 0, &outside), Ok(()));
    // Unflushed, every key is checked before anything comes in.
    let mixed = sges(&[(base + 2 * 4096, 8, writable), (base, 8, pinned)]);
    assert_eq!(advise(&ctx, pd, write, 0, &mixed), Err(libc::ENOENT));
    assert_eq!(stat(name, "odp_pages_mapped"), 3);
    advise(&ctx, pd, write, 0, &sges(&[(base + 2 * 4096, 8, writable)])).unwrap();
    assert_eq!(stat(name, "odp_pages_mapped"), 4);
    // An empty range inside the key is nothing to do.
    advise(&ctx, pd, write, flush, &sges(&[(base, 0, writable)])).unwrap();
    // The call itself: an advice mlx5 does not know (EOPNOTSUPP), a flag beyond FLUSH, a
    // list that is not whole entries or shorter than one (EINVAL).
    let one = sges(&[(base, 8, writable)]);
    assert_eq!(advise(&ctx, pd, 3, flush, &one), Err(libc::EOPNOTSUPP));
    assert_eq!(advise(&ctx, pd, write, 2, &one), Err(libc::EINVAL));
    assert_eq!(advise(&ctx, pd, write, flush, &one[..8]), Err(libc::EINVAL));
    let mut ragged = one.clone();
    ragged.extend_from_slice(&[0; 4]);
    assert_eq!(advise(&ctx, pd, write, flush, &ragged), Err(libc::EINVAL));
    drop(buf);
}
