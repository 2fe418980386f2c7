//! What a program's preload and the fabric server say to each other, over one Unix stream
//! socket per connection.
//!
//! A message is a little-endian `u32` length and that many bytes of `postcard`. File
//! descriptors travel as `SCM_RIGHTS` with a message's first bytes: the eventfd that counts
//! a program's events (GET_CONTEXT's async fd, a completion channel, an rdma_cm file), and
//! the server's clock-info page. Every request gets exactly one reply, in order.
//!
//! The store and load of a UAR page are sent from the trap's signal handler: they encode
//! into a buffer on the stack ([`encode`]) and allocate nothing.

use serde::{Deserialize, Serialize};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// The largest message either side accepts (a command's request or response is at most a
/// few hundred bytes; the report of a fabric is the largest).
pub const MAX_MESSAGE: usize = 1 << 20;

/// The first message of a connection.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Hello {
    /// `mlx5-emu run`: keeps the fabric alive while its program runs.
    Launcher,
    /// A program opened `/dev/infiniband/uverbs<device>`: one device context.
    Context {
        /// The device's index (`mlx5_<device>`).
        device: u32,
    },
    /// A program opened `/dev/infiniband/rdma_cm`: one rdma_cm file. The eventfd that
    /// counts its events comes with this message.
    RdmaCm {
        /// The preload's number for the file, unique in the program (MIGRATE_ID names a
        /// file by it).
        token: u32,
    },
}

/// What a fabric is: the answer to [`Hello`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Welcome {
    /// Number of model NICs.
    pub nics: u32,
    /// `"ib"` or `"roce"`.
    pub link: String,
    /// The generated sysfs tree (`SYSFS_PATH`).
    pub sysfs: String,
    /// `Ok` unless the connection is refused (the errno a failed `open` returns).
    pub errno: i32,
}

/// A request of a device context.
#[derive(Debug, Serialize, Deserialize)]
pub enum Request<'a> {
    /// A `write()` on the context's command fd: the whole buffer. With an fd attached when
    /// the command creates one (GET_CONTEXT's async fd, CREATE_COMP_CHANNEL): the eventfd
    /// (semaphore mode) that counts the new fd's events, numbered `event_fd` in the program,
    /// which the kernel's answer names.
    Command {
        /// The buffer written.
        #[serde(borrow)]
        bytes: &'a [u8],
        /// The program's number of the attached eventfd.
        event_fd: Option<i32>,
    },
    /// An `mmap` of the command fd at byte `offset`, `len` bytes.
    Mmap {
        /// Byte offset (page offset times the page size).
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
    /// A CPU store of `data` at byte `offset` of the mapping made at command-fd page offset
    /// `page` (a UAR page, or device memory).
    Store {
        /// The mapping's page offset (`mmap`'s offset / page size).
        page: u64,
        /// Byte offset in the mapping.
        offset: u32,
        /// The bytes, as the CPU's write-combining buffer sent them (8 or 64 normally).
        #[serde(borrow)]
        data: &'a [u8],
    },
    /// A `read` of `room` bytes on the event fd the program numbers `fd` (the context's
    /// async fd or a completion channel), after the preload took one count from it.
    Event {
        /// The program's fd.
        fd: i32,
        /// The bytes the read asked for.
        room: u32,
    },
    /// A launcher's request: every NIC's PCIe counters and statistics, as JSON.
    Report,
    /// A CPU load of `len` bytes at byte `offset` of the mapping made at page offset `page`.
    Load {
        /// The mapping's page offset.
        page: u64,
        /// Byte offset in the mapping.
        offset: u32,
        /// 1, 2, 4 or 8.
        len: u8,
    },
    /// An `ioctl(fd, request, arg)` on the context's command fd; the server reads the
    /// argument's memory and writes what the kernel writes back there (answered with
    /// [`Reply::Command`]).
    Ioctl {
        /// The request (`RDMA_VERBS_IOCTL`; anything else is `ENOTTY`).
        request: u64,
        /// The argument: the program's address of the `ib_uverbs_ioctl_hdr`.
        arg: u64,
    },
}

/// What a command-fd `mmap` is backed by.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum Mapping {
    /// A UAR page: mapped with no access, every store trapped and sent as
    /// [`Request::Store`].
    Uar,
    /// A read-only page the server keeps up to date (the clock-info page): the attached
    /// memfd, mapped shared.
    Shared,
    /// A page of registers the program only reads (the free-running clock): mapped with no
    /// access, every load trapped and sent as [`Request::Load`].
    Registers,
    /// Device memory (MEMIC, `ibv_alloc_dm`): mapped with no access, every store trapped and
    /// sent as [`Request::Store`]. The model has no CPU read of device memory, so a load
    /// (`ibv_memcpy_from_dm`) stops the program with a message rather than read a value
    /// that is not there.
    DeviceMemory,
}

/// The server's answer to a [`Request`].
#[derive(Debug, Serialize, Deserialize)]
pub enum Reply {
    /// A command's result: 0 (the server has written the response where the command
    /// said, as the kernel copies it out), or the errno `write()` (or `ioctl()`) fails
    /// with.
    Command {
        /// 0 or a positive errno.
        errno: i32,
    },
    /// An mmap's backing, or the errno `mmap` fails with.
    Mmap(Result<Mapping, i32>),
    /// A store took effect (the device has done what it started).
    Stored,
    /// A load's value.
    Loaded(u64),
    /// An event read: the record, none (dropped with its object: read again), or the errno.
    Event(Result<Option<Vec<u8>>, i32>),
    /// The fabric's report (JSON).
    Report(String),
}

/// Encode `msg` into `buf` as one framed message; returns its length. Allocates nothing.
pub fn encode<T: Serialize>(msg: &T, buf: &mut [u8]) -> io::Result<usize> {
    let (len, body) = buf.split_at_mut(4);
    let n = postcard::to_slice(msg, body)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?
        .len();
    len.copy_from_slice(&(n as u32).to_le_bytes());
    Ok(4 + n)
}

/// Decode one message body (without its length).
pub fn decode<'a, T: Deserialize<'a>>(body: &'a [u8]) -> io::Result<T> {
    postcard::from_bytes(body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Send one framed message (`bytes` from [`encode`]) with `fd` attached.
pub fn send(sock: BorrowedFd<'_>, bytes: &[u8], fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
    use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = SendAncillaryBuffer::new(&mut space);
    let fds;
    if let Some(fd) = fd {
        fds = [fd];
        ancillary.push(SendAncillaryMessage::ScmRights(&fds));
    }
    let mut sent = sendmsg(
        sock,
        &[io::IoSlice::new(bytes)],
        &mut ancillary,
        SendFlags::NOSIGNAL,
    )?;
    while sent < bytes.len() {
        sent += rustix::net::send(sock, &bytes[sent..], SendFlags::NOSIGNAL)?;
    }
    Ok(())
}

/// Receive one framed message into `buf`; returns the body's length and the fd that came
/// with it. `Ok(None)` at end of stream before a message started.
pub fn recv(sock: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<(usize, Option<OwnedFd>)>> {
    use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut len = [0u8; 4];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let got = recvmsg(
        sock,
        &mut [io::IoSliceMut::new(&mut len)],
        &mut ancillary,
        RecvFlags::CMSG_CLOEXEC,
    )?
    .bytes;
    if got == 0 {
        return Ok(None);
    }
    let mut fd = None;
    for msg in ancillary.drain() {
        if let RecvAncillaryMessage::ScmRights(mut fds) = msg {
            fd = fds.next();
        }
    }
    read_exact(sock, &mut len[got..])?;
    let n = u32::from_le_bytes(len) as usize;
    if n > buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message of {n} bytes (at most {})", buf.len()),
        ));
    }
    read_exact(sock, &mut buf[..n])?;
    Ok(Some((n, fd)))
}

fn read_exact(sock: BorrowedFd<'_>, mut buf: &mut [u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match rustix::io::read(sock, &mut *buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf = &mut buf[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// One request and its reply on a connection, for callers that may allocate.
pub fn call(
    sock: &impl AsFd,
    req: &Request<'_>,
    fd: Option<BorrowedFd<'_>>,
) -> io::Result<(Reply, Option<OwnedFd>)> {
    let mut out = vec![0u8; 64 + request_len(req)];
    let n = encode(req, &mut out)?;
    send(sock.as_fd(), &out[..n], fd)?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let (n, fd) = recv(sock.as_fd(), &mut buf)?.ok_or(io::ErrorKind::UnexpectedEof)?;
    Ok((decode(&buf[..n])?, fd))
}

fn request_len(req: &Request<'_>) -> usize {
    match req {
        Request::Command { bytes, .. } => bytes.len(),
        Request::Store { data, .. } => data.len(),
        _ => 0,
    }
}
