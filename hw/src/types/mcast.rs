//! UD multicast: the device's group limits and the knobs no public source pins
//! (docs/model.md, "UD multicast").

/// Multicast capabilities and behaviour of a NIC ([`NicConfig::mcast`]).
///
/// [`NicConfig::mcast`]: crate::NicConfig::mcast
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McastConfig {
    /// `max_mcast_grp` (the kernel's `1 << log_max_mcg`): groups the NIC's QPs may be
    /// attached to at once; one more is refused with
    /// [`HwError::OutOfResources`](crate::HwError::OutOfResources). 2 097 152 is what a
    /// ConnectX-5 reports (`ibv_devinfo -v`, vendor part 4119, firmware 16.31).
    pub max_groups: u32,
    /// `max_mcast_qp_attach` (the kernel's `max_qp_mcg`): QPs of this NIC one group may
    /// have; one more is refused with `OutOfResources`. 240 on the same ConnectX-5.
    pub max_qps_per_group: u32,
    /// Whether a multicast datagram reaches the QPs of the sending NIC attached to its
    /// group (loopback), unless the sending QP blocks it
    /// ([`Nic::block_mcast_loopback`](crate::Nic::block_mcast_loopback)). mlx5 loops
    /// multicast back by default and offers the per-QP block (`block_lb_mc` in the QP
    /// context); on RoCE the kernel also switches the function's local loopback on and off
    /// (`mlx5_ib_enable_lb`) by how many user transport domains exist, which the model
    /// does not follow: true (default) loops back, false never does.
    pub loopback: bool,
    /// The HCA cap `block_lb_mc`: QPs may block the loopback of their own multicast
    /// (`IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK`, which the kernel refuses without it).
    /// Which devices set it is not public; default true.
    pub block_loopback: bool,
    /// Which multicast packets the fabric brings to this NIC's port ([`McastJoin`]).
    pub join: McastJoin,
}

impl Default for McastConfig {
    fn default() -> Self {
        McastConfig {
            max_groups: 1 << 21,
            max_qps_per_group: 240,
            loopback: true,
            block_loopback: true,
            join: McastJoin::Attached,
        }
    }
}

/// Which multicast packets the fabric forwards to a port. The model has no subnet manager
/// and no IGMP/MLD: a port's membership is a knob.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum McastJoin {
    /// The groups a QP of this NIC is attached to: the port joined each group its QPs
    /// attached to, as `ibv_attach_mcast(3)` asks (a join at the subnet administrator so
    /// that "the fabric's multicast routing is configured to deliver messages to the
    /// local port"; `rdma_join_multicast` joins and attaches together).
    #[default]
    Attached,
    /// Every multicast packet of the fabric, as an Ethernet switch without IGMP/MLD
    /// snooping floods them (or a port that joined groups no QP attached to): packets of
    /// groups none of its QPs takes are dropped there and counted
    /// ([`Stats::mcast_dropped`](crate::Stats::mcast_dropped)).
    Every,
}
