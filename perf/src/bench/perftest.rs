//! The benchmarks over perftest 4.5+0.17's exchange (`--perftest-exchange`): each test's
//! steps in the order of that release's `main` (write_lat.c, send_lat.c, read_lat.c,
//! atomic_lat.c, write_bw.c, send_bw.c, read_bw.c, atomic_bw.c), so that either end may be
//! Debian's `ib_*` program. The bytes of each step are [`crate::perftest_wire`]'s.
//!
//! After the version, system data and MTU steps, every test exchanges its QP records
//! (`H(i)` for QP `i`, `H0` for QP 0's record as a barrier):
//!
//! | test | before connecting | after | each size | end |
//! |---|---|---|---|---|
//! | write_lat | `H0`, `H(i)` | `H(i)`, `H0` | the server posts first (`run_iter_lat_write`) | nothing |
//! | read_lat, atomic_lat | `H0`, `H(i)` | `H(i)`, `H0` | the client alone | close (the server at once) |
//! | send_lat | `H(i)` | `H0`, `H(i)` | `H0`, then the client posts first | close |
//! | write_bw, read_bw, atomic_bw | `H(i)` | `H(i)`, `H0` | the client alone, no barrier | `H0`, the client's report to the server, close |
//! | send_bw | `H(i)` | `H0`, `H(i)` | `H0`, the run, and with `-a` `H0` again | close |
//!
//! "close" is `ctx_close_connection`: `H0`, then `"done"`. Nothing else is exchanged:
//! perftest 4.5 compares no parameters, so both ends must be given the same flags.

use mlx5_direct::Context;

use super::side::{path_mtu, Side};
use super::{
    announce, client_body, follow_row, gid_index, host, lat_follow, receive_row, warm_up, Device,
    Local, Measured, Params, RdmaCm, Row, RowCompletions, Sink, Stats,
};
use crate::cli::{Kind, Verb};
use crate::exchange::{Peer, QpRecord};
use crate::perftest_wire::{mtu_bytes, mtu_number, BwReport, Record, Wire};
use crate::stats::{BwRow, BwUnit, Throughput};
use crate::Error;

/// The cycle buffer this side announces (perftest's `sysconf(_SC_PAGESIZE)`, 4096 on
/// x86-64): the peer takes the larger of its own and this, and this side makes each QP's
/// areas at least that large ([`Local::area`]).
const CYCLE_BUFFER: i32 = 4096;

/// The cache-line size this side announces (perftest's `get_cache_line_size`, 64 when
/// sysfs does not say; only perftest's own buffer layout uses it).
const CACHE_LINE: i32 = 64;

/// The flags perftest's exchange cannot carry here, refused before anything is opened.
pub fn check(params: &Params) -> Result<(), Error> {
    let refuse = |flag: &str, why: &str| -> Result<(), Error> {
        Err(format!("--perftest-exchange: {flag}: {why}").into())
    };
    let connection = params.connection.name();
    if connection != "RC" {
        return refuse(
            &format!("-c {connection}"),
            "RC only (perftest 4.5's UD exchange adds address-handle steps and its DC one a \
             second record round; its XRC pairs an XRC_SEND QP on one side with an XRC_RECV \
             QP on the other, where mlx5-perf has an initiator and a target per QP index on \
             both; not implemented)",
        );
    }
    let refused = [
        (
            params.duplex,
            "-b",
            "not implemented (perftest adds barriers and report exchanges)",
        ),
        (
            params.duration_ms.is_some() || params.periods.is_some(),
            "-D / --run_infinitely",
            "not implemented (perftest's duration mode ends on its own timer, not a count)",
        ),
        (
            params.rdma_cm != RdmaCm::Off,
            "-R / -z",
            "perftest's rdma_cm exchange is a different protocol; not implemented",
        ),
        (params.reversed, "--reversed", "not implemented"),
        (
            params.imm,
            "--write_with_imm / --send_with_imm",
            "perftest 4.5+0.17 has no such test",
        ),
        (
            params.validate,
            "--data_validation",
            "perftest 4.5+0.17 has no such check",
        ),
    ];
    for (on, flag, why) in refused {
        if on {
            return refuse(flag, why);
        }
    }
    Ok(())
}

/// Our record as perftest's.
fn record(r: &QpRecord, out_reads: u32, with_gid: bool) -> Record {
    Record {
        lid: r.lid,
        out_reads,
        qpn: r.qpn,
        psn: r.psn,
        rkey: r.rkey,
        vaddr: r.addr,
        srqn: 0,
        gid: with_gid.then_some(r.gid),
    }
}

/// perftest's record as ours.
fn qp_record(r: &Record) -> QpRecord {
    QpRecord {
        lid: r.lid,
        qpn: r.qpn,
        psn: r.psn,
        rkey: r.rkey,
        addr: r.vaddr,
        gid: r.gid.unwrap_or_default(),
        qkey: None,
        dct: None,
        xrc: None,
    }
}

/// The server's row of the client's report (perftest's `print_full_bw_report` of the
/// remote report): its values in the unit both sides were told (`--report_gbits`), a peak of
/// 0 (not measured) as none.
fn reported_row(r: &BwReport, unit: BwUnit) -> BwRow {
    BwRow {
        bytes: r.size as usize,
        iterations: r.iters,
        bw_peak: (r.bw_peak > 0.0).then_some(r.bw_peak),
        bw_average: r.bw_avg,
        msg_rate_mpps: r.msg_rate,
        unit,
        seconds: match r.msg_rate > 0.0 {
            true => r.iters as f64 / (r.msg_rate * 1e6),
            false => 0.0,
        },
    }
}

/// One side's connection as perftest's exchange makes it.
struct Run<'a, B: Device> {
    side: Side<B>,
    wire: Wire,
    /// Our QP 0's record, the barrier's.
    first: Record,
    local: Local,
    client: bool,
    sink: &'a mut dyn Sink,
    counters: Option<host::Counters>,
}

/// One end of a test over perftest's exchange on `peer`: the client (the side with a host,
/// perftest's `CLIENT`) or the server.
pub fn run<B: Device>(
    ctx: Context<B>,
    peer: Peer,
    params: &Params,
    local: Local,
    sink: &mut dyn Sink,
    client: bool,
) -> Result<(), Error> {
    let mut wire = Wire::new(peer, client);
    wire.versions()?;
    let (cycle_buffer, _) = wire.sys_data(CYCLE_BUFFER, CACHE_LINE)?;
    let ours = path_mtu(&ctx, &local)?;
    let number = mtu_number(ours).ok_or_else(|| format!("path MTU {ours} is no ibv_mtu"))?;
    let local = Local {
        mtu: mtu_bytes(wire.mtu(number)?),
        area: usize::try_from(cycle_buffer).unwrap_or(0),
        ..local
    };
    let mut side = Side::new(ctx, params, local)?;
    let with_gid = gid_index(&side, local)?.is_some();
    let out_reads = u32::from(side.out_reads());
    let mine = side.records(local.port, !client)?;
    let records: Vec<Record> = mine
        .iter()
        .map(|r| record(r, out_reads, with_gid))
        .collect();
    let (test, first) = (params.test, records[0]);
    let send = test.verb == Verb::Send;
    if test.kind == Kind::Lat && !send {
        wire.hand_shake(&first)?;
    }
    let mut theirs = Vec::new();
    for r in &records {
        theirs.push(qp_record(&wire.hand_shake(r)?));
    }
    side.connect(theirs.clone(), local.port)?;
    if send {
        wire.hand_shake(&first)?;
    }
    for r in &records {
        wire.hand_shake(r)?;
    }
    if !send {
        wire.hand_shake(&first)?;
    }
    announce(&mut side, params, local, mine, theirs, !client, sink)?;
    let counters = sink
        .counters()
        .map(|names| host::Counters::open(side.ctx.backend(), local.port, names))
        .transpose()?;
    let mut run = Run {
        side,
        wire,
        first,
        local,
        client,
        sink,
        counters,
    };
    match (test.kind, test.verb) {
        (Kind::Lat, Verb::Write) => run.write_lat(params),
        (Kind::Lat, Verb::Send) => run.send_lat(params),
        (Kind::Lat, _) => run.client_alone(params),
        (Kind::Bw, Verb::Send) => run.send_bw(params),
        (Kind::Bw, _) => run.bw_reported(params),
    }
}

impl<B: Device> Run<'_, B> {
    /// Reports one size's measurement `m`.
    fn row(&mut self, m: Measured) -> Result<(), Error> {
        let (stats, latencies, samples, messages, hw) = m;
        let own = self.side.opcodes.to_map();
        let completions = match self.client {
            true => RowCompletions {
                client: own,
                server: Default::default(),
            },
            false => RowCompletions {
                client: Default::default(),
                server: own,
            },
        };
        let counters = match &mut self.counters {
            Some(c) => c.deltas(self.side.ctx.backend(), self.local.port)?,
            None => Vec::new(),
        };
        self.sink.row(Row {
            stats,
            pcie: None,
            latencies,
            samples,
            hw,
            messages,
            completions: Some(completions),
            cpu_util: self.side.cpu.take(),
            counters,
            directions: None,
        })
    }

    /// The side that posts first in a ping-pong size (`client_body`'s), or the one that
    /// answers (`lat_follow`) for `iters` messages.
    fn ping_pong(&mut self, size: usize, leads: bool) -> Result<Measured, Error> {
        let (local, iters) = (self.local, self.side.params.iters);
        if leads {
            return client_body(&mut self.side, self.wire.peer(), size, local);
        }
        self.side.rebase(size)?;
        let samples = lat_follow(&mut self.side, self.wire.peer(), size, local, Some(iters))?;
        follow_row(&mut self.side, local, samples, size, iters)
    }

    /// `ib_write_lat`: the server posts first (`run_iter_lat_write` waits first on the
    /// client); no barrier between sizes, none at the end.
    fn write_lat(&mut self, params: &Params) -> Result<(), Error> {
        for size in params.runs() {
            let m = self.ping_pong(size, !self.client)?;
            self.row(m)?;
        }
        Ok(())
    }

    /// `ib_send_lat`: a barrier before each size, the client posts first
    /// (`run_iter_lat_send` waits first on the server); then close.
    fn send_lat(&mut self, params: &Params) -> Result<(), Error> {
        for size in params.runs() {
            self.side.refill()?;
            self.wire.hand_shake(&self.first)?;
            let m = self.ping_pong(size, self.client)?;
            self.row(m)?;
        }
        Ok(self.wire.close(&self.first)?)
    }

    /// `ib_read_lat`, `ib_atomic_lat`: the server closes at once (its close waits for the
    /// client's); the client runs every size, then closes.
    fn client_alone(&mut self, params: &Params) -> Result<(), Error> {
        if self.client {
            for size in params.runs() {
                let m = client_body(&mut self.side, self.wire.peer(), size, self.local)?;
                self.row(m)?;
            }
        }
        Ok(self.wire.close(&self.first)?)
    }

    /// `ib_send_bw`: per size the server's receives posted, a barrier, the client's run and
    /// the server's receive count (`iters` per QP), each side's own row; with `-a` a barrier
    /// after each size; then close.
    fn send_bw(&mut self, params: &Params) -> Result<(), Error> {
        let all = params.sizes.len() > 1;
        for size in params.runs() {
            self.side.refill()?;
            self.wire.hand_shake(&self.first)?;
            let m = match self.client {
                true => client_body(&mut self.side, self.wire.peer(), size, self.local)?,
                false => {
                    self.side.rebase(size)?;
                    let count = params.iters * u64::from(params.qps);
                    let mut tp = Throughput::iterations(false);
                    receive_row(&mut self.side, count, &mut tp, size, self.local)?
                }
            };
            self.row(m)?;
            if all {
                self.wire.hand_shake(&self.first)?;
            }
        }
        Ok(self.wire.close(&self.first)?)
    }

    /// `ib_write_bw`, `ib_read_bw`, `ib_atomic_bw`: the client runs every size (with
    /// `--perform_warm_up` first), then a barrier and its last size's report to the
    /// server, which prints that one row; then close.
    fn bw_reported(&mut self, params: &Params) -> Result<(), Error> {
        let mut last = BwReport::default();
        if self.client {
            for size in params.runs() {
                if params.warm_up {
                    warm_up(&mut self.side, size)?;
                }
                let m = client_body(&mut self.side, self.wire.peer(), size, self.local)?;
                if let Stats::Bw(b) = &m.0 {
                    last = BwReport {
                        size: b.bytes as u64,
                        iters: b.iterations,
                        bw_peak: b.bw_peak.unwrap_or(0.0),
                        bw_avg: b.bw_average,
                        msg_rate: b.msg_rate_mpps,
                    };
                }
                self.row(m)?;
            }
        }
        self.wire.hand_shake(&self.first)?;
        let theirs = self.wire.bw_reports(&last)?;
        if !self.client {
            let stats = Stats::Bw(reported_row(&theirs, self.local.unit));
            self.row((stats, None, None, theirs.iters, None))?;
        }
        Ok(self.wire.close(&self.first)?)
    }
}
