//! Idle connections kept for reuse. Searches run from many client threads at once, each on
//! its own connection: a caller takes an idle one (or opens a new one when none is idle) and
//! gives it back when the call left it usable. More concurrent callers than `max` still
//! work; their surplus connections are closed when given back.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A bounded stack of idle connections of type `C`.
pub struct IdlePool<C> {
    idle: Mutex<Vec<C>>,
    max: usize,
}

impl<C> IdlePool<C> {
    /// An empty pool that keeps at most `max` idle connections.
    pub fn new(max: usize) -> IdlePool<C> {
        IdlePool {
            idle: Mutex::new(Vec::new()),
            max,
        }
    }

    /// A panic in another thread while it held the lock leaves a valid `Vec` behind: the
    /// lock only guards pushes and pops, so the poison is ignored.
    fn lock(&self) -> MutexGuard<'_, Vec<C>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The most recently returned idle connection, if any.
    pub fn take(&self) -> Option<C> {
        self.lock().pop()
    }

    /// Keeps `conn` for reuse, or drops (closes) it when `max` are already idle.
    pub fn give_back(&self, conn: C) {
        let mut idle = self.lock();
        if idle.len() < self.max {
            idle.push(conn);
        }
    }

    /// Closes every idle connection.
    pub fn clear(&self) {
        self.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_max_idle() {
        let pool = IdlePool::new(2);
        assert_eq!(pool.take(), None::<u32>);
        for c in 1..=3 {
            pool.give_back(c);
        }
        assert_eq!(pool.take(), Some(2));
        assert_eq!(pool.take(), Some(1));
        assert_eq!(pool.take(), None);
        pool.give_back(7);
        pool.clear();
        assert_eq!(pool.take(), None);
    }
}
