//! Receive work queues, their indirection tables and RSS QPs: CREATE_WQ, MODIFY_WQ,
//! DESTROY_WQ, CREATE_RWQ_IND_TBL, DESTROY_RWQ_IND_TBL (`ib_uverbs_ex_create_wq` ..,
//! drivers/infiniband/core/uverbs_cmd.c; `mlx5_ib_create_wq`, `mlx5_ib_modify_wq`,
//! `mlx5_ib_create_rwq_ind_table`), and CREATE_QP of an RSS QP (`IBV_QPT_RAW_PACKET` with
//! an indirection table and mlx5's `mlx5_ib_create_qp_rss`: `create_rss_raw_qp_tir`), each
//! to the model's `create_wq` / `modify_wq` / `create_rss_qp`. The indirection table is the
//! kernel's object (an RQT): the model takes its work queue numbers with the RSS QP.
//!
//! A work queue named by a table, and a table an RSS QP uses, is EBUSY to destroy (the
//! kernel's use counts).

use super::cmd::{driver_request, request, Bundle, Res};
use super::context::Ctx;
use super::objects::errno;
use crate::abi::mlx5::*;
use crate::abi::uverbs::*;
use mlx5_hw::{in_space, HashFields, RssQpParams, RxHash, Striding, WqParams, WqState};

/// `IB_WQ_STATE`, `IB_WQ_CUR_STATE`, `IB_WQ_FLAGS` (`enum ib_wq_attr_mask`).
const WQ_STATE: u32 = 1 << 0;
const WQ_CUR_STATE: u32 = 1 << 1;
const WQ_FLAGS: u32 = 1 << 2;
/// The Toeplitz key length a TIR takes (`rx_hash_toeplitz_key`).
const KEY_LEN: usize = 40;

/// A work queue of the context.
#[derive(Debug)]
pub(crate) struct Wq {
    pub(crate) wqn: u32,
    /// Tables naming it.
    refs: u32,
}

/// An indirection table of the context.
#[derive(Debug)]
pub(crate) struct IndTable {
    /// Its work queues' handles.
    wqs: Vec<u32>,
    /// RSS QPs using it.
    refs: u32,
}

/// An RSS QP of the context.
#[derive(Debug)]
pub(crate) struct RssQp {
    pub(crate) qpn: u32,
    /// Its table's handle.
    pub(crate) table: u32,
}

/// `enum ib_wq_state` to the model's.
fn wq_state(s: u32) -> Result<WqState, i32> {
    match s {
        0 => Ok(WqState::Reset),
        1 => Ok(WqState::Rdy),
        2 => Ok(WqState::Err),
        _ => Err(libc::EINVAL),
    }
}

impl Ctx<'_> {
    /// CREATE_WQ: a receive queue, plain or striding (`mlx5_ib_create_wq`).
    pub(crate) fn create_wq(&mut self, b: &Bundle<'_>) -> Res {
        let c: ib_uverbs_ex_create_wq = request(b, true)?;
        if c.comp_mask != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        if c.wq_type != IB_UVERBS_WQT_RQ {
            return Err(libc::EINVAL);
        }
        let drv: mlx5_ib_create_wq = driver_request(b, true)?;
        // No flags the model has (VLAN stripping, FCS, padding, signatures).
        if c.create_flags != 0
            || drv.flags != 0
            || drv.comp_mask & !MLX5_IB_CREATE_WQ_STRIDING_RQ != 0
        {
            return Err(libc::EOPNOTSUPP);
        }
        if drv.rq_wqe_count == 0 || !drv.rq_wqe_count.is_power_of_two() {
            return Err(libc::EINVAL);
        }
        let pdn = self.pd(c.pd_handle)?.pdn;
        let cqn = self.cqs.get(&c.cq_handle).ok_or(libc::EINVAL)?.cqn;
        let striding = (drv.comp_mask & MLX5_IB_CREATE_WQ_STRIDING_RQ != 0).then_some(Striding {
            log_stride_bytes: drv.single_stride_log_num_of_bytes as u8,
            log_num_strides: drv.single_wqe_log_num_of_strides as u8,
            two_byte_shift: drv.two_byte_shift_en != 0,
        });
        let params = WqParams {
            pdn,
            cqn,
            buf: in_space(self.space, drv.buf_addr),
            log_wqe_cnt: drv.rq_wqe_count.trailing_zeros() as u8,
            log_stride: drv.rq_wqe_shift as u8,
            dbrec: in_space(self.space, drv.db_addr),
            user_index: drv.user_index,
            striding,
        };
        // SAFETY: the ring and record are the program's, reached through its space.
        let wqn = unsafe { self.nic.create_wq(&params) }.map_err(errno)?;
        let handle = self.handle();
        let resp = ib_uverbs_ex_create_wq_resp {
            comp_mask: 0,
            response_length: std::mem::size_of::<ib_uverbs_ex_create_wq_resp>() as u32,
            wq_handle: handle,
            max_wr: c.max_wr,
            max_sge: c.max_sge,
            wqn,
        };
        let done = self.respond(b, &resp).and_then(|()| {
            let drv = mlx5_ib_create_wq_resp {
                response_length: 8,
                reserved: 0,
            };
            self.respond_driver(b, &drv)
        });
        if let Err(e) = done {
            let _ = self.nic.destroy_wq(wqn);
            return Err(e);
        }
        self.wqs.insert(handle, Wq { wqn, refs: 0 });
        Ok(())
    }

    /// MODIFY_WQ: its state (`mlx5_ib_modify_wq`); flags the model has none of.
    pub(crate) fn modify_wq(&mut self, b: &Bundle<'_>) -> Res {
        let c: ib_uverbs_ex_modify_wq = request(b, true)?;
        if c.attr_mask == 0 || c.attr_mask & !(WQ_STATE | WQ_CUR_STATE | WQ_FLAGS) != 0 {
            return Err(libc::EINVAL);
        }
        if c.attr_mask & WQ_FLAGS != 0 && c.flags_mask != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let wqn = self.wqs.get(&c.wq_handle).ok_or(libc::EINVAL)?.wqn;
        if c.attr_mask & WQ_CUR_STATE != 0 {
            let now = self.nic.wq_state(wqn).map_err(errno)?;
            if wq_state(c.curr_wq_state)? != now {
                return Err(libc::EINVAL);
            }
        }
        if c.attr_mask & WQ_STATE != 0 {
            self.nic
                .modify_wq(wqn, wq_state(c.wq_state)?)
                .map_err(errno)?;
        }
        Ok(())
    }

    /// DESTROY_WQ: EBUSY while a table names it.
    pub(crate) fn destroy_wq(&mut self, b: &Bundle<'_>) -> Res {
        let c: ib_uverbs_ex_destroy_wq = request(b, true)?;
        if c.comp_mask != 0 {
            return Err(libc::EINVAL);
        }
        let wq = self.wqs.get(&c.wq_handle).ok_or(libc::EINVAL)?;
        if wq.refs != 0 {
            return Err(libc::EBUSY);
        }
        self.nic.destroy_wq(wq.wqn).map_err(errno)?;
        self.wqs.remove(&c.wq_handle);
        let resp = ib_uverbs_ex_destroy_wq_resp {
            comp_mask: 0,
            response_length: std::mem::size_of::<ib_uverbs_ex_destroy_wq_resp>() as u32,
            events_reported: 0,
            reserved: 0,
        };
        self.respond(b, &resp)
    }

    /// CREATE_RWQ_IND_TBL: `1 << log_ind_tbl_size` work queue handles after the request.
    pub(crate) fn create_ind_table(&mut self, b: &Bundle<'_>) -> Res {
        let head = std::mem::size_of::<ib_uverbs_ex_create_rwq_ind_table>();
        let c: ib_uverbs_ex_create_rwq_ind_table =
            crate::abi::read(b.core, 0).map_err(|e| e.errno())?;
        if c.comp_mask != 0 || c.log_ind_tbl_size > IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE {
            return Err(libc::EINVAL);
        }
        let n = 1usize << c.log_ind_tbl_size;
        let handles = b.core.get(head..head + 4 * n).ok_or(libc::EINVAL)?;
        let wqs: Vec<u32> = handles
            .chunks(4)
            .map(|h| u32::from_ne_bytes(h.try_into().unwrap()))
            .collect();
        if wqs.iter().any(|h| !self.wqs.contains_key(h)) {
            return Err(libc::EINVAL);
        }
        let handle = self.handle();
        let resp = ib_uverbs_ex_create_rwq_ind_table_resp {
            comp_mask: 0,
            response_length: std::mem::size_of::<ib_uverbs_ex_create_rwq_ind_table_resp>() as u32,
            ind_tbl_handle: handle,
            // The RQT's number: the model has no such object; the handle stands for it.
            ind_tbl_num: handle,
        };
        self.respond(b, &resp)?;
        for h in &wqs {
            self.wqs.get_mut(h).expect("checked above").refs += 1;
        }
        self.ind_tables.insert(handle, IndTable { wqs, refs: 0 });
        Ok(())
    }

    /// DESTROY_RWQ_IND_TBL: EBUSY while an RSS QP uses it.
    pub(crate) fn destroy_ind_table(&mut self, b: &Bundle<'_>) -> Res {
        let c: ib_uverbs_ex_destroy_rwq_ind_table = request(b, true)?;
        if c.comp_mask != 0 {
            return Err(libc::EINVAL);
        }
        let t = self.ind_tables.get(&c.ind_tbl_handle).ok_or(libc::EINVAL)?;
        if t.refs != 0 {
            return Err(libc::EBUSY);
        }
        let t = self
            .ind_tables
            .remove(&c.ind_tbl_handle)
            .expect("found above");
        for h in &t.wqs {
            if let Some(wq) = self.wqs.get_mut(h) {
                wq.refs -= 1;
            }
        }
        Ok(())
    }

    /// CREATE_QP (extended) with an indirection table: an RSS QP (`create_rss_raw_qp_tir`'s
    /// checks: mlx5's `comp_mask` and flags, the Toeplitz function with a 40-byte key, the
    /// hash fields the model has); the rest (table size, field combinations) the model's.
    pub(crate) fn create_rss_qp(&mut self, b: &Bundle<'_>, c: &ib_uverbs_ex_create_qp) -> Res {
        if c.qp_type != IB_UVERBS_QPT_RAW_PACKET {
            return Err(libc::EINVAL);
        }
        let drv: mlx5_ib_create_qp_rss = driver_request(b, true)?;
        if drv.comp_mask != 0 || drv.flags != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let known = (MLX5_RX_HASH_DST_PORT_UDP << 1) - 1;
        if drv.rx_hash_fields_mask & !known != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let hash = match drv.rx_hash_fields_mask {
            0 => None,
            fields => {
                if drv.rx_hash_function != MLX5_RX_HASH_FUNC_TOEPLITZ {
                    return Err(libc::EOPNOTSUPP);
                }
                if usize::from(drv.rx_key_len) != KEY_LEN {
                    return Err(libc::EINVAL);
                }
                let mut key = [0u8; KEY_LEN];
                key.copy_from_slice(&drv.rx_hash_key[..KEY_LEN]);
                Some(RxHash {
                    key,
                    fields: HashFields(fields as u32),
                })
            }
        };
        let pdn = self.pd(c.pd_handle)?.pdn;
        let table = self
            .ind_tables
            .get(&c.rwq_ind_tbl_handle)
            .ok_or(libc::EINVAL)?;
        let wqns = table.wqs.iter().map(|h| self.wqs[h].wqn).collect();
        let qpn = self
            .nic
            .create_rss_qp(&RssQpParams { pdn, wqns, hash })
            .map_err(errno)?;
        let handle = self.handle();
        let base = ib_uverbs_create_qp_resp {
            qp_handle: handle,
            qpn,
            ..Default::default()
        };
        let resp = ib_uverbs_ex_create_qp_resp {
            base,
            comp_mask: 0,
            response_length: std::mem::size_of::<ib_uverbs_ex_create_qp_resp>() as u32,
        };
        let done = self
            .respond(b, &resp)
            .and_then(|()| self.respond_driver(b, &mlx5_ib_create_qp_resp::default()));
        if let Err(e) = done {
            let _ = self.nic.destroy_rss_qp(qpn);
            return Err(e);
        }
        let table_handle = c.rwq_ind_tbl_handle;
        self.ind_tables
            .get_mut(&table_handle)
            .expect("found above")
            .refs += 1;
        self.rss_qps.insert(
            handle,
            RssQp {
                qpn,
                table: table_handle,
            },
        );
        Ok(())
    }

    /// DESTROY_QP of an RSS QP (EBUSY while a rule steers to it).
    pub(crate) fn destroy_rss_qp(&mut self, b: &Bundle<'_>, handle: u32) -> Res {
        let qp = &self.rss_qps[&handle];
        self.nic.destroy_rss_qp(qp.qpn).map_err(errno)?;
        let qp = self.rss_qps.remove(&handle).expect("found above");
        if let Some(t) = self.ind_tables.get_mut(&qp.table) {
            t.refs -= 1;
        }
        self.respond(b, &ib_uverbs_destroy_qp_resp { events_reported: 0 })
    }
}
