//! Opening a device through rdma-core where there may be none: the typed errors, which CI
//! checks on machines without an RDMA NIC, and again on the emulated ConnectX
//! (`hw/emu/verbs-hw.sh`), where a name no device has is the error.
#![cfg(feature = "verbs")]

use mlx5_direct::backend::verbs::{Verbs, VerbsOptions};
use mlx5_direct::{Context, Error};

/// Whether libibverbs will find devices: its sysfs (`SYSFS_PATH` when set, as
/// `ibv_get_sysfs_path` takes it, else `/sys`, so the emulator's tree under `mlx5-emu run`)
/// lists one.
fn has_rdma_devices() -> bool {
    let sysfs = std::env::var("SYSFS_PATH").unwrap_or_else(|_| "/sys".into());
    std::fs::read_dir(std::path::Path::new(&sysfs).join("class/infiniband"))
        .is_ok_and(|mut d| d.next().is_some())
}

#[test]
fn no_device_is_a_typed_error() {
    let options = VerbsOptions::default();
    if has_rdma_devices() {
        // A host with a NIC: a name no device has is still "no device".
        let named = VerbsOptions {
            device: Some("mlx5_no_such_device".into()),
            ..options
        };
        let err = Context::<Verbs>::open(&named).unwrap_err();
        assert!(
            matches!(&err, Error::NoDevice(why) if why.contains("mlx5_no_such_device")),
            "{err:?}"
        );
    } else {
        let err = Context::<Verbs>::open(&options).unwrap_err();
        assert!(matches!(err, Error::NoDevice(_)), "{err:?}");
        assert!(err.to_string().starts_with("no RDMA device: "), "{err}");
    }
}
