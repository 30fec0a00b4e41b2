//! The engine's calls: connecting, `VADD` pipelines, `VSIM`, `VINFO` and `INFO`.

use super::pool::{Pool, broken};
use super::reply::{pairs_to_json, parse_info, value_text};
use super::server::{LOCAL_SERVER, local_redis_pid};
use super::set::SetSpec;
use super::*;
use crate::adapters::support::pool::IdlePool;
use crate::adapters::support::rows;
use crate::secret::redact;
use crate::engine::Query;

impl RedisEngine {
    pub(super) fn connect(opts: &ConnectOptions) -> EngineResult<RedisEngine> {
        let url = match &opts.url {
            Some(url) => url.trim().to_string(),
            None => LOCAL_SERVER.start()?,
        };
        let target = redact(&url);
        let mut info = redis::IntoConnectionInfo::into_connection_info(url.as_str()).map_err(|e| {
            EngineError::bad_param(
                ENGINE,
                "url",
                format!("`{target}` is not a Redis URL ({e}); expected redis://HOST:PORT"),
            )
        })?;
        if let Some(key) = &opts.api_key {
            let settings = info.redis_settings().clone().set_password(key);
            info = info.set_redis_settings(settings);
        }
        let local = is_local(info.addr());
        let client = Client::open(info)
            .map_err(|e| EngineError::bad_param(ENGINE, "url", format!("`{target}`: {e}")))?;
        let timeout = if opts.timeout.is_zero() {
            DEFAULT_REQUEST_TIMEOUT
        } else {
            opts.timeout
        };
        let pool = Pool {
            client,
            idle: IdlePool::new(MAX_IDLE),
            timeout,
            connect_timeout: timeout.min(MAX_CONNECT_TIMEOUT),
        };

        let (server_info, has_vadd) = probe(&pool, &target)?;
        let server_info = parse_info(&value_text(&server_info));
        let version = server_info
            .get("redis_version")
            .cloned()
            .unwrap_or_else(|| "unknown".into());
        // `COMMAND INFO VADD` answers [nil] on a server without vector sets (Redis < 8).
        let supported = match &has_vadd {
            Value::Array(items) => items.iter().any(|v| !matches!(v, Value::Nil)),
            _ => false,
        };
        if !supported {
            return Err(EngineError::Unsupported {
                engine: ENGINE.into(),
                what: format!(
                    "vector sets on the server at {target} (Redis {version} has no VADD; \
                     vector sets need Redis >= 8.0, e.g. `scripts/servers/redis.sh start`)"
                ),
            });
        }
        let server_pid = opts.server_pid.or_else(|| {
            if !local {
                return None;
            }
            let pid = server_info.get("process_id")?.parse::<u32>().ok()?;
            local_redis_pid(pid)
        });
        Ok(RedisEngine {
            pool,
            target,
            version,
            server_pid,
            recreate: opts.recreate,
            batch_size: opts.batch_size_or(DEFAULT_BATCH),
            upload_parallel: opts.upload_parallel.max(1),
            set: None,
            ef: None,
            filter_ef: None,
            live: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Maps a client error: a lost connection is `Unreachable` (with the hint to restart the
    /// server), anything the server answered is an `Operation` error with its message.
    pub(super) fn error(&self, operation: &str, e: RedisError) -> EngineError {
        if e.is_timeout() {
            EngineError::op(
                ENGINE,
                operation,
                format!(
                    "no reply within {:?} (--timeout); raise it if the server is just slow",
                    self.pool.timeout
                ),
            )
        } else if broken(&e) || e.is_connection_refusal() {
            EngineError::Unreachable {
                engine: ENGINE.into(),
                target: self.target.clone(),
                message: format!("{operation}: {e}; {}", LOCAL_SERVER.hint()),
            }
        } else {
            EngineError::op(ENGINE, operation, e)
        }
    }

    pub(super) fn set(&self, operation: &str) -> EngineResult<&SetSpec> {
        self.set
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "collection not created"))
    }

    /// `VADD`s `ids`/`vectors` in pipelines of `batch_size`, `upload_parallel` of them at
    /// once (each thread with its own connection). Returns how many elements were new.
    pub(super) fn add(
        &self,
        ids: &[PointId],
        vectors: &[f32],
        operation: &str,
    ) -> EngineResult<u64> {
        let set = self.set(operation)?;
        rows::check(ENGINE, operation, set.dim, ids.len(), vectors.len())?;
        if ids.is_empty() {
            return Ok(0);
        }
        let chunks: Vec<(&[PointId], &[f32])> = ids
            .chunks(self.batch_size)
            .zip(vectors.chunks(self.batch_size * set.dim))
            .collect();
        let threads = self.upload_parallel.min(chunks.len());
        if threads <= 1 {
            let mut added = 0;
            for (ids, vectors) in &chunks {
                added += self.add_pipeline(set, ids, vectors, operation)?;
            }
            return Ok(added);
        }
        // A shared cursor hands out chunks; the first failure stops the other threads.
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let results: Vec<EngineResult<u64>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut added = 0;
                        while !stop.load(Ordering::Relaxed) {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some((ids, vectors)) = chunks.get(i) else {
                                break;
                            };
                            match self.add_pipeline(set, ids, vectors, operation) {
                                Ok(n) => added += n,
                                Err(e) => {
                                    stop.store(true, Ordering::Relaxed);
                                    return Err(e);
                                }
                            }
                        }
                        Ok(added)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join().unwrap_or_else(|_| {
                        Err(EngineError::op(ENGINE, operation, "upload thread panicked"))
                    })
                })
                .collect()
        });
        let mut added = 0;
        for r in results {
            added += r?;
        }
        Ok(added)
    }

    /// One pipeline of `VADD key FP32 <blob> <id> <quantization> [EF ef] [M m]`: one round
    /// trip for the whole batch. Returns how many elements were new (`VADD` replies 1; an
    /// existing element gets its vector replaced and replies 0).
    pub(super) fn add_pipeline(
        &self,
        set: &SetSpec,
        ids: &[PointId],
        vectors: &[f32],
        operation: &str,
    ) -> EngineResult<u64> {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for (id, v) in ids.iter().zip(vectors.chunks_exact(set.dim)) {
            let mut cmd = redis::cmd("VADD");
            cmd.arg(&set.key)
                .arg("FP32")
                .arg(set.blob(v))
                .arg(id.to_string());
            set.vadd_options(&mut cmd);
            // An update keeps the element's attributes: they are sent with every VADD.
            if let Some(json) = set
                .attributes
                .as_deref()
                .and_then(|a| super::filter::attributes_json(a, *id))
            {
                cmd.arg("SETATTR").arg(json);
            }
            pipe.add_command(cmd);
        }
        let replies: Vec<RedisResult<Value>> = self
            .pool
            .with(|con| pipe.query(con))
            .map_err(|e| self.error(operation, e))?;
        let mut added = 0;
        let mut failed = 0;
        let mut first_error = None;
        for (id, reply) in ids.iter().zip(&replies) {
            match reply {
                Ok(Value::Int(1)) | Ok(Value::Boolean(true)) => added += 1,
                Ok(_) => {}
                Err(e) => {
                    failed += 1;
                    first_error.get_or_insert_with(|| format!("element {id}: {e}"));
                }
            }
        }
        if let Some(first) = first_error {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!(
                    "VADD failed for {failed} of {} elements; {first}",
                    ids.len()
                ),
            ));
        }
        Ok(added)
    }

    /// One `VSIM key FP32 <blob> WITHSCORES COUNT k [EF ef]`.
    pub(super) fn vsim(&self, set: &SetSpec, query: &[f32], k: usize) -> redis::Cmd {
        let mut cmd = redis::cmd("VSIM");
        cmd.arg(&set.key)
            .arg("FP32")
            .arg(set.blob(query))
            .arg("WITHSCORES")
            .arg("COUNT")
            .arg(k);
        if let Some(ef) = self.ef {
            cmd.arg("EF").arg(ef);
        }
        cmd
    }

    /// `VSIM`, with `FILTER <expression> [FILTER-EF n]` under a predicate.
    pub(super) fn vsim_filtered(&self, set: &SetSpec, query: Query<'_>) -> redis::Cmd {
        let mut cmd = self.vsim(set, query.vector, query.k);
        if let Some(filter) = query.filter {
            cmd.arg("FILTER").arg(super::filter::expression(filter));
            if let Some(effort) = self.filter_ef {
                cmd.arg("FILTER-EF").arg(effort);
            }
        }
        cmd
    }

    pub(super) fn vinfo(&self) -> EngineResult<Option<Map<String, Json>>> {
        let Some(set) = &self.set else {
            return Ok(None);
        };
        let reply = self
            .pool
            .with(|con| redis::cmd("VINFO").arg(&set.key).query::<Value>(con))
            .map_err(|e| self.error("VINFO", e))?;
        Ok(match reply {
            Value::Nil => None,
            other => Some(pairs_to_json(&other)),
        })
    }

    pub(super) fn info(&self, section: &str) -> EngineResult<HashMap<String, String>> {
        let reply = self
            .pool
            .with(|con| redis::cmd("INFO").arg(section).query::<Value>(con))
            .map_err(|e| self.error("INFO", e))?;
        Ok(parse_info(&value_text(&reply)))
    }
}

/// Whether the server is on this machine (its process can then be found and measured).
fn is_local(addr: &ConnectionAddr) -> bool {
    match addr {
        ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => {
            matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1" | "[::1]")
        }
        ConnectionAddr::Unix(_) => true,
        // The enum is non-exhaustive: an unknown transport is not assumed local.
        _ => false,
    }
}

/// Pings the server and asks for its `INFO server` and `COMMAND INFO VADD`; no answer, or a
/// lost connection, is `Unreachable`.
fn probe(pool: &Pool, target: &str) -> EngineResult<(Value, Value)> {
    let timeout = pool.timeout;
    let unreachable = |message: String| EngineError::Unreachable {
        engine: ENGINE.into(),
        target: target.to_string(),
        message,
    };
    pool.with(|con| {
        redis::cmd("PING").query::<Value>(con)?;
        let server_info = redis::cmd("INFO").arg("server").query::<Value>(con)?;
        let vadd = redis::cmd("COMMAND")
            .arg("INFO")
            .arg("VADD")
            .query::<Value>(con)?;
        Ok((server_info, vadd))
    })
    .map_err(|e| {
        if e.is_timeout() {
            // The socket's EAGAIN says "resource temporarily unavailable": say what it means.
            unreachable(format!(
                "no answer within {timeout:?} (--timeout); is it a Redis server, and is it \
                 running?"
            ))
        } else if broken(&e) || e.code().is_none() {
            unreachable(format!(
                "{}; {}",
                crate::engine::worded_connection_failure(&e.to_string()),
                LOCAL_SERVER.hint()
            ))
        } else {
            EngineError::op(ENGINE, "connect", e)
        }
    })
}
