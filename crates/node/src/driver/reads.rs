//! The driver's read path: client reads, peer timeouts, origin reads and
//! completions, held reads of unverified singlets.

use super::*;

impl Driver {
    pub(super) fn read(
        &mut self,
        path: Arc<str>,
        version: Arc<FileVersion>,
        block: BlockId,
        reply: oneshot::Sender<Result<(Bytes, Level), ReadError>>,
    ) {
        if let Some(p) = self.pending.get_mut(&block) {
            p.waiters.push(reply);
            return;
        }
        if self.pending.len() >= MAX_PENDING {
            self.queued.push_back(Event::Read {
                path,
                version,
                block,
                reply,
            });
            return;
        }
        self.pending.insert(
            block,
            Pending {
                path,
                version,
                waiters: vec![reply],
                stage: Stage::Cluster,
                deadline: Instant::now() + self.peer_timeout(),
                expect: None,
                early: None,
                data: None,
                machine_done: false,
            },
        );
        let now = self.now();
        self.node.read(block, now, &mut self.out);
    }

    /// How long to wait on peers before reading the origin: ten smoothed
    /// round trips of the slowest live peer plus two origin reads (a
    /// forwarded read may wait on the holder's own origin read), at least
    /// the configured floor.
    pub(super) fn peer_timeout(&self) -> Duration {
        let rtt = self
            .members
            .values()
            .filter_map(|m| m.rtt)
            .max()
            .unwrap_or(Duration::from_millis(1));
        (rtt * 10 + self.origin_time * 2).max(self.cfg.min_timeout)
    }

    /// Reads past their deadline go to the origin; a forwarded singlet
    /// whose hash never came is dropped unverified.
    pub(super) fn expire(&mut self) {
        let now = Instant::now();
        let late: Vec<BlockId> = self
            .pending
            .iter()
            .filter(|(_, p)| p.stage == Stage::Cluster && p.deadline <= now)
            .map(|(&b, _)| b)
            .collect();
        for block in late {
            self.metrics.timeouts.inc();
            tracing::debug!(?block, "peer timeout; reading the origin");
            self.start_origin_read(block, 2);
        }
        let unanswered: Vec<BlockId> = self
            .unverified
            .iter()
            .filter(|(_, u)| u.deadline <= now)
            .map(|(&b, _)| b)
            .collect();
        for block in unanswered {
            self.metrics.timeouts.inc();
            self.verify_recirculated(block, None);
        }
        self.placing.retain(|_, (_, _, deadline)| *deadline > now);
        self.pump();
    }

    pub(super) fn start_origin_read(&mut self, block: BlockId, hops: u8) {
        let Some(p) = self.pending.get_mut(&block) else {
            return;
        };
        if p.stage == Stage::Origin {
            return;
        }
        p.stage = Stage::Origin;
        let (path, version) = (p.path.clone(), p.version.clone());
        let origin = self.origin.clone();
        let events = self.events.clone();
        let bs = u64::from(self.cfg.block_size);
        let start = u64::from(block.index) * bs;
        let end = (start + bs).min(version.size);
        self.metrics.origin_reads.inc();
        tokio::spawn(async move {
            let started = Instant::now();
            let result = origin
                .read(&path, &version, start..end)
                .await
                .map(|data| {
                    let hash = blake3_of(&data);
                    (data, hash)
                })
                .map_err(Arc::new);
            let _ = events
                .send(Event::OriginDone {
                    block,
                    hops,
                    took: started.elapsed(),
                    result,
                })
                .await;
        });
    }

    pub(super) fn origin_done(
        &mut self,
        block: BlockId,
        hops: u8,
        result: Result<(Bytes, Hash), Arc<OriginError>>,
    ) {
        let Some(p) = self.pending.get_mut(&block) else {
            return;
        };
        match result {
            Ok((data, hash)) => {
                self.metrics.origin_bytes.inc_by(data.len() as u64);
                let len = data.len() as u32;
                if p.machine_done {
                    let p = self.pending.remove(&block).expect("checked above");
                    self.finish(block, p, data, Level::Origin);
                    return;
                }
                p.data = Some(data.clone());
                self.send_to_manager(block, Wire::Record { block, hash, len });
                let msg = Msg::Data {
                    block,
                    data,
                    level: Level::Origin,
                    hops: hops.saturating_add(1),
                };
                let now = self.now();
                self.node.handle(Addr::Manager, msg, now, &mut self.out);
            }
            Err(e) => {
                self.metrics.read_errors.inc();
                let p = self.pending.remove(&block).expect("checked above");
                for w in p.waiters {
                    let _ = w.send(Err(ReadError::Origin(e.clone())));
                }
                // The machine admitted the block on its miss: take it out
                // again.
                self.uncache(block);
                self.release_deferred(block);
            }
        }
    }

    /// Takes `block` out of the node machine's cache and tells its
    /// manager this node no longer holds it.
    pub(super) fn uncache(&mut self, block: BlockId) {
        let now = self.now();
        self.node
            .handle(Addr::Manager, Msg::Invalidate { block }, now, &mut self.out);
        let me = Addr::Node(self.cfg.id);
        self.out.send(me, Addr::Manager, Msg::Dropped { block });
    }

    /// Finishes reads the machine completed.
    pub(super) fn complete(&mut self) {
        let done: Vec<_> = self.out.drain_done().collect();
        for d in done {
            let Some(p) = self.pending.remove(&d.block) else {
                continue;
            };
            if d.level == Level::Local && self.unverified.contains_key(&d.block) {
                // A hit on a forwarded singlet not yet verified: its bytes
                // wait for the manager's hash.
                let held = Pending {
                    stage: Stage::Held,
                    machine_done: true,
                    ..p
                };
                self.pending.insert(d.block, held);
                continue;
            }
            match p.data.clone().or_else(|| self.store.get(d.block)) {
                Some(data) => self.finish(d.block, p, data, d.level),
                None => {
                    // Cached in the policy but its bytes never arrived (an
                    // earlier read of it failed): read the origin again.
                    self.pending.insert(d.block, Pending { data: None, ..p });
                    self.start_origin_read(d.block, 1);
                }
            }
        }
        self.metrics.cached_bytes.set(self.store.bytes() as i64);
        while self.pending.len() < MAX_PENDING {
            let Some(ev) = self.queued.pop_front() else {
                break;
            };
            self.on_event_no_pump(ev);
        }
    }

    /// Hands `data` to a finished read's waiters and serves the forwards
    /// that waited for it.
    pub(super) fn finish(&mut self, block: BlockId, p: Pending, data: Bytes, level: Level) {
        self.metrics.read(level);
        for w in p.waiters {
            let _ = w.send(Ok((data.clone(), level)));
        }
        self.release_deferred(block);
    }

    pub(super) fn on_event_no_pump(&mut self, ev: Event) {
        if let Event::Read {
            path,
            version,
            block,
            reply,
        } = ev
        {
            self.read(path, version, block, reply);
        }
    }

    pub(super) fn release_deferred(&mut self, block: BlockId) {
        if let Some(msgs) = self.deferred.remove(&block) {
            let now = self.now();
            for (from, msg) in msgs {
                self.node.handle(from, msg, now, &mut self.out);
            }
        }
    }
}
