//! ragdbeval's closed loop against a minimal loop over the same protocol on one Lucene
//! server's collection: the same collection, queries, `ef` and k, at 1 and 2 clients. Target:
//! ragdbeval's QPS at least 0.95 × the minimal loop's at both.
//!
//! Lucene has no client of its own for this server, so the native side is the least a Rust
//! program can do per query: each query's SEARCH request framed up front, one connection per
//! client thread, each answer read to its end and dropped unparsed. ragdbeval's side is the
//! adapter as `bench --db lucene` drives it (pooled connections, the request framed per query,
//! the answer parsed into neighbours). The two sides alternate in short slices
//! (`common::ab_rounds`).
//!
//! Run: `scripts/engine_vs_native.sh lucene` (starts a server and runs this with `--bench`).
//! Env: LUCENE_URL (required), ROUNDS (default 3), PAIRS (default 12), SLICE_S (default 2), N
//! (default 50000), DIM (default 50). Without `--bench` (as `cargo test` runs it) it makes one
//! short round on a small set, and says so; without LUCENE_URL it says it is skipped.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use ragdbeval::distance::Distance;

use crate::common::{ClientCpu, K, native_threads, prepare};

const COLLECTION: &str = "lucene_client_cmp";
const EF: i64 = 64;
/// The protocol's SEARCH operation (`LuceneServer.Op.SEARCH`).
const SEARCH: u8 = 6;

/// The comparison, as `ENGINE=lucene cargo bench --bench client_overhead` runs it.
pub fn run() {
    let Some(mut c) = prepare("lucene", COLLECTION, Distance::Euclidean, &[], &[("ef", EF)]) else {
        return;
    };
    let (url, test, slice_s) = (c.url.clone(), &c.test, c.settings.slice_s);
    let address = url.trim_start_matches("lucene://").to_string();
    let frames: Vec<Vec<u8>> = test.iter().map(search_frame).collect();

    let open = |_: usize| -> TcpStream {
        let stream = TcpStream::connect(&address).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        stream
    };
    let send = |stream: &mut TcpStream, i: usize| {
        stream.write_all(&frames[i % frames.len()]).expect("send");
        let mut header = [0u8; 5];
        stream.read_exact(&mut header).expect("answer header");
        assert_eq!(header[0], 0, "the server refused a search");
        let length = u32::from_le_bytes([header[1], header[2], header[3], header[4]]);
        let mut sink = vec![0u8; length as usize];
        stream.read_exact(&mut sink).expect("answer");
        std::hint::black_box(sink);
    };

    let native = |clients: usize| native_threads(clients, slice_s, &open, &send);
    let index = format!("m = 16, ef_construction = 100, one segment, ef = {EF}");
    c.against(&index, "the minimal protocol loop", ClientCpu::Threads, &native);
    // Closing drops the collection.
    c.engine.close().expect("close");
}

/// A framed SEARCH of `query`: collection, k, ef, the vector, no filter.
fn search_frame(query: &[f32]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(16 + 4 * query.len());
    payload.extend((COLLECTION.len() as u16).to_le_bytes());
    payload.extend(COLLECTION.as_bytes());
    payload.extend((K as u32).to_le_bytes());
    payload.extend((EF as u32).to_le_bytes());
    for x in query {
        payload.extend(x.to_le_bytes());
    }
    payload.extend(0u16.to_le_bytes());
    let mut frame = vec![SEARCH];
    frame.extend((payload.len() as u32).to_le_bytes());
    frame.extend(payload);
    frame
}
