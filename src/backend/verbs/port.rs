//! Device discovery and port addressing: the device list, choosing a device by name or the
//! first mlx5 one, port attributes and the GID table (RoCE v2 chosen by default, as perftest
//! and rdma-core's tools read it from sysfs).

use core::ffi::CStr;
use core::ptr::NonNull;

use crate::backend::ffi::{
    ibv_context, ibv_device, ibv_free_device_list, ibv_get_device_list, ibv_get_device_name,
    ibv_gid, ibv_gid_entry, ibv_port_attr, ibv_port_state, ibv_query_gid, IBV_GID_TYPE_IB,
    IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2,
};

use super::attr::{mtu_bytes, Addressing};
use super::errno;
use crate::backend::mlx5dv::{
    mlx5dv_is_supported, IBV_LINK_LAYER_ETHERNET, IBV_LINK_LAYER_INFINIBAND,
};
use crate::error::Error;
use crate::types::GidEntry;

/// Where the kernel lists RDMA devices.
const SYSFS: &str = "/sys/class/infiniband";

/// The list `ibv_get_device_list` returns, freed on drop.
pub(crate) struct DeviceList {
    list: NonNull<*mut ibv_device>,
    len: usize,
}

impl DeviceList {
    /// Lists the RDMA devices libibverbs can drive.
    ///
    /// A NULL list means libibverbs could not look at all: `ENOSYS` when the kernel has no
    /// RDMA support (no `ib_uverbs`), other errnos for permission or memory problems.
    pub(crate) fn get() -> Result<DeviceList, Error> {
        let mut len = 0;
        // SAFETY: `len` is a valid out-pointer; the returned list is freed in `Drop`.
        let list = unsafe { ibv_get_device_list(&mut len) };
        match NonNull::new(list) {
            Some(list) => Ok(DeviceList {
                list,
                len: len.max(0) as usize,
            }),
            None => {
                let err = std::io::Error::last_os_error();
                Err(match err.raw_os_error() {
                    Some(libc::ENOSYS) => Error::NoDevice(
                        "the kernel has no RDMA support (ibv_get_device_list: ENOSYS; \
                         load ib_uverbs and mlx5_ib)"
                            .into(),
                    ),
                    _ => Error::Device {
                        operation: "list RDMA devices",
                        reason: err.to_string(),
                    },
                })
            }
        }
    }

    /// The devices, with their names.
    pub(crate) fn devices(&self) -> impl Iterator<Item = (String, NonNull<ibv_device>)> + '_ {
        (0..self.len).filter_map(move |i| {
            // SAFETY: `i < len` entries of the list are valid device pointers.
            let dev = NonNull::new(unsafe { *self.list.as_ptr().add(i) })?;
            Some((device_name(dev), dev))
        })
    }

    /// The device called `name`, or the first mlx5 device. Refuses a named non-mlx5 device.
    pub(crate) fn choose(
        &self,
        name: Option<&str>,
    ) -> Result<(String, NonNull<ibv_device>), Error> {
        let found: Vec<_> = self.devices().collect();
        if found.is_empty() {
            return Err(Error::NoDevice(no_device_reason()));
        }
        let names = || {
            found
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match name {
            Some(name) => {
                let &(_, dev) = found.iter().find(|(n, _)| n == name).ok_or_else(|| {
                    Error::NoDevice(format!("no device named {name} (found: {})", names()))
                })?;
                if !is_mlx5(dev) {
                    return Err(Error::NotMlx5(name.into()));
                }
                Ok((name.into(), dev))
            }
            None => found
                .iter()
                .find(|(_, dev)| is_mlx5(*dev))
                .cloned()
                .ok_or_else(|| Error::NotMlx5(names())),
        }
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the list came from `ibv_get_device_list` and is freed once. Devices opened
        // from it stay valid (libibverbs reference-counts them).
        unsafe { ibv_free_device_list(self.list.as_ptr()) }
    }
}

fn device_name(dev: NonNull<ibv_device>) -> String {
    // SAFETY: a listed device has a NUL-terminated name that lives as long as the device.
    let name = unsafe { ibv_get_device_name(dev.as_ptr()) };
    if name.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated (above).
    unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

/// The device's directory in sysfs (`ibv_device.ibdev_path`, e.g.
/// `/sys/class/infiniband/mlx5_0`): libibverbs builds it from the sysfs root it uses, which
/// `SYSFS_PATH` moves (as the emulator's tree, hw/emu).
pub(crate) fn sysfs_dir(ctx: NonNull<ibv_context>) -> std::path::PathBuf {
    // SAFETY: an open context's device lives as long as the context, and its `ibdev_path`
    // is a NUL-terminated array.
    let path = unsafe { CStr::from_ptr((*(*ctx.as_ptr()).device).ibdev_path.as_ptr()) };
    std::path::PathBuf::from(path.to_string_lossy().into_owned())
}

fn is_mlx5(dev: NonNull<ibv_device>) -> bool {
    // SAFETY: a valid listed device.
    unsafe { mlx5dv_is_supported(dev.as_ptr()) }
}

/// Why the list is empty: no devices at all, or devices libibverbs has no provider for.
fn no_device_reason() -> String {
    let in_sysfs: Vec<String> = std::fs::read_dir(SYSFS)
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if in_sysfs.is_empty() {
        format!("none found ({SYSFS} is empty or absent: no RDMA NIC, or its driver is not loaded)")
    } else {
        format!(
            "the kernel has {} but libibverbs lists none: install the rdma-core provider \
             libraries (Debian: ibverbs-providers) and check /dev/infiniband permissions",
            in_sysfs.join(", ")
        )
    }
}

/// A port's link layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand: LID addressing.
    InfiniBand,
    /// Ethernet: RoCE, GID addressing.
    Ethernet,
    /// A value verbs does not define (or "unspecified", which means InfiniBand).
    Other(u8),
}

/// The type of a GID table entry (`gid_attrs/types/<index>` in sysfs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidType {
    /// "IB/RoCE v1": InfiniBand, or RoCE v1 on Ethernet.
    IbRoceV1,
    /// "RoCE v2": routable RoCE over UDP.
    RoceV2,
}

/// A port's attributes as the `verbs` backend sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerbsPort {
    /// Port number (from 1).
    pub port: u8,
    /// True when the port is ACTIVE.
    pub active: bool,
    /// Link layer.
    pub link_layer: LinkLayer,
    /// LID (InfiniBand; 0 on Ethernet).
    pub lid: u16,
    /// Active MTU in bytes.
    pub active_mtu: u32,
    /// Largest MTU the port supports, in bytes.
    pub max_mtu: u32,
    /// Largest message in bytes (`max_msg_sz`).
    pub max_msg_size: u32,
    /// Entries in the GID table.
    pub gid_table_len: u32,
    /// The GID index this backend uses on this port.
    pub gid_index: u32,
    /// That GID.
    pub gid: [u8; 16],
    /// Its type, when sysfs says.
    pub gid_type: Option<GidType>,
    /// The GID index was given (perftest's `-x`): on InfiniBand every path from this port
    /// then carries a GRH from it ([`Addressing::LidGrh`]), as perftest sets `is_global`
    /// whenever `-x` is given.
    pub gid_given: bool,
}

impl VerbsPort {
    /// How QPs on this port address their peers.
    pub fn addressing(&self) -> Addressing {
        match self.link_layer {
            LinkLayer::Ethernet => Addressing::Gid {
                sgid_index: self.gid_index as u8,
            },
            _ if self.gid_given => Addressing::LidGrh {
                sgid_index: self.gid_index as u8,
            },
            _ => Addressing::Lid,
        }
    }
}

/// A GID type as sysfs writes it.
pub(crate) fn parse_gid_type(text: &str) -> Option<GidType> {
    match text.trim() {
        "RoCE v2" => Some(GidType::RoceV2),
        "IB/RoCE v1" => Some(GidType::IbRoceV1),
        _ => None,
    }
}

#[link(name = "ibverbs")]
extern "C" {
    /// What `ibv_query_gid_ex` (an inline of `<infiniband/verbs.h>`) calls: entry
    /// `gid_index` of the port's table into `entry` (`entry_size` bytes); 0 or an errno
    /// (`ENODATA`: the entry is empty).
    fn _ibv_query_gid_ex(
        context: *mut ibv_context,
        port_num: u32,
        gid_index: u32,
        entry: *mut ibv_gid_entry,
        flags: u32,
        entry_size: usize,
    ) -> core::ffi::c_int;
}

/// Entry `index` of `port`'s GID table (`ibv_query_gid_ex`).
pub(crate) fn query_gid_ex(
    ctx: NonNull<ibv_context>,
    port: u8,
    index: u32,
) -> Result<GidEntry, Error> {
    // SAFETY: `ibv_gid_entry` is plain C data; zero is valid for every field.
    let mut entry: ibv_gid_entry = unsafe { core::mem::zeroed() };
    // SAFETY: an open context, a valid out-pointer and its size; no flags are defined.
    let rc = unsafe {
        _ibv_query_gid_ex(
            ctx.as_ptr(),
            u32::from(port),
            index,
            &mut entry,
            0,
            core::mem::size_of::<ibv_gid_entry>(),
        )
    };
    if rc != 0 {
        return Err(Error::Device {
            operation: "query GID",
            reason: format!("index {index} of port {port}: {}", errno(rc)),
        });
    }
    let gid_type = match entry.gid_type {
        IBV_GID_TYPE_IB => crate::types::GidType::Ib,
        IBV_GID_TYPE_ROCE_V1 => crate::types::GidType::RoceV1,
        IBV_GID_TYPE_ROCE_V2 => crate::types::GidType::RoceV2,
        other => {
            return Err(Error::Device {
                operation: "query GID",
                reason: format!("index {index} of port {port}: unknown GID type {other}"),
            })
        }
    };
    // SAFETY: every bit pattern is a valid `raw` view.
    let gid = unsafe { entry.gid.raw };
    Ok(GidEntry { gid, gid_type })
}

/// True for an IPv4-mapped GID (`::ffff:a.b.c.d`).
fn is_ipv4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff
}

/// The default GID index among `(index, gid, type)` entries: on Ethernet the first RoCE v2
/// GID holding an IPv4 address, else the first RoCE v2 GID, else the first non-empty one;
/// on InfiniBand index 0.
pub(crate) fn default_gid(
    link_layer: LinkLayer,
    entries: &[(u32, [u8; 16], Option<GidType>)],
) -> Option<u32> {
    let used = || entries.iter().filter(|(_, gid, _)| *gid != [0; 16]);
    if link_layer != LinkLayer::Ethernet {
        return used().find(|(i, _, _)| *i == 0).map(|e| e.0);
    }
    let v2 = || used().filter(|(_, _, t)| *t == Some(GidType::RoceV2));
    v2().find(|(_, gid, _)| is_ipv4_mapped(gid))
        .or_else(|| v2().next())
        .or_else(|| used().next())
        .map(|e| e.0)
}

/// Queries `port` of the open device `name`, with the GID at `gid_index` or the default one.
pub(crate) fn query_port(
    ctx: NonNull<ibv_context>,
    name: &str,
    port: u8,
    gid_index: Option<u32>,
) -> Result<VerbsPort, Error> {
    // SAFETY: `ibv_port_attr` is plain C data; zero is valid for every field.
    let mut attr: ibv_port_attr = unsafe { core::mem::zeroed() };
    // SAFETY: an open context.
    let rc = unsafe { super::ext::query_port(ctx.as_ptr(), port, &mut attr) };
    if rc != 0 {
        return Err(Error::Device {
            operation: "query port",
            reason: format!("port {port} of {name}: {}", errno(rc)),
        });
    }
    let link_layer = match attr.link_layer {
        IBV_LINK_LAYER_ETHERNET => LinkLayer::Ethernet,
        IBV_LINK_LAYER_INFINIBAND | 0 => LinkLayer::InfiniBand,
        other => LinkLayer::Other(other),
    };
    let gid_table_len = attr.gid_tbl_len.max(0) as u32;
    let gid_at = |index: u32| -> Result<[u8; 16], Error> {
        // SAFETY: `ibv_gid` is 16 plain bytes.
        let mut gid: ibv_gid = unsafe { core::mem::zeroed() };
        // SAFETY: an open context, an index inside the table and a valid out-pointer.
        let rc = unsafe { ibv_query_gid(ctx.as_ptr(), port, index as i32, &mut gid) };
        if rc != 0 {
            return Err(Error::Device {
                operation: "query GID",
                reason: format!("index {index} of port {port}: {}", errno(rc)),
            });
        }
        // SAFETY: every bit pattern is a valid `raw` view.
        Ok(unsafe { gid.raw })
    };
    let gid_type = |index: u32| {
        std::fs::read_to_string(format!(
            "{SYSFS}/{name}/ports/{port}/gid_attrs/types/{index}"
        ))
        .ok()
        .and_then(|t| parse_gid_type(&t))
    };
    let index = match gid_index {
        Some(index) if index >= gid_table_len || index > u8::MAX as u32 => {
            return Err(Error::InvalidArgument(
                "GID index beyond the port's GID table",
            ))
        }
        Some(index) => {
            if gid_at(index)? == [0; 16] {
                return Err(Error::InvalidArgument("the GID at that index is empty"));
            }
            index
        }
        None => {
            let scan = match link_layer {
                LinkLayer::Ethernet => gid_table_len.min(u8::MAX as u32 + 1),
                _ => gid_table_len.min(1),
            };
            let mut entries = Vec::with_capacity(scan as usize);
            for i in 0..scan {
                entries.push((i, gid_at(i)?, gid_type(i)));
            }
            default_gid(link_layer, &entries).ok_or_else(|| Error::Device {
                operation: "choose a GID",
                reason: format!("port {port} of {name} has no usable GID (is an IP configured?)"),
            })?
        }
    };
    Ok(VerbsPort {
        port,
        active: attr.state == ibv_port_state::IBV_PORT_ACTIVE,
        link_layer,
        lid: attr.lid,
        active_mtu: mtu_bytes(attr.active_mtu),
        max_mtu: mtu_bytes(attr.max_mtu),
        max_msg_size: attr.max_msg_sz,
        gid_table_len,
        gid_index: index,
        gid: gid_at(index)?,
        gid_type: gid_type(index),
        gid_given: gid_index.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V4: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1];
    const LINK_LOCAL: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1];

    #[test]
    fn sysfs_gid_types_parse() {
        assert_eq!(parse_gid_type("RoCE v2\n"), Some(GidType::RoceV2));
        assert_eq!(parse_gid_type("IB/RoCE v1\n"), Some(GidType::IbRoceV1));
        assert_eq!(parse_gid_type("something else"), None);
    }

    #[test]
    fn roce_prefers_a_v2_gid_with_an_ipv4_address() {
        let v1 = Some(GidType::IbRoceV1);
        let v2 = Some(GidType::RoceV2);
        let table = [
            (0, LINK_LOCAL, v1),
            (1, LINK_LOCAL, v2),
            (2, V4, v1),
            (3, V4, v2),
        ];
        assert_eq!(default_gid(LinkLayer::Ethernet, &table), Some(3));
        assert_eq!(default_gid(LinkLayer::Ethernet, &table[..3]), Some(1));
        assert_eq!(default_gid(LinkLayer::Ethernet, &table[..1]), Some(0));
        assert_eq!(default_gid(LinkLayer::Ethernet, &[(0, [0; 16], v2)]), None);
    }

    #[test]
    fn infiniband_uses_index_zero() {
        let table = [(0, LINK_LOCAL, None)];
        assert_eq!(default_gid(LinkLayer::InfiniBand, &table), Some(0));
        assert_eq!(
            default_gid(LinkLayer::InfiniBand, &[(0, [0; 16], None)]),
            None
        );
    }

    #[test]
    fn roce_ports_address_by_gid_index() {
        let mut port = VerbsPort {
            port: 1,
            active: true,
            link_layer: LinkLayer::Ethernet,
            lid: 0,
            active_mtu: 1024,
            max_mtu: 4096,
            max_msg_size: 1 << 30,
            gid_table_len: 8,
            gid_index: 3,
            gid: V4,
            gid_type: Some(GidType::RoceV2),
            gid_given: false,
        };
        assert_eq!(port.addressing(), Addressing::Gid { sgid_index: 3 });
        port.link_layer = LinkLayer::InfiniBand;
        assert_eq!(port.addressing(), Addressing::Lid);
        port.gid_given = true;
        assert_eq!(port.addressing(), Addressing::LidGrh { sgid_index: 3 });
    }
}
