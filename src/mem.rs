//! Memory the device reads and writes: registered regions and queue buffers.
//!
//! The device writes such memory behind the compiler's back, so it is only ever reached
//! through raw pointers: copies in and out, never a `&[u8]` that could change under it.
//!
//! Where the memory comes from is the caller's choice ([`MemOptions`]): 4 KiB pages,
//! hugetlbfs pages (`MAP_HUGETLB`), transparent huge pages (`madvise(MADV_HUGEPAGE)`), on a
//! chosen NUMA node (`mbind`). What it costs the NIC (one translation per page it touches,
//! a remote node's interconnect hop) is in `docs/memory.md`.

use core::ptr::NonNull;

use memmap2::{Advice, MmapMut, MmapOptions};
use volatile::access::ReadOnly;
use volatile::VolatilePtr;

use crate::error::Error;

/// A gather or scatter entry: `len` bytes at `addr` in memory registered with `lkey`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sge {
    /// Virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// Local key of the memory region.
    pub lkey: u32,
}

/// Most scatter entries of one receive WQE (the largest stride, 1024 bytes, of 16-byte
/// entries).
pub(crate) const MAX_RECV_SGE: usize = 64;

/// The huge page size this crate allocates: 2 MiB, the PMD size of x86-64 and of aarch64
/// with 4 KiB base pages.
pub const HUGE_PAGE: usize = 2 << 20;

/// `MAP_HUGE_SHIFT` encoding of [`HUGE_PAGE`] (log2 of 2 MiB).
const HUGE_PAGE_BITS: u8 = 21;

/// Which pages back memory the crate allocates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Pages {
    /// Anonymous memory in base (4 KiB) pages: one translation per 4 KiB the NIC touches.
    #[default]
    Base,
    /// 2 MiB pages from the hugetlbfs pool (`mmap` with `MAP_HUGETLB | MAP_HUGE_2MB`), the
    /// length rounded up to whole pages. The pool is reserved by the administrator
    /// (`vm.nr_hugepages`); with too few free pages the allocation fails with
    /// [`Error::NoHugePages`], never silently in 4 KiB pages.
    Huge,
    /// Anonymous memory, 2 MiB aligned and rounded, advised `MADV_HUGEPAGE` and populated:
    /// the kernel backs it with transparent huge pages where it can. That is advice, not a
    /// promise: [`MemoryRegion::page_size`](crate::MemoryRegion::page_size) says what the
    /// kernel gave (2 MiB only when every page is huge). Refused with
    /// [`Error::TransparentHugePagesOff`] when THP is `never`.
    Transparent,
    /// [`Pages::Huge`] if the pool has the pages, else [`Pages::Base`]: the one explicit
    /// fallback (the page size of the result says which).
    PreferHuge,
}

/// Where memory the crate allocates lives: for [`ProtectionDomain::alloc_mr_with`] and, on
/// the model, for rings and doorbell records ([`Sim::with_ring_memory`]).
///
/// [`ProtectionDomain::alloc_mr_with`]: crate::ProtectionDomain::alloc_mr_with
/// [`Sim::with_ring_memory`]: crate::backend::sim::Sim::with_ring_memory
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MemOptions {
    /// The page size.
    pub pages: Pages,
    /// Bind the pages to this NUMA node (`mbind(MPOL_BIND)`, before they are touched);
    /// `None` leaves the process's policy (first touch).
    pub numa_node: Option<u32>,
}

impl MemOptions {
    /// Base pages on no particular node (what the crate allocates when no options are given).
    pub const BASE: MemOptions = MemOptions {
        pages: Pages::Base,
        numa_node: None,
    };
}

/// What [`Memory::with_options`] mapped.
enum Mapped {
    /// Anonymous memory in base pages.
    Base,
    /// A hugetlbfs mapping.
    HugeTlb,
    /// Anonymous memory advised `MADV_HUGEPAGE`.
    Transparent,
}

/// Page-aligned memory, owned (an anonymous or hugetlbfs mapping) or the caller's.
#[derive(Debug)]
pub(crate) struct Memory {
    ptr: NonNull<u8>,
    len: usize,
    /// Size of the pages backing it, as the kernel reports them (what a registration's
    /// translation entries cover).
    page_size: usize,
    _map: Option<MmapMut>,
}

// SAFETY: the memory is plain bytes reached only through raw-pointer copies; the mapping
// (if owned) has no thread affinity.
unsafe impl Send for Memory {}
// SAFETY: as above: no `&[u8]` is ever formed, copies are the only access.
unsafe impl Sync for Memory {}

/// The base page size (`sysconf(_SC_PAGESIZE)`).
pub(crate) fn base_page() -> usize {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(page).unwrap_or(4096).max(1)
}

impl Memory {
    /// `len` zeroed bytes in base pages, page aligned (at least one page).
    pub(crate) fn new(len: usize) -> Result<Self, Error> {
        Self::with_options(len, &MemOptions::BASE)
    }

    /// `len` zeroed bytes placed as `options` says (the mapping may be longer: whole huge
    /// pages).
    pub(crate) fn with_options(len: usize, options: &MemOptions) -> Result<Self, Error> {
        let base = base_page();
        let in_base_pages = || Ok::<_, Error>((anon(len.max(1))?, 0, len.max(1)));
        // What was mapped (not what was asked for) decides the page size below.
        let (kind, (mut map, offset, mapped)) = match options.pages {
            Pages::Base => (Mapped::Base, in_base_pages()?),
            Pages::Huge => (Mapped::HugeTlb, hugetlb(len)?),
            Pages::PreferHuge => match hugetlb(len) {
                Err(Error::NoHugePages { .. }) => (Mapped::Base, in_base_pages()?),
                other => (Mapped::HugeTlb, other?),
            },
            Pages::Transparent => (Mapped::Transparent, transparent(len)?),
        };
        let ptr = NonNull::new(map.as_mut_ptr()).ok_or(Error::OutOfMemory)?;
        // SAFETY: `offset` is inside the mapping (`transparent` aligned within its slack).
        let ptr = unsafe { ptr.add(offset) };
        if let Some(node) = options.numa_node {
            bind(ptr.as_ptr(), mapped, node)?;
        }
        let page_size = match kind {
            Mapped::Base => base,
            // A hugetlbfs mapping is in huge pages or it failed; populate it now so a
            // shortage on the bound node shows here, not as a SIGBUS later.
            Mapped::HugeTlb => {
                populate(&map, offset, mapped)?;
                HUGE_PAGE
            }
            Mapped::Transparent => {
                populate(&map, offset, mapped)?;
                kernel_page_size(ptr.as_ptr() as usize, mapped).unwrap_or(base)
            }
        };
        Ok(Memory {
            ptr,
            len,
            page_size,
            _map: Some(map),
        })
    }

    /// The caller's memory; its page size is what the kernel backs it with
    /// (`/proc/self/smaps`), as the kernel's registration finds it.
    pub(crate) fn foreign(addr: *mut u8, len: usize) -> Result<Self, Error> {
        let ptr = NonNull::new(addr).ok_or(Error::InvalidArgument("null region address"))?;
        if (addr as usize).checked_add(len).is_none() {
            return Err(Error::InvalidArgument("region wraps the address space"));
        }
        Ok(Memory {
            ptr,
            len,
            page_size: kernel_page_size(addr as usize, len).unwrap_or_else(base_page),
            _map: None,
        })
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn non_null(&self) -> NonNull<u8> {
        self.ptr
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Size of the pages backing the memory.
    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    fn check(&self, offset: usize, len: usize) {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len),
            "range {offset}+{len} outside memory of {} bytes",
            self.len
        );
    }

    pub(crate) fn read(&self, offset: usize, buf: &mut [u8]) {
        self.check(offset, buf.len());
        // SAFETY: inside the memory (checked); `buf` is a distinct Rust slice.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr().add(offset), buf.as_mut_ptr(), buf.len())
        }
    }

    /// `len` bytes at `offset`, borrowed in place.
    ///
    /// # Safety
    /// Nothing writes the range while the slice lives (the contract of
    /// `MemoryRegion::bytes`).
    pub(crate) unsafe fn slice(&self, offset: usize, len: usize) -> &[u8] {
        self.check(offset, len);
        // SAFETY: inside the memory (checked), which stays mapped while `self` lives; the
        // caller promises that nothing writes the range while the slice lives.
        unsafe { core::slice::from_raw_parts(self.ptr().add(offset), len) }
    }

    pub(crate) fn read_volatile_u8(&self, offset: usize) -> u8 {
        self.check(offset, 1);
        // SAFETY: inside the memory (checked). Volatile: the device (or a peer's RDMA WRITE)
        // changes the byte behind the compiler's back, so a spin loop must reload it.
        unsafe { VolatilePtr::new_restricted(ReadOnly, self.non_null().add(offset)).read() }
    }

    pub(crate) fn write(&self, offset: usize, data: &[u8]) {
        self.check(offset, data.len());
        // SAFETY: inside the memory (checked); `data` is a distinct Rust slice.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr().add(offset), data.len()) }
    }
}

/// `len` rounded up to whole huge pages.
fn huge_len(len: usize) -> Result<usize, Error> {
    len.max(1)
        .checked_next_multiple_of(HUGE_PAGE)
        .ok_or(Error::OutOfMemory)
}

fn anon(len: usize) -> Result<MmapMut, Error> {
    MmapMut::map_anon(len).map_err(|_| Error::OutOfMemory)
}

/// A hugetlbfs mapping of whole 2 MiB pages: `(map, 0, mapped length)`. The kernel
/// reserves the pages at `mmap` (no `MAP_NORESERVE`), so a short pool fails here with
/// `ENOMEM`, which becomes [`Error::NoHugePages`] with the pool's numbers.
fn hugetlb(len: usize) -> Result<(MmapMut, usize, usize), Error> {
    let mapped = huge_len(len)?;
    match MmapOptions::new()
        .len(mapped)
        .huge(Some(HUGE_PAGE_BITS))
        .map_anon()
    {
        Ok(map) => Ok((map, 0, mapped)),
        Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => {
            let pool = HugePagePool::read();
            Err(Error::NoHugePages {
                needed: (mapped / HUGE_PAGE) as u64,
                free: pool.free,
                total: pool.total,
            })
        }
        Err(e) => Err(Error::Device {
            operation: "map huge pages",
            reason: e.to_string(),
        }),
    }
}

/// Anonymous memory for transparent huge pages: mapped one huge page longer so that a
/// 2 MiB-aligned range of whole huge pages fits, which is advised `MADV_HUGEPAGE`.
/// Returns `(map, offset of the aligned range, its length)`.
fn transparent(len: usize) -> Result<(MmapMut, usize, usize), Error> {
    if thp_mode().as_deref() == Some("never") {
        return Err(Error::TransparentHugePagesOff);
    }
    let mapped = huge_len(len)?;
    let map = anon(mapped.checked_add(HUGE_PAGE).ok_or(Error::OutOfMemory)?)?;
    let offset = (map.as_ptr() as usize).next_multiple_of(HUGE_PAGE) - map.as_ptr() as usize;
    map.advise_range(Advice::HugePage, offset, mapped)
        .map_err(|e| Error::Device {
            operation: "advise transparent huge pages",
            reason: e.to_string(),
        })?;
    Ok((map, offset, mapped))
}

/// Fault the range in now (`MADV_POPULATE_WRITE`), after any NUMA binding, so that the
/// pages come from the bound node and a shortage is an error here.
fn populate(map: &MmapMut, offset: usize, len: usize) -> Result<(), Error> {
    map.advise_range(Advice::PopulateWrite, offset, len)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENOMEM | libc::EFAULT) => Error::OutOfMemory,
            _ => Error::Device {
                operation: "populate memory",
                reason: e.to_string(),
            },
        })
}

/// The selected mode of `/sys/kernel/mm/transparent_hugepage/enabled` (`always`,
/// `madvise` or `never`), if the kernel has THP.
fn thp_mode() -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(text[start..end].to_string())
}

/// Runs the calling thread (and the threads it starts from now on) on the CPUs of NUMA node
/// `node`, as perftest's `--numa_node` does (perftest `set_process_affinity` /
/// `run_on_node`, through libnuma's `numa_run_on_node`): the node's CPUs are read from
/// `/sys/devices/system/node/node<N>/cpulist` and set with `sched_setaffinity`. Returns them.
///
/// A node missing from sysfs, one without CPUs (a memory-only node) or a refused
/// `sched_setaffinity` (CPUs outside the thread's cpuset) is [`Error::NumaNode`]. Memory is
/// not moved: place it with [`MemOptions::numa_node`].
pub fn run_on_node(node: u32) -> Result<Vec<usize>, Error> {
    let refused = |reason: String| Error::NumaNode { node, reason };
    let path = format!("/sys/devices/system/node/node{node}/cpulist");
    let list = std::fs::read_to_string(&path)
        .map_err(|_| refused("no such node in /sys/devices/system/node".into()))?;
    let cpus = parse_cpulist(&list).ok_or_else(|| refused(format!("unreadable {path}")))?;
    if cpus.is_empty() {
        return Err(refused("the node has no CPUs".into()));
    }
    // SAFETY: cpu_set_t is plain bits; zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    let capacity = 8 * core::mem::size_of::<libc::cpu_set_t>();
    for &cpu in &cpus {
        if cpu >= capacity {
            return Err(refused(format!(
                "CPU {cpu} is beyond the {capacity} of a cpu_set_t"
            )));
        }
        // SAFETY: `cpu` is inside the set (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; the set is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(refused(format!(
            "sched_setaffinity: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(cpus)
}

/// The CPUs of a sysfs CPU list (`0-3,8,10-11`, the kernel's `cpulist_parse` format, maybe
/// empty), or `None` if it does not parse.
fn parse_cpulist(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi): (usize, usize) = match part.split_once('-') {
            Some((lo, hi)) => (lo.parse().ok()?, hi.parse().ok()?),
            None => {
                let cpu = part.parse().ok()?;
                (cpu, cpu)
            }
        };
        if lo > hi {
            return None;
        }
        cpus.extend(lo..=hi);
    }
    Some(cpus)
}

/// Binds `[ptr, ptr + len)` to NUMA node `node` (`mbind(MPOL_BIND, MPOL_MF_STRICT |
/// MPOL_MF_MOVE)`), before its pages are touched.
fn bind(ptr: *mut u8, len: usize, node: u32) -> Result<(), Error> {
    const MPOL_BIND: libc::c_long = 2;
    const MPOL_MF_STRICT: libc::c_long = 1;
    const MPOL_MF_MOVE: libc::c_long = 2;
    if !std::path::Path::new(&format!("/sys/devices/system/node/node{node}")).exists() {
        return Err(Error::NumaNode {
            node,
            reason: "no such node in /sys/devices/system/node".into(),
        });
    }
    let mut mask = vec![0u64; node as usize / 64 + 1];
    mask[node as usize / 64] |= 1 << (node % 64);
    // The kernel reads `maxnode - 1` bits of the mask.
    let maxnode = (mask.len() * 64 + 1) as libc::c_ulong;
    // SAFETY: mbind reads `mask` (`maxnode - 1` bits, all inside the vector) and changes the
    // policy of the range, which is a mapping this module owns.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            ptr,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            maxnode,
            MPOL_MF_STRICT | MPOL_MF_MOVE,
        )
    };
    if rc != 0 {
        return Err(Error::NumaNode {
            node,
            reason: std::io::Error::last_os_error().to_string(),
        });
    }
    Ok(())
}

/// The page size the kernel backs `[addr, addr + len)` with, from the `/proc/self/smaps`
/// entry of the mapping holding it: `KernelPageSize` (2 MiB for hugetlbfs), or 2 MiB when
/// the range is 2 MiB aligned and the whole mapping is transparent huge pages
/// (`AnonHugePages` equal to its size). `None` when no one mapping holds the range.
fn kernel_page_size(addr: usize, len: usize) -> Option<usize> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let end = addr.checked_add(len)?;
    let mut lines = smaps.lines();
    let (lo, hi) = lines
        .by_ref()
        .filter_map(vma_range)
        .find(|&(lo, hi)| lo <= addr && end <= hi)?;
    let (mut kernel_kib, mut thp_kib) = (None, 0usize);
    for line in lines.take_while(|l| vma_range(l).is_none()) {
        let mut words = line.split_whitespace();
        match (words.next(), words.next().and_then(|v| v.parse().ok())) {
            (Some("KernelPageSize:"), Some(v)) => kernel_kib = Some(v),
            (Some("AnonHugePages:"), Some(v)) => thp_kib = v,
            _ => {}
        }
    }
    let whole_thp = thp_kib * 1024 == hi - lo && addr % HUGE_PAGE == 0;
    Some(if whole_thp {
        HUGE_PAGE
    } else {
        kernel_kib? * 1024
    })
}

/// The address range of an smaps mapping header (`lo-hi perms offset dev inode path`).
fn vma_range(line: &str) -> Option<(usize, usize)> {
    let (lo, hi) = line.split_whitespace().next()?.split_once('-')?;
    Some((
        usize::from_str_radix(lo, 16).ok()?,
        usize::from_str_radix(hi, 16).ok()?,
    ))
}

/// The hugetlbfs pool of the default huge page size (`/proc/meminfo`).
#[derive(Debug, Default)]
struct HugePagePool {
    total: u64,
    free: u64,
}

impl HugePagePool {
    fn read() -> Self {
        let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        HugePagePool {
            total: field("HugePages_Total:"),
            free: field("HugePages_Free:"),
        }
    }
}

/// The locked-memory limit registrations count against (`RLIMIT_MEMLOCK`, as the kernel's
/// `ib_umem_get` checks it), or `None` when nothing limits them: an unlimited limit, or
/// `CAP_IPC_LOCK` in the calling thread's effective set (`/proc/thread-self/status`:
/// capabilities are per thread, as the kernel's `capable` checks them).
#[cfg(any(feature = "sim", feature = "verbs"))]
pub(crate) fn memlock_limit() -> Option<u64> {
    const CAP_IPC_LOCK: u32 = 14;
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    let effective = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    if effective & (1 << CAP_IPC_LOCK) != 0 {
        return None;
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit, which `limit` is.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) } != 0 {
        return None;
    }
    (limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

#[cfg(feature = "verbs")]
/// Bytes this process has pinned (`VmPin` in `/proc/self/status`: the kernel's
/// `pinned_vm`, which registrations add to).
pub(crate) fn pinned_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmPin:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// The host memory regions of a context by local key: where the CPU may put received data
/// that the device wrote into a CQE instead (scatter to CQE, [`QpConfig::scatter_to_cqe`]),
/// as rdma-core's `mlx5_copy_to_recv_wqe` does, but only into memory the device itself
/// could have written: a live region of this context, registered with local write.
///
/// [`QpConfig::scatter_to_cqe`]: crate::QpConfig::scatter_to_cqe
#[derive(Debug, Default)]
pub(crate) struct MrTable {
    /// `(lkey, first byte, length)` of each live region with local write.
    regions: std::sync::Mutex<Vec<(u32, usize, usize)>>,
}

/// Why data carried in a CQE could not be put where the receive said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScatterFault {
    /// An entry is in no region of the context registered with local write under its key.
    NoRegion,
    /// The scatter list holds fewer bytes than the CQE carries (rdma-core's copy answers
    /// `IBV_WC_LOC_LEN_ERR`).
    TooShort,
}

impl MrTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u32, usize, usize)>> {
        self.regions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records region `lkey` (`len` bytes at `addr`), which the device may write.
    pub(crate) fn insert(&self, lkey: u32, addr: *mut u8, len: usize) {
        self.lock().push((lkey, addr as usize, len));
    }

    /// Forgets region `lkey`: called before its memory is released.
    pub(crate) fn remove(&self, lkey: u32) {
        self.lock().retain(|r| r.0 != lkey);
    }

    /// Copies `data` into the scatter list `sges` (entries in order, as the device fills
    /// them), every byte into a live region of its entry's key, or nothing at all.
    pub(crate) fn scatter(&self, data: &[u8], sges: &[Sge]) -> Result<(), ScatterFault> {
        let regions = self.lock();
        let mut plan = [(0usize, 0usize); MAX_RECV_SGE];
        let (mut n, mut done) = (0, 0);
        for sge in sges {
            if done == data.len() {
                break;
            }
            let len = (sge.len as usize).min(data.len() - done);
            let addr = usize::try_from(sge.addr).map_err(|_| ScatterFault::NoRegion)?;
            let inside = regions.iter().any(|&(key, start, size)| {
                key == sge.lkey
                    && addr >= start
                    && addr.checked_add(len).is_some_and(|end| end <= start + size)
            });
            if !inside {
                return Err(ScatterFault::NoRegion);
            }
            plan[n] = (addr, len);
            n += 1;
            done += len;
        }
        if done < data.len() {
            return Err(ScatterFault::TooShort);
        }
        let mut at = 0;
        for &(addr, len) in &plan[..n] {
            // SAFETY: `addr..addr + len` is in a live registered region (checked above under
            // the lock its release waits for) that nothing references; `data` is a CQE copy.
            unsafe { core::ptr::copy_nonoverlapping(data[at..].as_ptr(), addr as *mut u8, len) };
            at += len;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_parse_as_the_kernel_prints_them() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpulist("5"), Some(vec![5]));
        assert_eq!(parse_cpulist("\n"), Some(vec![]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("a"), None);
    }

    #[test]
    fn scatter_fills_the_list_in_order_within_live_regions_only() {
        let mut buf = [0u8; 64];
        let base = buf.as_mut_ptr();
        let table = MrTable::default();
        table.insert(7, base, 48);
        let sge = |off: usize, len: u32, lkey: u32| Sge {
            addr: base as u64 + off as u64,
            len,
            lkey,
        };
        let data: Vec<u8> = (1..=20).collect();
        // 8 bytes at 0, the other 12 at 32 (a second entry longer than what is left).
        table
            .scatter(&data, &[sge(0, 8, 7), sge(32, 16, 7)])
            .unwrap();
        assert_eq!(buf[..8], data[..8]);
        assert_eq!(buf[8..32], [0; 24]);
        assert_eq!(buf[32..44], data[8..]);
        assert_eq!(buf[44..], [0; 20]);
        let before = buf;
        // An entry reaching past the region, under another key, or too short a list: no byte
        // is written.
        assert_eq!(
            table.scatter(&data, &[sge(40, 20, 7)]),
            Err(ScatterFault::NoRegion)
        );
        assert_eq!(
            table.scatter(&data, &[sge(0, 8, 7), sge(8, 20, 8)]),
            Err(ScatterFault::NoRegion)
        );
        assert_eq!(
            table.scatter(&data, &[sge(0, 19, 7)]),
            Err(ScatterFault::TooShort)
        );
        table.remove(7);
        assert_eq!(
            table.scatter(&data, &[sge(0, 20, 7)]),
            Err(ScatterFault::NoRegion)
        );
        assert_eq!(buf, before);
    }
}
