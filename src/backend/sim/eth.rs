//! Raw Ethernet on the model: the driver's steering rules as the model's (`ibv_create_flow`
//! values, host order, one for one), its Ethernet capabilities, and the rule's handle.

use crate::backend::{FlowHandle, RssObject, WqObject};
use crate::error::Error;
use crate::eth::{EthCaps, FlowKind, FlowRule, FlowSpec};

use super::{device_error, hw, NicHandle};

/// A steering rule on the model; destroyed when dropped.
#[derive(Debug)]
pub(super) struct SimFlow {
    pub(super) nic: NicHandle,
    pub(super) id: u32,
}

impl Drop for SimFlow {
    fn drop(&mut self) {
        // Refused only for a rule that is gone already (the QP's own destruction waits
        // for this one): nothing to do then.
        let _ = self.nic.destroy_flow(self.id);
    }
}

/// The model's capabilities as the driver reports them.
pub(super) fn eth_caps(nic: &hw::Nic) -> EthCaps {
    let caps = nic.eth_caps();
    EthCaps {
        mac: caps.mac,
        min_inline: caps.min_inline,
        enhanced_mpw: caps.enhanced_mpw,
        striding_rq: caps.striding.is_some(),
        max_tso: caps.max_tso,
        max_frame: caps.max_frame,
    }
}

/// Creates `rule` on `port` to QP `qpn`.
pub(super) fn create_flow(
    nic: &NicHandle,
    qpn: u32,
    port: u8,
    rule: &FlowRule,
) -> Result<SimFlow, Error> {
    let attr = hw::FlowAttr {
        kind: match rule.kind {
            FlowKind::Normal => hw::FlowKind::Normal,
            FlowKind::AllDefault => hw::FlowKind::AllDefault,
            FlowKind::McDefault => hw::FlowKind::McDefault,
            FlowKind::Sniffer => hw::FlowKind::Sniffer,
        },
        priority: rule.priority,
        port,
        dont_trap: rule.dont_trap,
        specs: rule.specs.iter().map(spec).collect(),
    };
    let id = nic
        .create_flow(qpn, &attr)
        .map_err(refused("create flow"))?;
    Ok(SimFlow {
        nic: nic.clone(),
        id,
    })
}

fn spec(s: &FlowSpec) -> hw::FlowSpec {
    let eth = |f: &crate::eth::EthFilter| hw::EthFilter {
        dst_mac: f.dst_mac,
        src_mac: f.src_mac,
        ether_type: f.ether_type,
        vlan_tag: f.vlan_tag,
    };
    let ipv4 = |f: &crate::eth::Ipv4Filter| hw::Ipv4Filter {
        src_ip: f.src_ip,
        dst_ip: f.dst_ip,
        proto: f.proto,
        tos: f.tos,
        ..hw::Ipv4Filter::default()
    };
    let ipv6 = |f: &crate::eth::Ipv6Filter| hw::Ipv6Filter {
        src_ip: f.src_ip,
        dst_ip: f.dst_ip,
        flow_label: f.flow_label,
        next_hdr: f.next_hdr,
        traffic_class: f.traffic_class,
        ..hw::Ipv6Filter::default()
    };
    let l4 = |f: &crate::eth::L4Filter| hw::L4Filter {
        dst_port: f.dst_port,
        src_port: f.src_port,
    };
    match s {
        FlowSpec::Eth { val, mask } => hw::FlowSpec::Eth {
            val: eth(val),
            mask: eth(mask),
        },
        FlowSpec::Ipv4 { val, mask } => hw::FlowSpec::Ipv4 {
            val: ipv4(val),
            mask: ipv4(mask),
        },
        FlowSpec::Ipv6 { val, mask } => hw::FlowSpec::Ipv6 {
            val: ipv6(val),
            mask: ipv6(mask),
        },
        FlowSpec::Tcp { val, mask } => hw::FlowSpec::Tcp {
            val: l4(val),
            mask: l4(mask),
        },
        FlowSpec::Udp { val, mask } => hw::FlowSpec::Udp {
            val: l4(val),
            mask: l4(mask),
        },
        FlowSpec::Tag(tag) => hw::FlowSpec::Tag(*tag),
        FlowSpec::Drop => hw::FlowSpec::Drop,
    }
}

/// A work queue on the model, its ring and record; destroyed when dropped.
#[derive(Debug)]
pub(super) struct SimWq {
    pub(super) nic: NicHandle,
    pub(super) wqn: u32,
    pub(super) _buf: crate::mem::Memory,
    pub(super) _dbrec: crate::mem::Memory,
}

impl WqObject for SimWq {
    fn wqn(&self) -> u32 {
        self.wqn
    }

    fn ready(&self) -> Result<(), Error> {
        self.nic
            .modify_wq(self.wqn, hw::WqState::Rdy)
            .map_err(device_error("modify WQ"))
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}

impl Drop for SimWq {
    fn drop(&mut self) {
        // Refused only while an RSS QP names it, which holds the work queue alive.
        let _ = self.nic.destroy_wq(self.wqn);
    }
}

/// An RSS QP on the model; destroyed when dropped.
#[derive(Debug)]
pub(super) struct SimRss {
    pub(super) nic: NicHandle,
    pub(super) qpn: u32,
}

impl RssObject for SimRss {
    fn qpn(&self) -> u32 {
        self.qpn
    }

    fn create_flow(&self, port: u8, rule: &FlowRule) -> Result<FlowHandle, Error> {
        Ok(Box::new(create_flow(&self.nic, self.qpn, port, rule)?))
    }
}

impl Drop for SimRss {
    fn drop(&mut self) {
        // Refused only while a rule steers to it, and every rule holds it alive.
        let _ = self.nic.destroy_rss_qp(self.qpn);
    }
}

/// The model's error for a work queue or RSS QP it refuses.
pub(super) fn refused(operation: &'static str) -> impl FnOnce(hw::HwError) -> Error {
    move |e| match e {
        hw::HwError::NotSupported(what) => Error::Unsupported(what),
        hw::HwError::InvalidParam(why) => Error::InvalidArgument(why),
        e => device_error(operation)(e),
    }
}
