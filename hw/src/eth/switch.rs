//! The wire: a learning Ethernet switch joining the Ethernet ports of the fabric's NICs
//! (IEEE 802.1Q bridging reduced to what raw packet QPs see). A frame a NIC sends is
//! padded to the minimum length by its MAC, copied to the port's sniffers, checked
//! against the port's largest frame, and given to the switch, which learns its source MAC
//! on its VLAN (independent VLAN learning; every port carries every VLAN, tagged) and
//! forwards it to the port that MAC was learned on, or floods it to every other port when
//! the destination is unknown or a group address. A frame never goes back out of the port
//! it came in on (802.1D); the sending NIC sees its own frame only through its
//! self-loopback (`EthConfig::self_loopback`). Entries never age; the model has no
//! spanning tree, priority queues or pause frames. RoCE traffic of the other transports
//! does not cross this switch (it is routed by GID, docs/model.md "RoCE").

use crate::eth::frame::{is_group, pad, Headers};
use crate::eth::rx::{max_frame, receive, sniff};
use crate::state::World;
use crate::types::LinkLayer;

/// Frame `f`, built by a send queue of NIC `n`, leaves its port.
pub(crate) fn transmit(w: &mut World, n: usize, mut f: Vec<u8>) {
    pad(&mut f);
    let nic = &mut w.nics[n];
    if f.len() > max_frame(&nic.cfg) {
        // The port's MTU register bounds what it sends too; what a ConnectX reports for
        // such a WQE is not public: it completes, and the frame is counted here.
        nic.stats.eth.tx_oversize += 1;
        return;
    }
    nic.stats.eth.tx_frames += 1;
    nic.stats.eth.tx_bytes += f.len() as u64;
    let h = Headers::parse(&f);
    sniff(nic, &f, &h);
    let vid = h.vlan.map(|tci| tci & 0xfff);
    if !is_group(&h.smac) {
        w.switch.fdb.insert((vid, h.smac), n);
    }
    let nic = &mut w.nics[n];
    let own = crate::roce::mac(nic.lid);
    if nic.cfg.eth.self_loopback && (h.dmac == own || is_group(&h.dmac)) {
        receive(nic, &f, true);
    }
    let learned = (!is_group(&h.dmac))
        .then(|| w.switch.fdb.get(&(vid, h.dmac)).copied())
        .flatten();
    match learned {
        Some(m) if m != n => receive(&mut w.nics[m], &f, false),
        // Learned on the port it came in on: filtered.
        Some(_) => {}
        None => {
            w.nics[n].stats.eth.tx_flooded += u64::from(!is_group(&h.dmac));
            for m in (0..w.nics.len()).filter(|&m| m != n) {
                if w.nics[m].cfg.link_layer == LinkLayer::Ethernet {
                    receive(&mut w.nics[m], &f, false);
                }
            }
        }
    }
}
