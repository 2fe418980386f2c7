//! The fabric server (`mlx5-emu serve`): the model NICs of one fabric behind the kernel
//! interface, for every program of the fabric.
//!
//! One thread per connection; the model's own lock serialises the NICs as in one process.
//! A ticker thread steps the NICs' timers (`Nic::progress`: RNR and transport retries,
//! delayed work) and delivers events. The server ends when its last connection has closed
//! and no new one has come for [`LINGER`].

mod clock;
pub mod cm;
mod cmd;
mod context;
mod device;
mod events;
mod flow;
mod ioctl;
mod memory;
mod objects;
mod qp;
mod remote;
mod uar;
mod wq;
mod xrc;

use crate::proto::{self, Hello, Reply, Request, Welcome};
use crate::sysfs;
use events::Registry;
use mlx5_hw::{Fabric, GidAddr, GidType, LinkLayer, Nic, NicConfig, RoceGid};
use remote::Spaces;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// How long an idle server waits for a new connection before it ends.
pub const LINGER: Duration = Duration::from_millis(500);
/// How often the ticker steps the NICs' timers (RNR and transport retries, delayed work)
/// and looks for events while they have work.
pub const TICK: Duration = Duration::from_micros(200);
/// The tick of a fabric that has had no timer work for [`IDLE_AFTER`]. Doorbells and
/// commands do not wait for it: they run, and deliver their events, in the thread that
/// made them.
pub const IDLE_TICK: Duration = Duration::from_millis(2);
/// How long without timer work makes a fabric idle.
pub const IDLE_AFTER: Duration = Duration::from_millis(20);
/// How often the clock-info pages are rewritten (the kernel's overflow work runs at least
/// every few seconds; more often costs nothing here).
pub const CLOCK_PAGE_PERIOD: Duration = Duration::from_millis(100);

/// The link layer of a fabric's ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// InfiniBand: LIDs, no GRH needed.
    Ib,
    /// RoCE v2: Ethernet ports, GIDs only.
    Roce,
}

impl Link {
    /// The name `--link` takes and [`Welcome::link`] carries.
    pub fn name(self) -> &'static str {
        match self {
            Link::Ib => "ib",
            Link::Roce => "roce",
        }
    }

    /// The link named `name`.
    pub fn parse(name: &str) -> Option<Link> {
        match name {
            "ib" => Some(Link::Ib),
            "roce" => Some(Link::Roce),
            _ => None,
        }
    }
}

/// What a fabric is made of.
#[derive(Clone, Debug)]
pub struct Options {
    /// The fabric's name: programs started with the same name share it.
    pub name: String,
    /// Number of NICs (`mlx5_0` ...).
    pub nics: u32,
    /// Their link layer.
    pub link: Link,
    /// Where the socket, lock, log and sysfs tree of each fabric live.
    pub dir: PathBuf,
}

impl Options {
    /// The fabric's socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join(format!("{}.sock", self.name))
    }

    /// The fabric's sysfs tree.
    pub fn sysfs(&self) -> PathBuf {
        self.dir.join(format!("{}.sysfs", self.name))
    }

    /// The file only the serving process holds locked.
    fn lock(&self) -> PathBuf {
        self.dir.join(format!("{}.lock", self.name))
    }
}

/// Whether the server logs every command and its result (`MLX5_EMU_TRACE=1` in the
/// environment of the `mlx5-emu run` that starts the fabric).
pub(crate) fn trace() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var("MLX5_EMU_TRACE").as_deref() == Ok("1"))
}

/// The default directory of the fabrics: `$MLX5_EMU_DIR`, else `$XDG_RUNTIME_DIR/mlx5-emu`,
/// else `/tmp/mlx5-emu-<uid>`.
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MLX5_EMU_DIR") {
        return dir.into();
    }
    if let Some(run) = std::env::var_os("XDG_RUNTIME_DIR") {
        return Path::new(&run).join("mlx5-emu");
    }
    // SAFETY: getuid has no preconditions.
    PathBuf::from(format!("/tmp/mlx5-emu-{}", unsafe { libc::getuid() }))
}

/// The device memory (MEMIC) of each emulated NIC: 128 KiB (`max_dm_size`). The size a
/// ConnectX-5 reports is not public; the model's choice, enough for `mlx5-perf --use-dm`'s
/// hardware run (64 KiB).
pub const DM_SIZE: u64 = 128 * 1024;
/// The configuration of NIC `index` of a fabric: [`nic_config`], with, on RoCE, the NIC's
/// IPv4 address ([`cm::nic_ip`]) added to its GID table as the kernel adds a netdev's
/// address (`roce_gid_mgmt.c`: one entry per GID type, RoCE v1 then v2) after the model's
/// link-local RoCE v2 entry at index 0.
pub fn fabric_nic_config(link: Link, index: usize) -> NicConfig {
    let mut config = nic_config(link);
    if link == Link::Roce {
        config.roce_gids = std::iter::once(RoceGid {
            gid_type: GidType::RoceV2,
            addr: GidAddr::LinkLocal,
            vlan: None,
        })
        .chain(RoceGid::both_types(GidAddr::Ipv4(cm::nic_ip(index)), None))
        .collect();
    }
    config
}

/// The model NIC configuration of a fabric's NICs: the model's defaults, on the link layer
/// asked for, with CQE version 1 (what current kernels negotiate with rdma-core:
/// `mlx5_ib_alloc_ucontext` answers `min(max_cqe_version, the device's)`, and ConnectX-4
/// and later have version 1; libmlx5 then finds QPs by the user index in each CQE) and
/// [`DM_SIZE`] of device memory.
pub fn nic_config(link: Link) -> NicConfig {
    NicConfig {
        link_layer: match link {
            Link::Ib => LinkLayer::InfiniBand,
            Link::Roce => LinkLayer::Ethernet,
        },
        cqe_version: 1,
        dm_size: DM_SIZE,
        ..NicConfig::default()
    }
}

/// Everything a connection's thread shares.
pub(crate) struct Shared {
    pub(crate) options: Options,
    /// The configuration every NIC of the fabric has.
    pub(crate) config: NicConfig,
    pub(crate) nics: Vec<Nic>,
    /// The contexts' clock-info pages, refreshed by the ticker.
    pub(crate) clock_pages: Mutex<Vec<Weak<clock::ClockPage>>>,
    /// The QPs (NIC, QPN) of each address space, for [`Shared::reap`].
    pub(crate) space_qps: Mutex<HashMap<u16, Vec<(usize, u32)>>>,
    /// The XRC domains opened through a file (the kernel's per-device `xrcd_tree`), by NIC
    /// and the file's (device, inode): the model's domain and how many handles name it.
    pub(crate) xrcd_files: Mutex<HashMap<xrc::FileKey, (u32, u32)>>,
    pub(crate) spaces: &'static Spaces,
    pub(crate) events: Registry,
    /// The rdma_cm of the fabric.
    pub(crate) cm: cm::Cm,
    live: AtomicUsize,
    _fabric: Arc<Fabric>,
}

impl Shared {
    /// The QPs of programs that have exited go to ERR at once, as the kernel destroys a
    /// dead program's QPs before its memory goes: a peer's request then finds no responder
    /// (retries, then RETRY_EXC) instead of a receive queue that reads as zeros. Their
    /// context's teardown destroys them when its connection closes.
    pub(crate) fn reap(&self) {
        for space in self.spaces.gone() {
            let qps = self
                .space_qps
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&space)
                .cloned()
                .unwrap_or_default();
            for (nic, qpn) in qps {
                let _ = self.nics[nic].modify_qp(qpn, &mlx5_hw::QpTransition::Err);
            }
        }
    }

    /// Note (`add`) or forget a QP of `space`.
    pub(crate) fn track_qp(&self, space: u16, nic: usize, qpn: u32, add: bool) {
        let mut map = self.space_qps.lock().unwrap_or_else(|e| e.into_inner());
        let qps = map.entry(space).or_default();
        qps.retain(|&q| q != (nic, qpn));
        if add {
            qps.push((nic, qpn));
        }
    }
}

/// Serve the fabric `options` describes until the last program has gone. Returns at once
/// (with `Ok`) when another process serves it already.
pub fn serve(options: Options) -> io::Result<()> {
    std::fs::create_dir_all(&options.dir)?;
    let lock = std::fs::File::create(options.lock())?;
    // SAFETY: flock on an fd this function owns.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Ok(());
    }
    // A program whose peer has gone must not die writing to its event pipe.
    // SAFETY: ignoring SIGPIPE has no preconditions; writes then fail with EPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    if options.nics > cm::MAX_NICS {
        return Err(io::Error::other(format!(
            "at most {} NICs (one address each in 10.47.0.0/24)",
            cm::MAX_NICS
        )));
    }
    let fabric = Fabric::new();
    let config = nic_config(options.link);
    let nics: Vec<Nic> = (0..options.nics as usize)
        .map(|i| Nic::new(&fabric, fabric_nic_config(options.link, i)))
        .collect();
    sysfs::write(&options.sysfs(), &nics)?;
    static SPACES: OnceLock<Spaces> = OnceLock::new();
    let spaces = SPACES.get_or_init(Spaces::default);
    let cm_nics = nics
        .iter()
        .enumerate()
        .map(|(i, n)| cm::NicInfo::of(n, i))
        .collect();
    mlx5_hw::set_remote_memory(spaces);
    let _ = std::fs::remove_file(options.socket());
    let listener = UnixListener::bind(options.socket())?;
    listener.set_nonblocking(true)?;
    let shared = Arc::new(Shared {
        options,
        config,
        nics,
        clock_pages: Mutex::new(Vec::new()),
        space_qps: Mutex::new(HashMap::new()),
        xrcd_files: Mutex::new(HashMap::new()),
        spaces,
        events: Registry::default(),
        cm: cm::Cm::new(cm_nics, spaces),
        live: AtomicUsize::new(0),
        _fabric: fabric,
    });
    let ticker = shared.clone();
    std::thread::Builder::new()
        .name("mlx5-emu tick".into())
        .spawn(move || {
            let mut last_clock = Instant::now();
            let mut last_work = Instant::now();
            loop {
                // Every tick while the NICs have work; an idle fabric only every IDLE_TICK.
                let idle = last_work.elapsed() >= IDLE_AFTER;
                std::thread::sleep(if idle { IDLE_TICK } else { TICK });
                ticker.reap();
                ticker.cm.tick();
                for (i, nic) in ticker.nics.iter().enumerate() {
                    if nic.progress() > 0 {
                        last_work = Instant::now();
                    }
                    ticker.events.pump(i, nic);
                }
                if last_clock.elapsed() >= CLOCK_PAGE_PERIOD {
                    clock::refresh(&ticker.clock_pages, &ticker.nics);
                    last_clock = Instant::now();
                }
            }
        })?;
    let mut idle_since = Some(Instant::now());
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false)?;
                shared.live.fetch_add(1, Ordering::SeqCst);
                idle_since = None;
                let s = shared.clone();
                std::thread::Builder::new()
                    .name("mlx5-emu conn".into())
                    .spawn(move || {
                        if let Err(e) = connection(&s, &stream) {
                            eprintln!("mlx5-emu: connection: {e}");
                        }
                        s.live.fetch_sub(1, Ordering::SeqCst);
                    })?;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
        if shared.live.load(Ordering::SeqCst) == 0 {
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= LINGER {
                break;
            }
        } else {
            idle_since = None;
        }
    }
    let _ = std::fs::remove_file(shared.options.socket());
    let _ = std::fs::remove_dir_all(shared.options.sysfs());
    Ok(())
}

/// One connection: its hello, then a launcher's wait or a device context's requests.
fn connection(shared: &Arc<Shared>, stream: &UnixStream) -> io::Result<()> {
    let mut buf = vec![0u8; proto::MAX_MESSAGE];
    let Some((n, fd)) = proto::recv(stream.as_fd(), &mut buf)? else {
        return Ok(());
    };
    let hello: Hello = proto::decode(&buf[..n])?;
    let device = match hello {
        Hello::Launcher => None,
        Hello::Context { device } => Some(device),
        Hello::RdmaCm { token } => return cm_file(shared, stream, fd, token, &mut buf),
    };
    let errno = match device {
        Some(d) if d >= shared.options.nics => libc::ENODEV,
        _ => 0,
    };
    welcome(shared, stream, errno)?;
    match device {
        Some(device) if errno == 0 => context::serve(shared, stream, device, &mut buf),
        // A launcher keeps the fabric alive until its connection closes, and may ask for the
        // report.
        _ => {
            while let Some((n, _)) = proto::recv(stream.as_fd(), &mut buf)? {
                let reply = match proto::decode(&buf[..n])? {
                    Request::Report => Reply::Report(report(shared)),
                    _ => Reply::Command {
                        errno: libc::EINVAL,
                    },
                };
                let mut out = vec![0u8; proto::MAX_MESSAGE];
                let n = proto::encode(&reply, &mut out)?;
                proto::send(stream.as_fd(), &out[..n], None)?;
            }
            Ok(())
        }
    }
}

/// Answer a hello: what the fabric is, and `errno` (0, or why the connection is refused).
fn welcome(shared: &Shared, stream: &UnixStream, errno: i32) -> io::Result<()> {
    let welcome = Welcome {
        nics: shared.options.nics,
        link: shared.options.link.name().into(),
        sysfs: shared.options.sysfs().display().to_string(),
        errno,
    };
    let mut out = vec![0u8; 4096];
    let n = proto::encode(&welcome, &mut out)?;
    proto::send(stream.as_fd(), &out[..n], None)
}

/// An rdma_cm file: welcomed as a context is, then served by [`cm::serve`]; refused
/// (`EINVAL`) without its eventfd.
fn cm_file(
    shared: &Arc<Shared>,
    stream: &UnixStream,
    efd: Option<std::os::fd::OwnedFd>,
    token: u32,
    buf: &mut [u8],
) -> io::Result<()> {
    welcome(shared, stream, if efd.is_some() { 0 } else { libc::EINVAL })?;
    match efd {
        Some(efd) => cm::serve(&shared.cm, stream, efd, token, buf),
        None => Ok(()),
    }
}

/// Every NIC's PCIe counters and statistics, and the server's own counts, as JSON: what
/// `mlx5-emu run --pcie FILE` writes. The PCIe names are `mlx5-perf`'s.
pub(crate) fn report(shared: &Shared) -> String {
    let nics: Vec<serde_json::Value> = shared
        .nics
        .iter()
        .enumerate()
        .map(|(i, nic)| {
            let p = nic.pcie();
            let s = nic.stats();
            serde_json::json!({
                "device": format!("mlx5_{i}"),
                "pcie": {
                    "mmio_writes": p.mmio_writes,
                    "dma_reads": p.dma_reads,
                    "completions": p.completions,
                    "dma_writes": p.dma_writes,
                    "tlps_down": p.tlps_down,
                    "tlps_up": p.tlps_up,
                    "bytes_down": p.bytes_down,
                    "bytes_up": p.bytes_up,
                    "payload_down": p.payload_down,
                    "payload_up": p.payload_up,
                },
                "stats": {
                    "doorbells": s.doorbells,
                    "bf_writes": s.bf_writes,
                    "bf_used": s.bf_used,
                    "bf_mismatch": s.bf_mismatch,
                    "bf_incomplete": s.bf_incomplete,
                    "bad_mmio": s.bad_mmio,
                    "bad_doorbells": s.bad_doorbells,
                    "wqes": s.wqes,
                    "cqes": s.cqes,
                    "packets": s.packets,
                    "retransmits": s.retransmits,
                    "rnr_naks": s.rnr_naks,
                    "arms": s.arms,
                    "events": s.events,
                    "dm_writes": s.dm_writes,
                    "dm_gathers": s.dm_gathers,
                    "odp_faults": s.odp_faults,
                    "odp_pages_mapped": s.odp_pages_mapped,
                },
            })
        })
        .collect();
    let doc = serde_json::json!({
        "nics": nics,
        "emulator": {
            "memory_faults": shared.spaces.faults(),
        },
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}
