//! The libibverbs and librdmacm names the `verbs` backend uses, in one place: rdma-sys's
//! bindings, or, in a documentation build without rdma-core (`--cfg mlx5_direct_docs`,
//! which `[package.metadata.docs.rs]` sets for docs.rs), bare names in their place.
//!
//! rdma-sys runs bindgen over rdma-core's headers in its build script, so it cannot build on
//! a machine without them; under `mlx5_direct_docs` Cargo leaves it out (a
//! `[target.'cfg(not(mlx5_direct_docs))'.dependencies]` entry). rustdoc type-checks no
//! function body, so the backend's items only need each name to resolve: every one below is
//! an empty type (or a module of them, where the code names `module::Type` or a constant in
//! it). Nothing here is ever compiled into a program: compiling (not documenting) with the
//! cfg stops at the `compile_error!` below.

#[cfg(not(mlx5_direct_docs))]
pub(crate) use rdma_sys::*;

#[cfg(mlx5_direct_docs)]
pub(crate) use names::*;

#[cfg(all(mlx5_direct_docs, not(doc)))]
compile_error!(
    "cfg(mlx5_direct_docs) is for documentation builds (cargo doc) only: it replaces rdma-sys \
     with bare names"
);

#[cfg(mlx5_direct_docs)]
#[allow(non_camel_case_types, dead_code)]
mod names {
    /// Declares each name as an empty type.
    macro_rules! names {
        ($($name:ident),* $(,)?) => {
            $(#[derive(Clone, Copy)] pub(crate) enum $name {})*
        };
    }

    /// Declares each name as a tuple struct of its bits (rdma-sys's form for the C flag
    /// enums, which the backend's constants build with `name(bits)`).
    macro_rules! flags {
        ($($name:ident),* $(,)?) => {
            $(#[derive(Clone, Copy)] pub(crate) struct $name(pub(crate) u32);)*
        };
    }

    /// Declares a module per name holding `Type` and the listed names (rdma-sys's form for
    /// the C enums it turns into constants).
    macro_rules! enum_modules {
        ($($module:ident { $($name:ident),* })*) => {
            $(pub(crate) mod $module {
                names!(Type $(, $name)*);
            })*
        };
    }

    // Types.
    names!(
        _compat_ibv_port_attr,
        ibv_ah,
        ibv_ah_attr,
        ibv_alloc_dm_attr,
        ibv_async_event,
        ibv_async_event_element_t,
        ibv_comp_channel,
        ibv_context,
        ibv_cq,
        ibv_cq_ex,
        ibv_cq_init_attr_ex,
        ibv_device,
        ibv_device_attr,
        ibv_device_attr_ex,
        ibv_dm,
        ibv_flow,
        ibv_flow_attr,
        ibv_flow_eth_filter,
        ibv_flow_ipv4_ext_filter,
        ibv_flow_ipv6_filter,
        ibv_flow_spec_action_drop,
        ibv_flow_spec_action_tag,
        ibv_flow_spec_eth,
        ibv_flow_spec_ipv4_ext,
        ibv_flow_spec_ipv6,
        ibv_flow_spec_tcp_udp,
        ibv_flow_tcp_udp_filter,
        ibv_event_type,
        ibv_gid,
        ibv_gid_entry,
        ibv_mr,
        ibv_odp_caps,
        ibv_packet_pacing_caps,
        ibv_parent_domain_init_attr,
        ibv_pd,
        ibv_port_attr,
        ibv_qp,
        ibv_qp_attr,
        ibv_qp_init_attr,
        ibv_qp_init_attr_ex,
        ibv_qp_rate_limit_attr,
        ibv_rwq_ind_table,
        ibv_rwq_ind_table_init_attr,
        ibv_sge,
        ibv_srq,
        ibv_srq_init_attr,
        ibv_srq_init_attr_ex,
        ibv_wq,
        ibv_wq_attr,
        ibv_wq_init_attr,
        ibv_xrcd,
        ibv_xrcd_init_attr,
        rdma_cm_id,
        rdma_conn_param,
        rdma_event_channel,
        rdma_ud_param,
        verbs_context,
    );

    // Flag types.
    flags!(
        ibv_access_flags,
        ibv_create_cq_wc_flags,
        ibv_device_cap_flags,
        ibv_odp_general_caps,
        ibv_odp_transport_cap_bits,
        ibv_parent_domain_init_attr_mask,
        ibv_qp_attr_mask,
        ibv_qp_create_send_ops_flags,
        ibv_qp_init_attr_mask,
        ibv_rx_hash_function_flags,
        ibv_srq_init_attr_mask,
        ibv_wq_attr_mask,
        ibv_xrcd_init_attr_mask,
    );

    // Functions and constants (named in function bodies only).
    names!(
        ibv_ack_async_event,
        ibv_ack_cq_events,
        ibv_alloc_pd,
        ibv_attach_mcast,
        ibv_close_device,
        ibv_cq_ex_to_cq,
        ibv_create_ah,
        ibv_create_comp_channel,
        ibv_create_srq,
        ibv_dealloc_pd,
        ibv_dereg_mr,
        ibv_destroy_ah,
        ibv_destroy_comp_channel,
        ibv_destroy_cq,
        ibv_destroy_qp,
        ibv_destroy_srq,
        ibv_detach_mcast,
        ibv_free_device_list,
        ibv_get_async_event,
        ibv_get_cq_event,
        ibv_get_device_list,
        ibv_get_device_name,
        ibv_modify_qp,
        ibv_open_device,
        ibv_query_device,
        ibv_query_gid,
        ibv_query_port,
        ibv_query_qp,
        ibv_reg_mr,
        rdma_accept,
        rdma_bind_addr,
        rdma_connect,
        rdma_create_event_channel,
        rdma_create_id,
        rdma_destroy_event_channel,
        rdma_destroy_id,
        rdma_disconnect,
        rdma_establish,
        rdma_init_qp_attr,
        rdma_listen,
        rdma_reject,
        rdma_resolve_addr,
        rdma_resolve_route,
        rdma_set_option,
        IBV_GID_TYPE_IB,
        IBV_GID_TYPE_ROCE_V1,
        IBV_GID_TYPE_ROCE_V2,
    );

    enum_modules! {
        ib_uverbs_advise_mr_advice {
            IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH,
            IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE
        }
        ibv_atomic_cap {}
        ibv_flow_attr_type {
            IBV_FLOW_ATTR_NORMAL, IBV_FLOW_ATTR_ALL_DEFAULT, IBV_FLOW_ATTR_MC_DEFAULT,
            IBV_FLOW_ATTR_SNIFFER
        }
        ibv_flow_spec_type {
            IBV_FLOW_SPEC_ETH, IBV_FLOW_SPEC_IPV4_EXT, IBV_FLOW_SPEC_IPV6, IBV_FLOW_SPEC_TCP,
            IBV_FLOW_SPEC_UDP, IBV_FLOW_SPEC_ACTION_TAG, IBV_FLOW_SPEC_ACTION_DROP
        }
        ibv_mtu {}
        ibv_port_state {}
        ibv_qp_state {}
        ibv_qp_type {}
        ibv_srq_type {}
        ibv_wq_state {}
        ibv_wq_type {}
        rdma_port_space {}
    }
}
