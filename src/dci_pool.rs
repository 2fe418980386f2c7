//! A pool of DCIs shared by many destinations, with UCX's `dcs` policy
//! (`UCX_DC_MLX5_TX_POLICY=dcs`, UCX's `dc/dc_mlx5.c`; prm-facts-next §3.4): an operation
//! to a destination with operations outstanding goes to the DCI already serving it, so
//! operations to one destination stay in order on one DCI; a destination with nothing
//! outstanding takes a free DCI from a LIFO stack; a DCI goes back on the stack when its
//! last operation has completed. UCX's `dcs_quota` adds a quota of sends after which a
//! busy destination yields its DCI to destinations waiting for one; this pool has no
//! waiting list (exhaustion is the typed [`PostError::NoFreeDci`]), so it has no quota.
//!
//! The pool is optional: its DCIs are ordinary [`Qp`]s ([`DciPool::dci`]), and an
//! application that manages DCIs itself uses [`ProtectionDomain::create_dci`] and
//! [`SendQueue::post_dc`](crate::SendQueue::post_dc) directly.
//!
//! Completions are the application's: it polls the DCIs' CQ and hands each completion of a
//! DCI to [`DciPool::complete`]. The pool finds the completion's DCI by its QPN (a hash
//! lookup): UCX instead sets each DCI's QPC `user_index` to the DCI's index through DevX and
//! reads it back from the CQE's `srqn_uidx` (prm-facts-next §3.4), but through verbs the
//! user index cannot be chosen (`mlx5dv_create_qp` has no attribute for it; rdma-core
//! allocates it), so the `verbs` backend refuses [`QpConfig::user_index`]. On a backend
//! that takes it (the model, whose NIC writes it into CQEs with CQE version 1), a pool
//! created with `user_index = Some(base)` gives DCI `i` the user index `base + i` and looks
//! a completion up by it first, keeping it only if that DCI's QPN is the completion's (a
//! CQE without user indexes carries 0 there), else by QPN. [`DciPool::complete`] then
//! releases the DCI when nothing is outstanding on it
//! (unsignaled operations included: the send queue's own count says so) and recovers a DCI
//! that failed (RESET, then INIT / RTR / RTS again, as UCX's `uct_dc_mlx5_iface_reset_dci`
//! once the flush has drained it).

use std::collections::HashMap;

use crate::backend::Backend;
use crate::cq::Completion;
use crate::device::{Cq, ProtectionDomain, Qp};
use crate::error::{Error, PostError};
use crate::sq::{DcDest, SendWr};
use crate::types::{ConnectOptions, QpConfig, QpState};

/// Who a DC operation goes to, as the pool tells destinations apart: the address vector's
/// bytes (the target's port), the DCT number and the DC key.
type Destination = ([u8; 48], u32, u64);

fn destination(dest: &DcDest<'_>) -> Destination {
    (dest.av.to_bytes(), dest.dctn & 0xff_ffff, dest.dc_key)
}

/// A pool of DCIs on one send CQ (see the module docs).
#[derive(Debug)]
pub struct DciPool<B: Backend> {
    dcis: Vec<Qp<B>>,
    /// The destination each DCI serves while it has operations outstanding.
    serving: Vec<Option<Destination>>,
    /// Free DCIs, the last released on top (UCX's stack).
    free: Vec<usize>,
    busy: HashMap<Destination, usize>,
    by_qpn: HashMap<u32, usize>,
    /// The user index of DCI 0 when the pool numbered them (`QpConfig::user_index`).
    uidx_base: Option<u32>,
    options: ConnectOptions,
}

impl<B: Backend> DciPool<B> {
    /// `count` DCIs of `config` on `send_cq`, each brought to RTS with `options`
    /// ([`Qp::activate_dci`]). The CQ must hold a completion for every WQE the DCIs can
    /// have outstanding (UCX PR #8239: one CQ serves every DCI). With
    /// `config.user_index = Some(base)`, DCI `i` has the user index `base + i` (refused
    /// where the backend cannot set it, and above 24 bits).
    pub fn new(
        pd: &ProtectionDomain<B>,
        send_cq: &Cq<B>,
        count: usize,
        config: &QpConfig,
        options: &ConnectOptions,
    ) -> Result<Self, Error> {
        if count == 0 {
            return Err(Error::InvalidArgument("a DCI pool needs at least one DCI"));
        }
        let mut dcis = Vec::with_capacity(count);
        let mut by_qpn = HashMap::with_capacity(count);
        for i in 0..count {
            let config = QpConfig {
                user_index: config.user_index.map(|base| base.saturating_add(i as u32)),
                ..*config
            };
            let mut dci = pd.create_dci(send_cq, &config)?;
            dci.activate_dci(options)?;
            by_qpn.insert(dci.qpn(), i);
            dcis.push(dci);
        }
        Ok(DciPool {
            dcis,
            serving: vec![None; count],
            free: (0..count).rev().collect(),
            busy: HashMap::new(),
            by_qpn,
            uidx_base: config.user_index,
            options: *options,
        })
    }

    /// Posts `wr` to `dest` on the DCI serving it, or on a free DCI that then serves it;
    /// returns that DCI's index. Refused with [`PostError::NoFreeDci`] when the destination
    /// has nothing outstanding and no DCI is free, and with what
    /// [`SendQueue::post_dc`](crate::SendQueue::post_dc) refuses; nothing is written then.
    pub fn post(&mut self, wr: SendWr<'_>, dest: &DcDest<'_>) -> Result<usize, PostError> {
        let key = destination(dest);
        let (i, taken) = match self.busy.get(&key) {
            Some(&i) => (i, false),
            None => match self.free.pop() {
                Some(i) => (i, true),
                None => {
                    return Err(PostError::NoFreeDci {
                        dcis: self.dcis.len(),
                    })
                }
            },
        };
        if let Err(e) = self.dcis[i].sq().post_dc(wr, dest) {
            if taken {
                self.free.push(i);
            }
            return Err(e);
        }
        if taken {
            self.serving[i] = Some(key);
            self.busy.insert(key, i);
        }
        Ok(i)
    }

    /// Takes note of a completion polled from the pool's CQ: if it is one of the pool's
    /// DCIs (its index is returned) and nothing is outstanding on that DCI any more, the DCI
    /// is free again; a DCI in error is reset and activated again once its flush has
    /// drained it. Completions of other QPs are `None`.
    pub fn complete(&mut self, c: &Completion) -> Result<Option<usize>, Error> {
        let Some(i) = self.index_of(c) else {
            return Ok(None);
        };
        let dci = &mut self.dcis[i];
        if dci.send_queue().outstanding_wqebbs() != 0 {
            return Ok(Some(i));
        }
        if dci.state() == QpState::Err {
            dci.reset()?;
            dci.activate_dci(&self.options)?;
        }
        if let Some(key) = self.serving[i].take() {
            self.busy.remove(&key);
            self.free.push(i);
        }
        Ok(Some(i))
    }

    /// The index of the DCI `c` is a completion of: by its user index when the pool numbered
    /// the DCIs and the DCI there has `c`'s QPN, else by QPN.
    fn index_of(&self, c: &Completion) -> Option<usize> {
        let by_uidx = self.uidx_base.and_then(|base| {
            let i = c.user_index().wrapping_sub(base) as usize;
            self.dcis.get(i).filter(|d| d.qpn() == c.qpn).map(|_| i)
        });
        by_uidx.or_else(|| self.by_qpn.get(&c.qpn).copied())
    }

    /// The DCI serving `dest` now, if any.
    pub fn serving(&self, dest: &DcDest<'_>) -> Option<usize> {
        self.busy.get(&destination(dest)).copied()
    }

    /// DCIs free for a new destination.
    pub fn free(&self) -> usize {
        self.free.len()
    }

    /// DCIs in the pool.
    pub fn len(&self) -> usize {
        self.dcis.len()
    }

    /// Never: a pool has at least one DCI.
    pub fn is_empty(&self) -> bool {
        self.dcis.is_empty()
    }

    /// DCI `i` (its QPN, state, send queue counts).
    pub fn dci(&self, i: usize) -> &Qp<B> {
        &self.dcis[i]
    }
}
