//! ragdbeval's closed loop against the tightest loop the `mysql` crate allows, on one seekdb
//! server's table: the same table, queries, `ef_search` and k, at 1 and 2 clients. Target:
//! ragdbeval's QPS at least 0.95 × the native loop's at both.
//!
//! seekdb ships no benchmark client (its Python SDK would measure Python), so the native side
//! is a loop written for the comparison with the same client library: one connection per
//! client thread, the search statement prepared once, every query's vector text made up
//! front, each answer's rows read and dropped. ragdbeval's side is the adapter as `bench --db
//! seekdb` drives it (pooled connection, vector text written per query, rows parsed into
//! neighbours). The two sides alternate in short slices (`common::ab_rounds`).
//!
//! Run: `scripts/engine_vs_native.sh seekdb` (starts a server and runs this with `--bench`).
//! Env: SEEKDB_URL (required), ROUNDS (default 3), PAIRS (default 12), SLICE_S (default 2), N
//! (default 50000), DIM (default 50). Without `--bench` (as `cargo test` runs it) it makes one
//! short round on a small set, and says so; without SEEKDB_URL it says it is skipped.

use mysql::prelude::Queryable;
use ragdbeval::distance::Distance;

use crate::common::{ClientCpu, K, native_threads, prepare};

const TABLE: &str = "seekdb_client_cmp";
const EF: i64 = 64;

/// The comparison, as `ENGINE=seekdb cargo bench --bench client_overhead` runs it.
pub fn run() {
    let Some(mut c) = prepare(
        "seekdb",
        TABLE,
        Distance::Euclidean,
        &[("m", 16), ("ef_construction", 200)],
        &[("ef_search", EF)],
    ) else {
        return;
    };
    let (url, test, slice_s) = (c.url.clone(), &c.test, c.settings.slice_s);
    let texts: Vec<String> = test
        .iter()
        .map(|q| serde_json::to_string(q).expect("a JSON array"))
        .collect();
    let sql = format!(
        "SELECT id, l2_distance(embedding, ?) AS d FROM {TABLE} ORDER BY d APPROXIMATE LIMIT {K}"
    );
    let opts = mysql::Opts::from_url(&url).expect("SEEKDB_URL is a MySQL URL");
    let open = |_: usize| {
        let mut conn = mysql::Conn::new(opts.clone()).expect("connect");
        conn.query_drop(format!("SET ob_hnsw_ef_search = {EF}"))
            .expect("SET");
        let statement = conn.prep(&sql).expect("prepare");
        (conn, statement)
    };
    let send = |(conn, statement): &mut (mysql::Conn, mysql::Statement), i: usize| {
        let rows: Vec<mysql::Row> = conn
            .exec(&*statement, (texts[i % texts.len()].as_str(),))
            .expect("search");
        std::hint::black_box(rows);
    };
    let native = |clients: usize| native_threads(clients, slice_s, &open, &send);
    let index = format!("HNSW m = 16, ef_construction = 200, ef_search = {EF}");
    c.against(
        &index,
        "the minimal mysql-crate loop",
        ClientCpu::Threads,
        &native,
    );
    // Closing drops the table.
    c.engine.close().expect("close");
}
