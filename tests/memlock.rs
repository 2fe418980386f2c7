//! The locked-memory limit, for real: this test binary drops `CAP_IPC_LOCK` (which root
//! has) and lowers `RLIMIT_MEMLOCK`, then registers past it. One test, because both
//! changes are process-wide.

use mlx5_direct::{Access, Context, Error};

/// Drops `CAP_IPC_LOCK` from the effective set (`capset`, capability version 3).
fn drop_ipc_lock() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_IPC_LOCK: u32 = 14;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget reads the header and writes two data structs, which `data` holds.
    assert_eq!(
        unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) },
        0
    );
    data[0].effective &= !(1 << CAP_IPC_LOCK);
    // SAFETY: capset reads the header and two data structs.
    assert_eq!(
        unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) },
        0
    );
}

#[test]
fn registrations_past_the_memlock_limit_name_ulimit() {
    drop_ipc_lock();
    let limit = 256 << 10;
    let mut rlimit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rlimit) },
        0
    );
    rlimit.rlim_cur = limit;
    // SAFETY: setrlimit reads one rlimit (the soft limit lowered, the hard one kept).
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rlimit) }, 0);
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    // 192 KiB pinned fit; 100 more bytes pin one more page, 64 KiB more do not.
    let held = pd.alloc_mr(192 << 10, Access::ALL).unwrap();
    let more = pd.alloc_mr(100, Access::ALL).unwrap();
    let err = pd.alloc_mr(64 << 10, Access::ALL).unwrap_err();
    assert_eq!(
        err,
        Error::MemlockTooLow {
            needed: (192 << 10) + 4096 + (64 << 10),
            limit
        }
    );
    let text = err.to_string();
    assert!(text.contains("ulimit -l 260"), "{text}");
    // On demand nothing is pinned: a region four times the limit registers.
    let odp = Access(Access::ALL.0 | Access::ON_DEMAND.0);
    pd.alloc_mr(4 * limit as usize, odp).unwrap();
    // Deregistering unpins: the same registration now fits.
    drop(more);
    drop(held);
    pd.alloc_mr(64 << 10, Access::ALL).unwrap();
}
