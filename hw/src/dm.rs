//! Device memory (MEMIC): on-chip memory of the NIC that the CPU writes through a
//! write-combining BAR mapping and that WQEs gather from without a DMA read.
//!
//! The memory and its allocations are the NIC's state (`state::dm`). A memory key registered
//! on it (`ibv_reg_dm_mr`) is zero based (libibverbs refuses a DM registration without
//! `IBV_ACCESS_ZERO_BASED`) and has no translation entries: the kernel creates it with the
//! MEMIC access mode and the on-chip start address (`mlx5_ib_get_dm_mr`).

use crate::pcie::Purpose;
use crate::state::NicState;
use crate::types::{Access, HwError};

/// The rights a device-memory key may have on the model: local read (gather) only. Writing
/// into device memory by the NIC (receive scatter, READ results, remote access) is not
/// modelled, so it is refused at registration rather than behaving unlike hardware later.
pub(crate) fn check_dm_access(access: Access) -> Result<(), HwError> {
    if access != Access::NONE {
        return Err(HwError::NotSupported(
            "device memory as a write or remote target (not modelled: local read only)",
        ));
    }
    Ok(())
}

/// One CPU write into allocation `dm` (an MMIO write TLP through the write-combining
/// mapping, counted as such): 4, 8 or 64 bytes aligned to their size, inside the
/// allocation. Anything else is counted in `Stats::bad_mmio` and dropped.
pub(crate) fn write(nic: &mut NicState, dm: u32, offset: u64, data: &[u8]) {
    let len = data.len() as u64;
    nic.mmio(None, len as u32, Purpose::DeviceMemory);
    let sized = matches!(len, 4 | 8 | 64) && offset % len == 0;
    match nic.dm.at(dm, offset, len) {
        Ok(addr) if sized => {
            crate::host::write(addr, data);
            nic.stats.dm_writes += 1;
        }
        _ => nic.stats.bad_mmio += 1,
    }
}

/// Where the on-chip byte `addr` of device-memory key `lkey` is, for a gather of `len`
/// bytes from it; `None` when the key is not on device memory.
pub(crate) fn host(nic: &mut NicState, lkey: u32, addr: u64, len: u32) -> Option<u64> {
    let m = nic.mr_mut(lkey)?.dm?;
    nic.stats.dm_gathers += 1;
    nic.stats.dm_gather_bytes += u64::from(len);
    Some(m.host + addr)
}
