//! One side of a benchmark: its device, CQ, QPs and buffer, and the posting and polling
//! loops of each test.

use std::time::{Duration, Instant};

use mlx5_direct::{
    Access, AddressHandle, AhAttr, Completion, ConnectOptions, Context, Cq, CqConfig, Data,
    DciStreams, Dct, DmSlots, DoorbellMode, Endpoint, GlobalRoute, McastGroup, MemoryRegion,
    ProtectionDomain, Qp, QpConfig, Remote, SendFlags, SendOp, SendWr, SharedRecvQueue, Srq,
    Transport, WcOpcode, MCAST_QPN,
};

use super::hwts::{HwTimes, Trigger};
use super::params::{Connection, DEF_DC_KEY, DEF_QKEY};
use super::xrc::{target_endpoint, XrcSide};
use super::{Device, Error, Local, Msg, Params};
use crate::cli::{AtomicType, Mode, Verb};
use crate::exchange::{DctRecord, Peer, QpRecord};
use crate::stats::{Latencies, Phase, Schedule};
use mlx5_direct::backend::sim::PcieCounters;

/// A WR's send-queue bookkeeping for one QP.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Window {
    pub(super) posted: u64,
    pub(super) completed: u64,
    /// Signaled WRs posted and not completed.
    pub(super) signaled: u64,
    /// The last WR is posted.
    pub(super) closed: bool,
}

/// The names of [`OpCounts`]' counts: the completion opcodes, and the completions that
/// carried an immediate.
const OP_NAMES: [&str; 12] = [
    "send",
    "rdma_write",
    "rdma_read",
    "compare_swap",
    "fetch_add",
    "masked_compare_swap",
    "masked_fetch_add",
    "nop",
    "recv",
    "recv_rdma_with_imm",
    "other",
    "with_imm",
];

/// Completions polled by opcode, and those carrying an immediate (verbs'
/// `IBV_WC_WITH_IMM`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct OpCounts([u64; 12]);

impl OpCounts {
    fn count(&mut self, c: &Completion) {
        let i = match c.opcode {
            WcOpcode::Send => 0,
            WcOpcode::RdmaWrite => 1,
            WcOpcode::RdmaRead => 2,
            WcOpcode::CompareSwap => 3,
            WcOpcode::FetchAdd => 4,
            WcOpcode::MaskedCompareSwap => 5,
            WcOpcode::MaskedFetchAdd => 6,
            WcOpcode::Nop => 7,
            WcOpcode::Recv => 8,
            WcOpcode::RecvRdmaWithImm => 9,
            WcOpcode::Other(_) => 10,
        };
        self.0[i] += 1;
        self.0[11] += u64::from(c.imm().is_some());
    }

    /// The counts that are not zero, by name.
    pub(super) fn to_map(self) -> std::collections::BTreeMap<String, u64> {
        OP_NAMES
            .iter()
            .zip(self.0)
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| (name.to_string(), n))
            .collect()
    }
}

/// Polls between calls to the device's deferred work while nothing arrives.
const IDLE_POLLS: u32 = 256;

/// How long a wait on the model spins before it starts yielding the core: far longer than a
/// model round trip on two free cores (well under a microsecond), so only a shared core
/// yields.
const YIELD_AFTER: Duration = Duration::from_micros(2);

/// How long `-e` sleeps for a completion event before looking around (the model's timers,
/// the peer).
const EVENT_WAIT: Duration = Duration::from_millis(1);

/// Idle polls between looks at the TCP connection (the peer's Done, or its end).
const PEER_CHECK: u32 = 4096;

/// The error to report when the peer spoke (or hung up) in the middle of a test.
pub(super) fn peer_stopped(peer: &mut Peer) -> Error {
    match peer.recv::<Msg>() {
        Err(e) => format!("the peer stopped during the test: {e}").into(),
        Ok(m) => format!("unexpected message from the peer during the test: {m:?}").into(),
    }
}

/// One side: device, CQ (sends and receives), QPs and their buffer.
pub(super) struct Side<B: Device> {
    pub(super) ctx: Context<B>,
    pub(super) cq: Cq<B>,
    /// The sending QPs: RC, UC or UD QPs, DC initiators (DCIs) or XRC initiators.
    pub(super) qps: Vec<Qp<B>>,
    /// DC: the DC target (DCT) of each QP index, where the peer's DCI of that index sends.
    dcts: Vec<Dct<B>>,
    /// UD and DC: the address handle of each remote QP.
    ahs: Vec<AddressHandle<B>>,
    /// DC: the stream of each DCI's next post (perftest's `dci_stream_id`: 0 first, moved on
    /// at every post and kept across sizes; always 0 without `--log_dci_streams`).
    dci_streams: Vec<u16>,
    /// The shared receive queue of every QP (`--use-srq`; DC's DCTs).
    srq: Option<Srq<B>>,
    /// XRC: the XRC SRQ and the target of each QP index (the peer's initiators' ends).
    xrc: Option<XrcSide<B>>,
    pd: ProtectionDomain<B>,
    /// The message size of the current run (UD receives are checked against it).
    size: usize,
    pub(super) mr: MemoryRegion<B>,
    pub(super) params: Params,
    pub(super) windows: Vec<Window>,
    pub(super) received: Vec<u64>,
    /// Receives posted per QP; with an SRQ, all of them count on QP 0.
    pub(super) recv_posted: Vec<u64>,
    pub(super) remote: Vec<QpRecord>,
    pub(super) idle: u32,
    /// When the current run of empty polls began.
    pub(super) idle_since: Instant,
    /// Completions polled in the current size, by opcode.
    pub(super) opcodes: OpCounts,
    /// `--cpu_util` of the current size.
    pub(super) cpu: super::host::CpuWindow,
    /// The poll buffer: `--cqe_poll` completions.
    done: Vec<Completion>,
    /// `--hw-timestamps`: the current latency size's CQE times.
    pub(super) hw: Option<HwTimes>,
    /// This side's own settings.
    pub(super) local: Local,
}

/// The path MTU of `local`'s port: `-m`, cut to the port's active MTU (perftest's
/// `set_mtu`), which is also the default (4096 on the model; often 1024 on RoCE with a
/// 1500-byte Ethernet MTU, where 4096 would be refused).
pub(super) fn path_mtu<B: Device>(ctx: &Context<B>, local: &Local) -> Result<u32, Error> {
    let active = ctx.port(local.port)?.active_mtu.min(4096);
    Ok(local.mtu.map_or(active, |m| m.min(active)))
}

/// The address handle's attributes for the peer's record `r` through `port` (UD and DC):
/// its LID and `-S`; on RoCE (LID 0), on InfiniBand with `-x` and to a multicast group
/// (`-g`), a GRH to its GID from
/// the source GID `-x` names (without it the port's, `gid_index`), with `--flow_label` and
/// `--tclass`.
fn ah_attr(port: u8, gid_index: u8, r: &QpRecord, local: &Local) -> AhAttr {
    // A multicast group is always addressed with its MGID.
    let global = r.lid == 0 || local.gid_index.is_some() || r.qpn == MCAST_QPN;
    let grh = global.then_some(GlobalRoute {
        dgid: r.gid,
        flow_label: local.flow_label,
        sgid_index: local.gid_index.unwrap_or(gid_index),
        hop_limit: 64,
        traffic_class: local.traffic_class,
    });
    AhAttr {
        port,
        dlid: r.lid,
        sl: local.sl,
        src_path_bits: 0,
        grh,
    }
}

/// The bytes of each QP's two areas, its receive area and then its send area: the test's
/// ([`Params::slot`]), at least twice [`Local::area`].
fn slot(params: &Params, local: &Local) -> usize {
    params.slot().max(2 * local.area.next_multiple_of(64))
}

/// What one WR of a test carries: inline data or gather entries, or (`--use-dm`) a payload
/// to copy into the QP's device-memory slots and gather from there.
#[derive(Clone, Copy, Debug)]
pub(super) enum Payload<'a> {
    /// Posted as it is.
    Wr(Data<'a>),
    /// Through device memory ([`mlx5_direct::SendQueue::push_dm`]).
    Dm(&'a [u8]),
}

/// The immediate of every WRITE_IMM and SEND_IMM.
const IMM: u32 = 0x1234_5678;

/// The last byte of ping-pong message `i` (from 0), which the receiving side spins on:
/// perftest's `*post_buf = (char)++scnt` (`run_iter_lat_write`), so that either end may be
/// perftest's.
fn marker(i: u64) -> u8 {
    (i + 1) as u8
}

impl<B: Device> Side<B> {
    pub(super) fn new(ctx: Context<B>, params: &Params, local: Local) -> Result<Self, Error> {
        let pd = ctx.alloc_pd()?;
        let q = params.qps;
        let cq_config = CqConfig {
            timestamps: local.hw_timestamps,
            ..CqConfig::new(q * (params.tx_depth + params.rx_depth) + 16, 64)
        };
        let mut cq = ctx.create_cq_with(&cq_config)?;
        if local.events {
            cq.arm(false);
        }
        // ctrl (16), the datagram segment (48, UD and DC) or the XRC segment (16), raddr
        // (16, not UD), inline header (4) and data, in WQEBBs; an XRC atomic is ctrl, XRC,
        // raddr, atomic and data segments (80: two WQEBBs, where RC's 64 take one).
        let (transport, overhead) = match params.connection {
            Connection::Rc => (Transport::Rc, 36),
            Connection::Uc => (Transport::Uc, 36),
            Connection::Ud => (Transport::Ud, 68),
            Connection::Dc => (Transport::Dci, 84),
            Connection::Xrc if params.test.verb == Verb::Atomic => (Transport::XrcIni, 80),
            Connection::Xrc => (Transport::XrcIni, 52),
        };
        let bbs = (overhead + params.inline_size).div_ceil(64).max(1) as u32;
        let config = QpConfig {
            sq_wqebbs: (params.tx_depth * bbs).next_power_of_two().max(64),
            rq_wqes: params.rx_depth.next_power_of_two(),
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline: params.inline_size as u32,
            transport,
            scatter_to_cqe: false,
            dci_streams: params.dci_streams.map(|s| DciStreams {
                log_concurrent: s.log,
                log_errored: 0,
            }),
            ..QpConfig::default()
        };
        let srq = match (params.srq, transport) {
            (_, Transport::XrcIni) => None,
            (true, Transport::Ud) => Some(pd.create_ud_srq(params.rx_depth, 1)?),
            (true, _) => Some(pd.create_srq(params.rx_depth, 1)?),
            (false, _) => None,
        };
        let xrc = match transport {
            Transport::XrcIni => Some(XrcSide::new(&ctx, &pd, &cq, params.rx_depth, q)?),
            _ => None,
        };
        let mut qps = Vec::new();
        let mut dcts = Vec::new();
        for _ in 0..q {
            let mut qp = match &srq {
                Some(srq) if transport == Transport::Dci => {
                    // perftest's DC pairs: this side's DCI sends to the peer's DCT of the
                    // same index, and this side's DCT (on the SRQ) serves the peer's DCI.
                    let mut dct = pd.create_dct(&cq, srq, DEF_DC_KEY)?;
                    let options = ConnectOptions {
                        path_mtu: path_mtu(&ctx, &local)?,
                        pkey_index: local.pkey_index,
                        traffic_class: local.traffic_class,
                        sl: local.sl,
                        flow_label: local.flow_label,
                        ..ConnectOptions::default()
                    };
                    let access = Access::remote_default(ctx.caps().atomics);
                    dct.activate(local.port, access, &options)?;
                    dcts.push(dct);
                    pd.create_dci(&cq, &config)?
                }
                Some(srq) => pd.create_qp_with_srq(&cq, &cq, srq, &config)?,
                None if xrc.is_some() => pd.create_xrc_initiator(&cq, &config)?,
                None => pd.create_qp(&cq, &cq, &config)?,
            };
            qp.sq().set_mode(match local.mode {
                Mode::Bf => DoorbellMode::BlueFlame,
                Mode::Db => DoorbellMode::Doorbell,
                Mode::Auto => DoorbellMode::Auto,
            });
            qps.push(qp);
        }
        let mr = pd.alloc_mr_with(
            slot(params, &local) * q as usize,
            local.access(),
            &local.memory,
        )?;
        Ok(Side {
            ctx,
            cq,
            qps,
            dcts,
            ahs: Vec::new(),
            dci_streams: vec![0; q as usize],
            srq,
            xrc,
            pd,
            size: 0,
            mr,
            params: params.clone(),
            windows: vec![Window::default(); q as usize],
            received: vec![0; q as usize],
            recv_posted: vec![0; q as usize],
            remote: Vec::new(),
            idle: 0,
            idle_since: Instant::now(),
            opcodes: OpCounts::default(),
            cpu: super::host::CpuWindow::new(local.cpu_util),
            done: vec![Completion::default(); usize::from(local.cqe_poll.max(1))],
            hw: None,
            local,
        })
    }

    fn slot(&self) -> usize {
        slot(&self.params, &self.local)
    }

    pub(super) fn recv_area(&self, q: usize) -> usize {
        q * self.slot()
    }

    pub(super) fn send_area(&self, q: usize) -> usize {
        self.recv_area(q) + self.slot() / 2
    }

    /// The records of this side's QPs for the peer. With `-g`, the receiving side's QPs
    /// join the group first and their records name it (perftest's
    /// `send_set_up_connection`: the MGID, the MLID and QPN 0xFFFFFF).
    pub(super) fn records(&self, port: u8, server: bool) -> Result<Vec<QpRecord>, Error> {
        let group = self.mcast_group(port, server)?;
        let mut out = Vec::new();
        for (q, qp) in self.qps.iter().enumerate() {
            // The QP's own first PSN, through the port this run uses.
            let psn = qp.endpoint()?.psn;
            let ep = self.ctx.backend().endpoint(port, qp.qpn(), psn)?;
            let dct = match self.dcts.get(q) {
                Some(d) => Some(DctRecord {
                    number: d.number()?,
                    key: d.dc_key(),
                }),
                None => None,
            };
            out.push(QpRecord {
                lid: ep.lid,
                qpn: ep.qpn,
                psn: ep.psn,
                rkey: self.mr.rkey(),
                addr: self.mr.addr() + self.recv_area(q) as u64,
                gid: ep.gid,
                qkey: (self.params.connection == Connection::Ud).then_some(DEF_QKEY),
                dct,
                xrc: self.xrc.as_ref().map(|x| x.record(q)).transpose()?,
            });
            if let Some(group) = group {
                qp.attach_mcast(&group)?;
                let r = out.last_mut().expect("pushed above");
                (r.lid, r.gid, r.qpn) = (group.mlid, group.mgid, MCAST_QPN);
            }
        }
        Ok(out)
    }

    /// The group the QPs of this side join with `-g`: the receiving side's (the server of
    /// `send_bw`), on RoCE MLID 0, on the model perftest's old `MCG_LID` 0xC001 (it has no
    /// subnet manager); refused on an InfiniBand NIC, whose MLID the subnet manager's join
    /// gives.
    fn mcast_group(&self, port: u8, server: bool) -> Result<Option<McastGroup>, Error> {
        let Some(mgid) = self.params.mcast else {
            return Ok(None);
        };
        if self.params.sends(server) {
            return Ok(None);
        }
        let roce = self.ctx.port(port)?.roce;
        if !roce && B::MLID_FROM_SM {
            return Err(
                "-g on InfiniBand: the group's MLID comes from the subnet manager's \
                        join (an SA MCMemberRecord), which mlx5-perf does not send"
                    .into(),
            );
        }
        let mlid = if roce { 0 } else { 0xc001 };
        Ok(Some(McastGroup { mgid, mlid }))
    }

    pub(super) fn connect(&mut self, remote: Vec<QpRecord>, port: u8) -> Result<(), Error> {
        if remote.len() != self.qps.len() {
            return Err(format!(
                "the peer has {} QPs, this side {}",
                remote.len(),
                self.qps.len()
            )
            .into());
        }
        let options = ConnectOptions {
            port: Some(port),
            path_mtu: self.path_mtu(port)?,
            timeout: self.local.qp_timeout,
            traffic_class: self.local.traffic_class,
            sl: self.local.sl,
            flow_label: self.local.flow_label,
            pkey_index: self.local.pkey_index,
            rd_atomic: self.out_reads(),
            ..ConnectOptions::default()
        };
        let connection = self.params.connection;
        if connection == Connection::Ud {
            let mtu = options.path_mtu as usize;
            if let Some(&s) = self.params.sizes.iter().find(|&&s| s > mtu) {
                return Err(format!(
                    "-c UD: {s}-byte messages are more than the path MTU {mtu} (perftest \
                     cuts its sizes to the port's active MTU; give -m {mtu} or a smaller -s)"
                )
                .into());
            }
        }
        let gid_index = self.ctx.port(port)?.gid_index;
        for (q, (qp, r)) in self.qps.iter_mut().zip(&remote).enumerate() {
            match connection {
                Connection::Rc | Connection::Uc => {
                    let ep = Endpoint {
                        lid: r.lid,
                        gid: r.gid,
                        qpn: r.qpn,
                        psn: r.psn,
                    };
                    qp.connect(&ep, &options)?;
                }
                Connection::Ud => {
                    qp.activate_ud_with(DEF_QKEY, &options)?;
                    if r.qkey.is_none() {
                        return Err("-c UD: the peer's record has no Q_Key".into());
                    }
                }
                Connection::Dc => {
                    qp.activate_dci(&options)?;
                    if r.dct.is_none() {
                        return Err("-c DC: the peer's record has no DCT number and key".into());
                    }
                }
                Connection::Xrc => {
                    // This side's initiator to the peer's target, this side's target to
                    // the peer's initiator.
                    qp.connect(&target_endpoint(r)?, &options)?;
                    let xrc = self.xrc.as_mut().ok_or("-c XRC: no XRC targets")?;
                    xrc.connect(q, r, &options)?;
                }
            }
            if matches!(connection, Connection::Ud | Connection::Dc) {
                let ah = self
                    .pd
                    .create_ah(&ah_attr(port, gid_index, r, &self.local))?;
                self.ahs.push(ah);
            }
        }
        if let Some(kbps) = self.params.pacing_kbps {
            let limit = mlx5_direct::RateLimit {
                kbps,
                ..mlx5_direct::RateLimit::default()
            };
            for qp in &mut self.qps {
                qp.set_rate_limit(&limit)?;
            }
        }
        self.remote = remote;
        Ok(())
    }

    /// The records of the peer's QPs through `link` (`-R`, `-z`), each QP introduced in
    /// turn; with `-z` then connected as [`Side::connect`] does.
    pub(super) fn link(
        &mut self,
        link: &mut dyn super::CmLink<B>,
        mine: &[QpRecord],
        port: u8,
    ) -> Result<Vec<QpRecord>, Error> {
        let (out_reads, mtu) = (self.out_reads(), self.path_mtu(port)?);
        let mut theirs = Vec::new();
        for (q, (qp, record)) in self.qps.iter_mut().zip(mine).enumerate() {
            theirs.push(link.link(qp, q, record, out_reads, mtu)?);
        }
        if self.params.rdma_cm == super::RdmaCm::Qps {
            self.remote = theirs.clone();
        } else {
            self.connect(theirs.clone(), port)?;
        }
        Ok(theirs)
    }

    /// The path MTU of this side's port ([`path_mtu`]).
    pub(super) fn path_mtu(&self, port: u8) -> Result<u32, Error> {
        path_mtu(&self.ctx, &Local { port, ..self.local })
    }

    /// Outstanding READs / atomics per QP: `-o`, at most the device's maximum, which is also
    /// the default (perftest's `ctx_set_out_reads`).
    pub(super) fn out_reads(&self) -> u8 {
        let max = self.ctx.caps().max_rd_atomic;
        match u8::try_from(self.params.out_reads) {
            Ok(0) => max,
            Ok(n) => n.min(max),
            Err(_) => max,
        }
    }

    /// Keeps `rx_depth` receives posted on every QP (or `rx_depth` on the SRQ), in lists of
    /// `--recv_post_list`, each for the largest size, so a receive posted during one size
    /// still fits the next.
    pub(super) fn refill(&mut self) -> Result<(), Error> {
        if !self.params.receives() {
            return Ok(());
        }
        let len = (self.slot() / 2) as u32;
        let list = u64::from(self.params.recv_post_list);
        let depth = u64::from(self.params.recv_depth());
        if self.shared_rq() {
            // Every QP's receives land in QP 0's area: only the count matters.
            let sge = [self.mr.sge(self.recv_area(0), len)];
            let srq: &mut SharedRecvQueue = match (self.srq.as_mut(), self.xrc.as_mut()) {
                (Some(srq), _) => srq,
                (None, Some(xrc)) => xrc.srq(),
                (None, None) => return Err("no SRQ".into()),
            };
            let received: u64 = self.received.iter().sum();
            while self.recv_posted[0] - received + list <= depth {
                for _ in 0..list {
                    srq.post(self.recv_posted[0], &sge)?;
                    self.recv_posted[0] += 1;
                }
            }
            return Ok(());
        }
        for q in 0..self.qps.len() {
            let sge = [self.mr.sge(self.recv_area(q), len)];
            let rq = self.qps[q].rq().ok_or("QP without a receive queue")?;
            while self.recv_posted[q] - self.received[q] + list <= depth {
                let first = self.recv_posted[q];
                rq.post_many((first..first + list).map(|id| (id, &sge[..])))
                    .map_err(|(_, e)| e)?;
                self.recv_posted[q] += list;
            }
        }
        Ok(())
    }

    /// Polls the CQ once; returns how many completions it took.
    pub(super) fn pump(&mut self) -> Result<usize, Error> {
        let n = self.cq.poll(&mut self.done);
        for c in &self.done[..n] {
            if !c.status.is_ok() {
                return Err(format!("completion error on QP {:#x}: {:?}", c.qpn, c.status).into());
            }
            let q = self
                .qps
                .iter()
                .position(|qp| qp.qpn() == c.qpn)
                .or_else(|| {
                    self.dcts
                        .iter()
                        .position(|d| d.number().is_ok_and(|n| n == c.qpn))
                })
                .or_else(|| self.xrc.as_ref().and_then(|x| x.index_of(c.qpn)))
                .ok_or("completion for an unknown QP")?;
            self.opcodes.count(c);
            if matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
                // UD: the GRH area, then exactly the message.
                if self.params.connection == Connection::Ud && c.ud_payload().len() != self.size {
                    return Err(format!(
                        "UD receive on QP {:#x} of {} bytes: expected the {}-byte GRH area and \
                         the {}-byte message",
                        c.qpn,
                        c.byte_len,
                        self.params.grh(),
                        self.size
                    )
                    .into());
                }
                // perftest's "completion with flags mismatch": every receive carries the
                // immediate exactly when the test sends one.
                let imm = self.params.imm.then_some(IMM);
                if c.imm() != imm {
                    return Err(format!(
                        "receive completion on QP {:#x} with immediate {:?}, expected {imm:?}",
                        c.qpn,
                        c.imm()
                    )
                    .into());
                }
                self.received[q] += 1;
                if let Some(hw) = &mut self.hw {
                    hw.received(c.timestamp());
                }
            } else {
                let w = &mut self.windows[q];
                w.completed = c.wr_id + 1;
                w.signaled -= 1;
                if let Some(hw) = &mut self.hw {
                    hw.completed(c.wr_id, c.timestamp())?;
                }
            }
        }
        if n == 0 && self.local.events {
            // perftest's -e: nothing to poll, so sleep until the CQ's event, arm it for
            // the next, then poll again (ctx_notify_events). The model's timers run first:
            // nothing else would run them while this thread sleeps.
            self.idle = self.idle.wrapping_add(1);
            self.ctx.backend().progress();
            if self.cq.wait_event(EVENT_WAIT)? {
                self.cq.arm(false);
            }
        } else if n == 0 {
            self.idle = self.idle.wrapping_add(1);
            if self.idle == 1 {
                self.idle_since = Instant::now();
            }
            self.waited(self.idle, self.idle_since);
        } else {
            self.idle = 0;
        }
        Ok(n)
    }

    /// Called on the `spins`-th empty look of a wait that began `since`: runs the device's
    /// timers now and then and, on the model, once the wait is long, lets the peer's thread
    /// have this core if it is waiting for it (a busy machine; never on hardware).
    pub(super) fn waited(&self, spins: u32, since: Instant) {
        if B::SHARES_CPU && spins % 64 == 0 && since.elapsed() > YIELD_AFTER {
            std::thread::yield_now();
        }
        if spins % IDLE_POLLS == 0 {
            self.ctx.backend().progress();
        }
    }

    /// True when the `spins`-th idle look should also look at the TCP connection: every
    /// `PEER_CHECK` looks, or every look with `-e`, whose looks each sleep.
    pub(super) fn peer_check_due(&self, spins: u32) -> bool {
        self.local.events || spins % PEER_CHECK == 0
    }

    pub(super) fn op(&self, q: usize) -> SendOp {
        let r = &self.remote[q];
        let remote = Remote {
            addr: r.addr,
            rkey: r.rkey,
        };
        match (self.params.test.verb, self.params.atomic_type) {
            (Verb::Write, _) if self.params.imm => SendOp::WriteImm(remote, IMM),
            (Verb::Write, _) => SendOp::Write(remote),
            (Verb::Send, _) if self.params.imm => SendOp::SendImm(IMM),
            (Verb::Send, _) => SendOp::Send,
            (Verb::Read, _) => SendOp::Read(remote),
            (Verb::Atomic, AtomicType::FetchAndAdd) => SendOp::FetchAdd { remote, add: 1 },
            (Verb::Atomic, AtomicType::CmpAndSwap) => SendOp::CompareSwap {
                remote,
                compare: 0,
                swap: 0,
            },
        }
    }

    /// Posts `count` WRs on QP `q` with one doorbell; `last` closes the QP's stream (its last
    /// WR is signaled so everything completes).
    pub(super) fn post(
        &mut self,
        q: usize,
        count: u32,
        last: bool,
        op: SendOp,
        payload: Payload<'_>,
    ) -> Result<(), Error> {
        let p = &self.params;
        let w = &mut self.windows[q];
        let sq = self.qps[q].sq();
        for j in 0..count {
            let n = w.posted;
            let end = j + 1 == count;
            let outstanding = n + 1 - w.completed;
            // Also signal when the next batch could not be posted without a completion and
            // none is on its way, so moderation never deadlocks the window.
            let signal = (n + 1) % u64::from(p.cq_mod) == 0
                || (end && last)
                || (end
                    && w.signaled == 0
                    && outstanding + u64::from(p.post_list) > u64::from(p.tx_depth));
            let flags = if signal {
                SendFlags::SIGNALED
            } else {
                SendFlags::UNSIGNALED
            };
            if let Some(hw) = &mut self.hw {
                hw.posted(n);
            }
            let wr = |data| SendWr {
                wr_id: n,
                op,
                data,
                flags,
            };
            let r = &self.remote[q];
            match (payload, self.ahs.get(q), r.dct, r.qkey, r.xrc) {
                (Payload::Dm(bytes), ..) => sq.push_dm(n, op, bytes, flags)?,
                (Payload::Wr(data), Some(ah), Some(dct), ..) => {
                    let stream = self.dci_streams[q];
                    let dest = ah.dc_dest(dct.number, dct.key).on_stream(stream);
                    sq.push_dc(&wr(data), &dest)?;
                    if let Some(s) = p.dci_streams {
                        self.dci_streams[q] = s.next(stream);
                    }
                }
                (Payload::Wr(data), Some(ah), None, Some(qkey), _) => {
                    sq.push_ud(&wr(data), &ah.dest(r.qpn, qkey))?;
                }
                (Payload::Wr(data), None, _, _, Some(x)) => sq.push_xrc(&wr(data), x.srqn)?,
                (Payload::Wr(data), ..) => sq.push_wr(&wr(data))?,
            }
            w.posted += 1;
            w.signaled += u64::from(signal);
        }
        sq.ring_doorbell();
        w.closed |= last;
        Ok(())
    }

    /// `--use-dm` on a side that sends: device memory for every QP's slots
    /// ([`Params::dm_slots`]), registered per QP and attached to its send queue. A device
    /// without enough is refused with the amount needed.
    pub(super) fn attach_dm(&mut self, server: bool) -> Result<(), Error> {
        let Some((slot, count)) = self.params.dm_slots() else {
            return Ok(());
        };
        if !self.params.sends(server) {
            return Ok(());
        }
        let (need, have) = (self.params.dm_bytes(), self.ctx.caps().max_dm_size);
        let qps = self.qps.len();
        let refused = |why: &dyn std::fmt::Display| -> Error {
            format!(
                "--use-dm: {qps} QP(s) x {count} outstanding WRs x {slot}-byte slots need \
                 {need} bytes of device memory, the device has {have}: {why}"
            )
            .into()
        };
        if have == 0 {
            return Err("--use-dm: the device has no device memory (max_dm_size 0)".into());
        }
        if need > have {
            return Err(refused(&"lower -t, -q or -s"));
        }
        let dm = self.ctx.alloc_dm(need as usize).map_err(|e| refused(&e))?;
        let per_qp = slot * count as usize;
        for (q, qp) in self.qps.iter_mut().enumerate() {
            let region = dm.register(&self.pd, q * per_qp, per_qp, Access::NONE)?;
            qp.sq().attach_dm(DmSlots::new(region, slot)?)?;
        }
        Ok(())
    }

    /// Starts a new size: WR and receive counts from zero. Everything posted before has
    /// completed (each size ends drained), so WR ids can start over.
    pub(super) fn rebase(&mut self, size: usize) -> Result<(), Error> {
        self.size = size;
        if (0..self.qps.len()).any(|q| self.outstanding(q) > 0) {
            return Err("WRs still outstanding at the start of a size".into());
        }
        self.windows.fill(Window::default());
        self.opcodes = OpCounts::default();
        if self.shared_rq() {
            self.recv_posted[0] -= self.received.iter().sum::<u64>();
            self.received.fill(0);
        }
        for (posted, received) in self.recv_posted.iter_mut().zip(&mut self.received) {
            *posted -= *received;
            *received = 0;
        }
        Ok(())
    }

    /// `--hw-timestamps`: starts a latency size's CQE times (the clock's calibration taken
    /// again, as `mlx5dv_get_clock_info` asks); nothing without the flag.
    pub(super) fn time_by_nic(&mut self, schedule: Option<Schedule>) -> Result<(), Error> {
        if !self.local.hw_timestamps {
            return Ok(());
        }
        let info = self.ctx.clock_info()?;
        let trigger = match self.params.test.verb {
            Verb::Write if !self.params.imm => Trigger::Memory,
            Verb::Write | Verb::Send => Trigger::Receive,
            Verb::Read | Verb::Atomic => Trigger::Requester,
        };
        let halves = matches!(self.params.test.verb, Verb::Write | Verb::Send);
        self.hw = Some(HwTimes::new(info, trigger, halves, schedule));
        Ok(())
    }

    /// True when every QP's receives come from one queue: an SRQ or XRC's.
    fn shared_rq(&self) -> bool {
        self.srq.is_some() || self.xrc.is_some()
    }

    pub(super) fn outstanding(&self, q: usize) -> u64 {
        self.windows[q].posted - self.windows[q].completed
    }

    /// Waits until QP `q` may have `count` more WRs outstanding.
    pub(super) fn make_room(&mut self, q: usize, count: u32) -> Result<(), Error> {
        while self.outstanding(q) + u64::from(count) > u64::from(self.params.tx_depth) {
            self.pump()?;
        }
        Ok(())
    }

    pub(super) fn drain(&mut self) -> Result<(), Error> {
        while (0..self.qps.len()).any(|q| self.outstanding(q) > 0) {
            self.pump()?;
        }
        Ok(())
    }

    pub(super) fn pcie(&self) -> Option<PcieCounters> {
        self.ctx.backend().pcie()
    }
}

/// `--data_validation`: the bytes of every `size`-byte message (byte `k` is `(k + size)`
/// mod 251, so neither a zeroed buffer nor another size's pattern passes).
fn pattern(size: usize) -> Vec<u8> {
    (0..size).map(|k| ((k + size) % 251) as u8).collect()
}

impl<B: Device> Side<B> {
    /// Where `--data_validation` checks: for WRITE the server's receive areas, for READ
    /// the client's local area (all QPs read into it); each with the pattern's source.
    fn validation_areas(&self, server: bool) -> (Vec<usize>, Vec<usize>) {
        let all: Vec<usize> = (0..self.qps.len()).map(|q| self.recv_area(q)).collect();
        let local = vec![self.send_area(0)];
        match (self.params.test.verb, server) {
            (Verb::Write, true) => (all, Vec::new()),
            (Verb::Write, false) => (Vec::new(), local),
            (_, true) => (Vec::new(), all),
            (_, false) => (local, Vec::new()),
        }
    }

    /// `--data_validation` before a size: this side's sources hold the pattern, its
    /// destinations zeros.
    pub(super) fn prepare_validation(&self, size: usize, server: bool) {
        if !self.params.validate {
            return;
        }
        let (destinations, sources) = self.validation_areas(server);
        for at in destinations {
            self.mr.write(at, &vec![0; size]);
        }
        for at in sources {
            self.mr.write(at, &pattern(size));
        }
    }

    /// `--data_validation` after a size: every byte of this side's destinations is the
    /// pattern's.
    pub(super) fn validate(&self, size: usize, server: bool) -> Result<(), Error> {
        if !self.params.validate {
            return Ok(());
        }
        let want = pattern(size);
        let mut got = vec![0; size];
        for at in self.validation_areas(server).0 {
            self.mr.read(at, &mut got);
            if let Some(k) = (0..size).find(|&k| got[k] != want[k]) {
                return Err(format!(
                    "--data_validation: byte {k} of the {size}-byte message at offset {at:#x} \
                     is {:#04x}, expected {:#04x}",
                    got[k], want[k]
                )
                .into());
            }
        }
        Ok(())
    }
}

/// The message payload for iteration `i` (inline), or the local buffer with the marker;
/// with `--use-dm` above the inline size, the local buffer's bytes to go through device
/// memory.
pub(super) fn data_for<'a, B: Device>(
    side: &Side<B>,
    size: usize,
    payload: &'a mut [u8],
    sge: &'a mut [mlx5_direct::Sge; 1],
    i: u64,
) -> Payload<'a> {
    let p = &side.params;
    match p.test.verb {
        Verb::Write | Verb::Send if size <= p.inline_size => {
            payload[size - 1] = marker(i);
            Payload::Wr(Data::Inline(&payload[..size]))
        }
        Verb::Atomic => {
            sge[0] = side.mr.sge(side.send_area(0), 8);
            Payload::Wr(Data::Sges(&sge[..]))
        }
        Verb::Write | Verb::Send if p.use_dm => {
            // What the gather would read: the pattern, or the buffer's zeros and the marker.
            match p.validate {
                true => side.mr.read(side.send_area(0), &mut payload[..size]),
                false => payload[size - 1] = marker(i),
            }
            Payload::Dm(&payload[..size])
        }
        _ => {
            if !p.validate {
                side.mr.write(side.send_area(0) + size - 1, &[marker(i)]);
            }
            sge[0] = side.mr.sge(side.send_area(0), size as u32);
            Payload::Wr(Data::Sges(&sge[..]))
        }
    }
}

/// Spins for `gap` (perftest's `--latency_gap`: a busy wait, not a sleep).
pub(super) fn spin(gap: Duration) {
    if gap.is_zero() {
        return;
    }
    let end = Instant::now() + gap;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// True when a run with this `schedule` (duration mode) is over, or `i` iterations of
/// `iters` are done (iteration mode).
pub(super) fn finished(schedule: Option<&Schedule>, i: u64, iters: u64) -> bool {
    match schedule {
        Some(s) => s.phase(Instant::now()) == Phase::End,
        None => i >= iters,
    }
}

/// Latency tests: whether post `i` of a size (from 0) ends a stream that must complete,
/// so it is signaled whatever `-Q` says, as perftest's latency loops signal
/// (perftest_resources.c): every WRITE (`run_iter_lat_write`), READ and atomic
/// (`run_iter_lat`, which waits for each completion); a SEND every `-Q` (the post's own
/// rule) and the last of the size (`run_iter_lat_send`). Duration mode has no last post, so
/// there every SEND is (perftest leaves the tail unsignaled and never waits for it; here
/// each size ends with the send queue drained).
pub(super) fn lat_signals(params: &Params, schedule: Option<&Schedule>, i: u64) -> bool {
    params.test.verb != Verb::Send || schedule.is_some() || i + 1 == params.iters
}

/// Records a latency sample from `from` to `to` (halved for a ping-pong) unless duration
/// mode's margins exclude it.
pub(super) fn sample(
    lat: &mut Latencies,
    schedule: Option<&Schedule>,
    from: Instant,
    to: Instant,
    halves: bool,
) {
    if schedule.is_none_or(|s| s.sampled(from, to)) {
        let ns = (to - from).as_nanos() as f64;
        lat.record(if halves { ns / 2.0 } else { ns });
    }
}

/// UD: the ping-pong message `i` is in QP 0's receive area after the GRH area, its last
/// byte the marker the sender gave it (perftest's `UD_ADDITION` offset).
fn check_ud_payload<B: Device>(side: &Side<B>, size: usize, i: u64) -> Result<(), Error> {
    if side.params.connection != Connection::Ud {
        return Ok(());
    }
    let at = side.recv_area(0) + side.params.grh() + size - 1;
    let got = side.mr.read_volatile_u8(at);
    if got != marker(i) {
        return Err(format!(
            "UD message {i}: its last byte (offset {at:#x}, after the GRH area) is {got:#04x}, \
             expected {:#04x}",
            marker(i)
        )
        .into());
    }
    Ok(())
}

/// Waits for the peer's ping-pong message `i` on QP 0; false if a TCP message (the client's
/// Done) or the end of the connection came instead.
pub(super) fn await_ping<B: Device>(
    side: &mut Side<B>,
    peer: &mut Peer,
    size: usize,
    i: u64,
) -> Result<bool, Error> {
    let (mut spins, since) = (0u32, Instant::now());
    loop {
        // WRITE_IMM consumes a receive: its arrival is the receive's completion.
        let spins_on_memory = side.params.test.verb == Verb::Write && !side.params.imm;
        let arrived = match spins_on_memory {
            true => side.mr.read_volatile_u8(side.recv_area(0) + size - 1) == marker(i),
            false => {
                side.pump()?;
                side.received[0] > i
            }
        };
        if arrived {
            check_ud_payload(side, size, i)?;
            return Ok(true);
        }
        spins = spins.wrapping_add(1);
        if spins_on_memory {
            side.waited(spins, since);
        }
        if side.peer_check_due(spins) && peer.pending()? {
            return Ok(false);
        }
    }
}
