//! A deadline on every exchange with the server, for a server that stops answering mid-run.
//!
//! The synchronous `postgres` client has no read timeout, and the server's own
//! `statement_timeout` cannot fire in a server that is frozen (stopped, swapped out, its
//! machine gone): the kernel still acknowledges our bytes, so neither TCP keep-alives nor
//! `tcp_user_timeout` notice anything, and a search would wait forever. Every session
//! therefore registers its socket here; each call on it marks when it started, and one
//! watchdog thread per engine shuts down the socket of a call that has run past the deadline.
//! The blocked call then returns with a closed connection, and the adapter reports the
//! deadline, not a lost connection.
//!
//! The client does not expose its socket, so a session finds it by asking the server for the
//! client's port (`inet_client_port()`) and looking that local port up among the process's
//! open sockets. A session over a Unix socket has no port and no watchdog; its server is on
//! this machine, and `statement_timeout` still bounds slow statements.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::session::lock;

/// How far past `statement_timeout` the watchdog waits: the server's own timeout, with its
/// clean error, fires first whenever the server is alive.
const GRACE: Duration = Duration::from_secs(5);

/// One session's socket and the start of the call running on it.
pub(super) struct Slot {
    fd: RawFd,
    local_port: u16,
    /// Nanoseconds since the watchdog's epoch when the running call started (0: idle).
    armed_at: AtomicU64,
    /// Set when the watchdog shut the socket down.
    expired: AtomicBool,
}

impl Slot {
    /// Marks a call as started; the returned guard marks it finished when dropped.
    pub(super) fn arm<'a>(&'a self, watchdog: &Watchdog) -> Armed<'a> {
        let now = watchdog.epoch.elapsed().as_nanos().max(1) as u64;
        self.armed_at.store(now, Ordering::Release);
        Armed { slot: self }
    }

    /// Whether the watchdog cut this session's call off.
    pub(super) fn expired(&self) -> bool {
        self.expired.load(Ordering::Acquire)
    }
}

/// A call in flight on a [`Slot`].
pub(super) struct Armed<'a> {
    slot: &'a Slot,
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        self.slot.armed_at.store(0, Ordering::Release);
    }
}

/// The sessions of one engine and the thread that watches them.
pub(super) struct Watchdog {
    epoch: Instant,
    /// How long a call may run before its socket is shut down.
    pub(super) limit: Duration,
    slots: Mutex<Vec<Weak<Slot>>>,
    started: AtomicBool,
}

impl Watchdog {
    /// A watchdog for calls that the server itself stops after `statement_timeout`.
    pub(super) fn new(statement_timeout: Duration) -> Arc<Watchdog> {
        Arc::new(Watchdog {
            epoch: Instant::now(),
            limit: statement_timeout + GRACE,
            slots: Mutex::new(Vec::new()),
            started: AtomicBool::new(false),
        })
    }

    /// Registers the socket whose local port is `local_port` (what the server reported for
    /// the session); `None` when no such socket is found (a Unix socket, say).
    pub(super) fn register(self: &Arc<Self>, local_port: u16, server_port: u16) -> Option<Arc<Slot>> {
        let fd = find_socket(local_port, server_port)?;
        let slot = Arc::new(Slot {
            fd,
            local_port,
            armed_at: AtomicU64::new(0),
            expired: AtomicBool::new(false),
        });
        let mut slots = lock(&self.slots);
        slots.retain(|s| s.strong_count() > 0);
        slots.push(Arc::downgrade(&slot));
        drop(slots);
        if !self.started.swap(true, Ordering::AcqRel) {
            let watchdog = Arc::downgrade(self);
            let spawned = std::thread::Builder::new()
                .name("pg-watchdog".into())
                .spawn(move || watch(watchdog));
            if spawned.is_err() {
                // Without the thread there is no deadline; the call still works.
                self.started.store(false, Ordering::Release);
            }
        }
        Some(slot)
    }

    fn check(&self) {
        let now = self.epoch.elapsed().as_nanos() as u64;
        let limit = self.limit.as_nanos() as u64;
        for slot in lock(&self.slots).iter().filter_map(Weak::upgrade) {
            let started = slot.armed_at.load(Ordering::Acquire);
            if started != 0 && now.saturating_sub(started) > limit && !slot.expired() {
                // The fd number could have been reused if the client had closed its socket;
                // it is shut down only while it is still the session's socket.
                if socket_ports(slot.fd).is_some_and(|(local, _)| local == slot.local_port) {
                    slot.expired.store(true, Ordering::Release);
                    // SAFETY: shutdown on a descriptor this process owns; it does not close it.
                    unsafe { libc::shutdown(slot.fd, libc::SHUT_RDWR) };
                }
            }
        }
    }
}

/// The watchdog thread: ends when its engine is dropped.
fn watch(watchdog: Weak<Watchdog>) {
    loop {
        let Some(w) = watchdog.upgrade() else { return };
        let tick = (w.limit / 8).clamp(Duration::from_millis(50), Duration::from_secs(1));
        w.check();
        drop(w);
        std::thread::sleep(tick);
    }
}

/// The open TCP socket of this process with local port `local` and peer port `peer`.
fn find_socket(local: u16, peer: u16) -> Option<RawFd> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
        .find(|&fd| socket_ports(fd) == Some((local, peer)))
}

/// (local port, peer port) of an IPv4 or IPv6 socket, `None` for anything else.
fn socket_ports(fd: RawFd) -> Option<(u16, u16)> {
    let local = address(fd, libc::getsockname)?;
    let peer = address(fd, libc::getpeername)?;
    Some((local.port(), peer.port()))
}

type AddressCall = unsafe extern "C" fn(RawFd, *mut libc::sockaddr, *mut libc::socklen_t) -> i32;

fn address(fd: RawFd, call: AddressCall) -> Option<SocketAddr> {
    // SAFETY: the storage is large enough for any address and its length is passed along;
    // the call fails harmlessly on a descriptor that is not a socket.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let rc = unsafe { call(fd, (&raw mut storage).cast(), &mut len) };
    if rc != 0 {
        return None;
    }
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: libc::sockaddr_in = unsafe { std::ptr::read((&raw const storage).cast()) };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::new(ip.into(), u16::from_be(a.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: libc::sockaddr_in6 = unsafe { std::ptr::read((&raw const storage).cast()) };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            Some(SocketAddr::new(ip.into(), u16::from_be(a.sin6_port)))
        }
        _ => None,
    }
}
