//! The librdmacm declarations of `<rdma/rdma_cma.h>` (rdma-core v44) the `verbs` backend
//! writes by hand: `rdma-sys` blocklists `struct rdma_cm_event` from its generated bindings,
//! so the event, its parameter union and the two functions that pass it are declared here
//! and linked to librdmacm (which `rdma-sys` links). The rest (`rdma_create_id`,
//! `rdma_connect`, `struct rdma_cm_id`, `struct rdma_conn_param`, ...) comes from
//! `rdma-sys`.
//!
//! Every struct here, and the `rdma-sys` structs the backend reads (`rdma_cm_id`, whose
//! `route` holds rdma-sys's hand-written `rdma_addr`, `rdma_conn_param`, `rdma_ud_param`,
//! `rdma_event_channel`), is compared with the header member by member (`offsetof`,
//! `sizeof`) by `tests/verbs_layout.rs` through the golden shim (`c/ffi.c`), and so is
//! every constant.
#![allow(non_camel_case_types, missing_docs)]

use core::ffi::c_int;

use crate::backend::ffi::{rdma_cm_id, rdma_conn_param, rdma_event_channel, rdma_ud_param};

/// `RDMA_OPTION_ID`: options of the `rdma_cm_id` itself (`rdma_set_option`'s level).
pub const RDMA_OPTION_ID: c_int = 0;
/// `RDMA_OPTION_ID_TOS`: the type of service (`uint8_t`, RFC 2474).
pub const RDMA_OPTION_ID_TOS: c_int = 0;
/// `RDMA_OPTION_ID_ACK_TIMEOUT`: the QP's local ACK timeout exponent (`uint8_t`).
pub const RDMA_OPTION_ID_ACK_TIMEOUT: c_int = 3;

/// The anonymous `param` union of `struct rdma_cm_event`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union rdma_cm_event_param {
    pub conn: rdma_conn_param,
    pub ud: rdma_ud_param,
}

/// `struct rdma_cm_event`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_cm_event {
    pub id: *mut rdma_cm_id,
    pub listen_id: *mut rdma_cm_id,
    /// `enum rdma_cm_event_type` ([`crate::cm::CmEvent`]).
    pub event: u32,
    pub status: c_int,
    pub param: rdma_cm_event_param,
}

#[link(name = "rdmacm")]
extern "C" {
    /// `rdma_get_cm_event`: the next event of `channel` (blocks unless its fd is
    /// non-blocking, then fails with `EAGAIN`).
    pub(crate) fn rdma_get_cm_event(
        channel: *mut rdma_event_channel,
        event: *mut *mut rdma_cm_event,
    ) -> c_int;
    /// `rdma_ack_cm_event`: releases an event (its private data with it).
    pub(crate) fn rdma_ack_cm_event(event: *mut rdma_cm_event) -> c_int;
}
