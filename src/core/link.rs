//! The state of a live command's connection to the API server: the pure state machine behind
//! the `watch interrupted` / `watch resumed` lines and the status line. It is fed what each
//! stream's connection did (a list or watch answered, a failure, a 410), never the objects:
//! a quiet Lease still resumes as soon as its watch is back.
//!
//! Several streams (`gate --watch` follows five) share one story: an outage starts when the
//! first stream fails and ends when every failed stream is answered again, so one restart of
//! the API server is one `interrupted` line and one `resumed` line.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// What one stream's connection did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkEvent {
    /// A list or watch was answered: the stream is live.
    Up,
    /// The connection failed; the cause in plain words. The stream reconnects by itself.
    Down(String),
    /// The server no longer has the stream's resourceVersion (410 Gone); the stream relists.
    Expired(String),
}

/// A line for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Say {
    /// `watch interrupted: CAUSE; reconnecting`
    Interrupted(String),
    /// `watch resumed`
    Resumed,
    /// `watch expired: CAUSE; relisting`
    Expired(String),
}

impl Say {
    pub fn line(&self) -> String {
        match self {
            Say::Interrupted(cause) => format!("watch interrupted: {cause}; reconnecting"),
            Say::Resumed => "watch resumed".into(),
            Say::Expired(cause) => format!("watch expired: {cause}; relisting"),
        }
    }
}

/// The connection as the status line shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkStatus {
    /// Not answered yet.
    Connecting,
    Live,
    /// Down since this long.
    Reconnecting(SignedDuration),
}

impl LinkStatus {
    pub fn text(self) -> String {
        match self {
            LinkStatus::Connecting => "connecting".into(),
            LinkStatus::Live => "live".into(),
            LinkStatus::Reconnecting(d) => {
                format!("reconnecting since {}s", d.as_secs().max(0))
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Connecting,
    Up,
    Down,
}

/// The connection of `n` streams.
#[derive(Debug, Clone)]
pub struct Link {
    streams: Vec<Stream>,
    /// When the current outage began.
    outage: Option<Timestamp>,
    /// An expiry was already said in this outage (or since the last one).
    expiry_said: bool,
}

impl Link {
    pub fn new(streams: usize) -> Link {
        Link { streams: vec![Stream::Connecting; streams.max(1)], outage: None, expiry_said: false }
    }

    /// Feeds what stream `i` did at `now`; returns the lines to say (zero, one or two).
    pub fn observe(&mut self, i: usize, event: LinkEvent, now: Timestamp) -> Vec<Say> {
        let mut say = Vec::new();
        let Some(slot) = self.streams.get_mut(i) else { return say };
        match event {
            LinkEvent::Down(cause) => {
                *slot = Stream::Down;
                if self.outage.is_none() {
                    self.outage = Some(now);
                    self.expiry_said = false;
                    say.push(Say::Interrupted(cause));
                }
            }
            LinkEvent::Expired(cause) => {
                // The server answered; the stream is not live until its relist is.
                if *slot == Stream::Up {
                    *slot = Stream::Connecting;
                }
                if !std::mem::replace(&mut self.expiry_said, true) {
                    say.push(Say::Expired(cause));
                }
            }
            LinkEvent::Up => {
                *slot = Stream::Up;
                if self.outage.is_some() && !self.streams.contains(&Stream::Down) {
                    self.outage = None;
                    self.expiry_said = false;
                    say.push(Say::Resumed);
                } else if self.outage.is_none() && self.streams.iter().all(|s| *s == Stream::Up) {
                    self.expiry_said = false;
                }
            }
        }
        say
    }

    pub fn status(&self, now: Timestamp) -> LinkStatus {
        match self.outage {
            Some(since) => LinkStatus::Reconnecting(now.duration_since(since)),
            None if self.streams.iter().all(|s| *s == Stream::Up) => LinkStatus::Live,
            None if self.streams.contains(&Stream::Up) => LinkStatus::Live,
            None => LinkStatus::Connecting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        "2026-11-30T12:00:00Z".parse::<Timestamp>().unwrap() + SignedDuration::from_secs(secs)
    }

    fn down() -> LinkEvent {
        LinkEvent::Down("the API server closed the connection".into())
    }

    #[test]
    fn one_outage_one_interrupted_one_resumed_even_with_no_object() {
        let mut l = Link::new(1);
        assert_eq!(l.status(at(0)), LinkStatus::Connecting);
        assert!(l.observe(0, LinkEvent::Up, at(0)).is_empty());
        assert_eq!(l.status(at(0)), LinkStatus::Live);
        assert_eq!(l.observe(0, down(), at(1)), [Say::Interrupted("the API server closed the connection".into())]);
        assert!(l.observe(0, LinkEvent::Down("connection refused".into()), at(2)).is_empty());
        assert_eq!(l.status(at(13)), LinkStatus::Reconnecting(SignedDuration::from_secs(12)));
        assert_eq!(l.status(at(13)).text(), "reconnecting since 12s");
        assert_eq!(l.observe(0, LinkEvent::Up, at(14)), [Say::Resumed]);
        assert!(l.observe(0, LinkEvent::Up, at(15)).is_empty(), "a watch renewed says nothing");
        assert_eq!(l.observe(0, down(), at(20)).len(), 1, "the next outage is said again");
        assert_eq!(l.observe(0, LinkEvent::Up, at(21)), [Say::Resumed]);
    }

    #[test]
    fn a_first_connection_that_fails_is_an_outage_too() {
        let mut l = Link::new(1);
        assert_eq!(l.observe(0, down(), at(0)).len(), 1);
        assert_eq!(l.observe(0, LinkEvent::Up, at(3)), [Say::Resumed]);
    }

    #[test]
    fn several_streams_share_one_outage() {
        let mut l = Link::new(3);
        for i in 0..3 {
            l.observe(i, LinkEvent::Up, at(0));
        }
        assert_eq!(l.observe(1, down(), at(1)).len(), 1);
        assert!(l.observe(0, down(), at(1)).is_empty());
        assert!(l.observe(2, down(), at(1)).is_empty());
        assert!(l.observe(0, LinkEvent::Up, at(4)).is_empty(), "stream 1 and 2 are still down");
        assert!(l.observe(1, LinkEvent::Up, at(4)).is_empty());
        assert!(matches!(l.status(at(5)), LinkStatus::Reconnecting(_)));
        assert_eq!(l.observe(2, LinkEvent::Up, at(5)), [Say::Resumed]);
        assert_eq!(l.status(at(5)), LinkStatus::Live);
    }

    #[test]
    fn an_expiry_is_said_once_and_resumed_waits_for_the_relist() {
        let mut l = Link::new(2);
        l.observe(0, LinkEvent::Up, at(0));
        l.observe(1, LinkEvent::Up, at(0));
        // A restart: both streams fail, both find their version gone, both relist.
        assert_eq!(l.observe(0, down(), at(1)).len(), 1);
        l.observe(1, down(), at(1));
        assert_eq!(l.observe(0, LinkEvent::Expired("410".into()), at(4)), [Say::Expired("410".into())]);
        assert!(l.observe(1, LinkEvent::Expired("410".into()), at(4)).is_empty());
        assert!(l.observe(0, LinkEvent::Up, at(4)).is_empty(), "stream 1 has not relisted yet");
        assert_eq!(l.observe(1, LinkEvent::Up, at(5)), [Say::Resumed]);
        // A compaction while live: said, no outage.
        assert_eq!(l.observe(0, LinkEvent::Expired("410".into()), at(9)), [Say::Expired("410".into())]);
        assert!(l.observe(0, LinkEvent::Up, at(9)).is_empty());
        assert_eq!(l.status(at(9)), LinkStatus::Live);
        assert_eq!(l.observe(0, LinkEvent::Expired("410".into()), at(20)).len(), 1, "a later expiry is said again");
    }
}
