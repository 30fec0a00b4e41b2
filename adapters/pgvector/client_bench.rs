//! ragdbeval's closed loop against `pgbench -M prepared` (C, libpq) on one PostgreSQL +
//! pgvector server: same table, index, queries, `ef_search` and k, at 1 and 2 clients.
//! Target: ragdbeval's QPS at least 0.95 × pgbench's at both.
//!
//! The two sides alternate in short slices (`common::ab_rounds`). Each side's client CPU per
//! query is printed: on a small machine every client cycle is a cycle the server does not get.
//!
//! pgbench cannot hold a vector in a variable, so each of its transactions picks one of the
//! queries by number and reads it from a table (`bench_queries`, primary key) inside the same
//! statement, an InitPlan the server runs before the index scan; ragdbeval sends the vector
//! as a binary parameter of its prepared statement. Both statements select the id and the
//! distance, ordered by the distance, and both plans are checked to scan the HNSW index.
//!
//! Run: `scripts/engine_vs_native.sh pgvector` (starts a server, finds pgbench, runs this with
//! `--bench`). Env: PGVECTOR_URL (required), PGBENCH (default: the wheel's), ROUNDS (default 3),
//! PAIRS per round and client count (default 12), SLICE_S seconds per slice (default 2),
//! N (default 50000), DIM (default 50). Without `--bench` (as `cargo test` runs it) it makes
//! one short round on a small set, and says so; without PGVECTOR_URL it says it is skipped.

use std::io::Write as _;
use std::process::Command;

use ragdbeval::distance::Distance;

use crate::common::{ClientCpu, K, Slice, children_cpu, prepare};

const TABLE: &str = "pgbench_client_cmp";
const EF_SEARCH: i64 = 64;

/// One pgbench slice: transactions per second, client CPU seconds per transaction.
fn pgbench(bin: &str, url: &str, script: &std::path::Path, clients: usize, secs: u64) -> Slice {
    let cpu0 = children_cpu();
    let out = Command::new(bin)
        .args([
            "-n",
            "-M",
            "prepared",
            "-c",
            &clients.to_string(),
            "-j",
            &clients.to_string(),
        ])
        .args(["-T", &secs.to_string(), "-f"])
        .arg(script)
        .arg(url)
        .env("PGOPTIONS", format!("-c hnsw.ef_search={EF_SEARCH}"))
        .output()
        .unwrap_or_else(|e| panic!("running {bin}: {e}"));
    let cpu = (children_cpu() - cpu0).as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pgbench failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |prefix: &str| -> f64 {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no `{prefix}` in pgbench's output:\n{stdout}"))
    };
    let tps = field("tps =");
    let done = field("number of transactions actually processed:");
    Slice {
        qps: tps,
        cpu_per_query: cpu / done.max(1.0),
        calls: done as u64,
    }
}

/// The pgbench of the server's own wheel (`scripts/servers/pgvector.sh bindir`).
fn wheel_pgbench() -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/servers/pgvector.sh");
    let out = Command::new(script)
        .arg("bindir")
        .output()
        .unwrap_or_else(|e| panic!("running {script} bindir: {e}"));
    assert!(
        out.status.success(),
        "{script} bindir failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    format!("{}/pgbench", String::from_utf8_lossy(&out.stdout).trim())
}

/// The comparison, as `ENGINE=pgvector cargo bench --bench client_overhead` runs it.
pub fn run() {
    let Some(mut c) = prepare(
        "pgvector",
        TABLE,
        Distance::Euclidean,
        &[("m", 16), ("ef_construction", 128)],
        &[("ef_search", EF_SEARCH)],
    ) else {
        return;
    };
    let (url, test, slice_s) = (c.url.clone(), &c.test, c.settings.slice_s);
    let dim = c.settings.dim;
    let pgbench_bin = std::env::var("PGBENCH").unwrap_or_else(|_| wheel_pgbench());
    let nq = test.len();

    // pgbench's side: the queries in a table, and its script.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS bench_queries; \
             CREATE TABLE bench_queries (qid int PRIMARY KEY, v vector({dim}))"
        ))
        .expect("create bench_queries");
    let insert = client
        .prepare("INSERT INTO bench_queries VALUES ($1, $2::text::vector)")
        .expect("prepare");
    for (q, v) in test.iter().enumerate() {
        let text = format!(
            "[{}]",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        client
            .execute(&insert, &[&(q as i32), &text])
            .expect("insert a query");
    }
    let probe = |qid: &str| format!("(SELECT v FROM bench_queries WHERE qid = {qid})");
    let statement = format!(
        "SELECT id, embedding <-> {q} AS dist FROM {TABLE} ORDER BY embedding <-> {q} LIMIT {K}",
        q = probe(":qid")
    );
    // Both sides must scan the HNSW index (the adapter checks its own plan after the build).
    client
        .batch_execute(&format!("SET hnsw.ef_search = {EF_SEARCH}"))
        .expect("set ef_search");
    let plan: String = client
        .query(&format!("EXPLAIN {}", statement.replace(":qid", "1")), &[])
        .expect("explain")
        .iter()
        .map(|r| r.get::<_, String>(0) + "\n")
        .collect();
    assert!(
        plan.contains("Index Scan using"),
        "pgbench's statement does not scan the index:\n{plan}"
    );
    let script = c.work_dir.path().join("search.sql");
    let mut f = std::fs::File::create(&script).expect("script file");
    writeln!(f, "\\set qid random(0, {})\n{statement};", nq - 1).expect("write script");
    drop(f);

    let native = |clients: usize| pgbench(&pgbench_bin, &url, &script, clients, slice_s);
    let index = format!("HNSW m = 16, ef_construction = 128, ef_search = {EF_SEARCH}");
    c.against(&index, "pgbench", ClientCpu::Threads, &native);
    c.engine.close().expect("close");
    client
        .batch_execute(&format!("DROP TABLE IF EXISTS bench_queries, {TABLE}"))
        .expect("drop the tables");
}
