//! The protocol of `LuceneServer.java`, the client side: a request is `u8 op | u32 length |
//! payload`, an answer `u8 status | u32 length | payload`, little-endian; a string is a u16
//! length and UTF-8. One connection carries one request at a time.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The operations (`LuceneServer.Op`).
pub(super) mod op {
    pub const HELLO: u8 = 1;
    pub const CREATE: u8 = 2;
    pub const WRITE: u8 = 3;
    pub const DELETE: u8 = 4;
    pub const READY: u8 = 5;
    pub const SEARCH: u8 = 6;
    pub const STATS: u8 = 7;
    pub const DROP: u8 = 8;
}

/// A request as it is built; the header's length is filled in when it is sent.
pub(super) struct Request {
    bytes: Vec<u8>,
    /// The length of the first string too long for the protocol: such a request is refused
    /// before it is sent.
    too_long: Option<usize>,
}

/// The longest string the protocol carries (its length is a u16).
pub(super) const MAX_STR: usize = u16::MAX as usize;

/// Refuses `s`, named `what`, when it is longer than the protocol carries.
pub(super) fn check_str(what: &str, s: &str) -> Result<(), String> {
    if s.len() <= MAX_STR {
        return Ok(());
    }
    Err(format!(
        "{what} is {} bytes long; the Lucene server's protocol carries strings of at most {MAX_STR} bytes",
        s.len()
    ))
}

impl Request {
    /// A request of `op` whose payload starts with the collection's name (none for HELLO).
    pub fn new(op: u8, collection: Option<&str>) -> Request {
        Request::with_capacity(op, collection, 64)
    }

    /// As [`Request::new`], with room for `payload` more bytes (a search's vector).
    pub fn with_capacity(op: u8, collection: Option<&str>, payload: usize) -> Request {
        let name = collection.map_or(0, |n| 2 + n.len());
        let mut r = Request {
            bytes: Vec::with_capacity(5 + name + payload),
            too_long: None,
        };
        r.bytes.extend([op, 0, 0, 0, 0]);
        if let Some(name) = collection {
            r.str(name);
        }
        r
    }

    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.bytes.push(v);
        self
    }

    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.bytes.extend(v.to_le_bytes());
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes.extend(v.to_le_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes.extend(v.to_le_bytes());
        self
    }

    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.bytes.extend(v.to_le_bytes());
        self
    }

    /// `n` zero bytes: `n` attributes absent.
    pub fn absent(&mut self, n: usize) -> &mut Self {
        self.bytes.resize(self.bytes.len() + n, 0);
        self
    }

    pub fn floats(&mut self, v: &[f32]) -> &mut Self {
        let start = self.bytes.len();
        self.bytes.resize(start + 4 * v.len(), 0);
        for (bytes, x) in self.bytes[start..].chunks_exact_mut(4).zip(v) {
            bytes.copy_from_slice(&x.to_le_bytes());
        }
        self
    }

    /// A string; one longer than [`MAX_STR`] makes the request refused when it is sent
    /// (the adapter refuses such names and keyword values earlier, with their names).
    pub fn str(&mut self, s: &str) -> &mut Self {
        if s.len() > MAX_STR {
            self.too_long.get_or_insert(s.len());
        }
        let bytes = &s.as_bytes()[..s.len().min(MAX_STR)];
        self.u16(bytes.len() as u16);
        self.bytes.extend(bytes);
        self
    }

    /// Bytes after the header.
    #[cfg(test)]
    pub fn payload_len(&self) -> usize {
        self.bytes.len() - 5
    }

    /// The frame: the header's length set.
    fn frame(&mut self) -> Result<&[u8], CallError> {
        if let Some(n) = self.too_long {
            return Err(CallError::Refused(format!(
                "a string of {n} bytes; the Lucene server's protocol carries at most {MAX_STR}"
            )));
        }
        let length = u32::try_from(self.bytes.len() - 5)
            .map_err(|_| CallError::Refused("a request over 4 GiB".to_string()))?;
        self.bytes[1..5].copy_from_slice(&length.to_le_bytes());
        Ok(&self.bytes)
    }
}

/// Why a call failed: the connection (then it is dropped), the server's answer, or a request
/// the protocol cannot carry (nothing was sent).
#[derive(Debug)]
pub(super) enum CallError {
    Io(io::Error),
    Server(String),
    Refused(String),
}

/// Bytes one read asks for: a search's answer (header, 10 hits) and more fit.
const READ_AHEAD: usize = 4_096;

/// One connection to the server, with the buffer of its last answer (header included).
pub(super) struct Conn {
    stream: TcpStream,
    answer: Vec<u8>,
}

impl Conn {
    /// Connects within `timeout`; every read and write after that has `timeout` too. Zero:
    /// no deadline.
    pub fn connect(addr: &SocketAddr, timeout: Duration) -> io::Result<Conn> {
        let deadline = (!timeout.is_zero()).then_some(timeout);
        let stream = match deadline {
            Some(t) => TcpStream::connect_timeout(addr, t)?,
            None => TcpStream::connect(addr)?,
        };
        stream.set_nodelay(true)?;
        stream.set_read_timeout(deadline)?;
        stream.set_write_timeout(deadline)?;
        Ok(Conn {
            stream,
            answer: Vec::new(),
        })
    }

    /// Sends `request` and reads its answer.
    pub fn call(&mut self, request: &mut Request) -> Result<Answer<'_>, CallError> {
        self.stream.write_all(request.frame()?).map_err(CallError::Io)?;
        let total = self.read_answer().map_err(CallError::Io)?;
        let body = &self.answer[5..total];
        if self.answer[0] != 0 {
            return Err(CallError::Server(String::from_utf8_lossy(body).into_owned()));
        }
        Ok(Answer { bytes: body })
    }

    /// Reads one answer into `self.answer` and returns its length: one read usually brings
    /// all of a search's answer, header included (the server sends nothing unasked).
    fn read_answer(&mut self) -> io::Result<usize> {
        if self.answer.len() < READ_AHEAD {
            self.answer.resize(READ_AHEAD, 0);
        }
        let mut filled = 0;
        while filled < 5 {
            match self.stream.read(&mut self.answer[filled..])? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => filled += n,
            }
        }
        let length = u32::from_le_bytes([
            self.answer[1],
            self.answer[2],
            self.answer[3],
            self.answer[4],
        ]) as usize;
        let total = 5 + length;
        if self.answer.len() < total {
            self.answer.resize(total, 0);
        }
        if filled < total {
            self.stream.read_exact(&mut self.answer[filled..total])?;
        }
        Ok(total)
    }
}

/// An answer's payload, read front to back; reading past its end is an error.
pub(super) struct Answer<'a> {
    bytes: &'a [u8],
}

impl Answer<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], CallError> {
        if self.bytes.len() < N {
            return Err(CallError::Server(format!(
                "an answer ended {} bytes short",
                N - self.bytes.len()
            )));
        }
        let (head, rest) = self.bytes.split_at(N);
        self.bytes = rest;
        let mut out = [0u8; N];
        out.copy_from_slice(head);
        Ok(out)
    }

    pub fn u32(&mut self) -> Result<u32, CallError> {
        self.take().map(u32::from_le_bytes)
    }

    pub fn u64(&mut self) -> Result<u64, CallError> {
        self.take().map(u64::from_le_bytes)
    }

    pub fn f32(&mut self) -> Result<f32, CallError> {
        self.take().map(f32::from_le_bytes)
    }

    /// The rest of the payload as text (the JSON of HELLO and STATS).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(self.bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_frames_its_payload() {
        let mut r = Request::new(op::SEARCH, Some("t"));
        r.u32(10).floats(&[1.0]);
        let frame = r.frame().unwrap().to_vec();
        assert_eq!(frame[0], op::SEARCH);
        assert_eq!(u32::from_le_bytes(frame[1..5].try_into().unwrap()), 11);
        assert_eq!(&frame[5..8], &[1, 0, b't']);
        assert_eq!(&frame[12..], &1.0f32.to_le_bytes());
    }

    #[test]
    fn a_string_the_protocol_cannot_carry_is_refused_not_cut() {
        let long = "x".repeat(MAX_STR + 1);
        assert!(check_str("a value", &"x".repeat(MAX_STR)).is_ok());
        let message = check_str("a value", &long).unwrap_err();
        assert!(message.contains("65536 bytes long"), "{message}");
        let mut r = Request::new(op::SEARCH, Some("t"));
        r.str(&long).u32(1);
        match r.frame() {
            Err(CallError::Refused(m)) => assert!(m.contains("65536 bytes"), "{m}"),
            other => panic!("expected a refusal, got {:?}", other.map(<[u8]>::len)),
        }
    }

    #[test]
    fn a_zero_timeout_is_no_deadline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let conn = Conn::connect(&addr, Duration::ZERO).unwrap();
        assert_eq!(conn.stream.read_timeout().unwrap(), None);
        let conn = Conn::connect(&addr, Duration::from_secs(3)).unwrap();
        assert_eq!(conn.stream.read_timeout().unwrap(), Some(Duration::from_secs(3)));
    }

    #[test]
    fn a_short_answer_is_an_error() {
        let mut a = Answer { bytes: &[1, 0, 0] };
        assert!(a.u32().is_err());
        let mut a = Answer {
            bytes: &[7, 0, 0, 0, 0, 0, 128, 63],
        };
        assert_eq!(a.u32().unwrap(), 7);
        assert_eq!(a.f32().unwrap(), 1.0);
    }

    /// An answer that arrives in pieces, and a second one on the same connection.
    #[test]
    fn answers_are_read_whole_whatever_the_pieces() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut request = [0u8; 5];
            for body in [vec![9u8; 10_000], vec![1, 2, 3]] {
                s.read_exact(&mut request).unwrap();
                let mut frame = vec![0u8];
                frame.extend((body.len() as u32).to_le_bytes());
                frame.extend(&body);
                let (head, tail) = frame.split_at(3);
                s.write_all(head).unwrap();
                std::thread::sleep(Duration::from_millis(20));
                s.write_all(tail).unwrap();
            }
        });
        let mut conn = Conn::connect(&addr, Duration::from_secs(5)).unwrap();
        let text = conn.call(&mut Request::new(op::HELLO, None)).unwrap().bytes.to_vec();
        assert_eq!(text, vec![9u8; 10_000]);
        let text = conn.call(&mut Request::new(op::HELLO, None)).unwrap().bytes.to_vec();
        assert_eq!(text, [1, 2, 3]);
        server.join().unwrap();
    }
}
