//! A program's side of `/dev/infiniband/rdma_cm` (the preload's hooks call it): each open
//! file is a connection to the fabric server of its own, and the fd the program gets is an
//! eventfd in semaphore mode that the server counts the file's queued events on, so that
//! `poll`, `epoll` and `O_NONBLOCK` behave as on the kernel's `rdma_ucm` fd.
//!
//! A `write()` is one command. GET_EVENT first takes one count from the eventfd, blocking
//! or not as the fd is (the kernel's `ucma_get_event` waits on its event list, or answers
//! `EAGAIN`), then asks the server for the event; a count whose event went with its id is
//! skipped, as the kernel's read would wait on. MIGRATE_ID names the old file by its fd,
//! which the server cannot see: the fd is replaced by the file's token here.
//!
//! The eventfd and socket are read and written with raw system calls (`rustix`), never
//! through the C library, whose `read`, `write` and `close` the preload replaces.

use crate::abi::ucma::{
    rdma_ucm_cmd_hdr, rdma_ucm_ece, rdma_ucm_event_resp, RDMA_USER_CM_CMD_GET_EVENT,
    RDMA_USER_CM_CMD_MIGRATE_ID,
};
use crate::abi::{self};
use crate::client::hello_with_fd;
use crate::proto::{self, Hello, Reply, Request};
use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// The path of the kernel's rdma_cm device (`RDMA_CDEV_DIR "/rdma_cm"`, librdmacm).
pub const DEVICE: &str = "/dev/infiniband/rdma_cm";
/// The character device it is: a misc device (major 10) with a dynamic minor.
pub const MAJOR: u32 = 10;
/// The minor the emulated device reports.
pub const MINOR: u32 = 58;

/// File descriptors below this can be rdma_cm files.
const MAX_FD: usize = 4096;
/// The byte offset of `rdma_ucm_migrate_id.fd` in a MIGRATE_ID write.
const MIGRATE_FD_AT: usize = size_of::<rdma_ucm_cmd_hdr>() + 12;

/// One open rdma_cm file.
#[derive(Debug)]
struct CmFile {
    sock: UnixStream,
    /// One request and its reply at a time.
    lock: Mutex<()>,
    token: u32,
}

impl Drop for CmFile {
    /// The last reference to a closed file: as the kernel's `ucma_close` returns only once
    /// the file's ids are destroyed (their peers told), wait for the server to end the
    /// connection, which it does after destroying them.
    fn drop(&mut self) {
        if rustix::net::shutdown(&self.sock, rustix::net::Shutdown::Write).is_err() {
            return;
        }
        let mut buf = [0u8; 64];
        while matches!(rustix::io::read(&self.sock, &mut buf), Ok(n) if n > 0) {}
    }
}

/// Which fds are rdma_cm files (read without a lock on every `write`, `read`, `close`).
static IS_FILE: [AtomicBool; MAX_FD] = [const { AtomicBool::new(false) }; MAX_FD];
/// The open files by the program's fd.
static FILES: Mutex<Option<HashMap<RawFd, Arc<CmFile>>>> = Mutex::new(None);
/// The next file's token (0 is "not an rdma_cm file" to the server).
static NEXT_TOKEN: AtomicU32 = AtomicU32::new(1);

/// Whether `fd` is one of the program's rdma_cm files.
pub fn is_file(fd: RawFd) -> bool {
    usize::try_from(fd)
        .ok()
        .and_then(|i| IS_FILE.get(i))
        .is_some_and(|f| f.load(Ordering::Acquire))
}

fn file(fd: RawFd) -> Option<Arc<CmFile>> {
    if !is_file(fd) {
        return None;
    }
    let files = FILES.lock().unwrap_or_else(|e| e.into_inner());
    files.as_ref()?.get(&fd).cloned()
}

/// `open(DEVICE, flags)` on the fabric whose server listens at `socket`: a new file;
/// returns the program's fd (the eventfd), or the errno `open` fails with (`ENXIO` when no
/// fabric server answers).
pub fn open(socket: &str, flags: i32) -> Result<RawFd, i32> {
    let mut ef = rustix::event::EventfdFlags::SEMAPHORE;
    if flags & libc::O_CLOEXEC != 0 {
        ef |= rustix::event::EventfdFlags::CLOEXEC;
    }
    if flags & libc::O_NONBLOCK != 0 {
        ef |= rustix::event::EventfdFlags::NONBLOCK;
    }
    let efd = rustix::event::eventfd(0, ef).map_err(|e| e.raw_os_error())?;
    let sock = UnixStream::connect(socket).map_err(|_| libc::ENXIO)?;
    let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    let (welcome, _) =
        hello_with_fd(&sock, &Hello::RdmaCm { token }, Some(efd.as_fd())).map_err(|_| libc::EIO)?;
    if welcome.errno != 0 {
        return Err(welcome.errno);
    }
    let fd = efd.as_raw_fd();
    let slot = usize::try_from(fd)
        .ok()
        .and_then(|i| IS_FILE.get(i))
        .ok_or(libc::EMFILE)?;
    FILES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(
            fd,
            Arc::new(CmFile {
                sock,
                lock: Mutex::new(()),
                token,
            }),
        );
    slot.store(true, Ordering::Release);
    // The program owns the eventfd now.
    Ok(efd.into_raw_fd())
}

/// `close(fd)` of an rdma_cm file: forgotten here; once no thread is in a command on it,
/// the connection closes and this waits until the server has destroyed the file's ids.
/// The caller closes the eventfd.
pub fn close(fd: RawFd) {
    if !is_file(fd) {
        return;
    }
    IS_FILE[fd as usize].store(false, Ordering::Release);
    let gone = FILES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .and_then(|f| f.remove(&fd));
    // Dropped here, without the table's lock: closing the socket goes through the hooks.
    drop(gone);
}

/// A `write()` of `bytes` on the rdma_cm file `fd`: `Ok` (the write returns its count) or
/// the errno.
pub fn write(fd: RawFd, bytes: &[u8]) -> Result<(), i32> {
    let f = file(fd).ok_or(libc::EBADF)?;
    let hdr: rdma_ucm_cmd_hdr = abi::read(bytes, 0).map_err(|_| libc::EINVAL)?;
    match hdr.cmd {
        RDMA_USER_CM_CMD_GET_EVENT => get_event(&f, fd, bytes, &hdr),
        RDMA_USER_CM_CMD_MIGRATE_ID if bytes.len() >= MIGRATE_FD_AT + 4 => {
            let mut b = bytes.to_vec();
            let at = MIGRATE_FD_AT..MIGRATE_FD_AT + 4;
            let old = i32::from_ne_bytes(b[at.clone()].try_into().expect("4 bytes"));
            b[at].copy_from_slice(&token_of(old).to_ne_bytes());
            command(&f, &b).map(|_| ())
        }
        _ => command(&f, bytes).map(|_| ()),
    }
}

/// The server's name for the program's fd `old` in MIGRATE_ID: its token, `u32::MAX` for
/// an fd that is not open (the kernel's `ENOENT`), 0 for one that is no rdma_cm file
/// (`EINVAL`).
fn token_of(old: RawFd) -> u32 {
    if let Some(f) = file(old) {
        return f.token;
    }
    // SAFETY: the fd is only asked for its flags; an fd that is not open fails.
    let open = old >= 0 && rustix::io::fcntl_getfd(unsafe { BorrowedFd::borrow_raw(old) }).is_ok();
    if open {
        0
    } else {
        u32::MAX
    }
}

/// GET_EVENT: a count, then the event (module docs).
fn get_event(f: &CmFile, fd: RawFd, bytes: &[u8], hdr: &rdma_ucm_cmd_hdr) -> Result<(), i32> {
    // ucma_get_event's room check comes before it waits.
    let least = size_of::<rdma_ucm_event_resp>() - size_of::<u32>() - size_of::<rdma_ucm_ece>();
    if usize::from(hdr.out) < least {
        return Err(libc::ENOSPC);
    }
    // SAFETY: the program's open eventfd, for the duration of this call.
    let efd = unsafe { BorrowedFd::borrow_raw(fd) };
    loop {
        let mut one = [0u8; 8];
        match rustix::io::read(efd, &mut one) {
            Ok(8) => {}
            Ok(_) => return Err(libc::EIO),
            Err(e) => return Err(e.raw_os_error()),
        }
        match command(f, bytes) {
            Ok(true) => return Ok(()),
            // The event went with its id: wait for the next.
            Ok(false) => continue,
            Err(e) => {
                // The event is still queued: give its count back.
                let _ = rustix::io::write(efd, &1u64.to_ne_bytes());
                return Err(e);
            }
        }
    }
}

/// Send one command; `Ok(false)` when the server had no event for a GET_EVENT.
fn command(f: &CmFile, bytes: &[u8]) -> Result<bool, i32> {
    let _one = f.lock.lock().unwrap_or_else(|e| e.into_inner());
    let req = Request::Command {
        bytes,
        event_fd: None,
    };
    match proto::call(&f.sock, &req, None) {
        Ok((Reply::Command { errno: 0 }, _)) => Ok(true),
        Ok((Reply::Command { errno }, _)) => Err(errno),
        Ok((Reply::Event(Ok(None)), _)) => Ok(false),
        _ => Err(libc::EIO),
    }
}

/// Where a program's `connect()` to the IPv4 address `to` goes: a NIC's address is the
/// host's, as an IPoIB or RoCE netdev's is, so a socket connecting to it reaches this
/// machine's listeners (the kernel routes a local address through `lo`): `127.0.0.1`.
/// `None` (the address as given) for any other address. `sysfs` is the fabric's tree, whose
/// `class/infiniband/mlx5_N` says which NICs there are.
pub fn host_route(to: [u8; 4], sysfs: &Path) -> Option<[u8; 4]> {
    if !crate::server::cm::in_subnet(to) {
        return None;
    }
    let nic = sysfs.join(format!("class/infiniband/mlx5_{}", to[3] - 1));
    nic.exists().then_some([127, 0, 0, 1])
}

/// A connection of a test or tool (no preload): an rdma_cm file of the fabric at
/// `socket`, its eventfd (blocking) and its commands.
#[derive(Debug)]
pub struct Direct {
    fd: RawFd,
}

impl Direct {
    /// Open an rdma_cm file on the fabric whose server listens at `socket`.
    pub fn open(socket: &str) -> Result<Direct, i32> {
        open(socket, libc::O_CLOEXEC).map(|fd| Direct { fd })
    }

    /// The file's fd (the eventfd the program would poll).
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// One `write()`.
    pub fn write(&self, bytes: &[u8]) -> Result<(), i32> {
        write(self.fd, bytes)
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        close(self.fd);
        // SAFETY: the eventfd `open` made, owned by this value, closed once.
        drop(unsafe { OwnedFd::from_raw_fd(self.fd) });
    }
}
