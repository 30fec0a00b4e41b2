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
}

impl Request {
    /// A request of `op` whose payload starts with the collection's name (none for HELLO).
    pub fn new(op: u8, collection: Option<&str>) -> Request {
        let mut r = Request {
            bytes: Vec::with_capacity(64),
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
        self.bytes.reserve(4 * v.len());
        for x in v {
            self.bytes.extend(x.to_le_bytes());
        }
        self
    }

    /// A string of at most 65,535 bytes (names and keyword values are checked before).
    pub fn str(&mut self, s: &str) -> &mut Self {
        let bytes = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
        self.u16(bytes.len() as u16);
        self.bytes.extend(bytes);
        self
    }

    /// The frame: the header's length set.
    fn frame(&mut self) -> io::Result<&[u8]> {
        let length = u32::try_from(self.bytes.len() - 5)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "request over 4 GiB"))?;
        self.bytes[1..5].copy_from_slice(&length.to_le_bytes());
        Ok(&self.bytes)
    }
}

/// Why a call failed: the connection (then it is dropped), or the server's answer.
#[derive(Debug)]
pub(super) enum CallError {
    Io(io::Error),
    Server(String),
}

/// One connection to the server, with the buffer of its last answer.
pub(super) struct Conn {
    stream: TcpStream,
    answer: Vec<u8>,
}

impl Conn {
    /// Connects within `timeout`; every read and write after that has `timeout` too.
    pub fn connect(addr: &SocketAddr, timeout: Duration) -> io::Result<Conn> {
        let stream = TcpStream::connect_timeout(addr, timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        Ok(Conn {
            stream,
            answer: Vec::new(),
        })
    }

    /// Sends `request` and reads its answer.
    pub fn call(&mut self, request: &mut Request) -> Result<Answer<'_>, CallError> {
        self.stream
            .write_all(request.frame().map_err(CallError::Io)?)
            .map_err(CallError::Io)?;
        let mut header = [0u8; 5];
        self.stream.read_exact(&mut header).map_err(CallError::Io)?;
        let length = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
        self.answer.resize(length, 0);
        self.stream
            .read_exact(&mut self.answer)
            .map_err(CallError::Io)?;
        if header[0] != 0 {
            return Err(CallError::Server(
                String::from_utf8_lossy(&self.answer).into_owned(),
            ));
        }
        Ok(Answer {
            bytes: &self.answer,
        })
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
    fn a_short_answer_is_an_error() {
        let mut a = Answer { bytes: &[1, 0, 0] };
        assert!(a.u32().is_err());
        let mut a = Answer {
            bytes: &[7, 0, 0, 0, 0, 0, 128, 63],
        };
        assert_eq!(a.u32().unwrap(), 7);
        assert_eq!(a.f32().unwrap(), 1.0);
    }
}
