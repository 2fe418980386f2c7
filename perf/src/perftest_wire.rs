//! perftest 4.5+0.17's TCP exchange, byte for byte (`--perftest-exchange`): what Debian's
//! `perftest 4.5+0.17-1` (linux-rdma/perftest tag v4.5-0.17, `src/perftest_communication.c`)
//! sends, so that `mlx5-perf` pairs with its `ib_*` programs.
//!
//! That release negotiates no parameters: each side parses its own command line, and the
//! connection carries, in order,
//!
//! 1. the version string, [`MAX_VERSION`] bytes (`exchange_versions`); perftest refuses a
//!    peer below 5.70 (`check_version_compatibility`), and its later steps depend on it;
//! 2. the page size used as cycle buffer and the cache-line size, each a C `int` in network
//!    order, both sides taking the larger (`check_sys_data`, for a peer of 5.32 or later);
//! 3. the active MTU as the `ibv_mtu` number printed with `"%d"` in two bytes (a digit and
//!    its NUL; `check_mtu`, 5.31 or later), both sides taking the smaller;
//! 4. per QP, and again as every barrier, the QP's record in ASCII (`KEY_PRINT_FMT`, 59
//!    bytes with the NUL; `KEY_PRINT_FMT_GID`, 108, when the side has a GID index, on RoCE
//!    or with `-x`; `ethernet_write_keys` / `ethernet_read_keys`; `ctx_hand_shake`);
//! 5. in the bandwidth tests that report the client's numbers on the server (WRITE, READ,
//!    atomic), the report as five values in network order (`xchg_bw_reports`: the size as
//!    an `unsigned long`, 8 bytes on LP64 such as x86-64 and aarch64; the iterations as a
//!    `uint64_t` for a peer of 5.33 or later; the peak, average and message rate as
//!    byte-swapped `double`s);
//! 6. at the end `ctx_close_connection`: a last record barrier, then `"done"` with its NUL.
//!
//! Every step is one message each way: the client (the side with a host) writes first and
//! then reads, the server reads first (`ctx_xchg_data_ethernet`). The version this side
//! sends is perftest 4.5+0.17's own ([`PEER_VERSION`]), so the peer takes every step above;
//! a peer that sends another is refused ([`check_version`]).

use crate::exchange::{ExchangeError, Peer};

/// The version string perftest 4.5+0.17 sends (its `VERSION`, `AC_INIT([perftest],[6.06])`
/// in configure.ac; `ib_write_bw -V` prints it).
pub const PEER_VERSION: &str = "6.06";

/// The length of the version message (`MAX_VERSION` in perftest_parameters.h).
pub const MAX_VERSION: usize = 16;

/// A QP record without a GID, with its NUL (`KEY_MSG_SIZE`).
pub const KEY_MSG_SIZE: usize = 59;

/// A QP record with a GID, with its NUL (`KEY_MSG_SIZE_GID`).
pub const KEY_MSG_SIZE_GID: usize = 108;

/// What `ctx_close_connection` writes last (`"done"` and its NUL).
pub const DONE: &[u8; 5] = b"done\0";

/// perftest's `pingpong_dest` as its exchange carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// LID of the port.
    pub lid: u16,
    /// Outstanding READs / atomics the side allows (`out_reads`).
    pub out_reads: u32,
    /// QP number (24 bits).
    pub qpn: u32,
    /// First PSN (24 bits).
    pub psn: u32,
    /// Remote key of the buffer.
    pub rkey: u32,
    /// Address of the buffer the peer writes into or reads from.
    pub vaddr: u64,
    /// The SRQ number (XRC and DC only; 0 here).
    pub srqn: u32,
    /// The port's GID, sent when the side has a GID index (`gid_index != -1`).
    pub gid: Option<[u8; 16]>,
}

impl Record {
    /// The bytes perftest's `sprintf` makes of it, with the NUL: `KEY_PRINT_FMT`
    /// (`%04x:%04x:%06x:%06x:%08x:%016llx:%08x`) or `KEY_PRINT_FMT_GID` (the GID's 16
    /// bytes as `%02x:` between the address and the SRQ number, which ends with `:` too).
    pub fn encode(&self) -> Vec<u8> {
        let head = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid, self.out_reads, self.qpn, self.psn, self.rkey, self.vaddr
        );
        let mut text = match &self.gid {
            None => format!("{head}{:08x}", self.srqn),
            Some(gid) => {
                let bytes: String = gid.iter().map(|b| format!("{b:02x}:")).collect();
                format!("{head}{bytes}{:08x}:", self.srqn)
            }
        };
        text.push('\0');
        text.into_bytes()
    }

    /// Parses a record of `bytes` (as `ethernet_read_keys` does: fields separated by `:`,
    /// hexadecimal), with a GID when `with_gid`.
    pub fn decode(bytes: &[u8], with_gid: bool) -> Result<Record, ExchangeError> {
        let garbled = |why: &str| {
            ExchangeError::Garbled(format!(
                "perftest QP record {:?}: {why}",
                String::from_utf8_lossy(bytes)
            ))
        };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        let text = std::str::from_utf8(&bytes[..end]).map_err(|_| garbled("not ASCII"))?;
        let fields: Vec<&str> = text.split(':').collect();
        let want = if with_gid { 24 } else { 7 };
        if fields.len() != want || (with_gid && !fields[23].is_empty()) {
            return Err(garbled(&format!(
                "{} fields, expected {} ({})",
                fields.len(),
                want,
                if with_gid {
                    "KEY_PRINT_FMT_GID"
                } else {
                    "KEY_PRINT_FMT"
                }
            )));
        }
        let hex = |i: usize| {
            u64::from_str_radix(fields[i], 16).map_err(|_| garbled(&format!("field {i}")))
        };
        let narrow = |i: usize, max: u64| {
            hex(i).and_then(|v| match v <= max {
                true => Ok(v),
                false => Err(garbled(&format!("field {i} is {v:#x}, above {max:#x}"))),
            })
        };
        let gid = match with_gid {
            false => None,
            true => {
                let mut gid = [0u8; 16];
                for (k, b) in gid.iter_mut().enumerate() {
                    *b = narrow(6 + k, 0xff)? as u8;
                }
                Some(gid)
            }
        };
        Ok(Record {
            lid: narrow(0, 0xffff)? as u16,
            out_reads: narrow(1, u64::from(u32::MAX))? as u32,
            qpn: narrow(2, 0xff_ffff)? as u32,
            psn: narrow(3, 0xff_ffff)? as u32,
            rkey: narrow(4, u64::from(u32::MAX))? as u32,
            vaddr: hex(5)?,
            srqn: narrow(if with_gid { 22 } else { 6 }, u64::from(u32::MAX))? as u32,
            gid,
        })
    }

    /// The length of a record with or without a GID.
    pub fn len(with_gid: bool) -> usize {
        if with_gid {
            KEY_MSG_SIZE_GID
        } else {
            KEY_MSG_SIZE
        }
    }
}

/// perftest's `bw_report_data` as `xchg_bw_reports` carries it (the per-port fields are
/// exchanged only with `--report-per-port`, which neither side here uses).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BwReport {
    /// Message size.
    pub size: u64,
    /// Messages counted.
    pub iters: u64,
    /// Peak bandwidth, in the sender's unit (MB/s of 2^20 bytes, or Gb/s).
    pub bw_peak: f64,
    /// Average bandwidth, same unit.
    pub bw_avg: f64,
    /// Messages per second, millions.
    pub msg_rate: f64,
}

/// The version message: `version` and NULs to [`MAX_VERSION`] bytes (`strncpy`).
pub fn version_message(version: &str) -> [u8; MAX_VERSION] {
    let mut msg = [0u8; MAX_VERSION];
    let n = version.len().min(MAX_VERSION);
    msg[..n].copy_from_slice(&version.as_bytes()[..n]);
    msg
}

/// The peer's version from its message (up to the first NUL), refused unless it is
/// perftest 4.5+0.17's: the steps after it, and their sizes, depend on the version.
pub fn check_version(msg: &[u8]) -> Result<(), ExchangeError> {
    let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    let peer = String::from_utf8_lossy(&msg[..end]).into_owned();
    if peer == PEER_VERSION {
        return Ok(());
    }
    if peer.starts_with('{') {
        return Err(ExchangeError::Garbled(
            "--perftest-exchange: the peer speaks mlx5-perf's own exchange (JSON lines); give \
             both ends --perftest-exchange, or neither"
                .into(),
        ));
    }
    Err(ExchangeError::Garbled(format!(
        "--perftest-exchange speaks perftest 4.5+0.17's exchange only (version string \
         {PEER_VERSION:?}, Debian's perftest 4.5+0.17-1), and the peer sent version {peer:?}: \
         run that perftest on the other end (or mlx5-perf with --perftest-exchange), or \
         mlx5-perf without the flag on both ends"
    )))
}

/// The `ibv_mtu` number of a path MTU in bytes (256 → 1 … 4096 → 5).
pub fn mtu_number(bytes: u32) -> Option<u8> {
    (1u8..=5).find(|&n| 128u32 << n == bytes)
}

/// The path MTU in bytes of an `ibv_mtu` number.
pub fn mtu_bytes(number: u8) -> Option<u32> {
    (1..=5).contains(&number).then(|| 128u32 << number)
}

/// The MTU message of `check_mtu`: the number as `"%d"` and its NUL, two bytes.
pub fn mtu_message(number: u8) -> [u8; 2] {
    [b'0' + number % 10, 0]
}

/// The peer's MTU number from its message (`strtol`), if it is a valid one.
pub fn parse_mtu(msg: &[u8]) -> Option<u8> {
    let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    std::str::from_utf8(&msg[..end])
        .ok()?
        .parse::<u8>()
        .ok()
        .filter(|n| mtu_bytes(*n).is_some())
}

/// One side of perftest's exchange over a connected [`Peer`].
#[derive(Debug)]
pub struct Wire {
    peer: Peer,
    /// The side with a host: it writes first.
    client: bool,
}

impl Wire {
    /// The exchange over `peer`, as the client (`true`) or the server.
    pub fn new(peer: Peer, client: bool) -> Wire {
        Wire { peer, client }
    }

    /// The connection, to look at while a test runs (perftest sends nothing then: anything
    /// waiting is the end of the stream).
    pub fn peer(&mut self) -> &mut Peer {
        &mut self.peer
    }

    /// One step: ours out and theirs (`len` bytes) in, in perftest's order for this side.
    fn xchg(&mut self, mine: &[u8], len: usize) -> Result<Vec<u8>, ExchangeError> {
        if self.client {
            self.peer.send_raw(mine)?;
            self.peer.recv_raw(len)
        } else {
            let theirs = self.peer.recv_raw(len)?;
            self.peer.send_raw(mine)?;
            Ok(theirs)
        }
    }

    /// `exchange_versions` and the check of the peer's.
    pub fn versions(&mut self) -> Result<(), ExchangeError> {
        let theirs = self.xchg(&version_message(PEER_VERSION), MAX_VERSION)?;
        check_version(&theirs)
    }

    /// `check_sys_data`: this side's cycle buffer and cache-line size out, the larger of
    /// each side's back.
    pub fn sys_data(
        &mut self,
        cycle_buffer: i32,
        cache_line: i32,
    ) -> Result<(i32, i32), ExchangeError> {
        let int = |b: Vec<u8>| i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let theirs_cycle = int(self.xchg(&cycle_buffer.to_be_bytes(), 4)?);
        let theirs_line = int(self.xchg(&cache_line.to_be_bytes(), 4)?);
        Ok((cycle_buffer.max(theirs_cycle), cache_line.max(theirs_line)))
    }

    /// `check_mtu`: this side's MTU number out; the smaller of the two back (the peer's
    /// when it is valid and smaller, as perftest takes it).
    pub fn mtu(&mut self, mine: u8) -> Result<u8, ExchangeError> {
        let theirs = self.xchg(&mtu_message(mine), 2)?;
        Ok(match parse_mtu(&theirs) {
            Some(t) if t < mine => t,
            _ => mine,
        })
    }

    /// `ctx_hand_shake`: this side's record out, the peer's in (with a GID when this
    /// side's has one: perftest reads the length its own record has).
    pub fn hand_shake(&mut self, mine: &Record) -> Result<Record, ExchangeError> {
        let with_gid = mine.gid.is_some();
        let theirs = self.xchg(&mine.encode(), Record::len(with_gid))?;
        Record::decode(&theirs, with_gid)
    }

    /// `xchg_bw_reports`: each value out and in, in network order, one step each.
    pub fn bw_reports(&mut self, mine: &BwReport) -> Result<BwReport, ExchangeError> {
        let mut u64_step = |v: u64| -> Result<u64, ExchangeError> {
            let b = self.xchg(&v.to_be_bytes(), 8)?;
            Ok(u64::from_be_bytes(b.try_into().expect("8 bytes")))
        };
        let size = u64_step(mine.size)?;
        let iters = u64_step(mine.iters)?;
        let bw_peak = f64::from_bits(u64_step(mine.bw_peak.to_bits())?);
        let bw_avg = f64::from_bits(u64_step(mine.bw_avg.to_bits())?);
        let msg_rate = f64::from_bits(u64_step(mine.msg_rate.to_bits())?);
        Ok(BwReport {
            size,
            iters,
            bw_peak,
            bw_avg,
            msg_rate,
        })
    }

    /// `ctx_close_connection`: a last barrier, then `"done"` (which nobody reads).
    pub fn close(&mut self, mine: &Record) -> Result<(), ExchangeError> {
        self.hand_shake(mine)?;
        self.peer.send_raw(DONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The golden strings are bash's `printf` (C's format semantics) of perftest's
    // KEY_PRINT_FMT and KEY_PRINT_FMT_GID with the same values.
    const PLAIN: &str = "0001:0010:000100:46008e:00000101:00005645f1046000:00000000";
    const WITH_GID: &str = "0000:0010:0001a5:abcdef:00001234:00007f0012345000:fe:80:00:00:00:\
                            00:00:00:02:00:00:ff:fe:00:00:01:00000000:";

    fn gid() -> [u8; 16] {
        [
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 0x01,
        ]
    }

    #[test]
    fn records_are_perftests_sprintf_bytes() {
        let plain = Record {
            lid: 1,
            out_reads: 16,
            qpn: 0x100,
            psn: 0x46008e,
            rkey: 0x101,
            vaddr: 0x5645_f104_6000,
            srqn: 0,
            gid: None,
        };
        let bytes = plain.encode();
        assert_eq!(bytes.len(), KEY_MSG_SIZE);
        assert_eq!(&bytes[..KEY_MSG_SIZE - 1], PLAIN.as_bytes());
        assert_eq!(bytes[KEY_MSG_SIZE - 1], 0);
        assert_eq!(Record::decode(&bytes, false).unwrap(), plain);

        let global = Record {
            lid: 0,
            out_reads: 16,
            qpn: 0x1a5,
            psn: 0xabcdef,
            rkey: 0x1234,
            vaddr: 0x7f00_1234_5000,
            srqn: 0,
            gid: Some(gid()),
        };
        let bytes = global.encode();
        assert_eq!(bytes.len(), KEY_MSG_SIZE_GID);
        assert_eq!(&bytes[..KEY_MSG_SIZE_GID - 1], WITH_GID.as_bytes());
        assert_eq!(Record::decode(&bytes, true).unwrap(), global);
    }

    #[test]
    fn a_record_of_the_other_shape_or_out_of_range_is_refused() {
        let mut bytes = PLAIN.as_bytes().to_vec();
        bytes.push(0);
        let e = Record::decode(&bytes, true).unwrap_err().to_string();
        assert!(e.contains("7 fields, expected 24"), "{e}");
        let mut wide = "0001:0010:1000000:46008e:00000101:00005645f1046000:00000000"
            .as_bytes()
            .to_vec();
        wide.push(0);
        let e = Record::decode(&wide, false).unwrap_err().to_string();
        assert!(e.contains("field 2 is 0x1000000"), "{e}");
    }

    #[test]
    fn versions_other_than_4_5_0_17s_are_refused_by_name() {
        assert_eq!(&version_message("6.06")[..5], b"6.06\0");
        assert_eq!(version_message("6.06").len(), 16);
        assert!(check_version(&version_message("6.06")).is_ok());
        let e = check_version(&version_message("6.29"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("the peer sent version \"6.29\""), "{e}");
        assert!(e.contains("perftest 4.5+0.17"), "{e}");
        let e = check_version(b"{\"version\":\"mlx5-pe")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the peer speaks mlx5-perf's own exchange"),
            "{e}"
        );
    }

    #[test]
    fn mtus_are_ibv_mtu_numbers_in_two_bytes() {
        assert_eq!(mtu_number(4096), Some(5));
        assert_eq!(mtu_number(256), Some(1));
        assert_eq!(mtu_number(1500), None);
        assert_eq!(mtu_bytes(3), Some(1024));
        assert_eq!(mtu_message(5), *b"5\0");
        assert_eq!(parse_mtu(b"3\0"), Some(3));
        assert_eq!(parse_mtu(b"9\0"), None);
    }

    /// Both ends of a [`Wire`] over a loopback connection, the client on a thread.
    fn pair<T: Send + 'static>(
        client: impl FnOnce(&mut Wire) -> T + Send + 'static,
        server: impl FnOnce(&mut Wire) -> T,
    ) -> (T, T) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let c = std::thread::spawn(move || {
            let mut w = Wire::new(Peer::new(std::net::TcpStream::connect(addr).unwrap()), true);
            client(&mut w)
        });
        let mut w = Wire::new(Peer::new(listener.accept().unwrap().0), false);
        let s = server(&mut w);
        (c.join().unwrap(), s)
    }

    #[test]
    fn each_side_gets_the_others_values_and_both_agree_on_the_limits() {
        let report = BwReport {
            size: 65536,
            iters: 5000,
            bw_peak: 11_000.5,
            bw_avg: 10_000.25,
            msg_rate: 0.16,
        };
        let (c, s) = pair(
            move |w| {
                w.versions().unwrap();
                let sys = w.sys_data(4096, 64).unwrap();
                let mtu = w.mtu(5).unwrap();
                let r = w.bw_reports(&report).unwrap();
                (sys, mtu, r)
            },
            |w| {
                w.versions().unwrap();
                let sys = w.sys_data(65536, 128).unwrap();
                let mtu = w.mtu(3).unwrap();
                let r = w.bw_reports(&BwReport::default()).unwrap();
                (sys, mtu, r)
            },
        );
        assert_eq!(c.0, (65536, 128));
        assert_eq!(s.0, (65536, 128));
        assert_eq!((c.1, s.1), (3, 3));
        assert_eq!(c.2, BwReport::default());
        assert_eq!(s.2, report);
    }

    #[test]
    fn the_wire_bytes_are_perftests_network_order() {
        let (_, bytes) = pair(
            |w| {
                w.peer().send_raw(&version_message("6.06")).unwrap();
                w.peer().send_raw(&4096i32.to_be_bytes()).unwrap();
                Vec::new()
            },
            |w| {
                let mut all = w.peer().recv_raw(MAX_VERSION).unwrap();
                all.extend(w.peer().recv_raw(4).unwrap());
                all
            },
        );
        assert_eq!(&bytes[..4], b"6.06");
        assert!(bytes[4..16].iter().all(|&b| b == 0));
        assert_eq!(&bytes[16..], &[0, 0, 0x10, 0]);
        // A double goes as its bits byte-swapped on a little-endian host (hton_double).
        assert_eq!(
            1.0f64.to_bits().to_be_bytes(),
            [0x3f, 0xf0, 0, 0, 0, 0, 0, 0]
        );
    }
}
