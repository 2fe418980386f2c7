//! Typed posts: one call per common operation with exactly that operation's operands, so
//! nothing about the operation is decoded at run time (its shape folds to a constant at
//! the call site). Each builds the [`SendWr`] the generic entry would be given and writes
//! it with the generic path's writer: an inline SEND or WRITE through its short case
//! ([`Limits::write_short`]) alone when the payload is short (one WQEBB, the common case),
//! everything else through [`SendQueue::post_wr`] / [`SendQueue::push_wr`] (or the UD and
//! DC entries), so every check, every refusal and every byte is the generic path's.
//!
//! Each call comes in two forms: `name` rings the doorbell (as [`SendQueue::post`]),
//! `push_name` leaves the WQE for the next [`SendQueue::ring_doorbell`] (as
//! [`SendQueue::push`]: a list, one doorbell).
//!
//! [`Limits::write_short`]: super::write::Limits::write_short

use crate::error::PostError;
use crate::mmio::Uar;

use super::dc::DcDest;
use super::ud::UdDest;
use super::wr::{Data, Remote, SendFlags, SendOp, SendWr, Sge, Shape};
use super::{finish, SendQueue};

/// A typed call and its `push_` form. `inline`: an inline SEND or WRITE (`data: &[u8]`),
/// short payloads on the short path; `wr`: any other work request, through the generic
/// entry; `ud` / `dc`: a datagram to `dest`, through the UD / DC entry. The operation and
/// the data are expressions of the operands (`op`, `data`).
macro_rules! typed {
    ($(#[doc = $doc:literal])* $post:ident, $push:ident ($($arg:ident: $ty:ty),*)
        $($how:tt)*) => {
        typed!(@fn [$(#[doc = $doc])*] $post, true, ($($arg: $ty),*) $($how)*);
        typed!(
            @fn [#[doc = concat!(
                "[`SendQueue::",
                stringify!($post),
                "`] without the doorbell: the WQE reaches the device with the next ",
                "[`SendQueue::ring_doorbell`] (a list rung once), as [`SendQueue::push`]. ",
                "Refused as `",
                stringify!($post),
                "`, nothing written then."
            )]]
            $push, false, ($($arg: $ty),*) $($how)*
        );
    };
    (@fn [$($doc:tt)*] $name:ident, $ring:literal, ($($arg:ident: $ty:ty),*) inline $op:expr) => {
        $($doc)*
        #[inline(always)]
        pub fn $name(
            &mut self,
            wr_id: u64,
            $($arg: $ty,)*
            data: &[u8],
            flags: SendFlags,
        ) -> Result<(), PostError> {
            self.inline_wr::<$ring>(wr_id, move || $op, data, flags)
        }
    };
    (@fn [$($doc:tt)*] $name:ident, $ring:literal, ($($arg:ident: $ty:ty),*)
        $entry:ident $op:expr, $data:expr) => {
        $($doc)*
        #[inline(always)]
        pub fn $name(
            &mut self,
            wr_id: u64,
            $($arg: $ty,)*
            flags: SendFlags,
        ) -> Result<(), PostError> {
            let wr = SendWr { wr_id, op: $op, data: $data, flags };
            typed!(@entry self, $entry, $ring, wr $(, $arg)*)
        }
    };
    (@entry $sq:ident, wr, $ring:expr, $wr:ident $(, $arg:ident)*) => {
        if $ring { $sq.post_wr(&$wr) } else { $sq.push_wr(&$wr) }
    };
    (@entry $sq:ident, ud, $ring:expr, $wr:ident, $dest:ident $(, $arg:ident)*) => {
        if $ring { $sq.post_ud($wr, $dest) } else { $sq.push_ud(&$wr, $dest) }
    };
    (@entry $sq:ident, dc, $ring:expr, $wr:ident, $dest:ident $(, $arg:ident)*) => {
        if $ring { $sq.post_dc($wr, $dest) } else { $sq.push_dc(&$wr, $dest) }
    };
}

impl<U: Uar> SendQueue<U> {
    typed! {
        /// RDMA WRITE of `data` copied inline into the WQE to `remote`, rung at once: the
        /// WQE [`SendQueue::post`] writes for `SendOp::Write(remote)` with
        /// `Data::Inline(data)`, with the same checks and refusals (QP state, inline size,
        /// room).
        write_inline, push_write_inline(remote: Remote) inline SendOp::Write(remote)
    }

    typed! {
        /// RDMA WRITE of the gather list `sges` to `remote`: [`SendQueue::post`] of
        /// `SendOp::Write(remote)` with `Data::Sges(sges)`.
        write, push_write(remote: Remote, sges: &[Sge]) wr SendOp::Write(remote), Data::Sges(sges)
    }

    typed! {
        /// RDMA WRITE with immediate `imm` of `data` copied inline to `remote`:
        /// [`SendQueue::post`] of `SendOp::WriteImm(remote, imm)` with `Data::Inline(data)`.
        write_imm_inline, push_write_imm_inline(remote: Remote, imm: u32)
            inline SendOp::WriteImm(remote, imm)
    }

    typed! {
        /// RDMA WRITE with immediate `imm` of the gather list `sges` to `remote`:
        /// [`SendQueue::post`] of `SendOp::WriteImm(remote, imm)` with `Data::Sges(sges)`.
        write_imm, push_write_imm(remote: Remote, imm: u32, sges: &[Sge])
            wr SendOp::WriteImm(remote, imm), Data::Sges(sges)
    }

    typed! {
        /// SEND of `data` copied inline: [`SendQueue::post`] of `SendOp::Send` with
        /// `Data::Inline(data)`.
        send_inline, push_send_inline() inline SendOp::Send
    }

    typed! {
        /// SEND of the gather list `sges`: [`SendQueue::post`] of `SendOp::Send` with
        /// `Data::Sges(sges)`.
        send, push_send(sges: &[Sge]) wr SendOp::Send, Data::Sges(sges)
    }

    typed! {
        /// SEND with immediate `imm` of `data` copied inline: [`SendQueue::post`] of
        /// `SendOp::SendImm(imm)` with `Data::Inline(data)`.
        send_imm_inline, push_send_imm_inline(imm: u32) inline SendOp::SendImm(imm)
    }

    typed! {
        /// SEND with immediate `imm` of the gather list `sges`: [`SendQueue::post`] of
        /// `SendOp::SendImm(imm)` with `Data::Sges(sges)`.
        send_imm, push_send_imm(imm: u32, sges: &[Sge]) wr SendOp::SendImm(imm), Data::Sges(sges)
    }

    typed! {
        /// RDMA READ from `remote` into the scatter list `sges`: [`SendQueue::post`] of
        /// `SendOp::Read(remote)` with `Data::Sges(sges)` (refused on a UC queue).
        read, push_read(remote: Remote, sges: &[Sge]) wr SendOp::Read(remote), Data::Sges(sges)
    }

    typed! {
        /// 8-byte compare-and-swap at `remote` (`swap` stored if the target equals
        /// `compare`), the original value into the 8-byte entry `result`:
        /// [`SendOp::CompareSwap`] posted with `Data::Sges(&[result])` (refused on a UC
        /// queue).
        compare_swap, push_compare_swap(remote: Remote, compare: u64, swap: u64, result: Sge)
            wr SendOp::CompareSwap { remote, compare, swap }, Data::Sges(core::slice::from_ref(&result))
    }

    typed! {
        /// 8-byte fetch-and-add of `add` at `remote`, the original value into the 8-byte
        /// entry `result`: [`SendOp::FetchAdd`] posted with `Data::Sges(&[result])`
        /// (refused on a UC queue).
        fetch_add, push_fetch_add(remote: Remote, add: u64, result: Sge)
            wr SendOp::FetchAdd { remote, add }, Data::Sges(core::slice::from_ref(&result))
    }

    typed! {
        /// SEND of `data` (inline or a gather list) to the datagram destination `dest`:
        /// [`SendQueue::post_ud`] of `SendOp::Send`.
        send_ud, push_send_ud(dest: &UdDest<'_>, data: Data<'_>) ud SendOp::Send, data
    }

    typed! {
        /// SEND with immediate `imm` of `data` to the datagram destination `dest`:
        /// [`SendQueue::post_ud`] of `SendOp::SendImm(imm)`.
        send_imm_ud, push_send_imm_ud(dest: &UdDest<'_>, imm: u32, data: Data<'_>)
            ud SendOp::SendImm(imm), data
    }

    typed! {
        /// SEND of `data` (inline or a gather list) to the DC target `dest`:
        /// [`SendQueue::post_dc`] of `SendOp::Send`.
        send_dc, push_send_dc(dest: &DcDest<'_>, data: Data<'_>) dc SendOp::Send, data
    }

    typed! {
        /// SEND with immediate `imm` of `data` to the DC target `dest`:
        /// [`SendQueue::post_dc`] of `SendOp::SendImm(imm)`.
        send_imm_dc, push_send_imm_dc(dest: &DcDest<'_>, imm: u32, data: Data<'_>)
            dc SendOp::SendImm(imm), data
    }

    /// Posts (`RING`) or pushes an inline SEND or WRITE `op()` (a closure over its operands,
    /// so that the out-of-line call takes them in registers, not a work request stored on
    /// every post), of a kind known at the call site: a short payload of a QP not in error
    /// through [`Limits::write_short`] alone (one WQEBB, so the doorbell's chunk count is a
    /// constant), anything else through the generic entry, out of line, which checks and
    /// refuses it as for any work request.
    ///
    /// [`Limits::write_short`]: super::write::Limits::write_short
    #[inline(always)]
    fn inline_wr<const RING: bool>(
        &mut self,
        wr_id: u64,
        op: impl Fn() -> SendOp + Copy,
        data: &[u8],
        flags: SendFlags,
    ) -> Result<(), PostError> {
        let shape = op().shape();
        if !self.shared.takes_short(shape.fit_index(), data.len()) {
            return self.generic::<RING>(wr_id, op, data, flags);
        }
        // Built after the branch: the out-of-line call's work request in memory would
        // otherwise be stored on every post.
        self.short_wr::<RING, true>(&inline(wr_id, op(), data, flags), shape, data)
    }

    /// Posts (`RING`) or pushes `wr`, an inline SEND or WRITE of shape `shape` whose payload
    /// `data` is short ([`Limits::is_short`]), on a QP not in error: [`Limits::write_short`]
    /// alone (one WQEBB, so the doorbell's chunk count is a constant). `LOCAL`: as
    /// [`Limits::write_short`]'s (true for the typed calls).
    ///
    /// [`Limits::is_short`]: super::write::Limits::is_short
    /// [`Limits::write_short`]: super::write::Limits::write_short
    #[inline(always)]
    pub(super) fn short_wr<const RING: bool, const LOCAL: bool>(
        &mut self,
        wr: &SendWr<'_>,
        shape: Shape,
        data: &[u8],
    ) -> Result<(), PostError> {
        // SAFETY: the queue's own ring and slots (one per WQEBB, checked in `new`); the
        // payload is short (the caller's condition).
        let written = unsafe {
            self.k.write_short::<LOCAL, ()>(
                &self.ring,
                &mut self.staging,
                &*self.shared,
                &self.shared.tail,
                &mut self.c,
                wr,
                (),
                shape,
                data,
            )?
        };
        finish!(self, RING, written);
        Ok(())
    }

    /// [`SendQueue::post_wr`] (`RING`) or [`SendQueue::push_wr`] of an inline work request
    /// the short path does not take, out of line.
    #[cold]
    #[inline(never)]
    fn generic<const RING: bool>(
        &mut self,
        wr_id: u64,
        op: impl Fn() -> SendOp + Copy,
        data: &[u8],
        flags: SendFlags,
    ) -> Result<(), PostError> {
        let wr = inline(wr_id, op(), data, flags);
        typed!(@entry self, wr, RING, wr)
    }
}

/// The work request of an inline SEND or WRITE.
#[inline(always)]
fn inline(wr_id: u64, op: SendOp, data: &[u8], flags: SendFlags) -> SendWr<'_> {
    SendWr {
        wr_id,
        op,
        data: Data::Inline(data),
        flags,
    }
}
