//! Rate limits: `rate = "10/min"` on a rule, counted per principal, server or tool in token
//! buckets.
//!
//! A bucket holds up to `count` tokens and gains `count` per period; a call takes one, and a
//! call that finds none is told how long until there is one. The buckets are kept as GCRA
//! (one instant per bucket, no floating point), which is the same limit.
//!
//! Memory is bounded: at most [`RateLimits::DEFAULT_CAPACITY`] buckets (or what
//! [`RateLimits::with_capacity`] says). When a new one is needed at the cap, every full bucket
//! is dropped first (a full bucket is the same as none); if none is full, the one closest to
//! full goes, which lets its next caller through a little early and nothing more.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::{Decision, Request};

/// A rate: `count` calls per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rate {
    /// Calls allowed per period (and at once, after a quiet period).
    pub count: u32,
    /// The period.
    pub period: Duration,
    unit: &'static str,
}

impl Rate {
    /// Parses `N/s`, `N/min`, `N/h` or `N/day` (also `sec`, `second`, `minute`, `hour`, `d`),
    /// N ≥ 1.
    ///
    /// # Errors
    /// What is wrong, without the text.
    pub fn parse(text: &str) -> Result<Rate, String> {
        let wrong = || "must be like \"10/min\": a count ≥ 1, `/`, and s, min, h or day".to_owned();
        let (count, unit) = text.split_once('/').ok_or_else(wrong)?;
        let count: u32 = count.trim().parse().map_err(|_| wrong())?;
        if count == 0 {
            return Err(wrong());
        }
        let (unit, secs) = match unit.trim() {
            "s" | "sec" | "second" => ("s", 1),
            "min" | "minute" => ("min", 60),
            "h" | "hour" => ("h", 3600),
            "d" | "day" => ("day", 86_400),
            _ => return Err(wrong()),
        };
        Ok(Rate { count, period: Duration::from_secs(secs), unit })
    }

    /// The time one token takes to come back.
    fn interval(self) -> Duration {
        self.period / self.count
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.count, self.unit)
    }
}

impl Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What a rate is counted per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum RateBy {
    /// Each principal has its own bucket (the default).
    Principal,
    /// Each server.
    Server,
    /// Each tool (of each server).
    Tool,
}

impl RateBy {
    /// `principal`, `server` or `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            RateBy::Principal => "principal",
            RateBy::Server => "server",
            RateBy::Tool => "tool",
        }
    }

    /// The value of `principal`, `server` or `tool`.
    pub fn parse(text: &str) -> Option<RateBy> {
        [RateBy::Principal, RateBy::Server, RateBy::Tool].into_iter().find(|b| b.as_str() == text)
    }
}

/// A rule's rate limit, as a [`Decision`] carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RateLimit {
    /// Which rule's buckets these are (its name, or its place).
    pub key: String,
    /// The rate.
    pub rate: Rate,
    /// Counted per.
    pub by: RateBy,
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} per {}", self.rate, self.by.as_str())
    }
}

/// One bucket, as GCRA keeps it.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// The instant at which the bucket is full again (the "theoretical arrival time"); a call
    /// is allowed while `tat - now ≤ period - interval`, i.e. while a token is left.
    tat: Instant,
}

/// Token buckets for every rule with a rate, bounded in number.
#[derive(Debug)]
pub struct RateLimits {
    buckets: Mutex<HashMap<(String, String), Bucket>>,
    capacity: usize,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits::new()
    }
}

impl RateLimits {
    /// How many buckets are kept at most, by default.
    pub const DEFAULT_CAPACITY: usize = 10_000;

    /// Empty, with the default capacity.
    pub fn new() -> Self {
        RateLimits::with_capacity(Self::DEFAULT_CAPACITY)
    }

    /// Empty, keeping at most `capacity` buckets (at least 1).
    pub fn with_capacity(capacity: usize) -> Self {
        RateLimits { buckets: Mutex::new(HashMap::new()), capacity: capacity.max(1) }
    }

    /// Takes a token for `req` if `decision` carries a rate limit: `Err` holds how long until
    /// one is free. Uses tokio's clock, so paused time in tests moves it.
    ///
    /// # Errors
    /// The wait, when the bucket is empty.
    pub fn check(&self, decision: &Decision, req: &Request<'_>) -> Result<(), Duration> {
        self.check_at(decision, req, Instant::now())
    }

    /// [`check`](Self::check) at `now`.
    ///
    /// # Errors
    /// The wait, when the bucket is empty.
    pub fn check_at(&self, decision: &Decision, req: &Request<'_>, now: Instant) -> Result<(), Duration> {
        let Some(limit) = &decision.rate else {
            return Ok(());
        };
        let who = match limit.by {
            RateBy::Principal => req.principal.to_owned(),
            RateBy::Server => req.server.to_owned(),
            RateBy::Tool => format!("{}\u{0}{}", req.server, req.name),
        };
        let key = (limit.key.clone(), who);
        let interval = limit.rate.interval();
        let tolerance = limit.rate.period.saturating_sub(interval);
        let mut buckets = self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !buckets.contains_key(&key) && buckets.len() >= self.capacity {
            evict(&mut buckets, now, self.capacity);
        }
        let bucket = buckets.entry(key).or_insert(Bucket { tat: now });
        let tat = bucket.tat.max(now);
        let allowed_from = now + tolerance;
        if tat > allowed_from {
            return Err(tat - allowed_from);
        }
        bucket.tat = tat + interval;
        Ok(())
    }

    /// How many buckets are kept now.
    pub fn len(&self) -> usize {
        self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// Whether no bucket is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every bucket (after a reload that changed the rules, say).
    pub fn clear(&self) {
        self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }
}

/// Drops the full buckets; if that leaves no room, the one closest to full.
fn evict(buckets: &mut HashMap<(String, String), Bucket>, now: Instant, capacity: usize) {
    buckets.retain(|_, b| b.tat > now);
    if buckets.len() < capacity {
        return;
    }
    if let Some(key) = buckets.iter().min_by_key(|(_, b)| b.tat).map(|(k, _)| k.clone()) {
        buckets.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_print() {
        let r = Rate::parse("10/min").expect("rate");
        assert_eq!((r.count, r.period, r.to_string()), (10, Duration::from_secs(60), "10/min".to_owned()));
        assert_eq!(Rate::parse("2/second").map(|r| r.to_string()), Ok("2/s".to_owned()));
        assert_eq!(Rate::parse(" 5 / h ").map(|r| r.period), Ok(Duration::from_secs(3600)));
        assert_eq!(Rate::parse("1/day").map(|r| r.period), Ok(Duration::from_secs(86_400)));
        for bad in ["0/s", "10", "x/min", "10/week", "-1/s", "10/m", ""] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }
}
