//! A program's side of a device context: one connection to the fabric server per open
//! `/dev/infiniband/uverbsN`, shared by the program's threads (one request at a time).
//!
//! [`Context::store`] and [`Context::load`] run in the trap's signal handler: they encode on
//! the stack and allocate nothing. The lock they take is never held by code that can fault
//! on a UAR page (only this module holds it, around one request and its reply).

use crate::proto::{self, Hello, Mapping, Reply, Request, Welcome};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

/// The environment variable naming the fabric server's socket (set by `mlx5-emu run`).
pub const SOCKET_ENV: &str = "MLX5_EMU_SOCKET";

/// An open device context.
#[derive(Debug)]
pub struct Context {
    sock: UnixStream,
    lock: Mutex<()>,
    /// The device's index.
    pub device: u32,
}

/// A failed request: the errno the system call that made it returns.
pub type Errno = i32;

impl Context {
    /// Connect to the server at `path` for device `device`; the errno `open` fails with
    /// (ENODEV for a device the fabric does not have, ENXIO when no server answers).
    pub fn open(path: &str, device: u32) -> Result<Context, Errno> {
        let sock = UnixStream::connect(path).map_err(|_| libc::ENXIO)?;
        let (welcome, _) = hello(&sock, &Hello::Context { device }).map_err(|_| libc::EIO)?;
        if welcome.errno != 0 {
            return Err(welcome.errno);
        }
        Ok(Context {
            sock,
            lock: Mutex::new(()),
            device,
        })
    }

    /// The connection's fd (the program's command fd is this very socket).
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// A `write()` of `bytes` on the command fd: done (the server has written the
    /// response where the command says), or the errno. `events` is the eventfd the program
    /// sees as the fd the command creates, and its number (GET_CONTEXT, CREATE_COMP_CHANNEL).
    pub fn command(&self, bytes: &[u8], events: Option<BorrowedFd<'_>>) -> Result<(), Errno> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let req = Request::Command {
            bytes,
            event_fd: events.map(|e| e.as_raw_fd()),
        };
        match proto::call(&self.sock, &req, events) {
            Ok((Reply::Command { errno: 0 }, _)) => Ok(()),
            Ok((Reply::Command { errno }, _)) => Err(errno),
            _ => Err(libc::EIO),
        }
    }

    /// An `ioctl(fd, request, arg)` on the command fd: done (the server has read the
    /// argument's memory and written back what the kernel writes), or the errno.
    pub fn ioctl(&self, request: u64, arg: u64) -> Result<(), Errno> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        match proto::call(&self.sock, &Request::Ioctl { request, arg }, None) {
            Ok((Reply::Command { errno: 0 }, _)) => Ok(()),
            Ok((Reply::Command { errno }, _)) => Err(errno),
            _ => Err(libc::EIO),
        }
    }

    /// An `mmap` of the command fd at byte `offset`: its backing and, for a shared page,
    /// the memfd to map.
    pub fn mmap(&self, offset: u64, len: u64) -> Result<(Mapping, Option<OwnedFd>), Errno> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        match proto::call(&self.sock, &Request::Mmap { offset, len }, None) {
            Ok((Reply::Mmap(Ok(m)), fd)) => Ok((m, fd)),
            Ok((Reply::Mmap(Err(errno)), _)) => Err(errno),
            _ => Err(libc::EIO),
        }
    }

    /// A read of `room` bytes from the event fd `fd`, after one count was taken from it: the
    /// record, or `None` when its object dropped it (read again).
    pub fn event(&self, fd: i32, room: usize) -> Result<Option<Vec<u8>>, Errno> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let req = Request::Event {
            fd,
            room: room.min(u32::MAX as usize) as u32,
        };
        match proto::call(&self.sock, &req, None) {
            Ok((Reply::Event(r), _)) => r,
            _ => Err(libc::EIO),
        }
    }

    /// A CPU store at byte `offset` of the mapping at page offset `page` (a UAR page or
    /// device memory): returns once the device has done what it started. Allocates nothing (the trap's signal handler calls it).
    pub fn store(&self, page: u64, offset: u32, data: &[u8]) -> io::Result<()> {
        let mut out = [0u8; 128];
        let n = proto::encode(&Request::Store { page, offset, data }, &mut out)?;
        match self.exchange(&out[..n])? {
            Reply::Stored => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    /// A CPU load at byte `offset` of the register mapping at page offset `page`. Allocates
    /// nothing.
    pub fn load(&self, page: u64, offset: u32, len: u8) -> io::Result<u64> {
        let mut out = [0u8; 64];
        let n = proto::encode(&Request::Load { page, offset, len }, &mut out)?;
        match self.exchange(&out[..n])? {
            Reply::Loaded(v) => Ok(v),
            other => Err(unexpected(&other)),
        }
    }

    /// Send one encoded request and decode its reply, on the stack.
    fn exchange(&self, request: &[u8]) -> io::Result<Reply> {
        let _one = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        proto::send(self.sock.as_fd(), request, None)?;
        let mut buf = [0u8; 64];
        let (n, _) =
            proto::recv(self.sock.as_fd(), &mut buf)?.ok_or(io::ErrorKind::UnexpectedEof)?;
        proto::decode(&buf[..n])
    }
}

fn unexpected(reply: &Reply) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("unexpected reply {reply:?}"),
    )
}

/// Say hello on a fresh connection and read the fabric's answer.
pub fn hello(sock: &UnixStream, hello: &Hello) -> io::Result<(Welcome, Option<OwnedFd>)> {
    hello_with_fd(sock, hello, None)
}

/// [`hello`] with `fd` attached (an rdma_cm file's eventfd).
pub fn hello_with_fd(
    sock: &UnixStream,
    hello: &Hello,
    fd: Option<BorrowedFd<'_>>,
) -> io::Result<(Welcome, Option<OwnedFd>)> {
    let mut out = [0u8; 64];
    let n = proto::encode(hello, &mut out)?;
    proto::send(sock.as_fd(), &out[..n], fd)?;
    let mut buf = vec![0u8; 4096];
    let (n, fd) = proto::recv(sock.as_fd(), &mut buf)?.ok_or(io::ErrorKind::UnexpectedEof)?;
    Ok((proto::decode(&buf[..n])?, fd))
}
