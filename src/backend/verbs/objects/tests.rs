use super::*;
use crate::backend::mlx5dv::mlx5dv_dci_streams;
use crate::backend::mlx5dv::MLX5DV_DCTYPE_DCI;
use crate::backend::verbs::odp;

#[test]
fn uar_registers_split_into_page_and_offset() {
    let (base, offset) = uar_page(0x7f00_1234_5a00 as *mut c_void).unwrap();
    assert_eq!((base.as_ptr() as usize, offset), (0x7f00_1234_5000, 0xa00));
    assert!(uar_page(core::ptr::null_mut()).is_err());
}

#[test]
fn qps_are_created_for_the_operations_posted_and_no_memory_windows() {
    // verbs.h: RDMA_WRITE 1 << 0, RDMA_WRITE_WITH_IMM 1 << 1, SEND 1 << 2, SEND_WITH_IMM
    // 1 << 3, RDMA_READ 1 << 4, SEND_WITH_INV 1 << 9; CMP_AND_SWP 1 << 5, FETCH_AND_ADD
    // 1 << 6. Not LOCAL_INV (1 << 7) nor BIND_MW (1 << 8).
    assert_eq!(send_ops(Transport::Rc, false), 0b10_0001_1111);
    assert_eq!(send_ops(Transport::Rc, true), 0b10_0111_1111);
    // UC: no READ, no atomics, on any device; UD: SEND and SEND_WITH_IMM.
    assert_eq!(send_ops(Transport::Uc, true), 0b10_0000_1111);
    assert_eq!(send_ops(Transport::Ud, true), 0b1100);
    // An XRC initiator: RC's (`MLX5_SUPPORTED_SEND_OPS_FLAGS_XRC`).
    assert_eq!(send_ops(Transport::XrcIni, true), 0b10_0111_1111);
    assert_eq!(send_ops(Transport::Raw, true), 0b100);
}

#[test]
fn scatter_to_cqe_is_disabled_at_creation_unless_the_qp_asks_for_it() {
    // mlx5dv.h: MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS 1 << 0, MLX5DV_QP_INIT_ATTR_MASK_DC
    // 1 << 1; MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE 1 << 3, ALLOW_SCATTER_TO_CQE 1 << 4.
    let off = dv_qp_attr(None, false);
    assert_eq!((off.comp_mask, off.create_flags), (1, 1 << 3));
    let on = dv_qp_attr(None, true);
    assert_eq!((on.comp_mask, on.create_flags), (1, 0));
    let dci = mlx5dv_dc_init_attr::dci(mlx5dv_dci_streams::default());
    let dc = dv_qp_attr(Some(dci), false);
    assert_eq!((dc.comp_mask, dc.create_flags), (3, 1 << 3));
    assert_eq!(dc.dc_init_attr.dc_type, MLX5DV_DCTYPE_DCI);
    assert_eq!(dc.dc_init_attr.dct_access_key, 0);
    // mlx5dv.h: MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS 1 << 3.
    let streams = mlx5dv_dc_init_attr::dci(mlx5dv_dci_streams {
        log_num_concurent: 2,
        log_num_errored: 1,
    });
    let dcs = dv_qp_attr_streams(Some(streams), false, true);
    assert_eq!(dcs.comp_mask, 1 | 1 << 1 | 1 << 3);
    assert_eq!(
        dcs.dc_init_attr.dct_access_key.to_ne_bytes(),
        [2, 1, 0, 0, 0, 0, 0, 0]
    );
}

fn info(max_num: u32, formats: u32, comp_128: bool) -> VerbsDeviceInfo {
    VerbsDeviceInfo {
        fw_ver: String::new(),
        vendor_part_id: 4123,
        phys_port_cnt: 1,
        max_qp: 1 << 17,
        max_srq_wr: 1 << 15,
        max_srq_sge: 31,
        atomic_cap: 1,
        cqe_version: 1,
        cqe_128b_compression: comp_128,
        cqe_128b_padding: true,
        cqe_comp_max_num: max_num,
        cqe_comp_formats: formats,
        shut_up_bf: false,
        blueflame_reported: false,
        hca_core_clock_khz: 156_250,
        completion_timestamp_mask: (1 << 63) - 1,
        odp: odp::OdpCaps::default(),
        dci_streams: Some((4, 3)),
        max_tso: 1 << 18,
        enhanced_mpw: true,
        striding_rq: true,
    }
}

use crate::prm::MiniCqeFormat;

#[test]
fn dci_streams_beyond_the_device_caps_are_refused() {
    let s = |log_concurrent, log_errored| crate::types::DciStreams {
        log_concurrent,
        log_errored,
    };
    assert!(check_dci_streams(s(4, 3), Some((4, 3))).is_ok());
    for bad in [s(5, 0), s(1, 4)] {
        assert!(matches!(
            check_dci_streams(bad, Some((4, 3))),
            Err(Error::InvalidArgument(_))
        ));
    }
    assert!(matches!(
        check_dci_streams(s(1, 0), None),
        Err(Error::Unsupported(_))
    ));
}

#[test]
fn compression_is_refused_where_verbs_or_the_device_cannot() {
    let hash_csum = 0b011;
    let dev = info(64, hash_csum, false);
    let csum = CqeCompression {
        format: MiniCqeFormat::Csum,
        ..CqeCompression::BASIC
    };
    assert_eq!(check_compression(&dev, 64, CqeCompression::BASIC), Ok(()));
    assert_eq!(check_compression(&dev, 64, csum), Ok(()));
    let refused = |info: &VerbsDeviceInfo, size, c| match check_compression(info, size, c) {
        Err(Error::Unsupported(what)) => what,
        other => panic!("{other:?}"),
    };
    assert!(refused(&dev, 64, CqeCompression::ENHANCED).contains("DevX"));
    assert!(refused(&info(0, hash_csum, true), 64, CqeCompression::BASIC).contains("max_num"));
    let stridx = CqeCompression {
        format: MiniCqeFormat::CsumStridx,
        ..CqeCompression::BASIC
    };
    assert!(refused(&dev, 64, stridx).contains("supported_format"));
    assert!(refused(&dev, 128, CqeCompression::BASIC).contains("128-byte"));
    assert_eq!(
        check_compression(&info(64, hash_csum, true), 128, CqeCompression::BASIC),
        Ok(())
    );
}

#[test]
fn an_xrc_srqs_user_index_sits_4_bytes_before_its_ibv_srq() {
    // rdma-core providers/mlx5/mlx5.h (private; no installed header to check against):
    // `struct mlx5_resource` holds two 32-bit fields, the resource type then `rsn`, and
    // is the first member of `struct mlx5_srq`, right before its `verbs_srq`.
    assert_eq!(size_of::<Mlx5Resource>(), 8);
    assert_eq!(core::mem::offset_of!(Mlx5Resource, rsn), 4);
    // A stand-in laid out the same way: the key is `rsn` under CQE version 1, the SRQ
    // number under version 0.
    #[repr(C, align(8))]
    struct Msrq {
        rsc: Mlx5Resource,
        srq: ibv_srq,
    }
    // SAFETY: plain C data; all-zero is valid.
    let mut m: Msrq = unsafe { core::mem::zeroed() };
    m.rsc = Mlx5Resource {
        rsc_type: 3,
        rsn: 0x12_3456,
    };
    let srq = NonNull::from(&mut m.srq);
    // SAFETY: `srq` follows its resource as libmlx5 lays them out.
    assert_eq!(unsafe { xrc_srq_key(srq, 77, 1) }, 0x12_3456);
    // SAFETY: as above.
    assert_eq!(unsafe { xrc_srq_key(srq, 77, 0) }, 77);
}
