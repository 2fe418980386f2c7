//! The LD_PRELOAD half of `mlx5-emu`: what an unmodified libibverbs / libmlx5 sees of the
//! kernel, answered by the fabric server (see the `mlx5-emu` crate and docs/emulator.md).
//!
//! The hooks and what they stand in for:
//! - `socket(AF_NETLINK, _, NETLINK_RDMA)` fails with `EPROTONOSUPPORT`, so libibverbs finds
//!   devices in sysfs (`SYSFS_PATH`, the server's tree) instead of asking the host's kernel;
//! - `stat` / `open` / `openat` of `/dev/infiniband/uverbsN`, and `fstat` of the fd `open`
//!   returned: the character device (major 231, minor 192 + N); the fd is a connection to
//!   the server;
//! - `write` on it: a uverbs command, answered by the server, which writes the response
//!   where the command says (GET_CONTEXT and CREATE_COMP_CHANNEL get an eventfd, which the
//!   program sees as the async or channel fd, and whose `read` takes the next event from
//!   the server);
//! - `ioctl` on it: the uverbs ioctl interface, answered by the server (which reads and
//!   writes the argument's memory as the kernel does);
//! - `mmap` on it: UAR pages and device memory (every store caught by `mlx5_emu::trap` and
//!   sent to the server), or a page the server keeps up to date; `munmap` of those;
//! - `close`: the context ends, and the server tears its objects down;
//! - `/dev/infiniband/rdma_cm`: `stat` / `open` / `fstat` give a misc character device
//!   whose fd is an eventfd counting the file's events; `write` on it is an `rdma_ucm`
//!   command, `read` is `EINVAL` as on the kernel's, `close` ends the file
//!   (`mlx5_emu::cm_client`);
//! - `connect` to a NIC's IPv4 address (`10.47.0.N`): to `127.0.0.1`, the NIC addresses
//!   being this host's (`mlx5_emu::cm_client::host_route`).
//!
//! Everything else passes through to the next definition (`dlsym(RTLD_NEXT, ...)`). The
//! hooks do nothing unless `MLX5_EMU_SOCKET` is set.
#![deny(unsafe_op_in_unsafe_fn)]
// The hooks are the C library's functions: their names and signatures are C's.
#![allow(clippy::missing_safety_doc)]

use libc::{c_char, c_int, c_ulong, c_void, mode_t, off_t, size_t, ssize_t};
use mlx5_emu::client::{Context, SOCKET_ENV};
use mlx5_emu::cm_client;
use mlx5_emu::proto::Mapping;
use mlx5_emu::sysfs::{UVERBS_BASE_MINOR, UVERBS_MAJOR};
use mlx5_emu::trap;
use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::ptr::{null_mut, NonNull};
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};
use std::sync::{Mutex, OnceLock};

/// File descriptors below this can be contexts (the socket is moved below it if needed).
const MAX_FD: usize = 4096;
/// `NETLINK_RDMA` (linux/netlink.h).
const NETLINK_RDMA: c_int = 20;
/// `IB_USER_VERBS_CMD_GET_CONTEXT` and `IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL`
/// (rdma/ib_user_verbs.h): the two write commands whose answer is a new fd.
const CMD_GET_CONTEXT: u32 = 0;
const CMD_CREATE_COMP_CHANNEL: u32 = 17;
/// `IB_USER_VERBS_CMD_FLAG_EXTENDED`.
const CMD_FLAG_EXTENDED: u32 = 0x8000_0000;
const DEVICE_PREFIX: &[u8] = b"/dev/infiniband/uverbs";

/// The open contexts, by the program's fd.
static CONTEXTS: [AtomicPtr<Context>; MAX_FD] = [const { AtomicPtr::new(null_mut()) }; MAX_FD];
/// The event fds (async fd, completion channels), by the program's fd: the context's fd + 1.
static EVENTS: [AtomicI32; MAX_FD] = [const { AtomicI32::new(0) }; MAX_FD];
/// The trapped mappings: start, length.
static MAPPINGS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// The next definition of a C library function.
macro_rules! real {
    ($name:ident: $ty:ty) => {{
        static F: OnceLock<usize> = OnceLock::new();
        let f = *F.get_or_init(|| {
            // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
            let p = unsafe {
                libc::dlsym(
                    libc::RTLD_NEXT,
                    concat!(stringify!($name), "\0").as_ptr().cast(),
                )
            };
            assert!(
                !p.is_null(),
                "mlx5-emu: no {} after the preload",
                stringify!($name)
            );
            p as usize
        });
        // SAFETY: `f` is the address of the C library's function of this signature.
        unsafe { std::mem::transmute::<usize, $ty>(f) }
    }};
}

fn active() -> Option<&'static str> {
    static SOCKET: OnceLock<Option<String>> = OnceLock::new();
    SOCKET
        .get_or_init(|| std::env::var(SOCKET_ENV).ok())
        .as_deref()
}

fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns this thread's errno.
    unsafe { *libc::__errno_location() = e };
}

fn context(fd: c_int) -> Option<&'static Context> {
    let p = CONTEXTS
        .get(usize::try_from(fd).ok()?)?
        .load(Ordering::Acquire);
    // SAFETY: a non-null entry is a leaked `Box<Context>`, never freed.
    unsafe { p.as_ref() }
}

/// An emulated device file.
#[derive(Clone, Copy)]
enum Dev {
    /// `/dev/infiniband/uverbsN`.
    Uverbs(u32),
    /// `/dev/infiniband/rdma_cm`.
    RdmaCm,
}

/// The emulated device `path` names, if it names one.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn device_of(path: *const c_char) -> Option<Dev> {
    if path.is_null() || active().is_none() {
        return None;
    }
    // SAFETY: the caller's contract.
    let path = unsafe { CStr::from_ptr(path) }.to_bytes();
    if path == cm_client::DEVICE.as_bytes() {
        return Some(Dev::RdmaCm);
    }
    let n = path.strip_prefix(DEVICE_PREFIX)?;
    std::str::from_utf8(n).ok()?.parse().ok().map(Dev::Uverbs)
}

/// Open device `dev` (`open`'s `flags`): a connection to the server, its fd registered as
/// a context, or an rdma_cm file.
fn open_device(dev: Dev, flags: c_int) -> c_int {
    let Some(socket) = active() else {
        set_errno(libc::ENOENT);
        return -1;
    };
    let device = match dev {
        Dev::Uverbs(d) => d,
        Dev::RdmaCm => {
            return cm_client::open(socket, flags).unwrap_or_else(|e| {
                set_errno(e);
                -1
            })
        }
    };
    let ctx = match Context::open(socket, device) {
        Ok(c) => c,
        Err(e) => {
            set_errno(e);
            return -1;
        }
    };
    let fd = ctx.fd();
    if fd as usize >= MAX_FD {
        set_errno(libc::EMFILE);
        return -1;
    }
    CONTEXTS[fd as usize].store(Box::into_raw(Box::new(ctx)), Ordering::Release);
    fd
}

fn fake_stat(dev: Dev, buf: *mut libc::stat) -> c_int {
    let rdev = match dev {
        Dev::Uverbs(d) => libc::makedev(UVERBS_MAJOR, UVERBS_BASE_MINOR + d),
        Dev::RdmaCm => libc::makedev(cm_client::MAJOR, cm_client::MINOR),
    };
    // SAFETY: the caller passed a writable `struct stat`; zeroed is a valid value.
    unsafe {
        *buf = std::mem::zeroed();
        (*buf).st_mode = libc::S_IFCHR | 0o666;
        (*buf).st_rdev = rdev;
        (*buf).st_blksize = 4096;
    }
    0
}

/// The emulated device an open fd is, if it is one.
fn device_of_fd(fd: c_int) -> Option<Dev> {
    match context(fd) {
        Some(c) => Some(Dev::Uverbs(c.device)),
        None => cm_client::is_file(fd).then_some(Dev::RdmaCm),
    }
}

/// `open(2)`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: `path` is the caller's NUL-terminated path.
    match unsafe { device_of(path) } {
        Some(d) => open_device(d, flags),
        None => {
            let f = real!(open: unsafe extern "C" fn(*const c_char, c_int, mode_t) -> c_int);
            // SAFETY: the C library's open, with the caller's arguments.
            unsafe { f(path, flags, mode) }
        }
    }
}

/// `open64(2)`.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: as `open`.
    match unsafe { device_of(path) } {
        Some(d) => open_device(d, flags),
        None => {
            let f = real!(open64: unsafe extern "C" fn(*const c_char, c_int, mode_t) -> c_int);
            // SAFETY: the C library's open64, with the caller's arguments.
            unsafe { f(path, flags, mode) }
        }
    }
}

/// `openat(2)` (an absolute device path ignores `dirfd`).
#[no_mangle]
pub unsafe extern "C" fn openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    // SAFETY: as `open`.
    match unsafe { device_of(path) } {
        Some(d) => open_device(d, flags),
        None => {
            let f =
                real!(openat: unsafe extern "C" fn(c_int, *const c_char, c_int, mode_t) -> c_int);
            // SAFETY: the C library's openat, with the caller's arguments.
            unsafe { f(dirfd, path, flags, mode) }
        }
    }
}

/// `openat64(2)`.
#[no_mangle]
pub unsafe extern "C" fn openat64(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: mode_t,
) -> c_int {
    // SAFETY: as `open`.
    match unsafe { device_of(path) } {
        Some(d) => open_device(d, flags),
        None => {
            let f =
                real!(openat64: unsafe extern "C" fn(c_int, *const c_char, c_int, mode_t) -> c_int);
            // SAFETY: the C library's openat64, with the caller's arguments.
            unsafe { f(dirfd, path, flags, mode) }
        }
    }
}

/// `stat(2)`.
#[no_mangle]
pub unsafe extern "C" fn stat(path: *const c_char, buf: *mut libc::stat) -> c_int {
    // SAFETY: as `open`.
    match unsafe { device_of(path) } {
        Some(d) => fake_stat(d, buf),
        None => {
            let f = real!(stat: unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int);
            // SAFETY: the C library's stat, with the caller's arguments.
            unsafe { f(path, buf) }
        }
    }
}

/// `stat64(2)` (the same `struct stat` on x86-64).
#[no_mangle]
pub unsafe extern "C" fn stat64(path: *const c_char, buf: *mut libc::stat) -> c_int {
    // SAFETY: as `open`.
    match unsafe { device_of(path) } {
        Some(d) => fake_stat(d, buf),
        None => {
            let f = real!(stat64: unsafe extern "C" fn(*const c_char, *mut libc::stat) -> c_int);
            // SAFETY: the C library's stat64, with the caller's arguments.
            unsafe { f(path, buf) }
        }
    }
}

/// `fstat(2)`.
#[no_mangle]
pub unsafe extern "C" fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int {
    match device_of_fd(fd) {
        Some(d) => fake_stat(d, buf),
        None => {
            let f = real!(fstat: unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int);
            // SAFETY: the C library's fstat, with the caller's arguments.
            unsafe { f(fd, buf) }
        }
    }
}

/// `fstat64(2)`.
#[no_mangle]
pub unsafe extern "C" fn fstat64(fd: c_int, buf: *mut libc::stat) -> c_int {
    match device_of_fd(fd) {
        Some(d) => fake_stat(d, buf),
        None => {
            let f = real!(fstat64: unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int);
            // SAFETY: the C library's fstat64, with the caller's arguments.
            unsafe { f(fd, buf) }
        }
    }
}

/// `socket(2)`: no RDMA netlink while the emulator is active.
#[no_mangle]
pub unsafe extern "C" fn socket(domain: c_int, kind: c_int, protocol: c_int) -> c_int {
    if domain == libc::AF_NETLINK && protocol == NETLINK_RDMA && active().is_some() {
        set_errno(libc::EPROTONOSUPPORT);
        return -1;
    }
    let f = real!(socket: unsafe extern "C" fn(c_int, c_int, c_int) -> c_int);
    // SAFETY: the C library's socket, with the caller's arguments.
    unsafe { f(domain, kind, protocol) }
}

/// `connect(2)`: an IPv4 address of a fabric NIC is this host's
/// ([`cm_client::host_route`]), as an IPoIB or RoCE address is on a real one.
#[no_mangle]
pub unsafe extern "C" fn connect(
    fd: c_int,
    addr: *const libc::sockaddr,
    len: libc::socklen_t,
) -> c_int {
    let f = real!(connect: unsafe extern "C" fn(c_int, *const libc::sockaddr, libc::socklen_t) -> c_int);
    if active().is_some() && !addr.is_null() && len as usize >= size_of::<libc::sockaddr_in>() {
        // SAFETY: the caller's address of `len` bytes, at least a sockaddr_in.
        let mut to = unsafe { addr.cast::<libc::sockaddr_in>().read_unaligned() };
        let sysfs = std::env::var_os("SYSFS_PATH");
        if let (libc::AF_INET, Some(sysfs)) = (c_int::from(to.sin_family), sysfs) {
            let ip = to.sin_addr.s_addr.to_ne_bytes();
            if let Some(host) = cm_client::host_route(ip, std::path::Path::new(&sysfs)) {
                to.sin_addr.s_addr = u32::from_ne_bytes(host);
                let size = size_of::<libc::sockaddr_in>() as libc::socklen_t;
                // SAFETY: the C library's connect, with the caller's fd and a sockaddr_in.
                return unsafe { f(fd, (&raw const to).cast(), size) };
            }
        }
    }
    // SAFETY: the C library's connect, with the caller's arguments.
    unsafe { f(fd, addr, len) }
}

/// `write(2)`: a uverbs command on a context's fd, an `rdma_ucm` command on an rdma_cm
/// file's.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: size_t) -> ssize_t {
    if cm_client::is_file(fd) {
        if buf.is_null() {
            set_errno(libc::EFAULT);
            return -1;
        }
        // SAFETY: the caller's buffer of `count` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), count) };
        return match cm_client::write(fd, bytes) {
            Ok(()) => count as ssize_t,
            Err(e) => {
                set_errno(e);
                -1
            }
        };
    }
    let Some(ctx) = context(fd) else {
        let f = real!(write: unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t);
        // SAFETY: the C library's write, with the caller's arguments.
        return unsafe { f(fd, buf, count) };
    };
    if buf.is_null() || count < 8 {
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: the caller's buffer of `count` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), count) };
    let command = u32::from_ne_bytes(bytes[..4].try_into().unwrap());
    let result = match command {
        CMD_GET_CONTEXT | CMD_CREATE_COMP_CHANNEL if command & CMD_FLAG_EXTENDED == 0 => {
            with_eventfd(ctx, bytes)
        }
        _ => ctx.command(bytes, None),
    };
    match result {
        Ok(()) => count as ssize_t,
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

/// Run a command that hands the program a new event fd: an eventfd in semaphore mode
/// (close-on-exec, as the kernel's fd), lent to the server, which counts each queued event
/// on it; `read` takes them (see [`read`]). Closed again if the command fails.
fn with_eventfd(ctx: &Context, bytes: &[u8]) -> Result<(), i32> {
    // SAFETY: eventfd has no pointer arguments.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_SEMAPHORE) };
    if fd < 0 {
        return Err(libc::EMFILE);
    }
    // SAFETY: eventfd just returned this fd; it is owned once.
    let efd = unsafe { OwnedFd::from_raw_fd(fd) };
    ctx.command(bytes, Some(efd.as_fd()))?;
    if let Some(slot) = EVENTS.get(fd as usize) {
        slot.store(ctx.fd() + 1, Ordering::Release);
    }
    // The program owns the fd now.
    std::mem::forget(efd);
    Ok(())
}

/// The context whose event fd `fd` is, if it is one.
fn event_context(fd: c_int) -> Option<&'static Context> {
    let owner = EVENTS
        .get(usize::try_from(fd).ok()?)?
        .load(Ordering::Acquire);
    context(owner.checked_sub(1)?)
}

/// `read(2)`: an event of a completion channel or of the async fd, as the kernel's
/// `ib_uverbs_event_read` hands it over: one count from the eventfd (blocking or not as the
/// fd is), then the record from the server.
#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: size_t) -> ssize_t {
    let f = real!(read: unsafe extern "C" fn(c_int, *mut c_void, size_t) -> ssize_t);
    if cm_client::is_file(fd) {
        // The kernel's rdma_cm file has no read.
        set_errno(libc::EINVAL);
        return -1;
    }
    let Some(ctx) = event_context(fd) else {
        // SAFETY: the C library's read, with the caller's arguments.
        return unsafe { f(fd, buf, count) };
    };
    loop {
        let mut one = 0u64;
        // SAFETY: an 8-byte read into `one`.
        let n = unsafe { f(fd, (&mut one as *mut u64).cast(), 8) };
        if n != 8 {
            return n.min(-1);
        }
        match ctx.event(fd, count) {
            Ok(Some(record)) => {
                // SAFETY: the caller's buffer holds `count` >= record.len() bytes (the server
                // checked the room).
                unsafe { std::ptr::copy_nonoverlapping(record.as_ptr(), buf.cast(), record.len()) };
                return record.len() as ssize_t;
            }
            // The record went with its object: wait for the next one, as the kernel does.
            Ok(None) => continue,
            Err(e) => {
                // Give the count back: the event is still queued.
                let back = 1u64;
                let w = real!(write: unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t);
                // SAFETY: an 8-byte write from `back`.
                unsafe { w(fd, (&back as *const u64).cast(), 8) };
                set_errno(e);
                return -1;
            }
        }
    }
}

/// `ioctl(2)`: on a context's fd, a uverbs ioctl, answered by the server (methods it does
/// not have are `EPROTONOSUPPORT`, and libibverbs falls back to `write()` for them).
#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    if let Some(ctx) = context(fd) {
        return match ctx.ioctl(request, arg as u64) {
            Ok(()) => 0,
            Err(e) => {
                set_errno(e);
                -1
            }
        };
    }
    let f = real!(ioctl: unsafe extern "C" fn(c_int, c_ulong, *mut c_void) -> c_int);
    // SAFETY: the C library's ioctl, with the caller's arguments (the third is passed as
    // the variadic one is, in a register).
    unsafe { f(fd, request, arg) }
}

/// `mmap(2)`: UAR and clock pages of a context.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    let Some(ctx) = context(fd) else {
        let f = real!(mmap: unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void);
        // SAFETY: the C library's mmap, with the caller's arguments.
        return unsafe { f(addr, len, prot, flags, fd, offset) };
    };
    match map_device(ctx, fd, len, offset as u64) {
        Ok(p) => p,
        Err(e) => {
            set_errno(e);
            libc::MAP_FAILED
        }
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u64 }
}

fn map_device(ctx: &Context, fd: c_int, len: usize, offset: u64) -> Result<*mut c_void, i32> {
    let (mapping, shared) = ctx.mmap(offset, len as u64)?;
    match mapping {
        Mapping::Uar | Mapping::Registers | Mapping::DeviceMemory => {
            // The token names the context (its fd) and the page offset the program mapped.
            let token = ((fd as u64) << 32) | (offset / page_size());
            let sink: &'static dyn trap::Sink = match mapping {
                Mapping::DeviceMemory => &DEVICE_MEMORY,
                _ => &UARS,
            };
            let p = trap::map(len, token, sink)
                .map_err(|e| e.raw_os_error().unwrap_or(libc::ENOMEM))?;
            MAPPINGS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((p.as_ptr() as usize, len));
            Ok(p.as_ptr().cast())
        }
        Mapping::Shared => {
            let memfd = shared.ok_or(libc::EIO)?;
            let f = real!(mmap: unsafe extern "C" fn(*mut c_void, size_t, c_int, c_int, c_int, off_t) -> *mut c_void);
            // SAFETY: a fresh shared, read-only mapping of the server's memfd.
            let p = unsafe {
                f(
                    null_mut(),
                    len,
                    libc::PROT_READ,
                    libc::MAP_SHARED,
                    memfd.as_raw_fd(),
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(libc::ENOMEM);
            }
            Ok(p)
        }
    }
}

/// `munmap(2)`: a trapped mapping is unregistered with it.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    let trapped = {
        let mut maps = MAPPINGS.lock().unwrap_or_else(|e| e.into_inner());
        let at = maps.iter().position(|&(a, _)| a == addr as usize);
        at.map(|i| maps.swap_remove(i))
    };
    if let (Some((_, size)), Some(p)) = (trapped, NonNull::new(addr.cast::<u8>())) {
        // SAFETY: `p` is the start of a trapped mapping of `size` bytes, no longer listed.
        return match unsafe { trap::unmap(p, size) } {
            Ok(()) => 0,
            Err(e) => {
                set_errno(e.raw_os_error().unwrap_or(libc::EINVAL));
                -1
            }
        };
    }
    let f = real!(munmap: unsafe extern "C" fn(*mut c_void, size_t) -> c_int);
    // SAFETY: the C library's munmap, with the caller's arguments.
    unsafe { f(addr, len) }
}

/// `close(2)`: a context ends (the server tears its objects down when the connection
/// closes).
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    cm_client::close(fd);
    if let Ok(i) = usize::try_from(fd) {
        if let Some(slot) = CONTEXTS.get(i) {
            // The context itself is leaked: a thread may still be storing to one of its
            // pages.
            slot.store(null_mut(), Ordering::Release);
        }
        if let Some(slot) = EVENTS.get(i) {
            slot.store(0, Ordering::Release);
        }
    }
    let f = real!(close: unsafe extern "C" fn(c_int) -> c_int);
    // SAFETY: the C library's close, with the caller's argument.
    unsafe { f(fd) }
}

/// Where the trapped pages' stores and loads go: the context the token names, with the
/// page offset of the mapping and the byte offset in it.
struct Uars;

static UARS: Uars = Uars;

impl Uars {
    fn target(token: u64, offset: u64) -> (&'static Context, u64, u32) {
        let ctx = context((token >> 32) as c_int)
            .unwrap_or_else(|| fail("a store to a mapping of a closed context"));
        let at = u32::try_from(offset).unwrap_or_else(|_| fail("a store beyond 4 GiB"));
        (ctx, token & 0xffff_ffff, at)
    }
}

impl trap::Sink for Uars {
    fn store(&self, token: u64, offset: u64, data: &[u8]) {
        let (ctx, page, at) = Uars::target(token, offset);
        if ctx.store(page, at, data).is_err() {
            fail("the fabric server did not take a store");
        }
    }

    fn load(&self, token: u64, offset: u64, len: u8) -> u64 {
        let (ctx, page, at) = Uars::target(token, offset);
        ctx.load(page, at, len)
            .unwrap_or_else(|_| fail("the fabric server did not answer a register load"))
    }
}

/// Device memory: stores as to a UAR page; a load stops the program (the model has no CPU
/// read of device memory, and a made-up value would be worse).
struct DeviceMemory;

static DEVICE_MEMORY: DeviceMemory = DeviceMemory;

impl trap::Sink for DeviceMemory {
    fn store(&self, token: u64, offset: u64, data: &[u8]) {
        UARS.store(token, offset, data);
    }

    fn load(&self, _token: u64, _offset: u64, _len: u8) -> u64 {
        fail("a CPU load from device memory (ibv_memcpy_from_dm) is not emulated")
    }
}

/// A store the device never sees cannot be papered over: say so and stop.
fn fail(what: &str) -> ! {
    let msg = format!("mlx5-emu: {what}\n");
    let f = real!(write: unsafe extern "C" fn(c_int, *const c_void, size_t) -> ssize_t);
    // SAFETY: the C library's write of a buffer this function owns, to stderr.
    unsafe { f(2, msg.as_ptr().cast(), msg.len()) };
    std::process::abort()
}
