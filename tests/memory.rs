//! Where memory lives (issue 17): base, hugetlbfs, transparent and "prefer" pages, NUMA
//! binding, the errors that name their fix, and what the model's translation cache makes
//! of each page size.

mod common;
use common::{poll_n, rig_pair, Side};
use mlx5_direct::backend::sim::{Fabric, NicConfig, PcieConfig, Sim, TranslationCache};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Data, DoorbellMode, Error, MemOptions, Pages,
    ProtectionDomain, QpConfig, SendFlags, SendOp, HUGE_PAGE,
};

/// The hugetlbfs pool as `/proc/meminfo` reports it: (total, free).
fn pool() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().parse().unwrap())
            .unwrap()
    };
    (field("HugePages_Total:"), field("HugePages_Free:"))
}

fn pages(pages: Pages) -> MemOptions {
    MemOptions {
        pages,
        numa_node: None,
    }
}

fn thp_mode() -> String {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap();
    let start = text.find('[').unwrap() + 1;
    text[start..start + text[start..].find(']').unwrap()].to_string()
}

#[test]
fn base_pages_are_4k_and_zeroed() {
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd
        .alloc_mr_with(10_000, Access::ALL, &pages(Pages::Base))
        .unwrap();
    assert_eq!(mr.page_size(), 4096);
    assert_eq!(mr.len(), 10_000);
    assert_eq!(mr.addr() % 4096, 0);
    let mut buf = [0xffu8; 16];
    mr.read(9_984, &mut buf);
    assert_eq!(buf, [0; 16]);
    assert_eq!(pd.alloc_mr(4096, Access::ALL).unwrap().page_size(), 4096);
}

/// Asking for one page more than the pool has free fails, whatever is reserved, with the
/// pool's numbers and the sysctl that fixes it; nothing falls back to 4 KiB pages.
#[test]
fn huge_pages_beyond_the_pool_are_refused_with_the_sysctl_named() {
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    let (total, free) = pool();
    let len = (free as usize + 1) * HUGE_PAGE;
    let err = pd
        .alloc_mr_with(len, Access::ALL, &pages(Pages::Huge))
        .unwrap_err();
    let (_, free_now) = pool();
    assert_eq!(
        err,
        Error::NoHugePages {
            needed: free + 1,
            free: free_now,
            total
        }
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "sysctl vm.nr_hugepages={}",
            total + free + 1 - free_now
        )),
        "{text}"
    );
}

/// "prefer" takes huge pages when the pool has them and base pages otherwise, and says which.
#[test]
fn prefer_huge_falls_back_explicitly() {
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    let (_, free) = pool();
    let mr = pd
        .alloc_mr_with(4096, Access::ALL, &pages(Pages::PreferHuge))
        .unwrap();
    let want = if free > 0 { HUGE_PAGE } else { 4096 };
    assert_eq!(mr.page_size(), want, "{free} huge pages free");
    mr.write(4000, b"prefer");
    let mut back = [0u8; 6];
    mr.read(4000, &mut back);
    assert_eq!(&back, b"prefer");
}

/// The fallback reports the pages the kernel gave, whatever the length: a whole number of
/// huge pages in base pages is in base pages (`KernelPageSize` in /proc/self/smaps), and
/// huge pages say 2 MiB. Lengths of one and two huge pages, and a part of one.
#[test]
fn prefer_huge_reports_the_pages_the_kernel_gave() {
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    for len in [HUGE_PAGE, 2 * HUGE_PAGE, 100 << 10] {
        let mr = pd
            .alloc_mr_with(len, Access::ALL, &pages(Pages::PreferHuge))
            .unwrap();
        assert_eq!(
            mr.page_size(),
            smaps_page_size(mr.addr()),
            "{len} bytes at {:#x}",
            mr.addr()
        );
    }
}

/// `KernelPageSize` of the mapping holding `addr`, from /proc/self/smaps.
fn smaps_page_size(addr: u64) -> usize {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        let range = line
            .split_whitespace()
            .next()
            .and_then(|r| r.split_once('-'));
        if let Some((lo, hi)) = range.filter(|_| !line.ends_with(':') && line.contains('-')) {
            if let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) {
                inside = (lo..hi).contains(&addr);
                continue;
            }
        }
        if let Some(kib) = line.strip_prefix("KernelPageSize:").filter(|_| inside) {
            return kib
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .unwrap()
                << 10;
        }
    }
    panic!("no mapping holds {addr:#x}");
}

#[test]
#[ignore = "needs 2 free 2 MiB hugepages: sysctl vm.nr_hugepages=2 (as root)"]
fn huge_pages_back_a_region_in_2m_pages() {
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd
        .alloc_mr_with(HUGE_PAGE + 1, Access::ALL, &pages(Pages::Huge))
        .unwrap();
    assert_eq!(mr.page_size(), HUGE_PAGE);
    assert_eq!(mr.addr() % HUGE_PAGE as u64, 0);
    mr.write(HUGE_PAGE, b"x");
}

/// Transparent huge pages: the region starts on a 2 MiB boundary, and with THP on
/// (`madvise` or `always`) the populated range is huge pages, which the region reports.
#[test]
fn transparent_huge_pages_are_aligned_and_reported() {
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    let result = pd.alloc_mr_with(3 * HUGE_PAGE, Access::ALL, &pages(Pages::Transparent));
    if thp_mode() == "never" {
        assert_eq!(result.unwrap_err(), Error::TransparentHugePagesOff);
        return;
    }
    let mr = result.unwrap();
    assert_eq!(mr.addr() % HUGE_PAGE as u64, 0);
    assert_eq!(mr.page_size(), HUGE_PAGE);
}

#[test]
fn numa_binding_places_pages_on_the_node_and_refuses_missing_nodes() {
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    let options = MemOptions {
        pages: Pages::Base,
        numa_node: Some(0),
    };
    let mr = pd.alloc_mr_with(8192, Access::ALL, &options).unwrap();
    mr.write(0, b"here");
    let mut node: libc::c_int = -1;
    const MPOL_F_NODE: libc::c_ulong = 1;
    const MPOL_F_ADDR: libc::c_ulong = 2;
    // SAFETY: get_mempolicy writes one int (`node`); with no mask it reads nothing else.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node,
            core::ptr::null_mut::<libc::c_ulong>(),
            0 as libc::c_ulong,
            mr.addr() as *mut libc::c_void,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    assert_eq!((rc, node), (0, 0));
    let missing = MemOptions {
        numa_node: Some(4000),
        ..options
    };
    let err = pd.alloc_mr_with(8192, Access::ALL, &missing).unwrap_err();
    assert!(matches!(err, Error::NumaNode { node: 4000, .. }), "{err:?}");
}

/// A loopback QP on a model NIC whose rings and doorbell records live as `ring_memory`
/// says, WRITEing `payload`: the completion and the bytes show the queues work there.
fn write_through_rings(ring_memory: MemOptions, payload: &[u8]) {
    let ctx = Context::new(Sim::new().with_ring_memory(ring_memory));
    let pd = ctx.alloc_pd().unwrap();
    write_from(&ctx, &pd, &pd, payload);
}

/// A loopback QP created on `qp_pd` WRITEing `payload` into a region of `pd`.
fn write_from(
    ctx: &Context<Sim>,
    qp_pd: &ProtectionDomain<Sim>,
    pd: &ProtectionDomain<Sim>,
    payload: &[u8],
) {
    let mut cq = ctx.create_cq(16, 64).unwrap();
    let mut qp = qp_pd.create_qp(&cq, &cq, &QpConfig::default()).unwrap();
    let target = pd.alloc_mr(64, Access::ALL).unwrap();
    let ep = qp.endpoint().unwrap();
    qp.connect(&ep, &ConnectOptions::default()).unwrap();
    qp.sq()
        .post(
            1,
            SendOp::Write(target.remote(0)),
            Data::Inline(payload),
            SendFlags::SIGNALED,
        )
        .unwrap();
    let mut done = [Completion::default(); 1];
    assert_eq!(cq.poll(&mut done), 1);
    assert!(done[0].status.is_ok());
    let mut back = vec![0u8; payload.len()];
    target.read(0, &mut back);
    assert_eq!(back, payload);
}

/// A parent domain (`ProtectionDomain::alloc_parent_domain`) places the rings of the
/// queues created on it, and only theirs: on a node that does not exist a QP or an SRQ on
/// the domain is refused with the typed error while the same creations on its PD succeed;
/// on node 0 a QP on the domain WRITEs into a region of the PD (one protection domain).
#[test]
fn a_parent_domain_places_the_rings_of_its_own_queues() {
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 64).unwrap();
    let node = |n| MemOptions {
        pages: Pages::Base,
        numa_node: Some(n),
    };
    let missing = pd.alloc_parent_domain(&node(4000)).unwrap();
    let qp = missing.create_qp(&cq, &cq, &QpConfig::default());
    assert!(
        matches!(qp.map(|_| ()), Err(Error::NumaNode { node: 4000, .. })),
        "QP"
    );
    let srq = missing.create_srq(4, 1);
    assert!(
        matches!(srq.map(|_| ()), Err(Error::NumaNode { node: 4000, .. })),
        "SRQ"
    );
    pd.create_qp(&cq, &cq, &QpConfig::default()).unwrap();
    pd.create_srq(4, 1).unwrap();
    let domain = pd.alloc_parent_domain(&node(0)).unwrap();
    write_from(&ctx, &domain, &pd, b"domain");
}

/// Rings and doorbell records on the memory chosen for them, and a QP working on them.
#[test]
fn rings_take_the_chosen_memory() {
    write_through_rings(pages(Pages::Transparent), b"ring");
}

/// Two model NICs with a translation cache; a WRITE of `len` bytes from a region on
/// transparent huge pages to one on 4 KiB pages costs each side one translation per page it
/// touches.
#[test]
fn the_model_translates_in_the_registered_page_size() {
    let cfg = NicConfig {
        pcie: PcieConfig {
            translation_cache: Some(TranslationCache::new(1024)),
            ..PcieConfig::default()
        },
        ..NicConfig::default()
    };
    let (mut a, b) = rig_pair(&(Fabric::new(), cfg));
    let len = 256 << 10;
    let transparent = pages(Pages::Transparent);
    let src = a.pd.alloc_mr_with(len, Access::ALL, &transparent).unwrap();
    let dst = b.pd.alloc_mr(len, Access::ALL).unwrap();
    let before = (a.ctx.backend().nic().stats(), b.ctx.backend().nic().stats());
    a.qp.sq()
        .post(
            1,
            SendOp::Write(dst.remote(0)),
            Data::Sges(&[src.sge(0, len as u32)]),
            SendFlags::SIGNALED,
        )
        .unwrap();
    assert!(poll_n(&mut a, 1)[0].status.is_ok());
    let misses = |s: &Side, before: u64| s.ctx.backend().nic().stats().translation_misses - before;
    // The source in its page size (one 2 MiB page when the kernel granted THP, which
    // `transparent_huge_pages_are_aligned_and_reported` pins; 64 pages of 4 KiB under memory
    // pressure), the destination in 64 pages of 4 KiB.
    let src_pages = (len / src.page_size()).max(1) as u64;
    assert_eq!(misses(&a, before.0.translation_misses), src_pages);
    assert_eq!(misses(&b, before.1.translation_misses), 64);
}

/// The CPUs a thread may run on (`sched_getaffinity`).
fn affinity() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain bits; zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the set is a valid cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(rc, 0);
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is inside the set.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// `--numa_node`'s CPU half: the thread runs on node 0's CPUs (its sysfs cpulist) from then
/// on, and so do the threads it starts; a node that does not exist is refused by name.
#[test]
fn run_on_node_binds_the_thread_and_its_children() {
    std::thread::spawn(|| {
        let list = std::fs::read_to_string("/sys/devices/system/node/node0/cpulist").unwrap();
        let (first, last) = list
            .trim()
            .split(',')
            .next()
            .unwrap()
            .split_once('-')
            .unwrap_or((list.trim(), list.trim()));
        let cpus = mlx5_direct::run_on_node(0).unwrap();
        assert_eq!(cpus.first(), Some(&first.parse().unwrap()));
        assert!(cpus.contains(&last.parse().unwrap()));
        assert_eq!(affinity(), cpus);
        assert_eq!(std::thread::spawn(affinity).join().unwrap(), cpus);
        let err = mlx5_direct::run_on_node(4000).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot bind to NUMA node 4000: no such node in /sys/devices/system/node"
        );
        assert_eq!(affinity(), cpus);
    })
    .join()
    .unwrap();
}

/// The model's rings on hugetlbfs pages: each CQ, QP and SRQ buffer and each doorbell record
/// takes a whole 2 MiB page (`Sim::with_ring_memory`; here four: the CQ's buffer and record,
/// the QP's buffer and record), and the queues work on them.
#[test]
#[ignore = "needs 8 free 2 MiB hugepages: sysctl vm.nr_hugepages=8 (as root)"]
fn rings_on_huge_pages_work_on_the_model() {
    write_through_rings(pages(Pages::Huge), b"huge");
}

/// Ring translations (`TranslationCache::rings`): 128 signaled 8-byte inline WRITEs, one
/// per doorbell, from a QP whose rings are on 4 KiB pages cost the requester one
/// translation per ring page the NIC touches: 2 pages of WQEs fetched (128 BBs) and 2 of
/// CQEs written (128 × 64 B). On 2 MiB pages the send ring and the CQ need one each. With
/// BlueFlame the NIC fetches no WQE, so only the CQ's pages count. The responder translates
/// the one page of its region the WRITEs land in, and no ring (a WRITE consumes no receive
/// and writes no CQE). Doorbell records need none (their bus address is in the context).
#[test]
fn rings_need_one_translation_per_page_the_nic_touches() {
    let cfg = NicConfig {
        pcie: PcieConfig {
            translation_cache: Some(TranslationCache::new(1024).with_rings()),
            ..PcieConfig::default()
        },
        ..NicConfig::default()
    };
    for (mode, ring_page, want) in [
        (DoorbellMode::Doorbell, 4096, 4),
        (DoorbellMode::Doorbell, HUGE_PAGE, 2),
        (DoorbellMode::BlueFlame, 4096, 2),
    ] {
        let fabric = Fabric::new();
        let side = || {
            // 2 MiB rings on 2 MiB-aligned memory, so each ring lies in one such page.
            let memory = if ring_page == HUGE_PAGE {
                Pages::Transparent
            } else {
                Pages::Base
            };
            let sim = Sim::on_fabric(&fabric, cfg.clone())
                .with_ring_memory(pages(memory))
                .with_ring_page_size(ring_page);
            common::side_on(Context::new(sim), &QpConfig::default(), 256, 64)
        };
        let (mut a, mut b) = (side(), side());
        common::connect(&mut a, &mut b);
        a.qp.sq().set_mode(mode);
        let misses = |s: &Side| s.ctx.backend().nic().stats().translation_misses;
        let before = (misses(&a), misses(&b));
        for i in 0..128u64 {
            a.qp.sq()
                .post(
                    i,
                    SendOp::Write(b.mr.remote(0)),
                    Data::Inline(&i.to_le_bytes()),
                    SendFlags::SIGNALED,
                )
                .unwrap();
            assert!(poll_n(&mut a, 1)[0].status.is_ok());
        }
        let label = format!("{mode:?}, rings in {ring_page}-byte pages");
        assert_eq!(misses(&a) - before.0, want, "{label}");
        assert_eq!(misses(&b) - before.1, 1, "{label}");
    }
}
