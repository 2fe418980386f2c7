//! perftest's out-of-band exchange over TCP, as JSON lines: the tool version, the test
//! parameters compared field by field, then per QP the LID, QPN, PSN, rkey, address and GID
//! (with the Q_Key on UD, the DCT number and DC key on DC); then barriers and results.
//!
//! Self-contained (std, serde, serde_json only) so the tests can drive it directly.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version both sides must share.
pub const VERSION: &str = concat!("mlx5-perf ", env!("CARGO_PKG_VERSION"), " exchange 1");

/// Everything that can go wrong talking to the peer.
#[derive(Debug)]
pub enum ExchangeError {
    /// The socket failed.
    Io(std::io::Error),
    /// The peer closed the connection.
    Closed,
    /// The peer sent something that is not the expected message.
    Garbled(String),
    /// The peer runs another version of the tool.
    Version {
        /// Ours.
        here: String,
        /// Theirs.
        peer: String,
    },
    /// Test parameters differ (every difference, in field order).
    Mismatch(Vec<Difference>),
}

/// One parameter that differs between the two sides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The parameter's name (`outer.inner` for nested ones).
    pub field: String,
    /// Our value, as JSON.
    pub here: String,
    /// The peer's value, as JSON.
    pub peer: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` is {} on this side but {} on the peer",
            self.field, self.here, self.peer
        )
    }
}

impl std::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExchangeError::Io(e) => write!(f, "exchange with the peer failed: {e}"),
            ExchangeError::Closed => f.write_str("the peer closed the connection"),
            ExchangeError::Garbled(m) => write!(f, "unexpected message from the peer: {m}"),
            ExchangeError::Version { here, peer } => {
                write!(
                    f,
                    "version mismatch: this side runs {here:?}, the peer {peer:?}"
                )
            }
            ExchangeError::Mismatch(d) => {
                let all: Vec<String> = d.iter().map(Difference::to_string).collect();
                write!(f, "parameter mismatch: {}", all.join("; "))
            }
        }
    }
}

impl std::error::Error for ExchangeError {}

impl From<std::io::Error> for ExchangeError {
    fn from(e: std::io::Error) -> Self {
        ExchangeError::Io(e)
    }
}

/// What one side needs to reach one of the other's QPs and its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QpRecord {
    /// LID of the port.
    pub lid: u16,
    /// QP number.
    pub qpn: u32,
    /// First PSN.
    pub psn: u32,
    /// Remote key of the buffer.
    pub rkey: u32,
    /// Address of the buffer.
    pub addr: u64,
    /// GID of the port (32 hex digits on the wire).
    #[serde(with = "gid_hex")]
    pub gid: [u8; 16],
    /// UD: the Q_Key the QP takes (perftest's `DEF_QKEY`); absent on the other transports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qkey: Option<u32>,
    /// DC: the DC target the peer's DCI addresses, absent on the other transports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dct: Option<DctRecord>,
    /// XRC: the XRC target the peer's initiator connects to and the XRC SRQ its WQEs name,
    /// absent on the other transports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xrc: Option<XrcRecord>,
}

/// What a DCI needs to reach a DC target besides its port's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DctRecord {
    /// The DCT number (`dqp_dct` in the datagram segment).
    pub number: u32,
    /// Its DC access key.
    pub key: u64,
}

/// What an XRC initiator needs besides the port's address: the peer's XRC target (the
/// record's own QP number is the peer's initiator, which this side's target connects to)
/// and the XRC SRQ its requests land in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct XrcRecord {
    /// The XRC target's QP number.
    pub target: u32,
    /// The target's first PSN.
    pub psn: u32,
    /// The XRC SRQ number (perftest's `srqn`, from `ibv_get_srq_num`).
    pub srqn: u32,
}

/// A GID as 32 hex digits.
mod gid_hex {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(gid: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&gid.iter().map(|b| format!("{b:02x}")).collect::<String>())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 16], D::Error> {
        let text = String::deserialize(d)?;
        let mut gid = [0u8; 16];
        if text.len() != 32 || !text.is_ascii() {
            return Err(D::Error::custom("a GID is 32 hex digits"));
        }
        for (i, b) in gid.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(D::Error::custom)?;
        }
        Ok(gid)
    }
}

#[derive(Serialize, Deserialize)]
struct Hello {
    version: String,
    params: Value,
}

/// One side of the TCP connection.
#[derive(Debug)]
pub struct Peer {
    reader: BufReader<TcpStream>,
}

impl Peer {
    /// Wraps a connected stream.
    pub fn new(stream: TcpStream) -> Self {
        // Small messages, answered at once: do not wait to coalesce them.
        let _ = stream.set_nodelay(true);
        Peer {
            reader: BufReader::new(stream),
        }
    }

    /// Sends one message.
    pub fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), ExchangeError> {
        let mut line =
            serde_json::to_string(msg).map_err(|e| ExchangeError::Garbled(e.to_string()))?;
        line.push('\n');
        self.reader.get_mut().write_all(line.as_bytes())?;
        Ok(())
    }

    /// Receives one message.
    pub fn recv<T: DeserializeOwned>(&mut self) -> Result<T, ExchangeError> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(ExchangeError::Closed);
        }
        serde_json::from_str(&line).map_err(|e| ExchangeError::Garbled(format!("{e}: {line}")))
    }

    /// Sends raw bytes (perftest's exchange, [`crate::perftest_wire`]).
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<(), ExchangeError> {
        self.reader.get_mut().write_all(bytes)?;
        Ok(())
    }

    /// Receives exactly `len` raw bytes (perftest's exchange); [`ExchangeError::Closed`]
    /// when the stream ends first.
    pub fn recv_raw(&mut self, len: usize) -> Result<Vec<u8>, ExchangeError> {
        let mut bytes = vec![0; len];
        match self.reader.read_exact(&mut bytes) {
            Ok(()) => Ok(bytes),
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Err(ExchangeError::Closed),
            Err(e) => Err(e.into()),
        }
    }

    /// Sends ours, receives theirs.
    pub fn swap<T: Serialize + DeserializeOwned>(&mut self, mine: &T) -> Result<T, ExchangeError> {
        self.send(mine)?;
        self.recv()
    }

    /// True when a message (or the end of the stream) is waiting: never blocks.
    pub fn pending(&mut self) -> Result<bool, ExchangeError> {
        if !self.reader.buffer().is_empty() {
            return Ok(true);
        }
        let stream = self.reader.get_ref();
        stream.set_nonblocking(true)?;
        let peeked = stream.peek(&mut [0u8; 1]);
        stream.set_nonblocking(false)?;
        match peeked {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Exchanges versions and parameters; any difference is an error naming the field.
    pub fn handshake<P: Serialize>(&mut self, params: &P) -> Result<(), ExchangeError> {
        let mine = Hello {
            version: VERSION.into(),
            params: serde_json::to_value(params)
                .map_err(|e| ExchangeError::Garbled(e.to_string()))?,
        };
        let theirs: Hello = self.swap(&mine)?;
        if theirs.version != mine.version {
            return Err(ExchangeError::Version {
                here: mine.version,
                peer: theirs.version,
            });
        }
        let mut differences = Vec::new();
        compare("", &mine.params, &theirs.params, &mut differences);
        if differences.is_empty() {
            Ok(())
        } else {
            Err(ExchangeError::Mismatch(differences))
        }
    }
}

/// Compares two JSON values field by field, collecting every difference by its path.
fn compare(path: &str, here: &Value, peer: &Value, out: &mut Vec<Difference>) {
    match (here, peer) {
        (Value::Object(a), Value::Object(b)) => {
            let field = |k: &str| {
                if path.is_empty() {
                    k.to_string()
                } else {
                    format!("{path}.{k}")
                }
            };
            for (k, v) in a {
                compare(&field(k), v, b.get(k).unwrap_or(&Value::Null), out);
            }
            for (k, v) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
                compare(&field(k), &Value::Null, v, out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(Difference {
            field: path.to_string(),
            here: a.to_string(),
            peer: b.to_string(),
        }),
    }
}
