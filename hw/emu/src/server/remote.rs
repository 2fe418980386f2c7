//! The programs' memory, as the model's DMA reaches it: each device context's objects are
//! named in an address space of its own (`mlx5_hw::in_space`), and an access to that space
//! is `process_vm_readv` / `process_vm_writev` on the program's pid.
//!
//! The kernel would pin the pages at registration (`ib_umem_get`); here the program's
//! mappings are read and written as they are whenever the model touches them. A range the
//! program has unmapped reads as zeros and takes no writes, and the failure is counted
//! ([`Spaces::faults`]): on hardware that DMA would hit the pinned pages of a freed buffer.

use mlx5_hw::RemoteMemory;
use std::io::IoSliceMut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// The program an address space belongs to.
#[derive(Debug)]
struct Program {
    pid: libc::pid_t,
    /// Readable once the program has exited (`pidfd_open`, Linux 5.3).
    pidfd: Option<std::os::fd::OwnedFd>,
    /// Reported by [`Spaces::gone`].
    gone: bool,
}

/// The address spaces in use: space `s` is the program at `programs[s]`.
#[derive(Debug, Default)]
pub struct Spaces {
    programs: RwLock<Vec<Option<Program>>>,
    faults: AtomicU64,
}

impl Spaces {
    /// A new space for the program `pid` (never 0, this process's, nor 0xffff).
    pub fn add(&self, pid: libc::pid_t) -> u16 {
        let pidfd = rustix::process::Pid::from_raw(pid).and_then(|p| {
            rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()
        });
        let mut programs = self.programs.write().unwrap_or_else(|e| e.into_inner());
        if programs.is_empty() {
            programs.push(None);
        }
        let space = match programs.iter().skip(1).position(Option::is_none) {
            Some(free) => free + 1,
            None => {
                programs.push(None);
                programs.len() - 1
            }
        };
        assert!(space < 0xffff, "address spaces exhausted");
        programs[space] = Some(Program {
            pid,
            pidfd,
            gone: false,
        });
        space as u16
    }

    /// The spaces whose program has exited since the last call (each reported once): on a
    /// NIC its queues would be gone with it (the kernel destroys them before the memory
    /// they pin is released), here the connection closes only after the memory is gone.
    pub fn gone(&self) -> Vec<u16> {
        use rustix::event::{poll, PollFd, PollFlags};
        let mut programs = self.programs.write().unwrap_or_else(|e| e.into_inner());
        let live: Vec<usize> = (0..programs.len())
            .filter(|&s| matches!(&programs[s], Some(p) if !p.gone && p.pidfd.is_some()))
            .collect();
        if live.is_empty() {
            return Vec::new();
        }
        let mut fds: Vec<PollFd<'_>> = live
            .iter()
            .map(|&s| {
                let p = programs[s]
                    .as_ref()
                    .and_then(|p| p.pidfd.as_ref())
                    .expect("live");
                PollFd::new(p, PollFlags::IN)
            })
            .collect();
        if poll(&mut fds, Some(&rustix::time::Timespec::default())).unwrap_or(0) == 0 {
            return Vec::new();
        }
        let exited: Vec<usize> = live
            .iter()
            .zip(&fds)
            .filter(|(_, fd)| !fd.revents().is_empty())
            .map(|(&s, _)| s)
            .collect();
        drop(fds);
        for &s in &exited {
            if let Some(p) = programs[s].as_mut() {
                p.gone = true;
            }
        }
        exited.into_iter().map(|s| s as u16).collect()
    }

    /// The space is free again (its objects are gone).
    pub fn remove(&self, space: u16) {
        let mut programs = self.programs.write().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = programs.get_mut(usize::from(space)) {
            *slot = None;
        }
    }

    /// Accesses that found no memory (the program had unmapped it, or had gone).
    pub fn faults(&self) -> u64 {
        self.faults.load(Ordering::Relaxed)
    }

    /// The pid of the program of `space`, while it is there.
    pub(crate) fn pid(&self, space: u16) -> Option<libc::pid_t> {
        let programs = self.programs.read().unwrap_or_else(|e| e.into_inner());
        programs.get(usize::from(space))?.as_ref().map(|p| p.pid)
    }

    fn fault(&self) {
        self.faults.fetch_add(1, Ordering::Relaxed);
    }

    /// Copy `src` to `addr` of `space` (`copy_to_user`): whether all of it landed.
    pub fn copy_out(&self, space: u16, addr: u64, src: &[u8]) -> bool {
        let done = match self.pid(space) {
            Some(pid) => transfer(addr, src.len(), |local, remote| {
                let part = &src[local];
                let iov = libc::iovec {
                    iov_base: part.as_ptr() as *mut libc::c_void,
                    iov_len: part.len(),
                };
                // SAFETY: the local iovec is `src`'s subrange, only read; the remote one is
                // checked by the kernel against the target's mappings.
                unsafe { libc::process_vm_writev(pid, &iov, 1, &remote, 1, 0) }
            }),
            None => 0,
        };
        done == src.len()
    }
}

impl Spaces {
    /// Copy `dst.len()` bytes at `addr` of `space` into `dst` (`copy_from_user`): whether
    /// all of it was there.
    pub fn copy_in(&self, space: u16, addr: u64, dst: &mut [u8]) -> bool {
        self.read_some(space, addr, dst) == dst.len()
    }

    /// Read what is there of `dst.len()` bytes at `addr` of `space`; returns how many.
    fn read_some(&self, space: u16, addr: u64, dst: &mut [u8]) -> usize {
        match self.pid(space) {
            Some(pid) => transfer(addr, dst.len(), |local, remote| {
                let mut iov = [IoSliceMut::new(&mut dst[local])];
                // SAFETY: the local iovec is `dst`'s subrange; the remote one is only read
                // by the kernel, which checks it against the target's mappings.
                unsafe { libc::process_vm_readv(pid, iov.as_mut_ptr().cast(), 1, &remote, 1, 0) }
            }),
            None => 0,
        }
    }
}

impl RemoteMemory for Spaces {
    fn read(&self, space: u16, addr: u64, dst: &mut [u8]) {
        let done = self.read_some(space, addr, dst);
        if done < dst.len() {
            dst[done..].fill(0);
            self.fault();
        }
    }

    fn write(&self, space: u16, addr: u64, src: &[u8]) {
        if !self.copy_out(space, addr, src) {
            self.fault();
        }
    }

    fn mapped(&self, space: u16, addr: u64, len: u64) -> bool {
        let Some(pid) = self.pid(space) else {
            return false;
        };
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return false;
        };
        covered(&maps, addr, addr.saturating_add(len))
    }
}

/// Move `len` bytes with `op(local range, remote iovec)` (one `process_vm_*` call), again
/// for what a partial transfer left; returns how many bytes moved.
fn transfer(
    addr: u64,
    len: usize,
    mut op: impl FnMut(std::ops::Range<usize>, libc::iovec) -> isize,
) -> usize {
    let mut done = 0;
    while done < len {
        let remote = libc::iovec {
            iov_base: (addr + done as u64) as *mut libc::c_void,
            iov_len: len - done,
        };
        match op(done..len, remote) {
            n if n > 0 => done += n as usize,
            _ => break,
        }
    }
    done
}

/// Whether the mappings listed in `maps` (`/proc/PID/maps`) cover `[start, end)`.
fn covered(maps: &str, start: u64, end: u64) -> bool {
    let mut at = start;
    let mut ranges: Vec<(u64, u64)> = maps
        .lines()
        .filter_map(|line| {
            let (lo, hi) = line.split_whitespace().next()?.split_once('-')?;
            Some((
                u64::from_str_radix(lo, 16).ok()?,
                u64::from_str_radix(hi, 16).ok()?,
            ))
        })
        .collect();
    ranges.sort_unstable();
    for (lo, hi) in ranges {
        if lo <= at && at < hi {
            at = hi;
        }
        if at >= end {
            return true;
        }
    }
    at >= end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_process_is_read_and_written_by_its_space() {
        // This process stands in for a program: its own pid is as good as another's.
        let spaces = Spaces::default();
        let space = spaces.add(std::process::id() as libc::pid_t);
        assert_eq!(space, 1);
        let mut target = vec![7u8; 64];
        let addr = target.as_mut_ptr() as u64;
        spaces.write(space, addr + 8, b"written");
        let mut back = [0u8; 9];
        spaces.read(space, addr + 7, &mut back);
        assert_eq!(&back, b"\x07written\x07");
        assert!(spaces.mapped(space, addr, 64));
        assert_eq!(spaces.faults(), 0);
        drop(target);
    }

    #[test]
    fn memory_that_is_not_there_reads_as_zeros_and_counts() {
        let spaces = Spaces::default();
        let space = spaces.add(std::process::id() as libc::pid_t);
        let mut back = [9u8; 8];
        spaces.read(space, 8, &mut back);
        assert_eq!(back, [0; 8]);
        spaces.write(space, 8, b"x");
        assert!(!spaces.mapped(space, 8, 1));
        assert_eq!(spaces.faults(), 2);
        spaces.remove(space);
        spaces.read(space, 8, &mut back);
        assert_eq!(spaces.faults(), 3);
        assert_eq!(spaces.add(1), 1, "a freed space is used again");
    }

    #[test]
    fn coverage_follows_adjacent_mappings() {
        let maps = "1000-2000 rw-p 0 0:0 0\n2000-3000 r--p 0 0:0 0\n5000-6000 rw-p 0 0:0 0\n";
        assert!(covered(maps, 0x1800, 0x2800));
        assert!(!covered(maps, 0x2800, 0x5800));
        assert!(covered(maps, 0x5000, 0x6000));
        assert!(!covered(maps, 0x500, 0x1800));
    }
}
