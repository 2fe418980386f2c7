//! Scatter to CQE end to end on the model: a QP created with `QpConfig::scatter_to_cqe`
//! receives SENDs of up to 32 bytes (64-byte CQEs) or 64 bytes (128-byte CQEs) inside the
//! CQE; polling copies them into the receive's scatter list. Pinned here: the bytes in the
//! user's buffer and in the CQE as written, `byte_len`, `data_in_cqe`, the model's counters
//! and PCIe traffic (the payload's write saved), SRQ and UC receives, a message over the
//! limit (normal DMA), and the refusals.
#![cfg(feature = "sim")]

mod common;

use mlx5_direct::backend::sim::{hw, Fabric, Sim};
use mlx5_direct::{
    Access, Completion, ConnectOptions, Context, Cq, CqConfig, CqeCompression, Data, Error,
    MemoryRegion, Qp, QpConfig, SendFlags, SendOp, Sge, Srq, Status, Transport, WcOpcode,
};

/// A requester and a responder on one fabric; the responder's QP as `config` says, its CQ
/// of `cqe_size`-byte entries, optionally on an SRQ.
struct Pair {
    b: Context<Sim>,
    cq_a: Cq<Sim>,
    cq_b: Cq<Sim>,
    qp_a: Qp<Sim>,
    qp_b: Qp<Sim>,
    srq_b: Option<Srq<Sim>>,
    mr_a: MemoryRegion<Sim>,
    mr_b: MemoryRegion<Sim>,
}

fn pair(config: &QpConfig, cqe_size: usize, srq: bool) -> Pair {
    let fabric = Fabric::new();
    let a = Context::new(Sim::on_fabric(&fabric, Default::default()));
    let b = Context::new(Sim::on_fabric(&fabric, Default::default()));
    let (pd_a, pd_b) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let cq_a = a.create_cq(64, 64).unwrap();
    let cq_b = b.create_cq(64, cqe_size).unwrap();
    let requester = QpConfig {
        scatter_to_cqe: false,
        ..*config
    };
    let mut qp_a = pd_a.create_qp(&cq_a, &cq_a, &requester).unwrap();
    let srq_b = srq.then(|| pd_b.create_srq(16, 2).unwrap());
    let mut qp_b = match &srq_b {
        Some(s) => pd_b.create_qp_with_srq(&cq_b, &cq_b, s, config).unwrap(),
        None => pd_b.create_qp(&cq_b, &cq_b, config).unwrap(),
    };
    qp_a.connect(&qp_b.endpoint().unwrap(), &ConnectOptions::default())
        .unwrap();
    qp_b.connect(&qp_a.endpoint().unwrap(), &ConnectOptions::default())
        .unwrap();
    let mr_a = pd_a.alloc_mr(4096, Access::ALL).unwrap();
    let mr_b = pd_b.alloc_mr(4096, Access::ALL).unwrap();
    Pair {
        b,
        cq_a,
        cq_b,
        qp_a,
        qp_b,
        srq_b,
        mr_a,
        mr_b,
    }
}

const SCATTER: QpConfig = QpConfig {
    sq_wqebbs: 64,
    rq_wqes: 16,
    max_send_sge: 2,
    max_recv_sge: 2,
    max_inline: 64,
    transport: Transport::Rc,
    scatter_to_cqe: true,
    user_index: None,
    dci_streams: None,
};

fn poll_one(cq: &mut Cq<Sim>) -> Completion {
    let mut out = [Completion::default(); 2];
    assert_eq!(cq.poll(&mut out), 1);
    out[0]
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| 0xa0 ^ i as u8).collect()
}

impl Pair {
    /// Posts `sges` as a receive (RQ or SRQ), then SENDs `data` from the requester's region
    /// (a gather entry, not inline: the payload is read from host memory either way);
    /// returns the receive completion and the responder's PCIe and model counters of the
    /// message.
    fn send(&mut self, sges: &[Sge], data: &[u8]) -> (Completion, hw::PcieCounters, hw::Stats) {
        match &mut self.srq_b {
            Some(srq) => srq.post(5, sges).unwrap(),
            None => self.qp_b.rq().unwrap().post(5, sges).unwrap(),
        }
        self.mr_a.write(0, data);
        let gather = [self.mr_a.sge(0, data.len() as u32)];
        let (pcie, stats) = (
            self.b.backend().nic().pcie(),
            self.b.backend().nic().stats(),
        );
        self.qp_a
            .sq()
            .post(9, SendOp::Send, Data::Sges(&gather), SendFlags::SIGNALED)
            .unwrap();
        let sent = poll_one(&mut self.cq_a);
        assert_eq!((sent.wr_id, sent.status), (9, Status::Success));
        let c = poll_one(&mut self.cq_b);
        let nic = self.b.backend().nic();
        (c, nic.pcie() - pcie, stats_since(nic.stats(), stats))
    }

    fn buffer(&self, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        self.mr_b.read(0, &mut out);
        out
    }
}

/// The scatter counters of `now` less those of `then`.
fn stats_since(now: hw::Stats, then: hw::Stats) -> hw::Stats {
    hw::Stats {
        scatter_cqes: now.scatter_cqes - then.scatter_cqes,
        scatter_cqe_bytes: now.scatter_cqe_bytes - then.scatter_cqe_bytes,
        ..now
    }
}

#[test]
fn a_32_byte_send_arrives_in_a_64_byte_cqe_and_lands_in_the_buffer() {
    let mut p = pair(&SCATTER, 64, false);
    let data = payload(32);
    let sge = p.mr_b.sge(0, 64);
    let (c, pcie, stats) = p.send(&[sge], &data);
    assert_eq!(
        (c.wr_id, c.status, c.opcode, c.byte_len, c.data_in_cqe()),
        (5, Status::Success, WcOpcode::Recv, 32, true)
    );
    assert_eq!(p.buffer(64), [data.clone(), vec![0; 32]].concat());
    // The CQE as written: the data in bytes 0..32, format 1 (MLX5_INLINE_SCATTER_32) in
    // op_own with opcode RESP_SEND (2) and owner 0, byte_cnt 32.
    let cqe = p.cq_b.cqe_bytes(0);
    assert_eq!(cqe[..32], data[..]);
    assert_eq!(cqe[44..48], 32u32.to_be_bytes());
    assert_eq!(cqe[63], 0x24);
    assert_eq!((stats.scatter_cqes, stats.scatter_cqe_bytes), (1, 32));
    // Up the link: only the 64-byte CQE (88 bytes with its MWr header), no payload write.
    assert_eq!(
        (pcie.dma_writes, pcie.bytes_up - receive_fetch_up(&pcie)),
        (1, 88)
    );
}

/// Bytes up the link that are not DMA writes (the completions of the receive WQE's and
/// doorbell record's reads are down; reads' requests go up).
fn receive_fetch_up(pcie: &hw::PcieCounters) -> u64 {
    pcie.dma_reads * 24
}

#[test]
fn without_scatter_to_cqe_the_same_send_costs_the_payload_write() {
    let off = QpConfig {
        scatter_to_cqe: false,
        ..SCATTER
    };
    let mut p = pair(&off, 64, false);
    let data = payload(32);
    let sge = p.mr_b.sge(0, 64);
    let (c, pcie, stats) = p.send(&[sge], &data);
    assert_eq!((c.byte_len, c.data_in_cqe()), (32, false));
    assert_eq!(p.buffer(32), data);
    assert_eq!(p.cq_b.cqe_bytes(0)[63], 0x20);
    assert_eq!((stats.scatter_cqes, stats.scatter_cqe_bytes), (0, 0));
    // The payload's MWr (32 + 24 bytes) beside the CQE's (88).
    assert_eq!(
        (pcie.dma_writes, pcie.bytes_up - receive_fetch_up(&pcie)),
        (2, 88 + 56)
    );
}

#[test]
fn a_64_byte_send_arrives_in_the_first_half_of_a_128_byte_cqe() {
    let mut p = pair(&SCATTER, 128, false);
    let data = payload(64);
    // Two entries: the copy follows the list as the device's scatter would.
    let sges = [p.mr_b.sge(0, 40), p.mr_b.sge(100, 40)];
    let (c, pcie, stats) = p.send(&sges, &data);
    assert_eq!(
        (c.status, c.byte_len, c.data_in_cqe()),
        (Status::Success, 64, true)
    );
    let buf = p.buffer(160);
    assert_eq!(buf[..40], data[..40]);
    assert_eq!(buf[40..100], [0; 60]);
    assert_eq!(buf[100..124], data[40..]);
    assert_eq!(buf[124..], [0; 36]);
    let cqe = p.cq_b.cqe_bytes(0);
    assert_eq!(cqe.len(), 128);
    assert_eq!(cqe[..64], data[..]);
    // Format 2 (MLX5_INLINE_SCATTER_64) in the cqe64's op_own.
    assert_eq!(cqe[127], 0x28);
    assert_eq!((stats.scatter_cqes, stats.scatter_cqe_bytes), (1, 64));
    // One write of the whole 128-byte entry (152 bytes with its header), nothing else.
    assert_eq!(
        (pcie.dma_writes, pcie.bytes_up - receive_fetch_up(&pcie)),
        (1, 152)
    );
}

#[test]
fn a_message_over_the_limit_is_written_to_the_buffer() {
    for (cqe_size, len) in [(64, 33), (128, 65)] {
        let mut p = pair(&SCATTER, cqe_size, false);
        let data = payload(len);
        let sge = p.mr_b.sge(0, 128);
        let (c, pcie, stats) = p.send(&[sge], &data);
        assert_eq!(
            (c.byte_len, c.data_in_cqe()),
            (len as u32, false),
            "{cqe_size}"
        );
        assert_eq!(p.buffer(len), data);
        assert_eq!(p.cq_b.cqe_bytes(0)[cqe_size - 1], 0x20);
        assert_eq!((stats.scatter_cqes, pcie.dma_writes), (0, 2));
    }
}

#[test]
fn srq_receives_take_the_data_from_the_cqe_too() {
    let mut p = pair(&SCATTER, 64, true);
    let data = payload(20);
    let sge = p.mr_b.sge(8, 32);
    let (c, _, stats) = p.send(&[sge], &data);
    assert_eq!((c.wr_id, c.byte_len, c.data_in_cqe()), (5, 20, true));
    assert_eq!(p.buffer(40), [vec![0; 8], data, vec![0; 12]].concat());
    assert_eq!(stats.scatter_cqes, 1);
}

#[test]
fn each_receive_of_a_lap_and_more_gets_its_own_full_list() {
    // 20 receives on a 16-slot ring (or SRQ), each of 20 bytes split over every scatter
    // entry the queue has, at its own place: the data of every CQE lands where the
    // receive in that slot said.
    let four = QpConfig {
        max_recv_sge: 4,
        ..SCATTER
    };
    for srq in [false, true] {
        let mut p = pair(&four, 64, srq);
        // The SRQ was asked for 2 entries: a 64-byte WQE (next segment and 3 data segments),
        // as rdma-core's mlx5_create_srq sizes it; 16 receives, under its 32 WQEs.
        let entries = match &p.srq_b {
            Some(s) => (s.max_sge(), s.capacity()),
            None => {
                let rq = p.qp_b.rq().unwrap();
                (rq.max_sge(), rq.capacity())
            }
        };
        assert_eq!(entries, if srq { (3, 16) } else { (4, 16) });
        let lens: &[usize] = if srq { &[7, 7, 6] } else { &[5; 4] };
        for i in 0..20u8 {
            let base = 128 * usize::from(i);
            let sges: Vec<Sge> = lens
                .iter()
                .enumerate()
                .map(|(j, &len)| p.mr_b.sge(base + 32 * j, len as u32))
                .collect();
            let data: Vec<u8> = payload(20).iter().map(|b| b ^ i).collect();
            let (c, _, stats) = p.send(&sges, &data);
            assert_eq!((c.byte_len, c.data_in_cqe()), (20, true), "receive {i}");
            assert_eq!(stats.scatter_cqes, 1);
            let mut want = vec![0; 128];
            let mut at = 0;
            for (j, &len) in lens.iter().enumerate() {
                want[32 * j..32 * j + len].copy_from_slice(&data[at..at + len]);
                at += len;
            }
            let got = p.buffer(base + 128)[base..].to_vec();
            assert_eq!(got, want, "receive {i}, srq {srq}");
        }
    }
}

#[test]
fn an_empty_receive_takes_an_empty_send() {
    let mut p = pair(&SCATTER, 64, false);
    p.qp_b.rq().unwrap().post(5, &[]).unwrap();
    p.qp_a
        .sq()
        .post(9, SendOp::Send, Data::Sges(&[]), SendFlags::SIGNALED)
        .unwrap();
    assert_eq!(poll_one(&mut p.cq_a).status, Status::Success);
    let c = poll_one(&mut p.cq_b);
    assert_eq!(
        (c.wr_id, c.status, c.byte_len, c.data_in_cqe()),
        (5, Status::Success, 0, false)
    );
}

#[test]
fn uc_receives_take_the_data_from_the_cqe_too() {
    let uc = QpConfig {
        transport: Transport::Uc,
        ..SCATTER
    };
    let mut p = pair(&uc, 64, false);
    let data = payload(7);
    let sge = p.mr_b.sge(0, 16);
    let (c, _, stats) = p.send(&[sge], &data);
    assert_eq!(
        (c.status, c.byte_len, c.data_in_cqe()),
        (Status::Success, 7, true)
    );
    assert_eq!(p.buffer(16), [data, vec![0; 9]].concat());
    assert_eq!(stats.scatter_cqe_bytes, 7);
}

#[test]
fn scatter_to_cqe_is_refused_off_rc_and_uc_and_with_a_compressing_cq() {
    let ctx = Context::open_sim();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, 64).unwrap();
    for transport in [Transport::Ud, Transport::Dci] {
        let config = QpConfig {
            transport,
            ..SCATTER
        };
        assert!(
            matches!(
                pd.create_qp(&cq, &cq, &config),
                Err(Error::InvalidArgument(_))
            ),
            "{transport:?}"
        );
    }
    let zipped = ctx
        .create_cq_with(&CqConfig {
            compression: Some(CqeCompression::BASIC),
            ..CqConfig::new(16, 64)
        })
        .unwrap();
    assert!(matches!(
        pd.create_qp(&cq, &zipped, &SCATTER),
        Err(Error::InvalidArgument(_))
    ));
    // The compressing CQ may still complete sends: only the receive CQ matters.
    assert!(pd.create_qp(&zipped, &cq, &SCATTER).is_ok());
}

#[test]
fn small_sends_come_through_the_cqe() {
    // The body the hardware test runs too (tests/verbs_hw.rs).
    common::bodies::small_sends_come_through_the_cqe(&Fabric::new());
}
