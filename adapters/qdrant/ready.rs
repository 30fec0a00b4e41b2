//! Waiting for the index: the collection polled until the optimizer has nothing left to do,
//! then the report of what the server built (and why a search might still scan in full).

use super::*;

/// The collection as last polled, once ready, and what the wait took.
struct ReadyPoll {
    info: CollectionInfo,
    /// Status requests sent.
    polls: u64,
    /// Whether pending optimizations had to be started (a grey collection).
    triggered: bool,
}

impl QdrantEngine {
    /// [`VectorEngine::wait_until_ready`].
    pub(super) fn wait_for_index(&mut self) -> EngineResult<IndexReport> {
        let col = self.collection("wait_until_ready")?;
        let ready = self.poll_until_green(col)?;
        Ok(index_report(col, ready))
    }

    /// Polls the collection until it is green with the same counts
    /// [`GREEN_CONFIRMATIONS`] times in a row; an optimizer error, a red status or
    /// [`READY_TIMEOUT`] is an error.
    fn poll_until_green(&self, col: &Collection) -> EngineResult<ReadyPoll> {
        let started = Instant::now();
        let mut last_progress = started;
        let mut poll = POLL_FIRST;
        let mut green_streak = 0u32;
        let mut last_counts = None;
        let mut polls = 0u64;
        let mut triggered = false;
        let info = loop {
            let info = self.info("wait_until_ready", &col.name)?;
            polls += 1;
            if let Some(s) = &info.optimizer_status
                && !s.ok
            {
                return Err(EngineError::op(
                    ENGINE,
                    "wait_until_ready",
                    format!("optimizer error: {}", s.error),
                ));
            }
            let status = CollectionStatus::try_from(info.status).ok();
            if status == Some(CollectionStatus::Red) {
                return Err(EngineError::op(
                    ENGINE,
                    "wait_until_ready",
                    "collection status is red: an operation failed on the server; check its log",
                ));
            }
            // Grey: optimizations are pending but were never started (after a restart).
            // An update of the optimizer config, even an empty one, starts them.
            if status == Some(CollectionStatus::Grey) && !triggered {
                self.run(
                    "wait_until_ready",
                    self.client.update_collection(
                        UpdateCollectionBuilder::new(col.name.as_str())
                            .optimizers_config(OptimizersConfigDiffBuilder::default()),
                    ),
                )?;
                triggered = true;
            }
            let points = info.points_count.unwrap_or(0);
            let indexed = info.indexed_vectors_count.unwrap_or(0);
            let queue_empty = info.update_queue.as_ref().is_none_or(|q| q.length == 0);
            let counts = (points, indexed, info.segments_count);
            if status == Some(CollectionStatus::Green) && queue_empty {
                green_streak = if last_counts == Some(counts) {
                    green_streak + 1
                } else {
                    1
                };
            } else {
                green_streak = 0;
            }
            last_counts = Some(counts);
            // Green means the optimizer has nothing left to do. If some points are still
            // unindexed they sit in a segment below the indexing threshold and will stay so:
            // waiting longer would not help, the report flags them instead.
            if green_streak >= GREEN_CONFIRMATIONS {
                break info;
            }
            if started.elapsed() > READY_TIMEOUT {
                return Err(EngineError::op(
                    ENGINE,
                    "wait_until_ready",
                    format!(
                        "index not ready after {}s: status {}, {indexed} of {points} vectors \
                     indexed; check the server log or use a smaller dataset",
                        READY_TIMEOUT.as_secs(),
                        status_name(info.status)
                    ),
                ));
            }
            if last_progress.elapsed() >= PROGRESS_EVERY {
                eprintln!(
                    "qdrant: waiting for the index: status {}, {indexed}/{points} vectors \
                 indexed, {} segments, {:.0}s",
                    status_name(info.status),
                    info.segments_count,
                    started.elapsed().as_secs_f64()
                );
                last_progress = Instant::now();
            }
            std::thread::sleep(poll);
            poll = (poll * 2).min(POLL_MAX);
        };
        Ok(ReadyPoll {
            info,
            polls,
            triggered,
        })
    }
}

/// The index as the server reports it, with the reasons a search might scan in full.
fn index_report(col: &Collection, ready: ReadyPoll) -> IndexReport {
    let ReadyPoll {
        info,
        polls,
        triggered,
    } = ready;
    let points = info.points_count.unwrap_or(0);
    let indexed = info.indexed_vectors_count.unwrap_or(0);
    let config = info.config.as_ref();
    let hnsw = config.and_then(|c| c.hnsw_config.as_ref());
    let fst_kb = hnsw
        .and_then(|h| h.full_scan_threshold)
        .unwrap_or(col.settings.full_scan_threshold.kb);
    let indexing_kb = config
        .and_then(|c| c.optimizer_config.as_ref())
        .and_then(|o| o.indexing_threshold)
        .unwrap_or(col.settings.indexing_threshold.kb);
    let m = hnsw.and_then(|h| h.m).or(Some(col.settings.m as u64));
    // Qdrant converts the KB threshold into vectors with the stored vector size.
    let fst_vectors = fst_kb.saturating_mul(1024) / (col.dim as u64 * 4).max(1);
    let mut reasons = Vec::new();
    if indexed < points {
        reasons.push(format!(
            "{} of {points} points are not in an HNSW segment",
            points - indexed
        ));
    }
    if indexing_kb == 0 {
        reasons.push("indexing is disabled (indexing_threshold = 0)".to_string());
    }
    if m == Some(0) {
        reasons.push("m = 0: no HNSW graph".to_string());
    }
    if info.segments_count > 0 && points / info.segments_count <= fst_vectors {
        reasons.push(format!(
            "average segment ({} points) is within full_scan_threshold ({fst_vectors} vectors)",
            points / info.segments_count
        ));
    }
    let mut details = Map::new();
    details.insert("segments_count".into(), json!(info.segments_count));
    details.insert("status".into(), json!(status_name(info.status)));
    details.insert("optimizer_status".into(), optimizer_json(&info));
    details.insert("indexing_threshold_kb".into(), json!(indexing_kb));
    details.insert("full_scan_threshold_kb".into(), json!(fst_kb));
    details.insert("full_scan_threshold_vectors".into(), json!(fst_vectors));
    // The settings as parsed (thresholds with their origin), the record the edge adapter
    // writes too; the figures above are what the server reports it applied.
    details.insert("build_settings".into(), col.settings.to_json());
    details.insert("points_sent".into(), json!(col.loaded));
    details.insert("status_polls".into(), json!(polls));
    details.insert("optimizers_triggered".into(), json!(triggered));
    details.insert("full_scan_reasons".into(), json!(reasons));
    IndexReport {
        indexed_vectors: info.indexed_vectors_count,
        points: info.points_count,
        may_full_scan: !reasons.is_empty(),
        details,
    }
}
