//! Waiting for a server's state (an index built, a collection loaded) by looking again and
//! again: the pause between two looks.

use std::time::{Duration, Instant};

/// The pause before the next look at a state waited for since `started`: a twentieth of the
/// wait so far, between 1 and 100 ms. A measured wait is then at most 5 % (or 100 ms) longer
/// than the server's work, and a long build is not polled hundreds of times a second.
pub fn pause(started: Instant) -> Duration {
    (started.elapsed() / 20).clamp(Duration::from_millis(1), Duration::from_millis(100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_is_a_twentieth_of_the_wait_within_its_bounds() {
        let now = Instant::now();
        assert_eq!(pause(now), Duration::from_millis(1));
        let at = |secs: f64| {
            now.checked_sub(Duration::from_secs_f64(secs))
                .unwrap_or(now)
        };
        let mid = pause(at(0.4));
        assert!(
            mid >= Duration::from_millis(20) && mid < Duration::from_millis(25),
            "{mid:?}"
        );
        assert_eq!(pause(at(60.0)), Duration::from_millis(100));
    }
}
