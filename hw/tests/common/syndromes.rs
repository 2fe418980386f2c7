//! The CQE syndromes the tests name, and the check every error CQE's vendor syndrome
//! passes.

use super::{Cqe, REQ_ERR};

pub const LOCAL_LENGTH_ERR: u8 = 0x01;
pub const LOCAL_QP_OP_ERR: u8 = 0x02;
pub const LOCAL_PROT_ERR: u8 = 0x04;
pub const WR_FLUSH_ERR: u8 = 0x05;
pub const LOCAL_ACCESS_ERR: u8 = 0x11;
pub const REMOTE_INVAL_REQ_ERR: u8 = 0x12;
pub const REMOTE_ACCESS_ERR: u8 = 0x13;
pub const REMOTE_OP_ERR: u8 = 0x14;
pub const TRANSPORT_RETRY_EXC_ERR: u8 = 0x15;
pub const RNR_RETRY_EXC_ERR: u8 = 0x16;

/// Vendor syndromes seen with each syndrome in public logs of mlx5 adapters (0: none known).
fn vendor(syndrome: u8) -> u8 {
    match syndrome {
        LOCAL_PROT_ERR => 0x52,
        WR_FLUSH_ERR => 0xf9,
        REMOTE_INVAL_REQ_ERR => 0x8a,
        REMOTE_ACCESS_ERR => 0x88,
        REMOTE_OP_ERR => 0x89,
        TRANSPORT_RETRY_EXC_ERR => 0x81,
        _ => 0,
    }
}

/// (opcode, syndrome, wqe_counter) of each CQE; checks every error CQE's vendor syndrome.
pub fn summary(c: &[Cqe]) -> Vec<(u8, u8, u16)> {
    for e in c.iter().filter(|c| c.opcode >= REQ_ERR) {
        assert_eq!(e.vendor, vendor(e.syndrome), "{e:?}");
    }
    c.iter()
        .map(|c| (c.opcode, c.syndrome, c.wqe_counter))
        .collect()
}
