//! The lookup against a fake `verbs_context` built as libibverbs builds one (device.c
//! `verbs_init_context`: `abi_compat` = `__VERBS_ABI_IS_EXTENDED`, `sz` = the provider's
//! struct size), whose ops record their calls.

use core::ffi::{c_int, c_uint, c_void};
use std::cell::RefCell;

use rdma_sys::ib_uverbs_advise_mr_advice::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
use rdma_sys::{
    ibv_alloc_dm_attr, ibv_context, ibv_device_attr_ex, ibv_dm, ibv_mr,
    ibv_parent_domain_init_attr, ibv_pd, ibv_port_attr, ibv_qp, ibv_qp_rate_limit_attr,
    ibv_query_device_ex_input, ibv_sge, ibv_srq, ibv_srq_init_attr_ex, ibv_xrcd,
    ibv_xrcd_init_attr, verbs_context,
};

use super::*;

thread_local! {
    /// What the fake ops were called with, in order (each test runs on its own thread).
    static CALLS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn record(call: String) {
    CALLS.with(|c| c.borrow_mut().push(call));
}

fn take_calls() -> Vec<String> {
    CALLS.with(|c| c.take())
}

/// What the fake allocation ops hand back: recognisable addresses, never dereferenced.
const DM: usize = 0xd000;
const MR: usize = 0xe000;
const PD: usize = 0xf000;
const XRCD: usize = 0xa000;
const SRQ: usize = 0xb000;

unsafe extern "C" fn fake_query_device_ex(
    _: *mut ibv_context,
    input: *const ibv_query_device_ex_input,
    attr: *mut ibv_device_attr_ex,
    size: usize,
) -> c_int {
    record(format!(
        "query_device_ex(input null {}, size {size})",
        input.is_null()
    ));
    // SAFETY: the wrapper passes a valid out-struct.
    unsafe { (*attr).hca_core_clock = 156_250 };
    0
}

unsafe extern "C" fn fake_query_port(
    _: *mut ibv_context,
    port: u8,
    attr: *mut ibv_port_attr,
    len: usize,
) -> c_int {
    record(format!("query_port({port}, len {len})"));
    // SAFETY: the wrapper passes a valid out-struct.
    unsafe { (*attr).active_mtu = rdma_sys::ibv_mtu::IBV_MTU_1024 };
    0
}

unsafe extern "C" fn fake_alloc_dm(
    _: *mut ibv_context,
    attr: *mut ibv_alloc_dm_attr,
) -> *mut ibv_dm {
    // SAFETY: the wrapper passes a valid attribute struct.
    record(format!("alloc_dm(length {})", unsafe { (*attr).length }));
    DM as *mut ibv_dm
}

unsafe extern "C" fn fake_free_dm(_: *mut ibv_dm) -> c_int {
    record("free_dm()".into());
    0
}

unsafe extern "C" fn fake_reg_dm_mr(
    _: *mut ibv_pd,
    _: *mut ibv_dm,
    offset: u64,
    len: usize,
    access: c_uint,
) -> *mut ibv_mr {
    record(format!(
        "reg_dm_mr(offset {offset}, len {len}, access {access:#x})"
    ));
    MR as *mut ibv_mr
}

unsafe extern "C" fn fake_advise_mr(
    _: *mut ibv_pd,
    advice: ib_uverbs_advise_mr_advice::Type,
    flags: u32,
    sges: *mut ibv_sge,
    count: u32,
) -> c_int {
    // SAFETY: the wrapper passes `count` entries.
    let lkey = unsafe { (*sges).lkey };
    record(format!(
        "advise_mr(advice {advice}, flags {flags}, {count} sge, lkey {lkey:#x})"
    ));
    0
}

unsafe extern "C" fn fake_alloc_parent_domain(
    _: *mut ibv_context,
    attr: *mut ibv_parent_domain_init_attr,
) -> *mut ibv_pd {
    // SAFETY: the wrapper passes a valid attribute struct.
    record(format!("alloc_parent_domain(comp_mask {})", unsafe {
        (*attr).comp_mask
    }));
    PD as *mut ibv_pd
}

unsafe extern "C" fn fake_modify_qp_rate_limit(
    _: *mut ibv_qp,
    attr: *mut ibv_qp_rate_limit_attr,
) -> c_int {
    // SAFETY: the wrapper passes a valid attribute struct.
    let a = unsafe { &*attr };
    record(format!(
        "modify_qp_rate_limit(rate {}, burst {}, typical {})",
        a.rate_limit, a.max_burst_sz, a.typical_pkt_sz
    ));
    0
}

unsafe extern "C" fn fake_open_xrcd(
    _: *mut ibv_context,
    attr: *mut ibv_xrcd_init_attr,
) -> *mut ibv_xrcd {
    // SAFETY: the wrapper passes a valid attribute struct.
    let a = unsafe { &*attr };
    record(format!(
        "open_xrcd(comp_mask {}, fd {}, oflags {:#o})",
        a.comp_mask, a.fd, a.oflags
    ));
    XRCD as *mut ibv_xrcd
}

unsafe extern "C" fn fake_close_xrcd(_: *mut ibv_xrcd) -> c_int {
    record("close_xrcd()".into());
    0
}

unsafe extern "C" fn fake_create_srq_ex(
    _: *mut ibv_context,
    attr: *mut ibv_srq_init_attr_ex,
) -> *mut ibv_srq {
    // SAFETY: the wrapper passes a valid attribute struct.
    let a = unsafe { &*attr };
    record(format!(
        "create_srq_ex(comp_mask {:#x}, type {}, max_wr {})",
        a.comp_mask, a.srq_type, a.attr.max_wr
    ));
    SRQ as *mut ibv_srq
}

/// A provider's `verbs_context` with every op the crate calls, and a PD and an allocation
/// and a QP of it (their `context` points into the box, which does not move).
struct Fake {
    vctx: Box<verbs_context>,
    pd: ibv_pd,
    dm: ibv_dm,
    qp: ibv_qp,
    xrcd: ibv_xrcd,
}

impl Fake {
    fn new(abi_compat: usize, sz: usize) -> Fake {
        // SAFETY: plain C data; all-zero is valid (every op `None`).
        let mut vctx: Box<verbs_context> = Box::new(unsafe { core::mem::zeroed() });
        vctx.sz = sz;
        vctx.context.abi_compat = abi_compat as *mut c_void;
        vctx.query_device_ex = Some(fake_query_device_ex);
        vctx.query_port = Some(fake_query_port);
        vctx.alloc_dm = Some(fake_alloc_dm);
        vctx.free_dm = Some(fake_free_dm);
        vctx.reg_dm_mr = Some(fake_reg_dm_mr);
        vctx.advise_mr = Some(fake_advise_mr);
        vctx.alloc_parent_domain = Some(fake_alloc_parent_domain);
        vctx.modify_qp_rate_limit = Some(fake_modify_qp_rate_limit);
        vctx.open_xrcd = Some(fake_open_xrcd);
        vctx.close_xrcd = Some(fake_close_xrcd);
        vctx.create_srq_ex = Some(fake_create_srq_ex);
        let ctx: *mut ibv_context = &mut vctx.context;
        // SAFETY: plain C data; all-zero is valid.
        let mut dm: ibv_dm = unsafe { core::mem::zeroed() };
        dm.context = ctx;
        // SAFETY: as above (the mutex and condition variable are never used).
        let mut qp: ibv_qp = unsafe { core::mem::zeroed() };
        qp.context = ctx;
        Fake {
            vctx,
            pd: ibv_pd {
                context: ctx,
                handle: 7,
            },
            dm,
            qp,
            xrcd: ibv_xrcd { context: ctx },
        }
    }

    /// As libibverbs opens a context with a provider of this crate's headers.
    fn extended() -> Fake {
        Fake::new(usize::MAX, size_of::<verbs_context>())
    }

    fn ctx(&mut self) -> *mut ibv_context {
        &mut self.vctx.context
    }

    /// The fake context, PD and allocation, and the arguments every test passes.
    fn parts(&mut self) -> (*mut ibv_context, *mut ibv_pd, *mut ibv_dm, Args) {
        let mut args = Args {
            attr: ibv_alloc_dm_attr {
                length: 1024,
                log_align_req: 6,
                comp_mask: 0,
            },
            sge: [ibv_sge {
                addr: 0x1000,
                length: 4096,
                lkey: 0xabc,
            }],
            // SAFETY: plain C data; all-zero is valid.
            domain: unsafe { core::mem::zeroed() },
            rate: ibv_qp_rate_limit_attr {
                rate_limit: 8000,
                max_burst_sz: 4096,
                typical_pkt_sz: 1024,
                comp_mask: 0,
            },
            xrcd: ibv_xrcd_init_attr {
                comp_mask: 3,
                fd: -1,
                oflags: libc::O_CREAT,
            },
            // SAFETY: plain C data; all-zero is valid.
            srq: unsafe { core::mem::zeroed() },
        };
        args.domain.comp_mask = 3;
        args.srq.comp_mask = 0xf;
        args.srq.srq_type = rdma_sys::ibv_srq_type::IBV_SRQT_XRC;
        args.srq.attr.max_wr = 16;
        let (pd, dm) = (ptr::from_mut(&mut self.pd), ptr::from_mut(&mut self.dm));
        (self.ctx(), pd, dm, args)
    }

    /// Calls every wrapper except the two with a libibverbs fallback (which a fake context
    /// cannot serve) and returns what each handed back.
    fn call_ops_without_fallback(&mut self) -> [usize; 9] {
        let (ctx, pd, dm, mut args) = self.parts();
        let qp = ptr::from_mut(&mut self.qp);
        let xrcd = ptr::from_mut(&mut self.xrcd);
        // SAFETY: the fake context, its PD and allocation live in `self`; the fake ops only
        // read the arguments.
        unsafe {
            [
                alloc_dm(ctx, &mut args.attr) as usize,
                reg_dm_mr(pd, dm, 64, 256, 0x101) as usize,
                advise_mr(
                    pd,
                    IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                    1,
                    &mut args.sge,
                ) as usize,
                free_dm(dm) as usize,
                alloc_parent_domain(ctx, &mut args.domain) as usize,
                modify_qp_rate_limit(qp, &mut args.rate) as usize,
                open_xrcd(ctx, &mut args.xrcd) as usize,
                create_srq_ex(ctx, &mut args.srq) as usize,
                close_xrcd(xrcd) as usize,
            ]
        }
    }
}

/// What the wrappers without a fallback are called with.
struct Args {
    attr: ibv_alloc_dm_attr,
    sge: [ibv_sge; 1],
    domain: ibv_parent_domain_init_attr,
    rate: ibv_qp_rate_limit_attr,
    xrcd: ibv_xrcd_init_attr,
    srq: ibv_srq_init_attr_ex,
}

fn errno() -> Option<i32> {
    std::io::Error::last_os_error().raw_os_error()
}

/// Every wrapper reaches its op with the arguments given, and hands back the op's answer.
/// The wrappers without a fallback go first: a lookup that misses the op fails here rather
/// than sending the fake context into libibverbs' legacy `ibv_query_device` / `ibv_query_port`.
#[test]
fn every_extended_verb_reaches_its_provider_op() {
    let mut fake = Fake::extended();
    assert_eq!(
        fake.call_ops_without_fallback(),
        [DM, MR, 0, 0, PD, 0, XRCD, SRQ, 0]
    );
    let ctx = fake.ctx();
    // SAFETY: plain C data; all-zero is valid.
    let mut attr: ibv_device_attr_ex = unsafe { core::mem::zeroed() };
    // SAFETY: the fake context; the op fills the out-struct.
    assert_eq!(unsafe { query_device_ex(ctx, &mut attr) }, 0);
    assert_eq!(
        attr.hca_core_clock, 156_250,
        "the provider's answer, not a fallback"
    );
    // SAFETY: plain C data; all-zero is valid.
    let mut port: ibv_port_attr = unsafe { core::mem::zeroed() };
    // SAFETY: as above.
    assert_eq!(unsafe { query_port(ctx, 1, &mut port) }, 0);
    assert_eq!(port.active_mtu, rdma_sys::ibv_mtu::IBV_MTU_1024);
    assert_eq!(
        take_calls(),
        [
            "alloc_dm(length 1024)".to_string(),
            "reg_dm_mr(offset 64, len 256, access 0x101)".into(),
            "advise_mr(advice 1, flags 1, 1 sge, lkey 0xabc)".into(),
            "free_dm()".into(),
            "alloc_parent_domain(comp_mask 3)".into(),
            "modify_qp_rate_limit(rate 8000, burst 4096, typical 1024)".into(),
            "open_xrcd(comp_mask 3, fd -1, oflags 0o100)".into(),
            "create_srq_ex(comp_mask 0xf, type 1, max_wr 16)".into(),
            "close_xrcd()".into(),
            format!(
                "query_device_ex(input null true, size {})",
                size_of::<ibv_device_attr_ex>()
            ),
            format!("query_port(1, len {})", size_of::<ibv_port_attr>()),
        ]
    );
}

/// `abi_compat` of a context libibverbs did not open as extended (0), or holding the 32-bit
/// value rdma-sys 0.3.0 looks for (never stored on a 64-bit host): no op is reached, and
/// each wrapper answers as verbs.h does without the op.
#[test]
fn only_the_extended_abi_marker_opens_the_ops() {
    for abi_compat in [0, u32::MAX as usize] {
        let mut fake = Fake::new(abi_compat, size_of::<verbs_context>());
        set_errno(0);
        let got = fake.call_ops_without_fallback();
        assert_eq!(got[0], 0, "alloc_dm: NULL");
        assert_eq!(got[1], 0, "reg_dm_mr: NULL");
        assert_eq!(
            got[2..4],
            [libc::EOPNOTSUPP as usize; 2],
            "advise_mr, free_dm"
        );
        assert_eq!(got[4], 0, "alloc_parent_domain: NULL");
        assert_eq!(got[5], libc::EOPNOTSUPP as usize, "modify_qp_rate_limit");
        assert_eq!(got[6..8], [0, 0], "open_xrcd, create_srq_ex: NULL");
        assert_eq!(got[8], libc::EOPNOTSUPP as usize, "close_xrcd");
        assert_eq!(errno(), Some(libc::EOPNOTSUPP));
        assert_eq!(take_calls(), Vec::<String>::new(), "{abi_compat:#x}");
    }
}

/// The `sz` check: a provider built against an older `verbs_context` has only the ops from
/// `size_of - sz` on (the struct grows at its start). With `sz` reaching exactly
/// `alloc_dm`, `alloc_dm` and the ops after it are called, `reg_dm_mr` and `advise_mr`
/// before it are not (and their fields, outside the provider's struct, are not read).
#[test]
fn a_provider_older_than_an_op_does_not_have_it() {
    let sz = size_of::<verbs_context>() - offset_of!(verbs_context, alloc_dm);
    let mut fake = Fake::new(usize::MAX, sz);
    let got = fake.call_ops_without_fallback();
    assert_eq!(
        got,
        [DM, 0, libc::EOPNOTSUPP as usize, 0, PD, 0, XRCD, SRQ, 0]
    );
    let calls = take_calls();
    let names: Vec<&str> = calls.iter().map(|c| &c[..c.find('(').unwrap()]).collect();
    assert_eq!(
        names,
        [
            "alloc_dm",
            "free_dm",
            "alloc_parent_domain",
            "modify_qp_rate_limit",
            "open_xrcd",
            "create_srq_ex",
            "close_xrcd"
        ]
    );
    let mut fake = Fake::new(usize::MAX, sz - 1);
    assert_eq!(
        fake.call_ops_without_fallback()[0],
        0,
        "one byte short of alloc_dm"
    );
}

/// Why the crate has its own lookup: rdma-sys 0.3.0's wrappers, on the same context
/// libibverbs would give, reach none of these ops (its `verbs_get_ctx` compares
/// `abi_compat` with `u32::MAX`), and reach them all on a context holding `u32::MAX`. When
/// this fails, rdma-sys has been fixed.
#[test]
#[allow(clippy::disallowed_methods)] // the wrappers the crate must not use, shown broken
fn rdma_sys_wrappers_miss_the_ops_of_an_extended_context() {
    for (abi_compat, reached) in [(usize::MAX, 0), (u32::MAX as usize, 6)] {
        let mut fake = Fake::new(abi_compat, size_of::<verbs_context>());
        let qp = ptr::from_mut(&mut fake.qp);
        let (ctx, pd, dm, mut args) = fake.parts();
        let sge = args.sge.as_mut_ptr();
        // SAFETY: the fake context and its objects; the fake ops only read the arguments.
        let got = unsafe {
            [
                rdma_sys::ibv_alloc_dm(ctx, &mut args.attr).is_some(),
                rdma_sys::ibv_reg_dm_mr(pd, dm, 64, 256, 0x101).is_some(),
                rdma_sys::ibv_advise_mr(pd, 1, 1, sge, 1) == 0,
                rdma_sys::ibv_free_dm(dm) == 0,
                rdma_sys::ibv_alloc_parent_domain(ctx, &mut args.domain).is_some(),
                rdma_sys::ibv_modify_qp_rate_limit(qp, &mut args.rate) == 0,
            ]
        };
        assert_eq!(got, [reached == 6; 6], "abi_compat {abi_compat:#x}");
        assert_eq!(take_calls().len(), reached, "abi_compat {abi_compat:#x}");
    }
}
