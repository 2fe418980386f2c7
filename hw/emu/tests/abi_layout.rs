//! Layout tests: every struct, field and constant of `mlx5_emu::abi` against the kernel's
//! uapi headers (`<rdma/ib_user_verbs.h>`, `<rdma/ib_user_ioctl_verbs.h>`, `<rdma/mlx5-abi.h>`,
//! the ioctl interface's `<rdma/rdma_user_ioctl_cmds.h>`, `<rdma/ib_user_ioctl_cmds.h>`,
//! `<rdma/mlx5_user_ioctl_cmds.h>` and `<rdma/mlx5_user_ioctl_verbs.h>`, the rdma_cm's
//! `<rdma/rdma_user_cm.h>` and `<rdma/ib_user_sa.h>`, and the two mmap commands of
//! rdma-core's `<infiniband/mlx5dv.h>`), and the few values of librdmacm's and libibverbs'
//! own headers (`<rdma/rdma_cma.h>`, `<infiniband/ib.h>`, `<infiniband/sa.h>`) that the
//! rdma_cm answers use.
//!
//! The reference values come from the `mlx5-golden` shim (`tests/golden-shim/c/uverbs.c`,
//! `mlx5_abi.c`, `uverbs_ioctl.c`, `ucma.c` and `rdmacm.c`), which compiles C against the
//! installed headers: `sizeof`, `_Alignof`,
//! `offsetof` and member sizes, and the constants' values. Without the headers (no
//! libibverbs-dev) the comparisons are ignored; `MLX5_DIRECT_REQUIRE_GOLDEN=1` turns a missing
//! header into a build error instead. Whether every mirror here is compared at all is checked
//! without the headers too.

use core::mem::{align_of, offset_of, size_of};
use std::collections::{BTreeMap, BTreeSet};

use mlx5_emu::abi::ioctl::*;
use mlx5_emu::abi::mlx5::*;
use mlx5_emu::abi::ucma::*;
use mlx5_emu::abi::uverbs::*;
use mlx5_golden as golden;

/// One of our structs: its (C) name, size and alignment, and each field's name, offset and
/// size. A trailing flexible array of the header is a field of size 0 at our struct's end.
struct Layout {
    strct: &'static str,
    size: usize,
    align: usize,
    fields: Vec<(&'static str, usize, usize)>,
}

impl Layout {
    /// The header's trailing flexible array `name` (the driver data): the rest of the buffer,
    /// which starts where our struct ends.
    fn tail(mut self, name: &'static str) -> Self {
        self.fields.push((name, self.size, 0));
        self
    }

    /// The header's union member `name`, which shares our field `of`'s bytes.
    fn alias(mut self, name: &'static str, of: &str) -> Self {
        let &(_, offset, size) = self.fields.iter().find(|f| f.0 == of).unwrap();
        self.fields.push((name, offset, size));
        self
    }

    /// The header's union member `name`, `size` bytes at byte `at` of our field `of`.
    fn part(mut self, name: &'static str, of: &str, at: usize, size: usize) -> Self {
        let &(_, offset, whole) = self.fields.iter().find(|f| f.0 == of).unwrap();
        assert!(at + size <= whole, "{name} inside {of}");
        self.fields.push((name, offset + at, size));
        self
    }

    /// The header's union member `name` of `size` bytes at the start of our field `of`,
    /// which holds the union's bytes.
    fn member(mut self, name: &'static str, of: &str, size: usize) -> Self {
        let &(_, offset, _) = self.fields.iter().find(|f| f.0 == of).unwrap();
        self.fields.push((name, offset, size));
        self
    }

    /// Our field `ours` is the header's `theirs` (a C name that is a Rust keyword).
    fn rename(mut self, ours: &str, theirs: &'static str) -> Self {
        self.fields.iter_mut().find(|f| f.0 == ours).unwrap().0 = theirs;
        self
    }
}

/// The size of the field `F` of some struct, given a projection to it (no value needed).
fn size_of_field<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// The [`Layout`] of our struct `$s`, from `offset_of!` and the fields' types.
macro_rules! layout {
    ($s:ident: $($f:ident $(. $g:ident)?),* $(,)?) => {
        Layout {
            strct: stringify!($s),
            size: size_of::<$s>(),
            align: align_of::<$s>(),
            fields: vec![$((
                concat!(stringify!($f) $(, ".", stringify!($g))?),
                offset_of!($s, $f $(. $g)?),
                size_of_field(|s: &$s| &s.$f $(. $g)?),
            )),*],
        }
    };
}

/// Every struct of `abi::uverbs` (but the header's anonymous `per_transport_caps`, whose
/// members are compared as paths of `ib_uverbs_odp_caps`) and of `abi::mlx5`.
fn layouts() -> Vec<Layout> {
    vec![
        layout!(ib_uverbs_cmd_hdr: command, in_words, out_words),
        layout!(ib_uverbs_ex_cmd_hdr:
            response, provider_in_words, provider_out_words, cmd_hdr_reserved
        ),
        layout!(ib_uverbs_async_event_desc: element, event_type, reserved),
        layout!(ib_uverbs_comp_event_desc: cq_handle),
        layout!(ib_uverbs_get_context: response).tail("driver_data"),
        layout!(ib_uverbs_get_context_resp: async_fd, num_comp_vectors).tail("driver_data"),
        layout!(ib_uverbs_query_device: response).tail("driver_data"),
        layout!(ib_uverbs_query_device_resp:
            fw_ver, node_guid, sys_image_guid, max_mr_size, page_size_cap, vendor_id,
            vendor_part_id, hw_ver, max_qp, max_qp_wr, device_cap_flags, max_sge, max_sge_rd,
            max_cq, max_cqe, max_mr, max_pd, max_qp_rd_atom, max_ee_rd_atom, max_res_rd_atom,
            max_qp_init_rd_atom, max_ee_init_rd_atom, atomic_cap, max_ee, max_rdd, max_mw,
            max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp, max_mcast_qp_attach,
            max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr, max_srq, max_srq_wr,
            max_srq_sge, max_pkeys, local_ca_ack_delay, phys_port_cnt, reserved
        ),
        layout!(ib_uverbs_ex_query_device: comp_mask, reserved),
        layout!(ib_uverbs_odp_caps:
            general_caps, per_transport_caps, per_transport_caps.rc_odp_caps,
            per_transport_caps.uc_odp_caps, per_transport_caps.ud_odp_caps, reserved
        ),
        layout!(ib_uverbs_rss_caps:
            supported_qpts, max_rwq_indirection_tables, max_rwq_indirection_table_size, reserved
        ),
        layout!(ib_uverbs_tm_caps:
            max_rndv_hdr_size, max_num_tags, flags, max_ops, max_sge, reserved
        ),
        layout!(ib_uverbs_cq_moderation_caps:
            max_cq_moderation_count, max_cq_moderation_period, reserved
        ),
        layout!(ib_uverbs_ex_query_device_resp:
            base, comp_mask, response_length, odp_caps, timestamp_mask, hca_core_clock,
            device_cap_flags_ex, rss_caps, max_wq_type_rq, raw_packet_caps, tm_caps,
            cq_moderation_caps, max_dm_size, xrc_odp_caps, reserved
        ),
        layout!(ib_uverbs_query_port: response, port_num, reserved).tail("driver_data"),
        layout!(ib_uverbs_query_port_resp:
            port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr, gid_tbl_len, pkey_tbl_len,
            lid, sm_lid, state, max_mtu, active_mtu, lmc, max_vl_num, sm_sl, subnet_timeout,
            init_type_reply, active_width, active_speed, phys_state, link_layer, flags, reserved
        ),
        layout!(ib_uverbs_alloc_pd: response).tail("driver_data"),
        layout!(ib_uverbs_alloc_pd_resp: pd_handle).tail("driver_data"),
        layout!(ib_uverbs_dealloc_pd: pd_handle),
        layout!(ib_uverbs_open_xrcd: response, fd, oflags).tail("driver_data"),
        layout!(ib_uverbs_open_xrcd_resp: xrcd_handle).tail("driver_data"),
        layout!(ib_uverbs_close_xrcd: xrcd_handle),
        layout!(ib_uverbs_reg_mr:
            response, start, length, hca_va, pd_handle, access_flags
        )
        .tail("driver_data"),
        layout!(ib_uverbs_reg_mr_resp: mr_handle, lkey, rkey).tail("driver_data"),
        layout!(ib_uverbs_dereg_mr: mr_handle),
        layout!(ib_uverbs_create_comp_channel: response),
        layout!(ib_uverbs_create_comp_channel_resp: fd),
        layout!(ib_uverbs_create_cq:
            response, user_handle, cqe, comp_vector, comp_channel, reserved
        )
        .tail("driver_data"),
        layout!(ib_uverbs_ex_create_cq:
            user_handle, cqe, comp_vector, comp_channel, comp_mask, flags, reserved
        ),
        layout!(ib_uverbs_create_cq_resp: cq_handle, cqe).tail("driver_data"),
        layout!(ib_uverbs_ex_create_cq_resp: base, comp_mask, response_length),
        layout!(ib_uverbs_resize_cq: response, cq_handle, cqe).tail("driver_data"),
        layout!(ib_uverbs_resize_cq_resp: cqe, reserved).tail("driver_data"),
        layout!(ib_uverbs_destroy_cq: response, cq_handle, reserved),
        layout!(ib_uverbs_destroy_cq_resp: comp_events_reported, async_events_reported),
        layout!(ib_uverbs_global_route:
            dgid, flow_label, sgid_index, hop_limit, traffic_class, reserved
        ),
        layout!(ib_uverbs_ah_attr:
            grh, dlid, sl, src_path_bits, static_rate, is_global, port_num, reserved
        ),
        layout!(ib_uverbs_qp_attr:
            qp_attr_mask, qp_state, cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn, sq_psn,
            dest_qp_num, qp_access_flags, ah_attr, alt_ah_attr, max_send_wr, max_recv_wr,
            max_send_sge, max_recv_sge, max_inline_data, pkey_index, alt_pkey_index,
            en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer,
            port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, reserved
        ),
        layout!(ib_uverbs_qp_dest:
            dgid, flow_label, dlid, reserved, sgid_index, hop_limit, traffic_class, sl,
            src_path_bits, static_rate, is_global, port_num
        ),
        layout!(ib_uverbs_create_qp:
            response, user_handle, pd_handle, send_cq_handle, recv_cq_handle, srq_handle,
            max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, sq_sig_all,
            qp_type, is_srq, reserved
        )
        .tail("driver_data"),
        layout!(ib_uverbs_ex_create_qp:
            user_handle, pd_handle, send_cq_handle, recv_cq_handle, srq_handle, max_send_wr,
            max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, sq_sig_all, qp_type, is_srq,
            reserved, comp_mask, create_flags, rwq_ind_tbl_handle, source_qpn
        ),
        layout!(ib_uverbs_create_qp_resp:
            qp_handle, qpn, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data,
            reserved
        )
        .tail("driver_data"),
        layout!(ib_uverbs_ex_create_qp_resp: base, comp_mask, response_length),
        layout!(ib_uverbs_query_qp: response, qp_handle, attr_mask).tail("driver_data"),
        layout!(ib_uverbs_query_qp_resp:
            dest, alt_dest, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data,
            qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags, pkey_index, alt_pkey_index,
            qp_state, cur_qp_state, path_mtu, path_mig_state, sq_draining, max_rd_atomic,
            max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry,
            alt_port_num, alt_timeout, sq_sig_all, reserved
        )
        .tail("driver_data"),
        layout!(ib_uverbs_modify_qp:
            dest, alt_dest, qp_handle, attr_mask, qkey, rq_psn, sq_psn, dest_qp_num,
            qp_access_flags, pkey_index, alt_pkey_index, qp_state, cur_qp_state, path_mtu,
            path_mig_state, en_sqd_async_notify, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer,
            port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, reserved
        )
        .tail("driver_data"),
        layout!(ib_uverbs_ex_modify_qp: base, rate_limit, reserved),
        layout!(ib_uverbs_ex_modify_qp_resp: comp_mask, response_length),
        layout!(ib_uverbs_destroy_qp: response, qp_handle, reserved),
        layout!(ib_uverbs_destroy_qp_resp: events_reported),
        layout!(ib_uverbs_create_srq:
            response, user_handle, pd_handle, max_wr, max_sge, srq_limit
        )
        .tail("driver_data"),
        layout!(ib_uverbs_create_xsrq:
            response, user_handle, srq_type, pd_handle, max_wr, max_sge, srq_limit, max_num_tags,
            xrcd_handle, cq_handle
        )
        .tail("driver_data"),
        layout!(ib_uverbs_create_srq_resp: srq_handle, max_wr, max_sge, srqn).tail("driver_data"),
        layout!(ib_uverbs_modify_srq: srq_handle, attr_mask, max_wr, srq_limit).tail("driver_data"),
        layout!(ib_uverbs_query_srq: response, srq_handle, reserved).tail("driver_data"),
        layout!(ib_uverbs_query_srq_resp: max_wr, max_sge, srq_limit, reserved),
        layout!(ib_uverbs_destroy_srq: response, srq_handle, reserved),
        layout!(ib_uverbs_destroy_srq_resp: events_reported),
        layout!(ib_uverbs_create_ah:
            response, user_handle, pd_handle, reserved, attr
        )
        .tail("driver_data"),
        layout!(ib_uverbs_create_ah_resp: ah_handle).tail("driver_data"),
        layout!(ib_uverbs_destroy_ah: ah_handle),
        layout!(ib_uverbs_attach_mcast: gid, qp_handle, mlid, reserved).tail("driver_data"),
        layout!(ib_uverbs_detach_mcast: gid, qp_handle, mlid, reserved).tail("driver_data"),
        layout!(ib_uverbs_flow_spec_hdr: r#type, size, reserved)
            .rename("r#type", "type")
            .tail("flow_spec_data"),
        layout!(ib_uverbs_flow_eth_filter: dst_mac, src_mac, ether_type, vlan_tag),
        layout!(ib_uverbs_flow_spec_eth: hdr, val, mask),
        layout!(ib_uverbs_flow_ipv4_filter: src_ip, dst_ip, proto, tos, ttl, flags),
        layout!(ib_uverbs_flow_spec_ipv4: hdr, val, mask),
        layout!(ib_uverbs_flow_tcp_udp_filter: dst_port, src_port),
        layout!(ib_uverbs_flow_spec_tcp_udp: hdr, val, mask),
        layout!(ib_uverbs_flow_ipv6_filter:
            src_ip, dst_ip, flow_label, next_hdr, traffic_class, hop_limit, reserved
        ),
        layout!(ib_uverbs_flow_spec_ipv6: hdr, val, mask),
        layout!(ib_uverbs_flow_spec_action_tag: hdr, tag_id, reserved1),
        layout!(ib_uverbs_flow_spec_action_drop: hdr),
        layout!(ib_uverbs_flow_attr:
            r#type, size, priority, num_of_specs, reserved, port, flags
        )
        .rename("r#type", "type")
        .tail("flow_specs"),
        layout!(ib_uverbs_create_flow: comp_mask, qp_handle, flow_attr),
        layout!(ib_uverbs_create_flow_resp: comp_mask, flow_handle),
        layout!(ib_uverbs_destroy_flow: comp_mask, flow_handle),
        layout!(ib_uverbs_ex_create_wq:
            comp_mask, wq_type, user_handle, pd_handle, cq_handle, max_wr, max_sge, create_flags,
            reserved
        ),
        layout!(ib_uverbs_ex_create_wq_resp:
            comp_mask, response_length, wq_handle, max_wr, max_sge, wqn
        ),
        layout!(ib_uverbs_ex_destroy_wq: comp_mask, wq_handle),
        layout!(ib_uverbs_ex_destroy_wq_resp:
            comp_mask, response_length, events_reported, reserved
        ),
        layout!(ib_uverbs_ex_modify_wq:
            attr_mask, wq_handle, wq_state, curr_wq_state, flags, flags_mask
        ),
        layout!(ib_uverbs_ex_create_rwq_ind_table: comp_mask, log_ind_tbl_size).tail("wq_handles"),
        layout!(ib_uverbs_ex_create_rwq_ind_table_resp:
            comp_mask, response_length, ind_tbl_handle, ind_tbl_num
        ),
        layout!(ib_uverbs_ex_destroy_rwq_ind_table: comp_mask, ind_tbl_handle),
        layout!(mlx5_ib_alloc_ucontext_req: total_num_bfregs, num_low_latency_bfregs),
        layout!(mlx5_ib_alloc_ucontext_req_v2:
            total_num_bfregs, num_low_latency_bfregs, flags, comp_mask, max_cqe_version, reserved0,
            reserved1, reserved2, lib_caps
        ),
        layout!(mlx5_ib_alloc_ucontext_resp:
            qp_tab_size, bf_reg_size, tot_bfregs, cache_line_size, max_sq_desc_sz, max_rq_desc_sz,
            max_send_wqebb, max_recv_wr, max_srq_recv_wr, num_ports, flow_action_flags, comp_mask,
            response_length, cqe_version, cmds_supp_uhw, eth_min_inline, clock_info_versions,
            hca_core_clock_offset, log_uar_size, num_uars_per_page, num_dyn_bfregs, dump_fill_mkey
        ),
        layout!(mlx5_ib_alloc_pd_resp: pdn),
        layout!(mlx5_ib_tso_caps: max_tso, supported_qpts),
        layout!(mlx5_ib_rss_caps: rx_hash_fields_mask, rx_hash_function, reserved),
        layout!(mlx5_ib_cqe_comp_caps: max_num, supported_format),
        layout!(mlx5_packet_pacing_caps:
            qp_rate_limit_min, qp_rate_limit_max, supported_qpts, cap_flags, reserved
        ),
        layout!(mlx5_ib_sw_parsing_caps: sw_parsing_offloads, supported_qpts),
        layout!(mlx5_ib_striding_rq_caps:
            min_single_stride_log_num_of_bytes, max_single_stride_log_num_of_bytes,
            min_single_wqe_log_num_of_strides, max_single_wqe_log_num_of_strides, supported_qpts,
            reserved
        ),
        layout!(mlx5_ib_dci_streams_caps: max_log_num_concurent, max_log_num_errored),
        layout!(mlx5_ib_query_device_resp:
            comp_mask, response_length, tso_caps, rss_caps, cqe_comp_caps, packet_pacing_caps,
            mlx5_ib_support_multi_pkt_send_wqes, flags, sw_parsing_caps, striding_rq_caps,
            tunnel_offloads_caps, dci_streams_caps, reserved
        ),
        layout!(mlx5_ib_create_cq:
            buf_addr, db_addr, cqe_size, cqe_comp_en, cqe_comp_res_format, flags, uar_page_index,
            reserved0, reserved1
        ),
        layout!(mlx5_ib_create_cq_resp: cqn, reserved),
        layout!(mlx5_ib_resize_cq: buf_addr, cqe_size, reserved0, reserved1),
        layout!(mlx5_ib_create_srq: buf_addr, db_addr, flags, reserved0, uidx, reserved1),
        layout!(mlx5_ib_create_srq_resp: srqn, reserved),
        layout!(mlx5_ib_create_qp_dci_streams: log_num_concurent, log_num_errored),
        layout!(mlx5_ib_create_qp:
            buf_addr, db_addr, sq_wqe_count, rq_wqe_count, rq_wqe_shift, flags, uidx, bfreg_index,
            sq_buf_addr, ece_options, dci_streams, reserved
        )
        .alias("access_key", "sq_buf_addr"),
        layout!(mlx5_ib_create_qp_resp:
            bfreg_index, ece_options, comp_mask, tirn, tisn, rqn, sqn, reserved1, tir_icm_addr
        ),
        layout!(mlx5_ib_create_qp_rss:
            rx_hash_fields_mask, rx_hash_function, rx_key_len, reserved, rx_hash_key, comp_mask,
            flags
        ),
        layout!(mlx5_ib_create_wq:
            buf_addr, db_addr, rq_wqe_count, rq_wqe_shift, user_index, flags, comp_mask,
            single_stride_log_num_of_bytes, single_wqe_log_num_of_strides, two_byte_shift_en
        ),
        layout!(mlx5_ib_create_wq_resp: response_length, reserved),
        layout!(mlx5_ib_create_ah_resp: response_length, dmac, reserved),
        layout!(mlx5_ib_burst_info: max_burst_sz, typical_pkt_sz, reserved),
        layout!(mlx5_ib_modify_qp: comp_mask, burst_info, ece_options),
        layout!(mlx5_ib_modify_qp_resp: response_length, dctn, ece_options, reserved),
        layout!(mlx5_ib_clock_info:
            sign, resv, nsec, cycles, frac, mult, shift, mask, overflow_period
        ),
        layout!(ib_uverbs_ioctl_hdr:
            length, object_id, method_id, num_attrs, reserved1, driver_id, reserved2
        )
        .tail("attrs"),
        layout!(ib_uverbs_attr: attr_id, len, flags, attr_data, data)
            .part("attr_data.enum_data.elem_id", "attr_data", 0, 1)
            .part("attr_data.enum_data.reserved", "attr_data", 1, 1)
            .alias("attr_data.reserved", "attr_data")
            .alias("data_s64", "data"),
        layout!(ib_uverbs_sge: addr, length, lkey),
        layout!(rdma_ucm_cmd_hdr: cmd, in_, out).rename("in_", "in"),
        layout!(sockaddr_in: sin_family, sin_port, sin_addr, __pad),
        layout!(sockaddr_in6: sin6_family, sin6_port, sin6_flowinfo, sin6_addr, sin6_scope_id),
        layout!(__kernel_sockaddr_storage: ss_family, __data),
        layout!(sockaddr_ib:
            sib_family, sib_pkey, sib_flowinfo, sib_addr, sib_sid, sib_sid_mask, sib_scope_id
        ),
        layout!(rdma_ucm_create_id: uid, response, ps, qp_type, reserved),
        layout!(rdma_ucm_create_id_resp: id),
        layout!(rdma_ucm_destroy_id: response, id, reserved),
        layout!(rdma_ucm_destroy_id_resp: events_reported),
        layout!(rdma_ucm_bind_ip: response, addr, id),
        layout!(rdma_ucm_bind: id, addr_size, reserved, addr),
        layout!(rdma_ucm_resolve_ip: src_addr, dst_addr, id, timeout_ms),
        layout!(rdma_ucm_resolve_addr:
            id, timeout_ms, src_size, dst_size, reserved, src_addr, dst_addr
        ),
        layout!(rdma_ucm_resolve_route: id, timeout_ms),
        layout!(rdma_ucm_query: response, id, option),
        layout!(ib_user_path_rec:
            dgid, sgid, dlid, slid, raw_traffic, flow_label, reversible, mtu, pkey, hop_limit,
            traffic_class, numb_path, sl, mtu_selector, rate_selector, rate,
            packet_life_time_selector, packet_life_time, preference
        ),
        layout!(rdma_ucm_query_route_resp:
            node_guid, ib_route, src_addr, dst_addr, num_paths, port_num, reserved, ibdev_index,
            reserved1
        ),
        layout!(rdma_ucm_query_addr_resp:
            node_guid, port_num, reserved, pkey, src_size, dst_size, src_addr, dst_addr,
            ibdev_index, reserved1
        ),
        layout!(rdma_ucm_query_path_resp: num_paths, reserved).tail("path_data"),
        layout!(ib_path_rec_data: flags, reserved, path_rec),
        layout!(ibv_path_record:
            service_id, dgid, sgid, dlid, slid, flowlabel_hoplimit, tclass, reversible_numpath,
            pkey, qosclass_sl, mtu, rate, packetlifetime, preference, reserved
        ),
        layout!(rdma_ucm_conn_param:
            qp_num, qkey, private_data, private_data_len, srq, responder_resources,
            initiator_depth, flow_control, retry_count, rnr_retry_count, valid
        ),
        layout!(rdma_ucm_ud_param:
            qp_num, qkey, ah_attr, private_data, private_data_len, reserved
        ),
        layout!(rdma_ucm_ece: vendor_id, attr_mod),
        layout!(rdma_ucm_connect: conn_param, id, reserved, ece),
        layout!(rdma_ucm_listen: id, backlog),
        layout!(rdma_ucm_accept: uid, conn_param, id, reserved, ece),
        layout!(rdma_ucm_reject: id, private_data_len, reason, reserved, private_data),
        layout!(rdma_ucm_disconnect: id),
        layout!(rdma_ucm_init_qp_attr: response, id, qp_state),
        layout!(rdma_ucm_notify: id, event),
        layout!(rdma_ucm_join_ip_mcast: response, uid, addr, id),
        layout!(rdma_ucm_join_mcast: response, uid, id, addr_size, join_flags, addr),
        layout!(rdma_ucm_get_event: response),
        layout!(rdma_ucm_event_resp: uid, id, event, status, param, reserved, ece)
            .member("param.conn", "param", size_of::<rdma_ucm_conn_param>())
            .member("param.ud", "param", size_of::<rdma_ucm_ud_param>()),
        layout!(rdma_ucm_set_option: optval, id, level, optname, optlen),
        layout!(rdma_ucm_migrate_id: response, id, fd),
        layout!(rdma_ucm_migrate_resp: events_reported),
    ]
}

/// Our structs that are not header structs: the header's anonymous member structs.
const ANONYMOUS: [&str; 1] = ["ib_uverbs_odp_caps_per_transport_caps"];

/// `(name, value)` of each of our constants.
macro_rules! constants {
    ($($c:ident),* $(,)?) => {
        vec![$((stringify!($c), $c as i64)),*]
    };
}

/// Every constant of `abi::uverbs` and `abi::mlx5` but [`NOT_IN_HEADERS`].
fn constants() -> Vec<(&'static str, i64)> {
    let mut all = constants![
        IB_USER_VERBS_ABI_VERSION,
        IB_USER_VERBS_CMD_THRESHOLD,
        IB_USER_VERBS_CMD_COMMAND_MASK,
        IB_USER_VERBS_CMD_FLAG_EXTENDED,
        IB_USER_VERBS_CMD_GET_CONTEXT,
        IB_USER_VERBS_CMD_QUERY_DEVICE,
        IB_USER_VERBS_CMD_QUERY_PORT,
        IB_USER_VERBS_CMD_ALLOC_PD,
        IB_USER_VERBS_CMD_DEALLOC_PD,
        IB_USER_VERBS_CMD_CREATE_AH,
        IB_USER_VERBS_CMD_MODIFY_AH,
        IB_USER_VERBS_CMD_QUERY_AH,
        IB_USER_VERBS_CMD_DESTROY_AH,
        IB_USER_VERBS_CMD_REG_MR,
        IB_USER_VERBS_CMD_REG_SMR,
        IB_USER_VERBS_CMD_REREG_MR,
        IB_USER_VERBS_CMD_QUERY_MR,
        IB_USER_VERBS_CMD_DEREG_MR,
        IB_USER_VERBS_CMD_ALLOC_MW,
        IB_USER_VERBS_CMD_BIND_MW,
        IB_USER_VERBS_CMD_DEALLOC_MW,
        IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL,
        IB_USER_VERBS_CMD_CREATE_CQ,
        IB_USER_VERBS_CMD_RESIZE_CQ,
        IB_USER_VERBS_CMD_DESTROY_CQ,
        IB_USER_VERBS_CMD_POLL_CQ,
        IB_USER_VERBS_CMD_PEEK_CQ,
        IB_USER_VERBS_CMD_REQ_NOTIFY_CQ,
        IB_USER_VERBS_CMD_CREATE_QP,
        IB_USER_VERBS_CMD_QUERY_QP,
        IB_USER_VERBS_CMD_MODIFY_QP,
        IB_USER_VERBS_CMD_DESTROY_QP,
        IB_USER_VERBS_CMD_POST_SEND,
        IB_USER_VERBS_CMD_POST_RECV,
        IB_USER_VERBS_CMD_ATTACH_MCAST,
        IB_USER_VERBS_CMD_DETACH_MCAST,
        IB_USER_VERBS_CMD_CREATE_SRQ,
        IB_USER_VERBS_CMD_MODIFY_SRQ,
        IB_USER_VERBS_CMD_QUERY_SRQ,
        IB_USER_VERBS_CMD_DESTROY_SRQ,
        IB_USER_VERBS_CMD_POST_SRQ_RECV,
        IB_USER_VERBS_CMD_OPEN_XRCD,
        IB_USER_VERBS_CMD_CLOSE_XRCD,
        IB_USER_VERBS_CMD_CREATE_XSRQ,
        IB_USER_VERBS_CMD_OPEN_QP,
        IB_USER_VERBS_EX_CMD_QUERY_DEVICE,
        IB_USER_VERBS_EX_CMD_CREATE_CQ,
        IB_USER_VERBS_EX_CMD_CREATE_QP,
        IB_USER_VERBS_EX_CMD_MODIFY_QP,
        IB_USER_VERBS_EX_CMD_CREATE_FLOW,
        IB_USER_VERBS_EX_CMD_DESTROY_FLOW,
        IB_USER_VERBS_EX_CMD_CREATE_WQ,
        IB_USER_VERBS_EX_CMD_MODIFY_WQ,
        IB_USER_VERBS_EX_CMD_DESTROY_WQ,
        IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL,
        IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL,
        IB_USER_VERBS_EX_CMD_MODIFY_CQ,
        IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION,
        IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN,
        IB_UVERBS_CREATE_QP_MASK_IND_TABLE,
        IB_UVERBS_CREATE_QP_SUP_COMP_MASK,
        IB_UVERBS_DEVICE_RESIZE_MAX_WR,
        IB_UVERBS_DEVICE_BAD_PKEY_CNTR,
        IB_UVERBS_DEVICE_BAD_QKEY_CNTR,
        IB_UVERBS_DEVICE_RAW_MULTI,
        IB_UVERBS_DEVICE_AUTO_PATH_MIG,
        IB_UVERBS_DEVICE_CHANGE_PHY_PORT,
        IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE,
        IB_UVERBS_DEVICE_CURR_QP_STATE_MOD,
        IB_UVERBS_DEVICE_SHUTDOWN_PORT,
        IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT,
        IB_UVERBS_DEVICE_SYS_IMAGE_GUID,
        IB_UVERBS_DEVICE_RC_RNR_NAK_GEN,
        IB_UVERBS_DEVICE_SRQ_RESIZE,
        IB_UVERBS_DEVICE_N_NOTIFY_CQ,
        IB_UVERBS_DEVICE_MEM_WINDOW,
        IB_UVERBS_DEVICE_UD_IP_CSUM,
        IB_UVERBS_DEVICE_XRC,
        IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS,
        IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A,
        IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B,
        IB_UVERBS_DEVICE_RC_IP_CSUM,
        IB_UVERBS_DEVICE_RAW_IP_CSUM,
        IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING,
        IB_UVERBS_DEVICE_RAW_SCATTER_FCS,
        IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING,
        IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING,
        IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS,
        IB_UVERBS_RAW_PACKET_CAP_IP_CSUM,
        IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP,
        IB_UVERBS_ACCESS_OPTIONAL_FIRST,
        IB_UVERBS_ACCESS_OPTIONAL_LAST,
        IB_UVERBS_ACCESS_LOCAL_WRITE,
        IB_UVERBS_ACCESS_REMOTE_WRITE,
        IB_UVERBS_ACCESS_REMOTE_READ,
        IB_UVERBS_ACCESS_REMOTE_ATOMIC,
        IB_UVERBS_ACCESS_MW_BIND,
        IB_UVERBS_ACCESS_ZERO_BASED,
        IB_UVERBS_ACCESS_ON_DEMAND,
        IB_UVERBS_ACCESS_HUGETLB,
        IB_UVERBS_ACCESS_RELAXED_ORDERING,
        IB_UVERBS_ACCESS_OPTIONAL_RANGE,
        IB_UVERBS_SRQT_BASIC,
        IB_UVERBS_SRQT_XRC,
        IB_UVERBS_SRQT_TM,
        IB_UVERBS_QPT_RC,
        IB_UVERBS_QPT_UC,
        IB_UVERBS_QPT_UD,
        IB_UVERBS_QPT_RAW_PACKET,
        IB_UVERBS_QPT_XRC_INI,
        IB_UVERBS_QPT_XRC_TGT,
        IB_UVERBS_QPT_DRIVER,
        IB_UVERBS_WQT_RQ,
        IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE,
        IBV_FLOW_SPEC_ETH,
        IBV_FLOW_SPEC_IPV4,
        IBV_FLOW_SPEC_IPV6,
        IBV_FLOW_SPEC_TCP,
        IBV_FLOW_SPEC_UDP,
        IBV_FLOW_SPEC_INNER,
        IBV_FLOW_SPEC_ACTION_TAG,
        IBV_FLOW_SPEC_ACTION_DROP,
        IBV_FLOW_ATTR_NORMAL,
        IBV_FLOW_ATTR_ALL_DEFAULT,
        IBV_FLOW_ATTR_MC_DEFAULT,
        IBV_FLOW_ATTR_SNIFFER,
        IBV_FLOW_ATTR_FLAGS_DONT_TRAP,
        IBV_FLOW_ATTR_FLAGS_EGRESS,
        IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK,
        IB_UVERBS_QP_CREATE_SCATTER_FCS,
        IB_UVERBS_QP_CREATE_CVLAN_STRIPPING,
        IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING,
        IB_UVERBS_QP_CREATE_SQ_SIG_ALL,
        IB_UVERBS_PCF_SM,
        IB_UVERBS_PCF_NOTICE_SUP,
        IB_UVERBS_PCF_TRAP_SUP,
        IB_UVERBS_PCF_OPT_IPD_SUP,
        IB_UVERBS_PCF_AUTO_MIGR_SUP,
        IB_UVERBS_PCF_SL_MAP_SUP,
        IB_UVERBS_PCF_MKEY_NVRAM,
        IB_UVERBS_PCF_PKEY_NVRAM,
        IB_UVERBS_PCF_LED_INFO_SUP,
        IB_UVERBS_PCF_SM_DISABLED,
        IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP,
        IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP,
        IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP,
        IB_UVERBS_PCF_CM_SUP,
        IB_UVERBS_PCF_SNMP_TUNNEL_SUP,
        IB_UVERBS_PCF_REINIT_SUP,
        IB_UVERBS_PCF_DEVICE_MGMT_SUP,
        IB_UVERBS_PCF_VENDOR_CLASS_SUP,
        IB_UVERBS_PCF_DR_NOTICE_SUP,
        IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP,
        IB_UVERBS_PCF_BOOT_MGMT_SUP,
        IB_UVERBS_PCF_LINK_LATENCY_SUP,
        IB_UVERBS_PCF_CLIENT_REG_SUP,
        IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP,
        IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP,
        IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP,
        IB_UVERBS_PCF_MCAST_FDB_TOP_SUP,
        IB_UVERBS_PCF_HIERARCHY_INFO_SUP,
        IB_UVERBS_PCF_IP_BASED_GIDS,
        IB_UVERBS_QPF_GRH_REQUIRED,
    ];
    all.extend(constants![
        MLX5_IB_UVERBS_ABI_VERSION,
        MLX5_QP_FLAG_SIGNATURE,
        MLX5_QP_FLAG_SCATTER_CQE,
        MLX5_QP_FLAG_TUNNEL_OFFLOADS,
        MLX5_QP_FLAG_BFREG_INDEX,
        MLX5_QP_FLAG_TYPE_DCT,
        MLX5_QP_FLAG_TYPE_DCI,
        MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_UC,
        MLX5_QP_FLAG_TIR_ALLOW_SELF_LB_MC,
        MLX5_QP_FLAG_ALLOW_SCATTER_CQE,
        MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE,
        MLX5_QP_FLAG_UAR_PAGE_INDEX,
        MLX5_QP_FLAG_DCI_STREAM,
        MLX5_SRQ_FLAG_SIGNATURE,
        MLX5_LIB_CAP_4K_UAR,
        MLX5_LIB_CAP_DYN_UAR,
        MLX5_IB_ALLOC_UCTX_DEVX,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_SQD2RTS,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_REAL_TIME_TS,
        MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_MKEY_UPDATE_TAG,
        MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE,
        MLX5_USER_CMDS_SUPP_UHW_CREATE_AH,
        MLX5_USER_INLINE_MODE_NA,
        MLX5_USER_INLINE_MODE_NONE,
        MLX5_USER_INLINE_MODE_L2,
        MLX5_USER_INLINE_MODE_IP,
        MLX5_USER_INLINE_MODE_TCP_UDP,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_REQ_METADATA,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_SPI_STEERING,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_FULL_OFFLOAD,
        MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_ESP_AES_GCM_TX_IV_IS_ESN,
        MLX5_IB_CQE_RES_FORMAT_HASH,
        MLX5_IB_CQE_RES_FORMAT_CSUM,
        MLX5_IB_CQE_RES_FORMAT_CSUM_STRIDX,
        MLX5_IB_PP_SUPPORT_BURST,
        MLX5_IB_ALLOW_MPW,
        MLX5_IB_SUPPORT_EMPW,
        MLX5_IB_SW_PARSING,
        MLX5_IB_SW_PARSING_CSUM,
        MLX5_IB_SW_PARSING_LSO,
        MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_COMP,
        MLX5_IB_QUERY_DEV_RESP_FLAGS_CQE_128B_PAD,
        MLX5_IB_QUERY_DEV_RESP_PACKET_BASED_CREDIT_MODE,
        MLX5_IB_QUERY_DEV_RESP_FLAGS_SCAT2CQE_DCT,
        MLX5_IB_TUNNELED_OFFLOADS_VXLAN,
        MLX5_IB_TUNNELED_OFFLOADS_GRE,
        MLX5_IB_TUNNELED_OFFLOADS_GENEVE,
        MLX5_IB_TUNNELED_OFFLOADS_MPLS_GRE,
        MLX5_IB_TUNNELED_OFFLOADS_MPLS_UDP,
        MLX5_RX_HASH_FUNC_TOEPLITZ,
        MLX5_RX_HASH_SRC_IPV4,
        MLX5_RX_HASH_DST_IPV4,
        MLX5_RX_HASH_SRC_IPV6,
        MLX5_RX_HASH_DST_IPV6,
        MLX5_RX_HASH_SRC_PORT_TCP,
        MLX5_RX_HASH_DST_PORT_TCP,
        MLX5_RX_HASH_SRC_PORT_UDP,
        MLX5_RX_HASH_DST_PORT_UDP,
        MLX5_RX_HASH_IPSEC_SPI,
        MLX5_RX_HASH_INNER,
        MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD,
        MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX,
        MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS,
        MLX5_IB_CREATE_QP_RESP_MASK_TIRN,
        MLX5_IB_CREATE_QP_RESP_MASK_TISN,
        MLX5_IB_CREATE_QP_RESP_MASK_RQN,
        MLX5_IB_CREATE_QP_RESP_MASK_SQN,
        MLX5_IB_CREATE_QP_RESP_MASK_TIR_ICM_ADDR,
        MLX5_IB_CREATE_WQ_STRIDING_RQ,
        MLX5_WQ_FLAG_SIGNATURE,
        MLX5_IB_MMAP_REGULAR_PAGE,
        MLX5_IB_MMAP_GET_CONTIGUOUS_PAGES,
        MLX5_IB_MMAP_WC_PAGE,
        MLX5_IB_MMAP_NC_PAGE,
        MLX5_IB_MMAP_CORE_CLOCK,
        MLX5_IB_MMAP_ALLOC_WC,
        MLX5_IB_MMAP_CLOCK_INFO,
        MLX5_IB_MMAP_DEVICE_MEM,
        MLX5_MMAP_GET_REGULAR_PAGES_CMD,
        MLX5_MMAP_GET_NC_PAGES_CMD,
        MLX5_IB_CLOCK_INFO_KERNEL_UPDATING,
        MLX5_IB_CLOCK_INFO_V1,
    ]);
    all.extend(constants![
        RDMA_IOCTL_MAGIC,
        RDMA_VERBS_IOCTL,
        UVERBS_ATTR_F_MANDATORY,
        UVERBS_ATTR_F_VALID_OUTPUT,
        UVERBS_ID_NS_MASK,
        UVERBS_ID_NS_SHIFT,
        UVERBS_UDATA_DRIVER_DATA_NS,
        UVERBS_UDATA_DRIVER_DATA_FLAG,
        UVERBS_ATTR_UHW_IN,
        UVERBS_ATTR_UHW_OUT,
        UVERBS_OBJECT_DEVICE,
        UVERBS_OBJECT_PD,
        UVERBS_OBJECT_MR,
        UVERBS_OBJECT_DM,
        UVERBS_METHOD_INVOKE_WRITE,
        UVERBS_METHOD_GET_CONTEXT,
        UVERBS_METHOD_QUERY_GID_ENTRY,
        UVERBS_ATTR_WRITE_CMD,
        UVERBS_METHOD_DM_ALLOC,
        UVERBS_METHOD_DM_FREE,
        UVERBS_ATTR_ALLOC_DM_HANDLE,
        UVERBS_ATTR_ALLOC_DM_LENGTH,
        UVERBS_ATTR_ALLOC_DM_ALIGNMENT,
        UVERBS_ATTR_FREE_DM_HANDLE,
        UVERBS_METHOD_DM_MR_REG,
        UVERBS_METHOD_MR_DESTROY,
        UVERBS_METHOD_ADVISE_MR,
        UVERBS_ATTR_REG_DM_MR_HANDLE,
        UVERBS_ATTR_REG_DM_MR_OFFSET,
        UVERBS_ATTR_REG_DM_MR_LENGTH,
        UVERBS_ATTR_REG_DM_MR_PD_HANDLE,
        UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS,
        UVERBS_ATTR_REG_DM_MR_DM_HANDLE,
        UVERBS_ATTR_REG_DM_MR_RESP_LKEY,
        UVERBS_ATTR_REG_DM_MR_RESP_RKEY,
        UVERBS_ATTR_ADVISE_MR_PD_HANDLE,
        UVERBS_ATTR_ADVISE_MR_ADVICE,
        UVERBS_ATTR_ADVISE_MR_FLAGS,
        UVERBS_ATTR_ADVISE_MR_SGE_LIST,
        IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH,
        IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
        IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
        IB_UVERBS_ADVISE_MR_FLAG_FLUSH,
        RDMA_DRIVER_MLX5,
        MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET,
        MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX,
        MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE,
        MLX5_IB_OBJECT_DEVX,
        MLX5_IB_METHOD_DEVX_OTHER,
        MLX5_IB_UAPI_DM_TYPE_MEMIC,
        MLX5_IB_UAPI_DM_TYPE_STEERING_SW_ICM,
        MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_SW_ICM,
        MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM,
        RDMA_USER_CM_ABI_VERSION,
        RDMA_MAX_PRIVATE_DATA,
        RDMA_USER_CM_CMD_CREATE_ID,
        RDMA_USER_CM_CMD_DESTROY_ID,
        RDMA_USER_CM_CMD_BIND_IP,
        RDMA_USER_CM_CMD_RESOLVE_IP,
        RDMA_USER_CM_CMD_RESOLVE_ROUTE,
        RDMA_USER_CM_CMD_QUERY_ROUTE,
        RDMA_USER_CM_CMD_CONNECT,
        RDMA_USER_CM_CMD_LISTEN,
        RDMA_USER_CM_CMD_ACCEPT,
        RDMA_USER_CM_CMD_REJECT,
        RDMA_USER_CM_CMD_DISCONNECT,
        RDMA_USER_CM_CMD_INIT_QP_ATTR,
        RDMA_USER_CM_CMD_GET_EVENT,
        RDMA_USER_CM_CMD_GET_OPTION,
        RDMA_USER_CM_CMD_SET_OPTION,
        RDMA_USER_CM_CMD_NOTIFY,
        RDMA_USER_CM_CMD_JOIN_IP_MCAST,
        RDMA_USER_CM_CMD_LEAVE_MCAST,
        RDMA_USER_CM_CMD_MIGRATE_ID,
        RDMA_USER_CM_CMD_QUERY,
        RDMA_USER_CM_CMD_BIND,
        RDMA_USER_CM_CMD_RESOLVE_ADDR,
        RDMA_USER_CM_CMD_JOIN_MCAST,
        RDMA_PS_IPOIB,
        RDMA_PS_IB,
        RDMA_PS_TCP,
        RDMA_PS_UDP,
        RDMA_USER_CM_QUERY_ADDR,
        RDMA_USER_CM_QUERY_PATH,
        RDMA_USER_CM_QUERY_GID,
        RDMA_MC_JOIN_FLAG_FULLMEMBER,
        RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
        RDMA_MC_JOIN_FLAG_RESERVED,
        RDMA_OPTION_ID,
        RDMA_OPTION_IB,
        RDMA_OPTION_ID_TOS,
        RDMA_OPTION_ID_REUSEADDR,
        RDMA_OPTION_ID_AFONLY,
        RDMA_OPTION_ID_ACK_TIMEOUT,
        RDMA_OPTION_IB_PATH,
        IB_PATH_GMP,
        IB_PATH_PRIMARY,
        IB_PATH_ALTERNATE,
        IB_PATH_OUTBOUND,
        IB_PATH_INBOUND,
        IB_PATH_INBOUND_REVERSE,
        IB_PATH_BIDIRECTIONAL,
        RDMA_CM_EVENT_ADDR_RESOLVED,
        RDMA_CM_EVENT_ADDR_ERROR,
        RDMA_CM_EVENT_ROUTE_RESOLVED,
        RDMA_CM_EVENT_ROUTE_ERROR,
        RDMA_CM_EVENT_CONNECT_REQUEST,
        RDMA_CM_EVENT_CONNECT_RESPONSE,
        RDMA_CM_EVENT_CONNECT_ERROR,
        RDMA_CM_EVENT_UNREACHABLE,
        RDMA_CM_EVENT_REJECTED,
        RDMA_CM_EVENT_ESTABLISHED,
        RDMA_CM_EVENT_DISCONNECTED,
        RDMA_CM_EVENT_DEVICE_REMOVAL,
        RDMA_CM_EVENT_MULTICAST_JOIN,
        RDMA_CM_EVENT_MULTICAST_ERROR,
        RDMA_CM_EVENT_ADDR_CHANGE,
        RDMA_CM_EVENT_TIMEWAIT_EXIT,
        RDMA_IB_IP_PS_MASK,
        RDMA_IB_IP_PORT_MASK,
        RDMA_IB_IP_PS_TCP,
        RDMA_IB_IP_PS_UDP,
        RDMA_IB_PS_IB,
        RDMA_UDP_QKEY,
        AF_IB,
        IBV_EVENT_COMM_EST,
        IBV_EVENT_PATH_MIG,
    ]);
    all
}

/// Our constants that no installed header defines (mlx5_ib's and libmlx5's private headers
/// do); `abi::mlx5`'s unit tests pin them.
/// (the IB CM's values of `abi::ucma::not_in_headers` are the kernel's own
/// `include/rdma/ib_cm.h`, pinned by `abi::ucma`'s unit tests).
/// `CMA_HDR_SIZE` is the size of a struct of the kernel's own `cma.c`.
const NOT_IN_HEADERS: [&str; 19] = [
    "MLX5_IB_MMAP_CMD_SHIFT",
    "MLX5_IB_MMAP_CMD_MASK",
    "IB_CM_REJ_TIMEOUT",
    "IB_CM_REJ_INVALID_SERVICE_ID",
    "IB_CM_REJ_STALE_CONN",
    "IB_CM_REJ_CONSUMER_DEFINED",
    "IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED",
    "IB_CM_REQ_PRIVATE_DATA_SIZE",
    "IB_CM_REP_PRIVATE_DATA_SIZE",
    "IB_CM_REJ_PRIVATE_DATA_SIZE",
    "IB_CM_DREQ_PRIVATE_DATA_SIZE",
    "IB_CM_DREP_PRIVATE_DATA_SIZE",
    "IB_CM_RTU_PRIVATE_DATA_SIZE",
    "CMA_HDR_SIZE",
    "IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE",
    "IB_CM_SIDR_REP_PRIVATE_DATA_SIZE",
    "IB_SIDR_SUCCESS",
    "IB_SIDR_UNSUPPORTED",
    "IB_SIDR_REJECT",
];

/// The sources of `mlx5_emu::abi`, for [`every_mirror_is_compared`].
const SOURCES: [&str; 9] = [
    include_str!("../src/abi/ioctl.rs"),
    include_str!("../src/abi/mod.rs"),
    include_str!("../src/abi/ucma.rs"),
    include_str!("../src/abi/uverbs/mod.rs"),
    include_str!("../src/abi/uverbs/device.rs"),
    include_str!("../src/abi/uverbs/qp.rs"),
    include_str!("../src/abi/uverbs/flow.rs"),
    include_str!("../src/abi/uverbs/wq.rs"),
    include_str!("../src/abi/mlx5.rs"),
];

/// The names of the items `pub <keyword> NAME` declares in [`SOURCES`].
fn declared(keyword: &str) -> BTreeSet<&'static str> {
    let prefix = format!("pub {keyword} ");
    SOURCES
        .iter()
        .flat_map(|src| src.lines())
        .filter_map(|line| line.trim_start().strip_prefix(prefix.as_str()))
        .map(|rest| {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

fn header_fields() -> Vec<golden::Field> {
    let mut all = golden::uverbs_fields();
    all.extend(golden::mlx5_abi_fields());
    all.extend(golden::uverbs_ioctl_fields());
    all.extend(golden::ucma_fields());
    all
}

fn header_structs() -> Vec<golden::StructSize> {
    let mut all = golden::uverbs_structs();
    all.extend(golden::mlx5_abi_structs());
    all.extend(golden::uverbs_ioctl_structs());
    all.extend(golden::ucma_structs());
    all
}

fn header_constants() -> Vec<golden::Value> {
    let mut all = golden::uverbs_constants();
    all.extend(golden::mlx5_abi_constants());
    all.extend(golden::uverbs_ioctl_constants());
    all.extend(golden::ucma_constants());
    all
}

/// A mirror that is not compared is not done: every struct and constant declared in the
/// sources is in [`layouts`] / [`constants`] (or named as an exception), and nothing is listed
/// twice.
#[test]
fn every_mirror_is_compared() {
    let layouts = layouts();
    let mut ours: BTreeSet<&str> = layouts.iter().map(|l| l.strct).collect();
    assert_eq!(ours.len(), layouts.len(), "a struct is listed twice");
    ours.extend(ANONYMOUS);
    assert_eq!(declared("struct"), ours);

    let constants = constants();
    let mut ours: BTreeSet<&str> = constants.iter().map(|c| c.0).collect();
    assert_eq!(ours.len(), constants.len(), "a constant is listed twice");
    ours.extend(NOT_IN_HEADERS);
    assert_eq!(declared("const"), ours);
}

#[test]
#[cfg_attr(
    not(all(rdma_headers, rdmacm_headers)),
    ignore = "install libibverbs-dev and librdmacm-dev to compare with the kernel uapi headers"
)]
fn struct_sizes_and_alignments_match_the_headers() {
    let structs = header_structs();
    let layouts = layouts();
    let theirs: BTreeSet<_> = structs.iter().map(|s| s.strct).collect();
    let ours: BTreeSet<_> = layouts.iter().map(|l| l.strct).collect();
    assert_eq!(
        theirs, ours,
        "every header struct has a mirror and every mirror a struct"
    );
    let aligns: BTreeMap<_, _> = header_constants()
        .into_iter()
        .map(|c| (c.name, c.value))
        .collect();
    for s in &structs {
        let ours = layouts.iter().find(|l| l.strct == s.strct).unwrap();
        assert_eq!(ours.size, s.size, "sizeof(struct {})", s.strct);
        let align = aligns[format!("_Alignof(struct {})", s.strct).as_str()];
        assert_eq!(ours.align as i64, align, "_Alignof(struct {})", s.strct);
    }
}

#[test]
#[cfg_attr(
    not(all(rdma_headers, rdmacm_headers)),
    ignore = "install libibverbs-dev and librdmacm-dev to compare with the kernel uapi headers"
)]
fn every_header_field_sits_on_ours() {
    let fields = header_fields();
    for layout in layouts() {
        let theirs: BTreeMap<_, _> = fields
            .iter()
            .filter(|f| f.strct == layout.strct)
            .map(|f| (f.field, (f.offset, f.size)))
            .collect();
        let ours: BTreeMap<_, _> = layout
            .fields
            .iter()
            .map(|&(name, offset, size)| (name, (offset, size)))
            .collect();
        assert_eq!(
            ours.len(),
            layout.fields.len(),
            "a field of {} twice",
            layout.strct
        );
        assert_eq!(
            theirs, ours,
            "(offset, size) of the fields of struct {}",
            layout.strct
        );
    }
}

/// The shim's field tables are complete: the primary fields of each struct cover it without
/// gap or overlap (these headers pad by hand, so no gap is allowed), so no header field can
/// be missing from the comparison above.
#[test]
#[cfg_attr(
    not(all(rdma_headers, rdmacm_headers)),
    ignore = "install libibverbs-dev and librdmacm-dev to compare with the kernel uapi headers"
)]
fn the_primary_header_fields_tile_each_struct() {
    let fields = header_fields();
    for s in header_structs() {
        assert_eq!(golden::tiling_error(&fields, &s, false), None);
    }
}

#[test]
#[cfg_attr(
    not(all(rdma_headers, rdmacm_headers)),
    ignore = "install libibverbs-dev and librdmacm-dev to compare with the kernel uapi headers"
)]
fn every_constant_matches_the_headers() {
    let theirs: BTreeMap<_, _> = header_constants()
        .into_iter()
        .filter(|c| !c.name.starts_with("_Alignof("))
        .map(|c| (c.name, c.value))
        .collect();
    let ours: BTreeMap<_, _> = constants().into_iter().collect();
    assert_eq!(theirs, ours);
}
