//! The sysfs tree libibverbs reads to find devices (`SYSFS_PATH`, honoured by
//! `ibv_get_sysfs_path`), generated from the model's NICs.
//!
//! What is read, and by whom (rdma-core v44): `libibverbs/init.c` `setup_sysfs_dev` and
//! `setup_sysfs_uverbs` (each `class/infiniband_verbs/uverbsN`: `ibdev`, `dev` as
//! `major:minor`, `abi_version`; the device directory's mtime; `node_type`),
//! `check_abi_version` (`class/infiniband_verbs/abi_version`, which must be 6),
//! `match_modalias_device` (`device/modalias`, matched against libmlx5's PCI table),
//! `device.c` `ibv_get_device_guid` (`node_guid`), `cmd_device.c` `query_sysfs_gid` and
//! `query_sysfs_gid_type` (`ports/P/gids/N`, `ports/P/gid_attrs/types/N`: the GID query
//! falls back to them when the ioctl interface answers ENOTTY). `ibv_devinfo` adds
//! `board_id`. librdmacm's `check_abi_version_sysfs` (librdmacm/cma.c) reads
//! `class/misc/rdma_cm/abi_version` (`RDMA_USER_CM_ABI_VERSION`). On an Ethernet port each
//! GID's `ports/P/gid_attrs/ndevs/N` names the NIC's netdev ([`netdev`]), whose
//! `class/net/<netdev>/address` and `mtu` are the model's MAC and netdev MTU: what the
//! crate's verbs backend reads for raw Ethernet (under the device's `ibdev_path`, which
//! libibverbs builds from `SYSFS_PATH`).

use mlx5_hw::{GidType, LinkLayer, Nic};
use std::fs;
use std::io;
use std::path::Path;

/// The character device major of `uverbs` (`IB_UVERBS_MAJOR`, drivers/infiniband/core/uverbs_main.c).
pub const UVERBS_MAJOR: u32 = 231;
/// The minor of `uverbs0` (`IB_UVERBS_BASE_MINOR`).
pub const UVERBS_BASE_MINOR: u32 = 192;
/// Mellanox's PCI vendor id.
pub const PCI_VENDOR: u16 = 0x15b3;
/// ConnectX-5 (`MT27800`), one of libmlx5's `mlx5_hca_table` entries.
pub const PCI_DEVICE: u16 = 0x1017;
/// The firmware version the emulated NICs report.
pub const FW_VER: &str = "16.35.2000";

/// The node GUID of NIC `index`: the interface identifier of its InfiniBand GID 0 (the
/// model's `fe80::<lid>`), or one made from the index on RoCE.
pub fn node_guid(nic: &Nic, index: u32) -> u64 {
    let port = nic.port(1).expect("port 1");
    match port.link_layer {
        LinkLayer::InfiniBand => u64::from_be_bytes(port.gid[8..].try_into().unwrap()),
        LinkLayer::Ethernet => 0x0002_c903_00ab_0000 | u64::from(index + 1),
    }
}

/// The netdev name of NIC `index` on an Ethernet port (the model's choice: a ConnectX's
/// netdev is named by udev after its PCI slot).
pub fn netdev(index: u32) -> String {
    format!("mlx5emu{index}")
}

/// Write the tree for `nics` (`mlx5_0`, `mlx5_1`, ...) under `root`, replacing what is there.
pub fn write(root: &Path, nics: &[Nic]) -> io::Result<()> {
    if root.exists() {
        fs::remove_dir_all(root)?;
    }
    let verbs = root.join("class/infiniband_verbs");
    put(&verbs.join("abi_version"), "6")?;
    put(
        &root.join("class/misc/rdma_cm/abi_version"),
        &crate::abi::ucma::RDMA_USER_CM_ABI_VERSION.to_string(),
    )?;
    for (i, nic) in nics.iter().enumerate() {
        let i = i as u32;
        let name = format!("mlx5_{i}");
        let uverbs = verbs.join(format!("uverbs{i}"));
        put(&uverbs.join("ibdev"), &name)?;
        put(
            &uverbs.join("dev"),
            &format!("{UVERBS_MAJOR}:{}", UVERBS_BASE_MINOR + i),
        )?;
        // The provider ABI: libmlx5 accepts 1 (`MLX5_UVERBS_MIN_ABI_VERSION` ..= `MAX`).
        put(&uverbs.join("abi_version"), "1")?;
        let dev = root.join("class/infiniband").join(&name);
        put(&dev.join("node_type"), "1: CA")?;
        put(&dev.join("node_guid"), &guid_text(node_guid(nic, i)))?;
        put(&dev.join("sys_image_guid"), &guid_text(node_guid(nic, i)))?;
        put(&dev.join("fw_ver"), FW_VER)?;
        put(&dev.join("hca_type"), "MT4119")?;
        put(&dev.join("hw_rev"), "0")?;
        put(&dev.join("board_id"), "MLX5EMU0001")?;
        put(&dev.join("node_desc"), &format!("mlx5-emu {name}"))?;
        put(
            &dev.join("device/modalias"),
            &format!(
                "pci:v{:08X}d{:08X}sv{:08X}sd{:08X}bc02sc00i00",
                PCI_VENDOR, PCI_DEVICE, PCI_VENDOR, 0x0008
            ),
        )?;
        put(&dev.join("device/vendor"), &format!("0x{PCI_VENDOR:04x}"))?;
        put(&dev.join("device/device"), &format!("0x{PCI_DEVICE:04x}"))?;
        put(&dev.join("device/numa_node"), "-1")?;
        let port = nic.port(1).map_err(io::Error::other)?;
        let ports = dev.join("ports/1");
        let roce = port.link_layer == LinkLayer::Ethernet;
        put(
            &ports.join("link_layer"),
            if roce { "Ethernet" } else { "InfiniBand" },
        )?;
        for g in 0..port.gid_table_len {
            let entry = nic.query_gid(1, g).map_err(io::Error::other)?;
            put(&ports.join(format!("gids/{g}")), &gid_text(&entry.gid))?;
            if roce {
                let kind = match entry.gid_type {
                    GidType::RoceV2 => "RoCE v2",
                    GidType::Ib | GidType::RoceV1 => "IB/RoCE v1",
                };
                put(&ports.join(format!("gid_attrs/types/{g}")), kind)?;
                put(&ports.join(format!("gid_attrs/ndevs/{g}")), &netdev(i))?;
            }
        }
        if roce {
            let net = root.join("class/net").join(netdev(i));
            let eth = nic.eth_caps();
            let mac = eth.mac.map(|b| format!("{b:02x}"));
            put(&net.join("address"), &mac.join(":"))?;
            // The largest frame less the Ethernet header and one VLAN tag.
            put(&net.join("mtu"), &(eth.max_frame - 18).to_string())?;
        }
    }
    Ok(())
}

fn put(path: &Path, text: &str) -> io::Result<()> {
    fs::create_dir_all(path.parent().expect("a file in a directory"))?;
    fs::write(path, format!("{text}\n"))
}

/// `0002:c903:0000:0001`: how sysfs prints a GUID.
fn guid_text(guid: u64) -> String {
    hex_words(&guid.to_be_bytes())
}

/// `fe80:0000:0000:0000:0002:c903:0000:0001`: how sysfs prints a GID.
fn gid_text(gid: &[u8; 16]) -> String {
    hex_words(gid)
}

/// Big-endian 16-bit words in hex, joined by colons.
fn hex_words(bytes: &[u8]) -> String {
    bytes
        .chunks(2)
        .map(|w| format!("{:02x}{:02x}", w[0], w[1]))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_and_gids_print_as_sysfs_does() {
        assert_eq!(guid_text(0x0002_c903_0000_0001), "0002:c903:0000:0001");
        let mut gid = [0u8; 16];
        gid[0] = 0xfe;
        gid[1] = 0x80;
        gid[15] = 2;
        assert_eq!(gid_text(&gid), "fe80:0000:0000:0000:0000:0000:0000:0002");
    }
}
