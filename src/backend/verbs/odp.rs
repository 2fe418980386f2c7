//! On-demand paging on hardware: the device's capabilities per transport, checked for every
//! QP that may touch an on-demand region of its PD, and the prefetch advice.
//!
//! ODP capabilities are per transport (`ibv_device_attr_ex.odp_caps.per_transport_caps`;
//! DC in `mlx5dv_context.dc_odp_caps` with `MLX5DV_CONTEXT_MASK_DC_ODP_CAPS`, the same
//! `enum ibv_odp_transport_cap_bits`). The mlx5 kernel driver fills them from the device's
//! ODP scheme (odp.c `mlx5_ib_internal_fill_odp_caps`): UD has SEND and SRQ_RECV only, RC and
//! DC have every bit the device sets. A QP whose transport lacks a bit its work needs fails
//! at run time, not at registration, so the backend checks at both ends: registering on-demand
//! memory checks every transport with QPs on the PD (or a parent domain of it), and creating
//! a QP on a PD with on-demand memory checks the QP's transport.

use std::sync::{Mutex, PoisonError};

use crate::backend::ffi::ib_uverbs_advise_mr_advice::{
    IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH, IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
};
use crate::backend::ffi::{ibv_odp_caps, ibv_odp_general_caps, ibv_odp_transport_cap_bits as bit};

use crate::error::Error;
use crate::types::{Access, Transport};

const SEND: u32 = bit::IBV_ODP_SUPPORT_SEND.0;
const RECV: u32 = bit::IBV_ODP_SUPPORT_RECV.0;
const WRITE: u32 = bit::IBV_ODP_SUPPORT_WRITE.0;
const READ: u32 = bit::IBV_ODP_SUPPORT_READ.0;
const SRQ_RECV: u32 = bit::IBV_ODP_SUPPORT_SRQ_RECV.0;

/// On-demand paging as the device reports it: `IBV_ODP_SUPPORT`, and per transport the
/// `enum ibv_odp_transport_cap_bits` it serves on on-demand regions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OdpCaps {
    /// `IBV_ODP_SUPPORT` in `general_caps`.
    pub supported: bool,
    /// RC (`rc_odp_caps`).
    pub rc: u32,
    /// UC (`uc_odp_caps`).
    pub uc: u32,
    /// UD (`ud_odp_caps`).
    pub ud: u32,
    /// DC (`mlx5dv_context.dc_odp_caps`; 0 when libmlx5 does not report it).
    pub dc: u32,
}

impl OdpCaps {
    pub(super) fn new(caps: &ibv_odp_caps, dc: u32) -> OdpCaps {
        let t = &caps.per_transport_caps;
        OdpCaps {
            supported: caps.general_caps & u64::from(ibv_odp_general_caps::IBV_ODP_SUPPORT.0) != 0,
            rc: t.rc_odp_caps,
            uc: t.uc_odp_caps,
            ud: t.ud_odp_caps,
            dc,
        }
    }

    /// Refuses on-demand regions for a QP of `transport` (receiving from an SRQ or not)
    /// unless its transport serves every operation such a QP may run on them: RC SEND,
    /// RECV, WRITE and READ (perftest's `check_odp_support` for `--odp`); UC SEND, RECV
    /// and WRITE; UD SEND and RECV; a DCI SEND, WRITE and READ; a DCT (always on an SRQ)
    /// SRQ_RECV, WRITE and READ; receives from an SRQ need SRQ_RECV instead of RECV.
    pub(super) fn check(&self, transport: Transport, srq: bool) -> Result<(), Error> {
        self.check_supported()?;
        let recv = if srq { SRQ_RECV } else { RECV };
        let (name, have, needed) = match transport {
            Transport::Rc => ("RC", self.rc, SEND | recv | WRITE | READ),
            Transport::Uc => ("UC", self.uc, SEND | recv | WRITE),
            Transport::Ud => ("UD", self.ud, SEND | recv),
            // `struct ibv_odp_caps` has no raw packet entry: never on demand.
            Transport::Raw => ("raw packet", 0, SEND | recv),
            Transport::Dci => ("DC", self.dc, SEND | WRITE | READ),
            Transport::Dct => ("DC", self.dc, SRQ_RECV | WRITE | READ),
            // `xrc_odp_caps` is not read: no XRC QP is on demand here.
            Transport::XrcIni | Transport::XrcTgt => ("XRC", 0, SEND | WRITE | READ),
        };
        if have & needed != needed {
            return Err(Error::OnDemandPaging(format!(
                "the device's {name} ODP caps are {have:#x}, a {transport:?} QP needs {needed:#x} \
                 (enum ibv_odp_transport_cap_bits)"
            )));
        }
        Ok(())
    }

    fn check_supported(&self) -> Result<(), Error> {
        match self.supported {
            true => Ok(()),
            false => Err(Error::OnDemandPaging(
                "the device does not report IBV_ODP_SUPPORT".into(),
            )),
        }
    }
}

/// What a PD (and its parent domains) holds that on-demand paging depends on: the kinds of
/// QP created on it and whether on-demand memory is registered on it. One lock makes each
/// check and its record one step.
#[derive(Debug, Default)]
pub(super) struct PdOdp(Mutex<PdOdpState>);

#[derive(Debug, Default)]
struct PdOdpState {
    /// Each (transport, receives from an SRQ) a QP was created for.
    qps: Vec<(Transport, bool)>,
    on_demand: bool,
}

impl PdOdp {
    /// Before registering on-demand memory on the PD: every kind of QP on it must be able
    /// to use it.
    pub(super) fn register(&self, caps: &OdpCaps) -> Result<(), Error> {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        caps.check_supported()?;
        for &(transport, srq) in &state.qps {
            caps.check(transport, srq)?;
        }
        state.on_demand = true;
        Ok(())
    }

    /// Before creating a QP of `transport` on the PD: with on-demand memory registered, its
    /// transport must serve it.
    pub(super) fn create_qp(
        &self,
        caps: &OdpCaps,
        transport: Transport,
        srq: bool,
    ) -> Result<(), Error> {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if state.on_demand {
            caps.check(transport, srq)?;
        }
        if !state.qps.contains(&(transport, srq)) {
            state.qps.push((transport, srq));
        }
        Ok(())
    }
}

/// The `ibv_advise_mr` advice for prefetching a region registered with `access`:
/// `PREFETCH_WRITE` (pages mapped writable) needs LOCAL_WRITE, which the kernel checks
/// (odp.c `get_prefetchable_mr` answers EPERM for a region whose umem is not writable);
/// a read-only region gets `PREFETCH`.
pub(super) fn prefetch_advice(access: Access) -> u32 {
    if access.contains(Access::LOCAL_WRITE) {
        IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE
    } else {
        IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the mlx5 kernel reports on a device with every ODP scheme bit
    /// (`mlx5_ib_internal_fill_odp_caps`): UD only SEND and SRQ_RECV.
    const MLX5: OdpCaps = OdpCaps {
        supported: true,
        rc: SEND | RECV | WRITE | READ | bit::IBV_ODP_SUPPORT_ATOMIC.0 | SRQ_RECV,
        uc: 0,
        ud: SEND | SRQ_RECV,
        dc: SEND | RECV | WRITE | READ | bit::IBV_ODP_SUPPORT_ATOMIC.0 | SRQ_RECV,
    };

    #[test]
    fn each_transport_is_checked_against_its_own_caps() {
        let ok = |t, srq| MLX5.check(t, srq).is_ok();
        assert!(ok(Transport::Rc, false) && ok(Transport::Rc, true));
        assert!(ok(Transport::Ud, true), "UD receives from an SRQ");
        assert!(!ok(Transport::Ud, false), "UD has no RECV bit on mlx5");
        assert!(!ok(Transport::Uc, false), "no UC ODP");
        assert!(ok(Transport::Dci, false) && ok(Transport::Dct, true));
        let no_dc = OdpCaps { dc: 0, ..MLX5 };
        assert!(no_dc.check(Transport::Dci, false).is_err());
        assert!(no_dc.check(Transport::Dct, true).is_err());
        let none = OdpCaps {
            supported: false,
            ..MLX5
        };
        let Err(Error::OnDemandPaging(why)) = none.check(Transport::Rc, false) else {
            panic!("refused");
        };
        assert!(why.contains("IBV_ODP_SUPPORT"), "{why}");
    }

    /// Both orders: a UD QP with its own receive queue on a PD refuses on-demand memory
    /// there, and on-demand memory refuses the QP that comes after it; an RC QP is fine.
    #[test]
    fn registrations_and_qps_check_each_other_on_a_pd() {
        let pd = PdOdp::default();
        pd.create_qp(&MLX5, Transport::Rc, false).unwrap();
        pd.register(&MLX5).unwrap();
        assert!(matches!(
            pd.create_qp(&MLX5, Transport::Ud, false),
            Err(Error::OnDemandPaging(_))
        ));
        pd.create_qp(&MLX5, Transport::Ud, true).unwrap();
        let pd = PdOdp::default();
        pd.create_qp(&MLX5, Transport::Ud, false).unwrap();
        assert!(matches!(pd.register(&MLX5), Err(Error::OnDemandPaging(_))));
        // A device serving UD only takes on-demand memory on a PD of UD QPs.
        let ud_only = OdpCaps {
            rc: 0,
            ud: SEND | RECV,
            ..MLX5
        };
        pd.register(&ud_only).unwrap();
        assert!(PdOdp::default().register(&ud_only).is_ok(), "no QPs yet");
        assert!(PdOdp::default().register(&OdpCaps::default()).is_err());
    }

    #[test]
    fn a_read_only_region_is_prefetched_for_reading() {
        assert_eq!(
            prefetch_advice(Access::REMOTE_READ),
            IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH
        );
        assert_eq!(
            prefetch_advice(Access::LOCAL_WRITE),
            IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE
        );
        assert_eq!(
            prefetch_advice(Access::ALL),
            IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE
        );
    }
}
