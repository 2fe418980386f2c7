//! `mlx5-hw`: a behavioural model of an mlx5 NIC and its PCIe link (work in progress).
#![deny(missing_docs)]
