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
    /// The server refused the stream in a way retrying cannot change: the stream has ended,
    /// and the command ends with it.
    Refused(Refusal),
    /// A response's `Date` header, and this machine's clock when it arrived.
    Clock { server: Timestamp, local: Timestamp },
    /// Something the stream passed over (an event it cannot read, an object it did not ask
    /// for): said once per kind, as `Warning: TEXT`.
    Passed(Passed, String),
}

/// What a stream passed over, for [`LinkEvent::Passed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Passed {
    /// A watch event whose object cannot be read.
    Unreadable,
    /// An object other than the one asked for by a field selector.
    Foreign,
}

/// Why a stream gave up, as kubectl's watch gives up on the same answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 401 to the stream's first request, or again after the credential was fetched anew.
    Unauthorized { server: String },
    /// 403 to the stream's first list, with nothing else it may read instead: the server's
    /// words and the rule that would allow it.
    Forbidden { message: String, rule: String },
    /// 404 to a list or watch: the resource is not served (its CRD was deleted). Its path.
    NotServed { resource: String },
    /// The exec credential plugin failed when the credential was fetched anew (after a 401,
    /// or when it was due): `kubectl get -w` ends there too. The plugin's error, as the
    /// one-shot says it.
    Exec { message: String },
    /// A list that does not end (a continue token given twice, or past the bound on pages):
    /// listing again would not end either. The one-shot read's error, word for word.
    Bound { message: String },
}

/// What a stream does with an answer of `code` to a list, watch or get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStatus {
    /// Retry as after any failure (a 5xx, a 429, a 410, a lost connection), or follow the
    /// stream's own way for a forbidden read that was allowed before.
    Retry,
    /// 401 after the stream was answered: fetch the credential anew (the exec plugin runs
    /// again) and retry once.
    Refresh,
    /// Give up: [`LinkEvent::Refused`].
    End,
}

/// What a stream has seen before an error status, for [`on_status`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct History {
    /// A list, watch or get of this stream succeeded before.
    pub answered: bool,
    /// The credential was already fetched anew after a 401, and no answer accepted it since.
    pub refreshed: bool,
    /// 404s in a row since the last success, this one included.
    pub not_found: u32,
}

/// 404s in a row, after an answer, before a resource counts as gone: an API server that
/// restarts answers a moment before it serves the CRDs again (about 7 s of retries).
pub const NOT_FOUND_IN_A_ROW: u32 = 5;

/// The rule for answers that retrying cannot change. A first request refused with 401, 403
/// or 404 ends the stream, as `kubectl get -w` ends. After an answer, a 401 refreshes the
/// credential once, then ends; a 403 (RBAC taken away while watching) is the stream's to
/// show; a 404 that persists ends it (the resource is gone: its CRD was deleted).
pub fn on_status(code: u16, history: History) -> OnStatus {
    match code {
        401 if history.answered && !history.refreshed => OnStatus::Refresh,
        401 => OnStatus::End,
        403 | 404 if !history.answered => OnStatus::End,
        404 if history.not_found >= NOT_FOUND_IN_A_ROW => OnStatus::End,
        _ => OnStatus::Retry,
    }
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
    /// `Warning: TEXT`: this machine's clock is off the API server's (said once).
    Warning(String),
}

impl Say {
    pub fn line(&self) -> String {
        match self {
            Say::Interrupted(cause) => format!("watch interrupted: {cause}; reconnecting"),
            Say::Resumed => "watch resumed".into(),
            Say::Expired(cause) => format!("watch expired: {cause}; relisting"),
            Say::Warning(text) => format!("Warning: {text}"),
        }
    }
}

/// The connection as the status line shows it.
/// Whose outage makes a Lease's heartbeat unknown ([`Link::down`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every stream that decides (not context): dispatch's Lease, whose rows and `--until`
    /// stand on all of them.
    Deciding,
    /// One stream alone: Kueue's manager's Lease, context with an outage story of its own.
    Stream(usize),
}

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
    /// Not answered yet.
    Connecting,
    Up,
    Down,
    /// Answered with a 410: live again only when its relist is answered.
    Relisting,
}

/// The connection of `n` streams.
#[derive(Debug, Clone)]
pub struct Link {
    streams: Vec<Stream>,
    /// Why each stream last failed.
    causes: Vec<Option<String>>,
    /// The streams that are context, not facts that decide (Kueue's manager's Lease): their
    /// outages are told like any other, but never make the deciding state unknown
    /// ([`Link::down_at_timeout`]).
    context: Vec<bool>,
    /// When the current outage began.
    outage: Option<Timestamp>,
    /// An expiry was already said in this outage (or since the last one).
    expiry_said: bool,
    /// Why the current (or last) outage began, and which stream it began with.
    cause: Option<String>,
    first: usize,
    /// The clocks were found apart (said once per run).
    skew_said: bool,
    /// The kinds of [`LinkEvent::Passed`] said already.
    passed: std::collections::BTreeSet<Passed>,
}

impl Link {
    pub fn new(streams: usize) -> Link {
        Link {
            streams: vec![Stream::Connecting; streams.max(1)],
            causes: vec![None; streams.max(1)],
            context: vec![false; streams.max(1)],
            outage: None,
            expiry_said: false,
            cause: None,
            first: 0,
            skew_said: false,
            passed: Default::default(),
        }
    }

    /// Marks stream `i` as context ([`Link::down_at_timeout`] leaves it out).
    pub fn with_context(mut self, i: usize) -> Link {
        if let Some(c) = self.context.get_mut(i) {
            *c = true;
        }
        self
    }

    /// Feeds what stream `i` did at `now`; returns the lines to say (zero, one or two).
    pub fn observe(&mut self, i: usize, event: LinkEvent, now: Timestamp) -> Vec<Say> {
        let mut say = Vec::new();
        let Some(slot) = self.streams.get_mut(i) else { return say };
        match event {
            LinkEvent::Down(cause) => {
                *slot = Stream::Down;
                self.causes[i] = Some(cause.clone());
                if self.outage.is_none() {
                    self.first = i;
                    self.outage = Some(now);
                    self.expiry_said = false;
                    self.cause = Some(cause.clone());
                    say.push(Say::Interrupted(cause));
                }
            }
            LinkEvent::Expired(cause) => {
                // The server answered; the stream is not live until its relist is, and an
                // outage is not over while it relists.
                if *slot == Stream::Up {
                    *slot = Stream::Relisting;
                }
                if !std::mem::replace(&mut self.expiry_said, true) {
                    say.push(Say::Expired(cause));
                }
            }
            // The command ends on it; nothing to say here.
            LinkEvent::Refused(_) => {}
            LinkEvent::Passed(kind, text) => {
                if self.passed.insert(kind) {
                    say.push(Say::Warning(text));
                }
            }
            LinkEvent::Clock { server, local } => {
                if !self.skew_said
                    && let Some(warning) = super::skew::server_clock(Some(server), local)
                {
                    self.skew_said = true;
                    say.push(Say::Warning(warning));
                }
            }
            LinkEvent::Up => {
                *slot = Stream::Up;
                let pending = self.streams.iter().any(|s| matches!(s, Stream::Down | Stream::Relisting));
                if self.outage.is_some() && !pending {
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

    /// `--timeout` came at this moment: `None` while the connection is live; else why it is
    /// not (`Some(Some(cause))` in an outage, `Some(None)` when never answered). No state seen
    /// then is current, so a live mode ends as an error rather than with a verdict.
    /// Only the streams that decide count: a context stream (Kueue's manager's Lease) down
    /// or never answered leaves the state of the others current.
    pub fn down_at_timeout(&self) -> Option<Option<String>> {
        self.down(Scope::Deciding)
    }

    /// Whether the streams of `scope` are down at this moment: `None` while they are live;
    /// else why not (`Some(Some(cause))` in an outage, `Some(None)` when never answered).
    /// A Lease judged from those streams is unknown then, not stale.
    pub fn down(&self, scope: Scope) -> Option<Option<String>> {
        if let Scope::Stream(i) = scope {
            return match self.streams.get(i) {
                Some(Stream::Up) | None => None,
                Some(Stream::Connecting) => Some(None),
                Some(Stream::Down | Stream::Relisting) => Some(self.causes[i].clone()),
            };
        }
        let deciding = || self.streams.iter().zip(&self.context).zip(&self.causes).filter(|((_, c), _)| !**c);
        if let Some((_, cause)) = deciding().find(|((s, _), _)| matches!(s, Stream::Down | Stream::Relisting)) {
            let outage = self.cause.clone().filter(|_| !self.context[self.first]);
            return Some(outage.or_else(|| cause.clone()));
        }
        match deciding().any(|((s, _), _)| *s == Stream::Up) {
            true => None,
            false => Some(None),
        }
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
    fn refusals_end_a_first_request_and_a_401_later_refreshes_once() {
        let first = History { not_found: 1, ..History::default() };
        for code in [401, 403, 404] {
            assert_eq!(on_status(code, first), OnStatus::End, "{code} to the first request");
        }
        let answered = History { answered: true, ..History::default() };
        assert_eq!(on_status(401, answered), OnStatus::Refresh);
        assert_eq!(on_status(401, History { refreshed: true, ..answered }), OnStatus::End, "refreshed once already");
        assert_eq!(on_status(403, answered), OnStatus::Retry, "RBAC taken away: the stream shows it");
        for n in 1..NOT_FOUND_IN_A_ROW {
            assert_eq!(on_status(404, History { not_found: n, ..answered }), OnStatus::Retry, "a restart, perhaps");
        }
        let gone = History { not_found: NOT_FOUND_IN_A_ROW, ..answered };
        assert_eq!(on_status(404, gone), OnStatus::End, "the resource is gone");
        for code in [410, 429, 500, 503] {
            assert_eq!(on_status(code, first), OnStatus::Retry, "{code} is transient");
            assert_eq!(on_status(code, History { refreshed: true, ..gone }), OnStatus::Retry, "{code} is transient");
        }
    }

    #[test]
    fn clock_skew_is_said_once_when_it_first_exceeds_the_threshold() {
        let mut l = Link::new(2);
        let sample = |ahead: i64, at_: i64| LinkEvent::Clock {
            server: at(at_) - SignedDuration::from_secs(ahead),
            local: at(at_) + SignedDuration::from_millis(500),
        };
        assert!(l.observe(0, sample(0, 0), at(0)).is_empty(), "within the header's second");
        assert!(l.observe(1, sample(2, 1), at(1)).is_empty(), "2 s is tolerated");
        let said = l.observe(0, sample(40, 2), at(2));
        assert_eq!(said.len(), 1);
        assert_eq!(
            said[0].line(),
            "Warning: this machine's clock is about 39s ahead of the API server's; Lease ages are measured with \
             this machine's clock"
        );
        assert!(l.observe(1, sample(40, 3), at(3)).is_empty(), "once");
        assert!(l.observe(0, sample(-60, 4), at(4)).is_empty(), "once, whichever way");
        let passed = |kind| LinkEvent::Passed(kind, "passed over".into());
        assert_eq!(l.observe(0, passed(Passed::Unreadable), at(4)), [Say::Warning("passed over".into())]);
        assert!(l.observe(1, passed(Passed::Unreadable), at(4)).is_empty(), "once per kind");
        assert_eq!(l.observe(0, passed(Passed::Foreign), at(4)).len(), 1);
        assert_eq!(l.status(at(4)), LinkStatus::Connecting, "a sample is not an answer");
    }

    #[test]
    fn a_timeout_while_down_or_never_answered_is_not_a_result() {
        let mut l = Link::new(2);
        assert_eq!(l.down_at_timeout(), Some(None), "never answered");
        l.observe(0, LinkEvent::Up, at(0));
        assert_eq!(l.down_at_timeout(), None, "one stream live, none failed");
        l.observe(1, LinkEvent::Up, at(0));
        assert_eq!(l.down_at_timeout(), None);
        l.observe(1, down(), at(1));
        l.observe(0, LinkEvent::Down("connection refused".into()), at(2));
        assert_eq!(l.down_at_timeout(), Some(Some("the API server closed the connection".into())), "the first cause");
        l.observe(0, LinkEvent::Up, at(3));
        assert!(l.down_at_timeout().is_some(), "stream 1 is still down");
        l.observe(1, LinkEvent::Up, at(4));
        assert_eq!(l.down_at_timeout(), None);
        let mut fresh = Link::new(1);
        fresh.observe(0, LinkEvent::Down("the API server refuses connections (connection refused)".into()), at(0));
        assert_eq!(
            fresh.down_at_timeout(),
            Some(Some("the API server refuses connections (connection refused)".into()))
        );
    }

    #[test]
    fn a_context_stream_down_is_told_but_leaves_the_deciding_state_current() {
        let mut l = Link::new(2).with_context(1);
        l.observe(0, LinkEvent::Up, at(0));
        assert_eq!(l.observe(1, down(), at(1)).len(), 1, "told like any outage");
        assert_eq!(l.down_at_timeout(), None, "dispatch's stream is live");
        l.observe(0, LinkEvent::Down("connection refused".into()), at(2));
        assert_eq!(l.down_at_timeout(), Some(Some("connection refused".into())), "the deciding stream's own cause");
        let mut never = Link::new(2).with_context(1);
        never.observe(1, LinkEvent::Up, at(0));
        assert_eq!(never.down_at_timeout(), Some(None), "only the context stream answered");
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

    #[test]
    fn one_cut_of_two_streams_that_both_expire_is_one_expiry_and_one_resumed_in_any_order() {
        // History in CI: after a cut, stream 0's watch was accepted and got its 410 before
        // stream 1 was answered; stream 1's answer must not end the outage while stream 0
        // relists, nor let stream 1's own 410 be said a second time.
        let orders: [&[(usize, bool)]; 3] = [
            &[(0, false), (0, true), (1, false), (1, true), (0, false), (1, false)],
            &[(0, false), (1, false), (0, true), (1, true), (1, false), (0, false)],
            &[(1, false), (1, true), (0, false), (0, true), (0, false), (1, false)],
        ];
        for order in orders {
            let mut l = Link::new(2);
            l.observe(0, LinkEvent::Up, at(0));
            l.observe(1, LinkEvent::Up, at(0));
            let mut said: Vec<Say> = l.observe(0, down(), at(1));
            said.extend(l.observe(1, down(), at(1)));
            for &(i, expired) in order {
                let e = if expired { LinkEvent::Expired("410".into()) } else { LinkEvent::Up };
                said.extend(l.observe(i, e, at(3)));
            }
            let kinds: Vec<&str> = said
                .iter()
                .map(|s| match s {
                    Say::Interrupted(_) => "interrupted",
                    Say::Resumed => "resumed",
                    Say::Expired(_) => "expired",
                    Say::Warning(_) => "warning",
                })
                .collect();
            assert_eq!(kinds.iter().filter(|k| **k == "expired").count(), 1, "{order:?}: {kinds:?}");
            assert_eq!(kinds.iter().filter(|k| **k == "resumed").count(), 1, "{order:?}: {kinds:?}");
            assert_eq!(kinds[0], "interrupted");
            assert_eq!(l.status(at(4)), LinkStatus::Live);
        }
    }
}
