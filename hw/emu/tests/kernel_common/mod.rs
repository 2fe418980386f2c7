//! An emulated kernel in this process for the tests that write commands and ioctls straight
//! to it (`kernel.rs`, `ioctl.rs`): a fabric served by a thread, a context on its first NIC,
//! commands framed as libibverbs frames them, and the fabric's report.
#![allow(dead_code)]

use mlx5_emu::abi::mlx5::*;
use mlx5_emu::abi::uverbs::*;
use mlx5_emu::abi::{Immutable, IntoBytes};
use mlx5_emu::client::{hello, Context};
use mlx5_emu::proto::{self, Hello, Reply, Request};
use mlx5_emu::server::{serve, Link, Options};
use std::mem::size_of;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The fabric of test `name`, on `link`.
fn options(name: &str, link: Link) -> Options {
    let dir = std::env::temp_dir().join(format!("mlx5-emu-kernel-{}-{name}", std::process::id()));
    Options {
        name: name.into(),
        nics: 2,
        link,
        dir,
    }
}

/// A fabric served by a thread of this process; a context on its first NIC.
pub fn context(name: &str) -> Context {
    context_on(name, Link::Ib)
}

/// [`context`] on a fabric of `link`.
pub fn context_on(name: &str, link: Link) -> Context {
    let options = options(name, link);
    let socket = options.socket();
    std::thread::spawn(move || serve(options).unwrap());
    for _ in 0..500 {
        if let Ok(c) = Context::open(socket.to_str().unwrap(), 0) {
            return c;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no server at {}", socket.display());
}

/// Another context on the first NIC of the fabric `context(name)` serves (the socket is the
/// same whatever the link).
pub fn another(name: &str) -> Context {
    Context::open(options(name, Link::Ib).socket().to_str().unwrap(), 0).expect("a second context")
}

/// A legacy command: header, `req` (whose first word is the response address when it has
/// one), driver data; `out` bytes of response room.
pub fn legacy<T: IntoBytes + Immutable>(
    command: u32,
    req: &T,
    driver: &[u8],
    out: usize,
) -> Vec<u8> {
    let mut buf = ib_uverbs_cmd_hdr {
        command,
        in_words: ((8 + size_of::<T>() + driver.len()) / 4) as u16,
        out_words: (out / 4) as u16,
    }
    .as_bytes()
    .to_vec();
    buf.extend_from_slice(req.as_bytes());
    buf.extend_from_slice(driver);
    buf
}

/// An extended command (`execute_cmd_write_ex`): the two headers, the core request `core`
/// (a multiple of 8 bytes), the driver data; `core_out` and `driver_out` bytes of response
/// room at `response` (0: none).
pub fn extended(
    command: u32,
    core: &[u8],
    driver: &[u8],
    response: u64,
    core_out: usize,
    driver_out: usize,
) -> Vec<u8> {
    let mut buf = ib_uverbs_cmd_hdr {
        command: command | IB_USER_VERBS_CMD_FLAG_EXTENDED,
        in_words: (core.len() / 8) as u16,
        out_words: (core_out / 8) as u16,
    }
    .as_bytes()
    .to_vec();
    let ex = ib_uverbs_ex_cmd_hdr {
        response,
        provider_in_words: (driver.len() / 8) as u16,
        provider_out_words: (driver_out / 8) as u16,
        cmd_hdr_reserved: 0,
    };
    buf.extend_from_slice(ex.as_bytes());
    buf.extend_from_slice(core);
    buf.extend_from_slice(driver);
    buf
}

/// GET_CONTEXT as libmlx5 asks it (16 bfregs, 4 low latency); the response room.
pub fn get_context(ctx: &Context, flags: u32) -> Result<Vec<u8>, i32> {
    let mut resp = vec![0u8; 512];
    let req = ib_uverbs_get_context {
        response: resp.as_mut_ptr() as u64,
    };
    let drv = mlx5_ib_alloc_ucontext_req_v2 {
        total_num_bfregs: 16,
        num_low_latency_bfregs: 4,
        flags,
        max_cqe_version: 1,
        ..Default::default()
    };
    // The async fd: an eventfd this process keeps.
    // SAFETY: eventfd has no pointer arguments.
    let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_SEMAPHORE) };
    use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};
    // SAFETY: a fresh fd, owned once.
    let efd = unsafe { OwnedFd::from_raw_fd(efd) };
    let cmd = legacy(IB_USER_VERBS_CMD_GET_CONTEXT, &req, drv.as_bytes(), 512);
    // SAFETY: `efd` lives across the call.
    let borrowed = unsafe { BorrowedFd::borrow_raw(std::os::fd::AsRawFd::as_raw_fd(&efd)) };
    ctx.command(&cmd, Some(borrowed))?;
    std::mem::forget(efd);
    Ok(resp)
}

pub fn alloc_pd(ctx: &Context) -> u32 {
    let mut resp = [0u32; 2];
    let req = ib_uverbs_alloc_pd {
        response: resp.as_mut_ptr() as u64,
    };
    ctx.command(&legacy(IB_USER_VERBS_CMD_ALLOC_PD, &req, &[], 8), None)
        .unwrap();
    resp[0]
}

/// REG_MR: the MR's handle.
pub fn reg_mr(ctx: &Context, pd: u32, addr: u64, len: u64, access: u32) -> Result<u32, i32> {
    reg_mr_resp(ctx, pd, addr, len, access).map(|r| r.mr_handle)
}

/// REG_MR: the whole response (handle, lkey, rkey).
pub fn reg_mr_resp(
    ctx: &Context,
    pd: u32,
    addr: u64,
    len: u64,
    access: u32,
) -> Result<ib_uverbs_reg_mr_resp, i32> {
    let mut resp = ib_uverbs_reg_mr_resp::default();
    let req = ib_uverbs_reg_mr {
        response: &mut resp as *mut ib_uverbs_reg_mr_resp as u64,
        start: addr,
        length: len,
        hca_va: addr,
        pd_handle: pd,
        access_flags: access,
    };
    ctx.command(&legacy(IB_USER_VERBS_CMD_REG_MR, &req, &[], 12), None)?;
    Ok(resp)
}

/// The report of fabric `name` (what `mlx5-emu run --pcie` writes), through a launcher's
/// connection.
pub fn report(name: &str) -> serde_json::Value {
    let sock = UnixStream::connect(options(name, Link::Ib).socket()).expect("the fabric's socket");
    hello(&sock, &Hello::Launcher).expect("hello");
    match proto::call(&sock, &Request::Report, None) {
        Ok((Reply::Report(json), _)) => serde_json::from_str(&json).expect("JSON"),
        other => panic!("no report: {other:?}"),
    }
}
