//! Doorbell records (host memory the device reads) and the CQ arm doorbell.
//!
//! `MLX5_RCV_DBR`/`MLX5_SND_DBR`, `MLX5_CQ_SET_CI`/`MLX5_CQ_ARM_DB`, `MLX5_CQ_DOORBELL`
//! (rdma-core `mlx5.h`, `mlx5dv.h`). Facts: `shared/docs/prm-facts.md` §6.1, §6.2, §7.8.

use super::Be32;

/// `MLX5_RCV_DBR`: word of the QP doorbell record holding the receive counter.
pub const RCV_DBR: usize = 0;
/// `MLX5_SND_DBR`: word of the QP doorbell record holding the send WQEBB counter.
pub const SND_DBR: usize = 1;
/// `MLX5_CQ_SET_CI`: word of the CQ doorbell record holding the consumer index.
pub const CQ_SET_CI: usize = 0;
/// `MLX5_CQ_ARM_DB`: word of the CQ doorbell record holding the last arm request.
pub const CQ_ARM_DB: usize = 1;

/// `MLX5_CQ_DOORBELL`: offset of the CQ arm doorbell register in the UAR page.
pub const CQ_DOORBELL_OFFSET: usize = 0x20;
/// `MLX5_BF_OFFSET`: offset of the first doorbell / BlueFlame register in the UAR page.
pub const BF_OFFSET: usize = 0x800;

/// The 16 bits of a QP counter the device looks at.
pub const QP_COUNTER_MASK: u32 = 0xffff;
/// The 24 bits of the CQ consumer index the device looks at.
pub const CQ_CI_MASK: u32 = 0x00ff_ffff;

/// The value of a QP doorbell-record word for a producer counter.
#[inline(always)]
pub const fn qp_counter(counter: u32) -> Be32 {
    Be32::new(counter & QP_COUNTER_MASK)
}

/// The value of the CQ consumer-index word.
#[inline(always)]
pub const fn cq_set_ci(cons_index: u32) -> Be32 {
    Be32::new(cons_index & CQ_CI_MASK)
}

/// What an armed CQ waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArmCmd {
    /// An event on the next CQE (cmd 0).
    NextCqe,
    /// An event on the next solicited or error CQE (`MLX5_CQ_DB_REQ_NOT_SOL`, 1 << 24).
    Solicited,
}

/// `MLX5_CQ_DB_REQ_NOT_SOL`.
pub const CQ_DB_REQ_NOT_SOL: u32 = 1 << 24;
/// `MLX5_CQ_DB_REQ_NOT`.
pub const CQ_DB_REQ_NOT: u32 = 0;

/// A CQ arm request: sequence number (2 bits), command, consumer index, CQN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arm {
    /// Arm sequence number (`arm_sn & 3`), advanced per consumed event.
    pub sn: u32,
    /// What to wait for.
    pub cmd: ArmCmd,
    /// Consumer index at the time of arming.
    pub ci: u32,
    /// CQ number.
    pub cqn: u32,
}

impl Arm {
    /// `sn << 28 | cmd | ci`, host order.
    #[inline(always)]
    pub const fn word(&self) -> u32 {
        let cmd = match self.cmd {
            ArmCmd::NextCqe => CQ_DB_REQ_NOT,
            ArmCmd::Solicited => CQ_DB_REQ_NOT_SOL,
        };
        (self.sn & 3) << 28 | cmd | (self.ci & CQ_CI_MASK)
    }

    /// The value written to `dbrec[CQ_ARM_DB]`.
    #[inline(always)]
    pub const fn dbrec_word(&self) -> Be32 {
        Be32::new(self.word())
    }

    /// The 8 bytes of the 64-bit store to `UAR + 0x20`: `BE64(word << 32 | cqn)`.
    #[inline(always)]
    pub const fn doorbell_bytes(&self) -> [u8; 8] {
        ((self.word() as u64) << 32 | (self.cqn & CQ_CI_MASK) as u64).to_be_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_encoding() {
        let arm = Arm {
            sn: 5,
            cmd: ArmCmd::Solicited,
            ci: 0x0123_4567,
            cqn: 0x42,
        };
        assert_eq!(arm.word(), 0x1123_4567);
        assert_eq!(
            arm.doorbell_bytes(),
            [0x11, 0x23, 0x45, 0x67, 0, 0, 0, 0x42]
        );
        assert_eq!(qp_counter(0x1_0005).to_bytes(), [0, 0, 0, 5]);
        // The CQ's word keeps the consumer index's low 24 bits.
        assert_eq!(cq_set_ci(0x0123_4567).to_bytes(), [0, 0x23, 0x45, 0x67]);
        assert_eq!(cq_set_ci(0x00ff_ffff).to_bytes(), [0, 0xff, 0xff, 0xff]);
    }
}
