//! perftest's raw Ethernet tests on the device model: `raw_ethernet_bw`,
//! `raw_ethernet_lat` and `raw_ethernet_burst_lat`, with perftest's flags where they
//! overlap (`-s` the frame size, `-n`, `-B` / `-E` source and destination MAC, `-J` / `-j`
//! source and destination IPv4, `-K` / `-k` source and destination port, `--tcp`, `-Z`,
//! and packet pacing: `--rate_limit` in `M` with `--rate_limit_type PP`) and ours: `--empw N` (N frames per enhanced multi-packet WQE) and `--mprq N` (a striding
//! receive queue of N strides per WQE). Both ends are model NICs with an Ethernet port in
//! this process, the client sending to the server's MAC through the model's switch; the
//! rates are CPU-side numbers of the driver and the model (not a NIC's), and each run adds
//! the PCIe link bytes and TLPs the model counted per frame, at the sender and at the
//! receiver. Hardware runs (`-d`) are not built yet.

use std::time::Instant;

use crate::bench::pp_kbps;
use crate::cli::{RateLimitType, RateUnits};
use clap::Args;
use mlx5_direct::backend::sim::{Fabric, LinkLayer, NicConfig, PcieCounters, Sim};
use mlx5_direct::{
    Checksum, Completion, Context, Cq, Data, EmpwPacket, EmpwWr, EthWr, FlowRule, MemoryRegion, Qp,
    QpConfig, SendFlags, StridingConfig, StridingWq, Transport,
};

/// The flags of the raw Ethernet tests.
#[derive(Args, Debug, Clone)]
pub struct RawArgs {
    /// Frame size in bytes, headers included (at least 60: Ethernet, IPv4, UDP or TCP).
    #[arg(short = 's', long = "size", default_value_t = 64)]
    pub size: usize,
    /// Frames to send (bw), round trips (lat), bursts (burst_lat).
    #[arg(short = 'n', long = "iters", default_value_t = 10_000)]
    pub iters: u64,
    /// Source MAC (`aa:bb:cc:dd:ee:ff`; default the client port's).
    #[arg(short = 'B', long = "source_mac")]
    pub source_mac: Option<String>,
    /// Destination MAC (default the server port's; another is flooded by the switch and
    /// missed by the server's rule).
    #[arg(short = 'E', long = "dest_mac")]
    pub dest_mac: Option<String>,
    /// Source IPv4 address.
    #[arg(short = 'J', long = "source_ip", default_value = "192.168.1.1")]
    pub source_ip: std::net::Ipv4Addr,
    /// Destination IPv4 address.
    #[arg(short = 'j', long = "dest_ip", default_value = "192.168.1.2")]
    pub dest_ip: std::net::Ipv4Addr,
    /// Source port.
    #[arg(short = 'K', long = "source_port", default_value_t = 5000)]
    pub source_port: u16,
    /// Destination port (the server's rule matches it).
    #[arg(short = 'k', long = "dest_port", default_value_t = 5001)]
    pub dest_port: u16,
    /// TCP headers instead of UDP.
    #[arg(long = "tcp")]
    pub tcp: bool,
    /// Server side (perftest's `-Z`): on the model both sides run here, so it only names
    /// the side whose numbers are printed first.
    #[arg(short = 'Z', long = "server")]
    pub server: bool,
    /// Frames per burst (raw_ethernet_burst_lat).
    #[arg(long = "burst_size", default_value_t = 16)]
    pub burst_size: u32,
    /// Send N frames per enhanced multi-packet WQE (1..=32; 0: one frame per WQE).
    #[arg(long = "empw", default_value_t = 0)]
    pub empw: usize,
    /// Receive into a striding queue of N strides (a power of two, 8..=65536) per WQE
    /// (0: a plain receive queue, one WQE per frame).
    #[arg(long = "mprq", default_value_t = 0)]
    pub mprq: u32,
    /// raw_ethernet_bw: the sender's rate limit in --rate_units (needs --rate_limit_type PP).
    #[arg(long = "rate_limit")]
    pub rate_limit: Option<f64>,
    /// The unit of --rate_limit: M (MiB/s) only, as perftest's packet pacing.
    #[arg(long = "rate_units", value_enum, default_value = "g")]
    pub rate_units: RateUnits,
    /// PP: the device's packet pacing of the sender's raw QP (`Qp::set_rate_limit`, as
    /// perftest's `ibv_modify_qp` with `IBV_QP_RATE_LIMIT`); SW and HW are not built here.
    #[arg(long = "rate_limit_type", value_enum)]
    pub rate_limit_type: Option<RateLimitType>,
}

/// Which raw test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawTest {
    /// Frames one way, as fast as the queues take them.
    Bw,
    /// Ping-pong, half the round trip.
    Lat,
    /// Bursts of `--burst_size` frames, the time per burst.
    BurstLat,
}

/// A MAC address from `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(text: &str) -> Result<[u8; 6], crate::Error> {
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() != 6 {
        return Err(format!("{text:?} is not a MAC address").into());
    }
    for (byte, hex) in mac.iter_mut().zip(parts) {
        *byte = u8::from_str_radix(hex, 16).map_err(|_| format!("{text:?} is not a MAC"))?;
    }
    Ok(mac)
}

/// The RFC 1071 checksum of `data` from the folded sum `init`.
fn csum(init: u32, data: &[u8]) -> u16 {
    let mut sum = init;
    for pair in data.chunks(2) {
        sum += u32::from(pair[0]) << 8 | pair.get(1).map_or(0, |b| u32::from(*b));
    }
    while sum >> 16 != 0 {
        sum = (sum >> 16) + (sum & 0xffff);
    }
    !(sum as u16)
}

/// The test frame: Ethernet II, IPv4, UDP (or TCP) with their checksums, padded with a
/// byte pattern to `args.size`.
pub fn frame(args: &RawArgs, src: [u8; 6], dst: [u8; 6]) -> Result<Vec<u8>, crate::Error> {
    let l4 = if args.tcp { 20 } else { 8 };
    let headers = 14 + 20 + l4;
    if args.size < headers.max(60) {
        return Err(format!(
            "-s {} is under the {} bytes of the headers",
            args.size,
            headers.max(60)
        )
        .into());
    }
    let mut f = Vec::with_capacity(args.size);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x00]);
    let ip_len = (args.size - 14) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, if args.tcp { 6 } else { 17 }, 0, 0]);
    f.extend_from_slice(&args.source_ip.octets());
    f.extend_from_slice(&args.dest_ip.octets());
    let ip_sum = csum(0, &f[14..34]);
    f[24..26].copy_from_slice(&ip_sum.to_be_bytes());
    f.extend_from_slice(&args.source_port.to_be_bytes());
    f.extend_from_slice(&args.dest_port.to_be_bytes());
    let seg_len = (args.size - 34) as u16;
    if args.tcp {
        // Sequence 0, ACK 0, data offset 5, flags ACK, window 65535, checksum, urgent.
        f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
    } else {
        f.extend_from_slice(&seg_len.to_be_bytes());
        f.extend_from_slice(&[0, 0]);
    }
    f.extend((0..args.size - headers).map(|i| i as u8));
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&f[26..34]);
    pseudo.extend_from_slice(&[0, if args.tcp { 6 } else { 17 }]);
    pseudo.extend_from_slice(&seg_len.to_be_bytes());
    let partial = u32::from(!csum(0, &pseudo));
    let l4_sum = match csum(partial, &f[34..]) {
        0 if !args.tcp => 0xffff,
        s => s,
    };
    let at = if args.tcp { 34 + 16 } else { 34 + 6 };
    f[at..at + 2].copy_from_slice(&l4_sum.to_be_bytes());
    Ok(f)
}

/// One model NIC with a raw packet QP, its CQ and a region.
struct End {
    ctx: Context<Sim>,
    cq: Cq<Sim>,
    qp: Qp<Sim>,
    mr: MemoryRegion<Sim>,
    mac: [u8; 6],
}

/// Receive buffers: the plain queue's slot size.
const SLOT: usize = 2048;
/// The latency tests' echo: its source slot at the server, its receive slot at the client.
const ECHO: usize = SLOT * (DEPTH as usize);
const ECHO_RECV: usize = SLOT * (DEPTH as usize + 1);
/// Plain receive queue depth and send queue WQEBBs.
const DEPTH: u32 = 512;

fn end(fabric: &std::sync::Arc<Fabric>) -> Result<End, crate::Error> {
    let config = NicConfig {
        link_layer: LinkLayer::Ethernet,
        ..NicConfig::default()
    };
    let ctx = Context::new(Sim::on_fabric(fabric, config));
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq(4 * DEPTH, 64)?;
    let qp_config = QpConfig {
        transport: Transport::Raw,
        sq_wqebbs: 4 * DEPTH,
        rq_wqes: DEPTH,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline: 256,
        ..QpConfig::default()
    };
    let mut qp = pd.create_qp(&cq, &cq, &qp_config)?;
    qp.activate_raw(1)?;
    // The receive slots, then the echo's source (server) and receive (client) slots.
    let mr = pd.alloc_mr(
        SLOT * (DEPTH as usize + 2),
        mlx5_direct::Access::LOCAL_WRITE,
    )?;
    let mac = ctx.eth_caps()?.mac;
    Ok(End {
        ctx,
        cq,
        qp,
        mr,
        mac,
    })
}

/// Where the server receives: its raw QP's plain queue, or a striding queue behind an RSS
/// QP.
enum Rx {
    Plain,
    Striding(Box<StridingWq<Sim>>, mlx5_direct::RssQp<Sim>),
}

impl Rx {
    /// Frames received now (re-posting plain receives as they complete).
    fn take(&mut self, end: &mut End, out: &mut [Completion]) -> Result<u64, crate::Error> {
        match self {
            Rx::Plain => {
                let n = end.cq.poll(out);
                for c in &out[..n] {
                    if !c.status.is_ok() {
                        return Err(format!("receive failed: {c:?}").into());
                    }
                    let slot = c.wr_id as usize;
                    let sge = end.mr.sge(slot * SLOT, SLOT as u32);
                    end.qp
                        .rq()
                        .ok_or("no receive queue")?
                        .post(c.wr_id, &[sge])?;
                }
                Ok(n as u64)
            }
            Rx::Striding(wq, _) => Ok(wq.poll(out.len(), |_| {})? as u64),
        }
    }
}

/// The PCIe counters of one NIC.
fn pcie(end: &End) -> PcieCounters {
    end.ctx.backend().nic().pcie()
}

/// Runs `test` and prints perftest's table with the model's PCIe cost per frame.
pub fn run(test: RawTest, args: &RawArgs) -> Result<(), crate::Error> {
    if args.empw > 32 {
        return Err("--empw takes 1 to 32 frames per WQE (DPDK's limit)".into());
    }
    let pacing = match (args.rate_limit_type, args.rate_limit) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err("--rate_limit: the raw tests pace with --rate_limit_type PP only".into())
        }
        (Some(RateLimitType::Pp), rate) => {
            Some(pp_kbps(rate, args.rate_units, test == RawTest::Bw, false)?)
        }
        (Some(_), _) => {
            return Err("--rate_limit_type: the raw tests take PP (packet pacing) only".into())
        }
    };
    let fabric = Fabric::new();
    let mut client = end(&fabric)?;
    if let Some(kbps) = pacing {
        client.qp.set_rate_limit(&mlx5_direct::RateLimit {
            kbps,
            ..Default::default()
        })?;
    }
    let mut server = end(&fabric)?;
    let src = match &args.source_mac {
        Some(m) => parse_mac(m)?,
        None => client.mac,
    };
    let dst = match &args.dest_mac {
        Some(m) => parse_mac(m)?,
        None => server.mac,
    };
    let f = frame(args, src, dst)?;
    let rule = |mac| {
        let r = FlowRule::dst_mac(mac).ipv4(None, None);
        if args.tcp {
            r.tcp(None, Some(args.dest_port))
        } else {
            r.udp(None, Some(args.dest_port))
        }
    };
    let mut rx = if args.mprq == 0 {
        for slot in 0..DEPTH {
            let sge = server.mr.sge(slot as usize * SLOT, SLOT as u32);
            server
                .qp
                .rq()
                .ok_or("no receive queue")?
                .post(u64::from(slot), &[sge])?;
        }
        Rx::Plain
    } else {
        if !args.mprq.is_power_of_two() || !(8..=65536).contains(&args.mprq) {
            return Err("--mprq takes a power of two of strides, 8 to 65536".into());
        }
        let stride = f.len().next_power_of_two().max(64);
        let config = StridingConfig {
            log_wqes: 4,
            log_stride_bytes: stride.trailing_zeros() as u8,
            log_num_strides: args.mprq.trailing_zeros() as u8,
            two_byte_shift: false,
        };
        let pd = server.qp_pd()?;
        let wq = pd.create_striding_wq(&config)?;
        let rss = pd.create_rss_qp(&[&wq], None)?;
        Rx::Striding(Box::new(wq), rss)
    };
    let _server_rule = match &rx {
        Rx::Plain => server.qp.create_flow(&rule(server.mac))?,
        Rx::Striding(_, rss) => rss.create_flow(&rule(server.mac))?,
    };
    let _client_rule = client.qp.create_flow(&rule(client.mac))?;
    client.mr.write(0, &f);
    let (tx0, rx0) = (pcie(&client), pcie(&server));
    let start = Instant::now();
    let frames = match test {
        RawTest::Bw => bw(args, &mut client, &mut server, &mut rx, &f)?,
        RawTest::Lat | RawTest::BurstLat => lat(test, args, &mut client, &mut server, &mut rx, &f)?,
    };
    let secs = start.elapsed().as_secs_f64();
    let (tx, rxc) = (pcie(&client) - tx0, pcie(&server) - rx0);
    report(test, args, frames, secs, &tx, &rxc);
    Ok(())
}

impl End {
    /// A protection domain on this end's context for the striding queue.
    fn qp_pd(&self) -> Result<mlx5_direct::ProtectionDomain<Sim>, crate::Error> {
        Ok(self.ctx.alloc_pd()?)
    }
}

/// Posts one frame (or `--empw` frames in one WQE), signaled every 32 frames.
fn post(
    args: &RawArgs,
    c: &mut End,
    f: &[u8],
    sent: u64,
    signal: bool,
) -> Result<u64, crate::Error> {
    let flags = if signal {
        SendFlags::SIGNALED
    } else {
        SendFlags::default()
    };
    let sge = [c.mr.sge(0, f.len() as u32)];
    if args.empw == 0 {
        let mut wr = EthWr::new(sent, &[], Data::Sges(&sge));
        wr.flags = flags;
        wr.checksum = Checksum::NONE;
        c.qp.sq().post_eth(&wr)?;
        Ok(1)
    } else {
        let packets = vec![EmpwPacket::Pointer(sge[0]); args.empw];
        let wr = EmpwWr {
            wr_id: sent,
            flags,
            checksum: Checksum::NONE,
            packets: &packets,
        };
        c.qp.sq().post_empw(&wr)?;
        Ok(args.empw as u64)
    }
}

fn bw(
    args: &RawArgs,
    c: &mut End,
    s: &mut End,
    rx: &mut Rx,
    f: &[u8],
) -> Result<u64, crate::Error> {
    let per_wqe = args.empw.max(1) as u64;
    let mut out = vec![Completion::default(); 64];
    let (mut sent, mut got, mut wqes) = (0u64, 0u64, 0u64);
    let mut in_flight = 0u64;
    // One signaled WQE per 32 frames; at most 8 signals' worth of frames unacknowledged.
    let signal_every = (32 / per_wqe).max(1);
    let window = 8 * signal_every * per_wqe;
    let mut spins = 0u64;
    // Frames the receive side holds room for: half its queue.
    let room = match rx {
        Rx::Plain => u64::from(DEPTH) / 2,
        Rx::Striding(wq, _) => 8u64 << wq.config().log_num_strides,
    };
    while got < args.iters {
        while sent < args.iters && in_flight < window && sent - got + per_wqe <= room {
            wqes += 1;
            let n = post(args, c, f, sent, wqes % signal_every == 0)?;
            sent += n;
            in_flight += n;
        }
        let done = c.cq.poll(&mut out);
        for comp in &out[..done] {
            if !comp.status.is_ok() {
                return Err(format!("send failed: {comp:?}").into());
            }
            in_flight = in_flight.saturating_sub(signal_every * per_wqe);
        }
        let n = rx.take(s, &mut out)?;
        got += n;
        if n == 0 && done == 0 {
            c.ctx.backend().nic().progress();
            s.ctx.backend().nic().progress();
            spins += 1;
            if spins > 1_000_000 {
                return Err(format!("stalled: {got} of {} frames received", args.iters).into());
            }
            // Flush an unsignaled tail.
            if sent >= args.iters && in_flight > 0 && got >= sent {
                in_flight = 0;
            }
        } else {
            spins = 0;
        }
    }
    Ok(got)
}

fn lat(
    test: RawTest,
    args: &RawArgs,
    c: &mut End,
    s: &mut End,
    rx: &mut Rx,
    f: &[u8],
) -> Result<u64, crate::Error> {
    // The answer: the server sends the same frame back with the MACs swapped.
    let mut back = f.to_vec();
    back[..6].copy_from_slice(&f[6..12]);
    back[6..12].copy_from_slice(&f[..6]);
    s.mr.write(ECHO, &back);
    let sge = c.mr.sge(ECHO_RECV, SLOT as u32);
    c.qp.rq().ok_or("no receive queue")?.post(0, &[sge])?;
    let burst = if test == RawTest::BurstLat {
        u64::from(args.burst_size.max(1))
    } else {
        1
    };
    let mut out = vec![Completion::default(); 64];
    for round in 0..args.iters {
        for k in 0..burst {
            post(args, c, f, round * burst + k, k + 1 == burst)?;
        }
        let mut got = 0;
        while got < burst {
            let n = rx.take(s, &mut out)?;
            got += n;
            if n == 0 {
                s.ctx.backend().nic().progress();
            }
        }
        // The server's echo, from the slot after its receive buffers.
        let sge = [s.mr.sge(ECHO, back.len() as u32)];
        let wr = EthWr::new(round, &[], Data::Sges(&sge));
        s.qp.sq().post_eth(&wr)?;
        let mut echoed = false;
        let mut sends = 0;
        while !echoed || sends < 1 {
            let n = c.cq.poll(&mut out);
            for comp in &out[..n] {
                match comp.opcode {
                    mlx5_direct::WcOpcode::Recv => {
                        echoed = true;
                        let sge = c.mr.sge(ECHO_RECV, SLOT as u32);
                        c.qp.rq().ok_or("no receive queue")?.post(0, &[sge])?;
                    }
                    _ => sends += 1,
                }
            }
            if n == 0 {
                c.ctx.backend().nic().progress();
            }
        }
        // The server's send completion.
        while s.cq.poll(&mut out) == 0 {
            s.ctx.backend().nic().progress();
        }
    }
    Ok(args.iters * burst)
}

fn report(
    test: RawTest,
    args: &RawArgs,
    frames: u64,
    secs: f64,
    tx: &PcieCounters,
    rx: &PcieCounters,
) {
    let per = |v: u64| v as f64 / frames.max(1) as f64;
    outln!(
        "---------------------------------------------------------------------------------------"
    );
    outln!(
        "                    Raw Ethernet {} on the device model (both ends in this process)",
        match test {
            RawTest::Bw => "BW Test",
            RawTest::Lat => "Latency Test",
            RawTest::BurstLat => "Burst Latency Test",
        }
    );
    outln!(
        " Frame {} bytes, {}, send {}, receive {}",
        args.size,
        if args.tcp { "TCP" } else { "UDP" },
        if args.empw == 0 {
            "one frame per WQE".to_string()
        } else {
            format!("eMPW of {} frames per WQE", args.empw)
        },
        if args.mprq == 0 {
            "plain RQ".to_string()
        } else {
            format!("striding RQ of {} strides per WQE", args.mprq)
        }
    );
    outln!(
        "---------------------------------------------------------------------------------------"
    );
    match test {
        RawTest::Bw => {
            let mpps = frames as f64 / secs / 1e6;
            let mbs = frames as f64 * args.size as f64 / secs / 1e6;
            outln!(
                " #bytes     #iterations    BW average[MB/sec]   MsgRate[Mpps]   (model: CPU-side)"
            );
            outln!(
                " {:<10} {:<14} {:<20.2} {:.6}",
                args.size,
                frames,
                mbs,
                mpps
            );
        }
        RawTest::Lat | RawTest::BurstLat => {
            let rounds = args.iters.max(1) as f64;
            let usec = secs * 1e6 / rounds;
            let (what, value) = match test {
                RawTest::Lat => ("t_avg[usec] (half round trip)", usec / 2.0),
                _ => ("t_avg[usec] per burst", usec),
            };
            outln!(" #bytes     #iterations    {what}   (model: CPU-side)");
            outln!(" {:<10} {:<14} {:.3}", args.size, args.iters, value);
        }
    }
    outln!(
        "---------------------------------------------------------------------------------------"
    );
    outln!(" PCIe per frame (model numbers)   bytes down   bytes up   TLPs down   TLPs up");
    let sender = if test == RawTest::Bw {
        "sender"
    } else {
        "client"
    };
    let receiver = if test == RawTest::Bw {
        "receiver"
    } else {
        "server"
    };
    let rows = [(sender, tx), (receiver, rx)];
    let rows = if args.server {
        [rows[1], rows[0]]
    } else {
        rows
    };
    for (name, c) in rows {
        outln!(
            " {:<32} {:>10.1} {:>10.1} {:>11.2} {:>9.2}",
            name,
            per(c.bytes_down),
            per(c.bytes_up),
            per(c.tlps_down),
            per(c.tlps_up)
        );
    }
    outln!(
        "---------------------------------------------------------------------------------------"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 64 frames (bursts of 4) of the pcie rows' 64-byte UDP frame.
    fn args() -> RawArgs {
        RawArgs {
            iters: 64,
            burst_size: 4,
            ..crate::raw_pcie::raw_args()
        }
    }

    /// The frame's checksums verify (a sum over the header with its checksum is 0).
    #[test]
    fn the_test_frame_has_right_checksums() {
        for tcp in [false, true] {
            let a = RawArgs { tcp, ..args() };
            let f = frame(&a, [2; 6], [4; 6]).unwrap();
            assert_eq!(f.len(), 64);
            assert_eq!(csum(0, &f[14..34]), 0);
            let mut pseudo = f[26..34].to_vec();
            pseudo.extend_from_slice(&[0, if tcp { 6 } else { 17 }, 0, 30]);
            assert_eq!(csum(u32::from(!csum(0, &pseudo)), &f[34..]), 0, "tcp {tcp}");
        }
        assert!(frame(&RawArgs { size: 59, ..args() }, [0; 6], [0; 6]).is_err());
    }

    #[test]
    fn every_test_runs_on_the_model() {
        for (test, empw, mprq) in [
            (RawTest::Bw, 0, 0),
            (RawTest::Bw, 32, 0),
            (RawTest::Bw, 8, 64),
            (RawTest::Lat, 0, 0),
            (RawTest::BurstLat, 0, 8),
        ] {
            run(
                test,
                &RawArgs {
                    empw,
                    mprq,
                    ..args()
                },
            )
            .unwrap();
        }
    }

    /// `--rate_limit_type PP` paces the sender's raw QP on the model's pacer (host
    /// clock): 256 frames of 64 bytes at 0.1 M (819 kbit/s, 102 400 bytes a second) leave
    /// no faster than the schedule allows, 255 × 64 bytes after the first (159 ms), where
    /// an unpaced run takes a few milliseconds. Perftest's checks refuse the rest.
    #[test]
    fn packet_pacing_paces_the_sender() {
        let paced = RawArgs {
            iters: 256,
            rate_limit: Some(0.1),
            rate_units: RateUnits::MiBs,
            rate_limit_type: Some(RateLimitType::Pp),
            ..args()
        };
        let start = std::time::Instant::now();
        run(RawTest::Bw, &paced).unwrap();
        let least = 255.0 * 64.0 / (819.0 * 1000.0 / 8.0);
        assert!(start.elapsed().as_secs_f64() >= least);
        let refused = |a: RawArgs, test: RawTest, why: &str| {
            let e = run(test, &a).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        };
        refused(
            RawArgs {
                rate_units: RateUnits::Gbits,
                ..paced.clone()
            },
            RawTest::Bw,
            "MEGA_BYTE_PS",
        );
        refused(paced.clone(), RawTest::Lat, "bandwidth tests only");
        refused(
            RawArgs {
                rate_limit_type: None,
                ..paced.clone()
            },
            RawTest::Bw,
            "PP only",
        );
        refused(
            RawArgs {
                rate_limit_type: Some(RateLimitType::Sw),
                ..paced
            },
            RawTest::Bw,
            "PP (packet pacing) only",
        );
    }
}
