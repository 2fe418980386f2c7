//! Rings and doorbell records in this crate's memory: libmlx5's external allocator.
//!
//! `mlx5dv_set_context_attr(MLX5DV_CTX_ATTR_BUF_ALLOCATORS)` installs an `alloc` / `free`
//! pair in the context (mlx5.c `_mlx5dv_set_context_attr` copies the struct). From then on
//! libmlx5 takes every QP, CQ, SRQ and RWQ buffer from it (buf.c `mlx5_get_alloc_type`
//! chooses `MLX5_ALLOC_TYPE_EXTERNAL` over the `MLX_*_ALLOC_TYPE` variables unless a parent
//! domain brings its own allocator; `mlx5_alloc_buf_extern` passes the size, already
//! aligned to the page size by its callers, e.g. a CQ's `align(nent × cqe_sz, page_size)`),
//! and each doorbell-record page too (dbrec.c `__add_page`: one page of the device's page
//! size, carved into cache-line records shared by several queues). It then calls
//! `ibv_dontfork_range` on the buffer and registers it with the kernel as its own. The free
//! callback gets the same pointer back when the last user of the buffer is destroyed.
//!
//! Each allocation here is a [`Memory`] of the context's [`MemOptions`] (whole huge pages on
//! hugetlbfs or THP, bound to a NUMA node), kept until libmlx5 frees it. An allocation the
//! system refuses (no huge pages in the pool, a missing node) returns NULL, which fails the
//! creation; the refusal is kept so the creation reports it as the typed error
//! ([`Error::NoHugePages`], [`Error::NumaNode`]) rather than libmlx5's bare `ENOMEM`.

use core::ffi::c_void;
use core::ptr::NonNull;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::thread::ThreadId;

use crate::backend::ffi::{
    ibv_context, ibv_parent_domain_init_attr, ibv_parent_domain_init_attr_mask as Mask, ibv_pd,
};

use super::super::mlx5dv::{
    mlx5dv_ctx_allocators, mlx5dv_set_context_attr, MLX5DV_CTX_ATTR_BUF_ALLOCATORS,
    MLX5DV_RES_TYPE_DBR,
};
use super::failed;
use crate::error::Error;
use crate::mem::{MemOptions, Memory, Pages};

/// One live ring allocation: what libmlx5 asked for and the page size backing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingBuffer {
    /// Bytes libmlx5 asked for.
    pub len: usize,
    /// Size of the pages backing it (4 KiB, or 2 MiB on huge pages).
    pub page_size: usize,
    /// The resource libmlx5 named (`MLX5DV_RES_TYPE_QP`, `_SRQ`, `_DBR`, ...) when it came
    /// through a parent domain; 0 through the context's allocator, which is not told.
    pub resource_type: u64,
}

/// The allocator a context's rings come from, alive until the context is closed.
#[derive(Debug)]
pub(super) struct RingAllocator {
    options: MemOptions,
    /// Live allocations by address, with their resource types.
    live: Mutex<HashMap<usize, (Memory, u64)>>,
    /// Why each thread's last allocation was refused, for the creation that asked: libmlx5
    /// calls the allocator from the thread creating the object, so two threads creating at
    /// once each find their own refusal.
    refused: Mutex<HashMap<ThreadId, Error>>,
}

/// The lock, whether or not another thread panicked holding it (the maps stay consistent:
/// each update is one insert or remove).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl RingAllocator {
    pub(super) fn new(options: MemOptions) -> Self {
        RingAllocator {
            options,
            live: Mutex::new(HashMap::new()),
            refused: Mutex::new(HashMap::new()),
        }
    }

    /// Installs the allocator in `ctx`: every later QP, CQ, SRQ and doorbell-record page of
    /// the context comes from it.
    ///
    /// # Safety
    /// `ctx` is an open mlx5 context, and `self` stays at its address until the context is
    /// closed (libmlx5 keeps the pointer and calls back through it until then).
    pub(super) unsafe fn install(&self, ctx: NonNull<ibv_context>) -> Result<(), Error> {
        let mut allocators = mlx5dv_ctx_allocators {
            alloc: Some(ring_alloc),
            free: Some(ring_free),
            data: self as *const RingAllocator as *mut c_void,
        };
        // SAFETY: an open context (the caller's promise); libmlx5 copies the struct, and the
        // data pointer stays valid while the context is open (the caller's promise).
        let rc = unsafe {
            mlx5dv_set_context_attr(
                ctx.as_ptr(),
                MLX5DV_CTX_ATTR_BUF_ALLOCATORS,
                (&mut allocators as *mut mlx5dv_ctx_allocators).cast(),
            )
        };
        match rc {
            0 => Ok(()),
            rc => Err(failed("install the ring allocator", rc)),
        }
    }

    /// Makes a parent domain of `pd` (`ibv_alloc_parent_domain` with
    /// `IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS`): libmlx5 takes the buffers of the QPs and
    /// SRQs created on it, and each of their doorbell records, from this allocator (buf.c
    /// `mlx5_get_alloc_type`: a parent domain's allocator comes before the context's).
    ///
    /// # Safety
    /// `ctx` is an open mlx5 context and `pd` a live PD of it; `self` stays at its address
    /// until the parent domain is deallocated (libmlx5 calls back through it until then).
    pub(super) unsafe fn parent_domain(
        &self,
        ctx: NonNull<ibv_context>,
        pd: NonNull<ibv_pd>,
    ) -> Result<NonNull<ibv_pd>, Error> {
        let mut attr = ibv_parent_domain_init_attr {
            pd: pd.as_ptr(),
            td: core::ptr::null_mut(),
            comp_mask: Mask::IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS.0
                | Mask::IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT.0,
            alloc: Some(domain_alloc),
            free: Some(domain_free),
            pd_context: self as *const RingAllocator as *mut c_void,
        };
        // SAFETY: an open context and a live PD (the caller's promise), a valid attribute
        // struct; the context pointer stays valid while the domain lives (the caller's
        // promise).
        let domain = unsafe { super::ext::alloc_parent_domain(ctx.as_ptr(), &mut attr) };
        NonNull::new(domain).ok_or_else(|| match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => {
                Error::Unsupported("parent domains (the provider has no alloc_parent_domain)")
            }
            _ => failed("allocate a parent domain", -1),
        })
    }

    fn alloc(&self, size: usize) -> *mut c_void {
        self.alloc_as(size, 1, 0, &self.options)
    }

    /// `size` bytes aligned to `align` placed as `options` says, recorded with
    /// `resource_type`; NULL (the refusal kept) when the system cannot.
    fn alloc_as(
        &self,
        size: usize,
        align: usize,
        resource_type: u64,
        options: &MemOptions,
    ) -> *mut c_void {
        if size == 0 {
            return core::ptr::null_mut();
        }
        match Memory::with_options(size, options) {
            // Mappings are page aligned; libmlx5 asks for at most a page.
            Ok(memory) if memory.ptr() as usize % align.max(1) == 0 => {
                let ptr = memory.ptr();
                lock(&self.live).insert(ptr as usize, (memory, resource_type));
                ptr.cast()
            }
            Ok(_) => self.refuse(Error::InvalidArgument(
                "libmlx5 asked for an alignment beyond the page size",
            )),
            Err(e) => self.refuse(e),
        }
    }

    /// A parent domain's allocation: a doorbell record (8 bytes) takes a page of the base
    /// size on the chosen node, not a huge page; QP, SRQ and the rest take the chosen pages.
    fn alloc_resource(&self, size: usize, align: usize, resource_type: u64) -> *mut c_void {
        let options = match resource_type {
            MLX5DV_RES_TYPE_DBR => MemOptions {
                pages: Pages::Base,
                ..self.options
            },
            _ => self.options,
        };
        self.alloc_as(size, align, resource_type, &options)
    }

    fn free(&self, ptr: *mut c_void) {
        lock(&self.live).remove(&(ptr as usize));
    }

    /// NULL for libmlx5, `why` kept for this thread's creation.
    fn refuse(&self, why: Error) -> *mut c_void {
        lock(&self.refused).insert(std::thread::current().id(), why);
        core::ptr::null_mut()
    }

    /// Why this thread's last allocation was refused (taken: asked once per failed
    /// creation).
    pub(super) fn take_refusal(&self) -> Option<Error> {
        lock(&self.refused).remove(&std::thread::current().id())
    }

    /// The live allocations, by address.
    pub(super) fn buffers(&self) -> Vec<RingBuffer> {
        let live = lock(&self.live);
        let mut buffers: Vec<_> = live
            .iter()
            .map(|(&addr, (m, resource_type))| {
                (
                    addr,
                    RingBuffer {
                        len: m.len(),
                        page_size: m.page_size(),
                        resource_type: *resource_type,
                    },
                )
            })
            .collect();
        buffers.sort_unstable_by_key(|&(addr, _)| addr);
        buffers.into_iter().map(|(_, b)| b).collect()
    }
}

/// `mlx5dv_ctx_allocators.alloc`: `size` bytes of the context's ring memory, or NULL.
///
/// # Safety
/// `data` is the [`RingAllocator`] installed with it (libmlx5 passes back what
/// [`RingAllocator::install`] gave).
unsafe extern "C" fn ring_alloc(size: usize, data: *mut c_void) -> *mut c_void {
    // SAFETY: the installed allocator, alive while the context is open (install's contract).
    let rings = unsafe { &*(data as *const RingAllocator) };
    rings.alloc(size)
}

/// `mlx5dv_ctx_allocators.free`: releases what [`ring_alloc`] returned.
///
/// # Safety
/// As [`ring_alloc`]; `ptr` came from it and libmlx5 no longer uses it.
unsafe extern "C" fn ring_free(ptr: *mut c_void, data: *mut c_void) {
    // SAFETY: as in `ring_alloc`.
    let rings = unsafe { &*(data as *const RingAllocator) };
    rings.free(ptr);
}

/// `ibv_parent_domain_init_attr.alloc`: `size` bytes for resource `resource_type` of the
/// domain's ring memory, or NULL.
///
/// # Safety
/// `pd_context` is the [`RingAllocator`] the domain was made with
/// ([`RingAllocator::parent_domain`]).
unsafe extern "C" fn domain_alloc(
    _pd: *mut ibv_pd,
    pd_context: *mut c_void,
    size: usize,
    alignment: usize,
    resource_type: u64,
) -> *mut c_void {
    // SAFETY: the domain's allocator, alive while the domain is (parent_domain's contract).
    let rings = unsafe { &*(pd_context as *const RingAllocator) };
    rings.alloc_resource(size, alignment, resource_type)
}

/// `ibv_parent_domain_init_attr.free`: releases what [`domain_alloc`] returned.
///
/// # Safety
/// As [`domain_alloc`]; `ptr` came from it and libmlx5 no longer uses it.
unsafe extern "C" fn domain_free(
    _pd: *mut ibv_pd,
    pd_context: *mut c_void,
    ptr: *mut c_void,
    _resource_type: u64,
) {
    // SAFETY: as in `domain_alloc`.
    let rings = unsafe { &*(pd_context as *const RingAllocator) };
    rings.free(ptr);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mlx5dv::MLX5DV_RES_TYPE_QP;

    /// The callbacks as libmlx5 calls them: page-aligned zeroed memory of the size asked,
    /// kept until freed; a refusal returns NULL and is kept for the creation.
    #[test]
    fn callbacks_allocate_keep_and_free() {
        let rings = RingAllocator::new(MemOptions::BASE);
        let data = &rings as *const RingAllocator as *mut c_void;
        // SAFETY: `data` is the allocator, alive for the calls.
        let ptr = unsafe { ring_alloc(8192, data) };
        assert!(!ptr.is_null());
        assert_eq!(ptr as usize % 4096, 0);
        assert_eq!(
            rings.buffers(),
            [RingBuffer {
                len: 8192,
                page_size: 4096,
                resource_type: 0,
            }]
        );
        // SAFETY: as above; `ptr` came from `ring_alloc`.
        unsafe { ring_free(ptr, data) };
        assert!(rings.buffers().is_empty());
        // SAFETY: as above.
        assert!(unsafe { ring_alloc(0, data) }.is_null());
        assert_eq!(rings.take_refusal(), None);

        let missing = RingAllocator::new(MemOptions {
            pages: Pages::Base,
            numa_node: Some(4000),
        });
        let data = &missing as *const RingAllocator as *mut c_void;
        // SAFETY: as above.
        assert!(unsafe { ring_alloc(4096, data) }.is_null());
        assert!(matches!(
            missing.take_refusal(),
            Some(Error::NumaNode { node: 4000, .. })
        ));
        assert_eq!(missing.take_refusal(), None);
        // Another thread's refusal is that thread's: this one finds none.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let data = &missing as *const RingAllocator as *mut c_void;
                    // SAFETY: as above.
                    assert!(unsafe { ring_alloc(4096, data) }.is_null());
                })
                .join()
                .unwrap();
        });
        assert_eq!(missing.take_refusal(), None);
    }

    /// A parent domain's callbacks: a QP buffer of the size asked, a doorbell record of 8
    /// bytes in a page of its own, each listed with its resource type until freed.
    #[test]
    fn domain_callbacks_place_each_resource() {
        let rings = RingAllocator::new(MemOptions::BASE);
        let data = &rings as *const RingAllocator as *mut c_void;
        let pd = core::ptr::null_mut();
        // SAFETY: `data` is the allocator, alive for the calls.
        let qp = unsafe { domain_alloc(pd, data, 8192, 4096, MLX5DV_RES_TYPE_QP) };
        // SAFETY: as above.
        let dbr = unsafe { domain_alloc(pd, data, 8, 8, MLX5DV_RES_TYPE_DBR) };
        assert!(!qp.is_null() && !dbr.is_null());
        let mut listed = rings.buffers();
        listed.sort_unstable_by_key(|b| b.resource_type);
        assert_eq!(listed.len(), 2);
        assert_eq!(
            (listed[0].resource_type, listed[0].len),
            (MLX5DV_RES_TYPE_QP, 8192)
        );
        assert_eq!(
            (listed[1].resource_type, listed[1].len, listed[1].page_size),
            (MLX5DV_RES_TYPE_DBR, 8, 4096)
        );
        // SAFETY: as above; the pointers came from `domain_alloc`.
        unsafe {
            domain_free(pd, data, qp, MLX5DV_RES_TYPE_QP);
            domain_free(pd, data, dbr, MLX5DV_RES_TYPE_DBR);
        }
        assert!(rings.buffers().is_empty());
    }
}
