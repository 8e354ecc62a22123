//! The heartbeat machine ([`LiveLease`], which `lease --watch`, `gate --watch` and `gate --wait`
//! all run on) says `stale` only when it is true, held against a from-scratch judgement of the
//! same history over random ones (issue 34).
//!
//! First the machine alone, driven as the shell drives it but with time passed in: a controller
//! renews every `every` seconds until it stops, perhaps handing the Lease to another holder;
//! the watch delivers each renewal until it dies silently; the connection may be cut for a
//! while (the relist brings the Lease as the server has it when it is back); the server may
//! send one renewal older than the last; the confirming read answers the server's Lease, or
//! gets no answer. The truth is the server's Lease at each moment, and the link's state:
//! - every `stale` row, and `--until stale` reached, is at a moment the server's Lease was
//!   stale and the connection up;
//! - no read answered (and no relist): never `stale`; every renewal delivered, no cut: `stale` at the deadline;
//! - the unknown line once an outage at most, and only in one (the cut, or a read unanswered);
//! - a takeover row exactly when the holder the rows show changes; no negative gap; the
//!   server going back in time said once when it did.
//!
//! Then `lease --watch` itself over the same kind of history: a controller renews every `every` seconds
//! until it stops; the watch delivers each renewal until it dies silently (a partition that
//! closes nothing); the confirming read answers the Lease as the server has it at that moment,
//! or gets no answer. The loop's rows are compared with the truth, the server's Lease at the
//! row's moment:
//! - every `stale` row is at a moment the server's Lease was stale;
//! - with every renewal delivered and the read answered, the `stale` row comes at the deadline;
//! - with the read unanswered, no `stale` row ever comes (the outage rule).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kubectl_dispatch::cluster::watching::kueue_lease::KueueLeaseUpdate;
use kubectl_dispatch::cluster::watching::reflector::{self, LeaseUpdate};
use kubectl_dispatch::commands::Deps;
use kubectl_dispatch::commands::lease_watch::{self, Leases, Shown};
use kubectl_dispatch::commands::live::{Confirmer, Confirmers};
use kubectl_dispatch::core::confirm::Confirmed;
use kubectl_dispatch::core::fetched::Fetched;
use kubectl_dispatch::core::heartbeat::ChangeKind;
use kubectl_dispatch::core::heartbeats::{Heartbeats, Which};
use kubectl_dispatch::core::lease::{LeaseFacts, LeaseRef};
use kubectl_dispatch::core::link::LinkEvent;
use kubectl_dispatch::core::live_lease::{End, Role, Setup, Step};
use kubectl_dispatch::invocation::{Format, LeaseWatch, Output, Until};
use proptest::prelude::*;

/// The Lease's duration: stale 2 x 5 s after a renewal.
const DURATION: i32 = 5;
const LIMIT: i64 = 2 * DURATION as i64;

fn base() -> Timestamp {
    "2026-11-30T12:00:00Z".parse().unwrap()
}

fn renewed(at: i64) -> LeaseFacts {
    LeaseFacts {
        holder: Some("a".into()),
        renew_time: Some(base() + SignedDuration::from_secs(at)),
        acquire_time: Some(base()),
        duration_seconds: Some(DURATION),
        transitions: Some(0),
    }
}

/// One history: renewals every `every` s from 0 while `t < stops`; the watch delivers those
/// before `dies`; the confirming read answers (or not).
#[derive(Debug, Clone, Copy)]
struct History {
    every: i64,
    stops: i64,
    dies: i64,
    answers: bool,
}

impl History {
    /// The server's last renewal at `t` (seconds).
    fn last_renewal(&self, t: f64) -> i64 {
        let mut last = 0;
        let mut r = 0;
        while r < self.stops && (r as f64) <= t {
            last = r;
            r += self.every;
        }
        last
    }

    /// The truth: the server's Lease is stale at `t`.
    fn stale_at(&self, t: f64) -> bool {
        t > (self.last_renewal(t) + LIMIT) as f64
    }
}

struct Clock(tokio::time::Instant);

impl kubectl_dispatch::clock::Clock for Clock {
    fn now(&self) -> Timestamp {
        base() + SignedDuration::try_from(self.0.elapsed()).unwrap()
    }
}

/// Runs `lease --watch -o json --until stale` over `h` for at most 60 s: the exit and the
/// `(seconds, event)` of each row.
fn follow_history(h: History) -> (Vec<(f64, String)>, String) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    runtime.block_on(async move {
        let start = tokio::time::Instant::now();
        let clock = Clock(start);
        let delivered: Vec<(i64, LeaseUpdate)> = std::iter::once((0, LeaseUpdate::Link(LinkEvent::Up)))
            .chain(
                (0..h.stops.min(h.dies)).step_by(h.every as usize).map(|t| (t, LeaseUpdate::Lease(Some(renewed(t))))),
            )
            .collect();
        let updates = futures::stream::iter(delivered)
            .then(move |(at, u)| async move {
                tokio::time::sleep_until(start + Duration::from_secs(at as u64)).await;
                u
            })
            .chain(futures::stream::pending());
        let read = move |_: Option<&Fetched<LeaseFacts>>, _: Option<Duration>| {
            let t = start.elapsed().as_secs_f64();
            let answer = match h.answers {
                true => Confirmed::Read(Fetched::Found(renewed(h.last_renewal(t)))),
                false => Confirmed::NoAnswer("no answer within 5s".into()),
            };
            Box::pin(std::future::ready(answer)) as futures::future::BoxFuture<'static, Confirmed>
        };
        let confirm = Confirmers {
            dispatch: Confirmer { read: Box::new(read), restart: reflector::restart().0 },
            kueue: Confirmer::scripted(None).0,
        };
        let (mut out, mut err) = (Vec::<u8>::new(), Vec::<u8>::new());
        let log = kubectl_dispatch::log::Log::silent();
        let mut deps =
            Deps { clock: &clock, out: &mut out, err: &mut err, log: &log, style: Default::default(), printer: None };
        let (lease, kueue) = (LeaseRef::default(), LeaseRef::kueue_default());
        let opts = LeaseWatch { changes_only: false, until: Some(Until::Stale), timeout: None };
        let output = Output { format: Format::Json, no_headers: false };
        let shown = Shown { leases: Leases { lease: &lease, kueue: &kueue }, output, opts, live_line: false, confirm };
        let kueue_stream = || futures::stream::pending::<KueueLeaseUpdate>();
        let stop = tokio::time::sleep(Duration::from_secs(60));
        let exit = lease_watch::follow(updates, kueue_stream, shown, stop, &mut deps).await;
        let text = String::from_utf8(out).unwrap();
        let rows = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| {
                let at: Timestamp = v["time"].as_str()?.parse().ok()?;
                let secs = at.duration_since(base()).as_secs_f64();
                Some((secs, v["event"].as_str()?.to_string()))
            })
            .collect();
        (rows, format!("{exit:?}"))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..Default::default() })]

    #[test]
    fn stale_is_said_only_when_true_and_always_when_seen(
        every in 1i64..5, stops in 1i64..50, dies in 1i64..70, answers in any::<bool>()
    ) {
        let h = History { every, stops, dies, answers };
        let (rows, exit) = follow_history(h);
        for (at, event) in &rows {
            if event == "stale" {
                prop_assert!(h.stale_at(*at), "stale at {at} but the server's Lease was not: {h:?} {rows:?}");
            }
        }
        // Every renewal delivered, and the confirming read answered: the stale row comes at
        // the deadline. (Unanswered, it never comes: the heartbeat is unknown.)
        let deadline = (h.last_renewal(h.stops as f64) + LIMIT) as f64;
        if h.answers && h.dies > h.stops && deadline < 59.0 {
            let stale = rows.iter().find(|(_, e)| e == "stale");
            prop_assert!(stale.is_some_and(|(at, _)| *at > deadline && *at < deadline + 1.0), "{h:?} {rows:?} {exit}");
        }
        if !h.answers {
            prop_assert!(!rows.iter().any(|(_, e)| e == "stale"), "{h:?} {rows:?}");
        }
    }
}

/// One history of the machine's: [`History`]'s, with a holder change, a cut of the connection
/// and one renewal older than the last.
#[derive(Debug, Clone, Copy)]
struct Story {
    every: i64,
    stops: i64,
    dies: i64,
    answers: bool,
    /// From this second on, holder `b` renews.
    takeover: Option<i64>,
    /// The connection is down from the first second to the second (exclusive).
    cut: Option<(i64, i64)>,
    /// At this second the server sends the renewal of 3 s before.
    older: Option<i64>,
    until: Until,
}

/// How far a story is followed, in seconds.
const HORIZON: i64 = 60;

impl Story {
    fn holder(&self, renewed: i64) -> &'static str {
        if self.takeover.is_some_and(|k| renewed >= k) { "b" } else { "a" }
    }

    /// The server's Lease at `t` (renewals at `t` itself included when `at_t`).
    fn lease_at(&self, t: Timestamp, at_t: bool) -> LeaseFacts {
        let mut last = 0;
        let mut r = 0;
        while r < self.stops && (at(r) < t || (at_t && at(r) == t)) {
            last = r;
            r += self.every;
        }
        LeaseFacts { holder: Some(self.holder(last).into()), ..renewed(last) }
    }

    /// The truth: the server's Lease was stale just before `t`.
    fn stale_at(&self, t: Timestamp) -> bool {
        let last = self.lease_at(t, false).renew_time.unwrap();
        t.duration_since(last) > SignedDuration::from_secs(LIMIT)
    }

    fn down_at(&self, t: Timestamp) -> bool {
        self.cut.is_some_and(|(d, u)| at(d) <= t && t < at(u))
    }

    /// What the streams bring, at their seconds, in order: the list answered, each renewal the
    /// watch delivers (none in the cut, none once it died), the cut and the relist after it, and
    /// the older renewal.
    fn inputs(&self) -> Vec<(i64, Input)> {
        let mut items = vec![(0, Input::Link(LinkEvent::Up))];
        for r in (0..self.stops.min(self.dies)).step_by(self.every as usize) {
            if !self.down_at(at(r)) {
                items.push((r, Input::Lease(self.lease_at(at(r), true))));
            }
        }
        if let Some((d, u)) = self.cut {
            items.push((d, Input::Link(LinkEvent::Down("cut".into()))));
            items.push((u, Input::Link(LinkEvent::Up)));
            if u < self.dies {
                items.push((u, Input::Lease(self.lease_at(at(u), true))));
            }
        }
        if let Some(o) = self.older.filter(|o| !self.down_at(at(*o)) && *o < self.dies && *o >= 3) {
            let last = self.lease_at(at(o), true);
            let renew = last.renew_time.map(|t| t - SignedDuration::from_secs(3));
            items.push((o, Input::Lease(LeaseFacts { renew_time: renew, ..last })));
        }
        items.sort_by_key(|(t, _)| *t);
        items
    }
}

fn at(secs: i64) -> Timestamp {
    base() + SignedDuration::from_secs(secs)
}

#[derive(Debug, Clone)]
enum Input {
    Link(LinkEvent),
    Lease(LeaseFacts),
    /// Kueue's manager's Lease's stream.
    Kueue(LinkEvent),
    KueueLease(LeaseFacts),
}

/// What the machine said over a story: each row's moment and kind, each stderr line's
/// moment and text, and when `--until` was reached.
#[derive(Debug, Default)]
struct Said {
    rows: Vec<(Timestamp, ChangeKind, Option<String>)>,
    lines: Vec<(Timestamp, String)>,
    reached: Option<Timestamp>,
}

impl Said {
    fn take(&mut self, step: Step, now: Timestamp) {
        for line in step.said.into_iter().chain(step.warning) {
            self.lines.push((now, line));
        }
        for change in step.rows {
            let holder = change.assessment.facts.as_ref().and_then(|f| f.holder().map(str::to_string));
            self.rows.push((change.at, change.kind, holder));
        }
        if step.end == Some(End::Reached) && self.reached.is_none() {
            self.reached = Some(now);
        }
    }
}

/// What Kueue's manager's Lease does beside dispatch's, on its own stream (1): renewed every
/// `every` seconds until it stops, its stream cut for a while, its confirming read answered
/// (the Lease as last brought) or not.
#[derive(Debug, Clone)]
struct Noise {
    every: i64,
    stops: i64,
    cut: Option<(i64, i64)>,
    answers: bool,
}

impl Noise {
    fn inputs(&self) -> Vec<(i64, Input)> {
        let mut items = vec![(0, Input::Kueue(LinkEvent::Up))];
        let renewals = (0..self.stops).step_by(self.every as usize);
        let down = |t: i64| self.cut.is_some_and(|(from, to)| t >= from && t < to);
        items.extend(renewals.filter(|t| !down(*t)).map(|t| (t, Input::KueueLease(renewed(t)))));
        if let Some((from, to)) = self.cut {
            items.push((from, Input::Kueue(LinkEvent::Down("the API server failed (503: down)".into()))));
            items.push((to, Input::Kueue(LinkEvent::Up)));
        }
        items
    }
}

/// Drives the machine over `s` as the shell does: the earlier of the next input and the
/// machine's wake (the timer first at the same moment), the confirming read answered at once.
/// A watch found dead is started again at once, answered as the read was: its list brings
/// the server's Lease. Kueue's manager's Lease, when `noise` is given, is a separate instance
/// on stream 1; what it says is not kept.
fn drive(s: Story, noise: Option<Noise>) -> Said {
    let dispatch = Setup {
        lease: LeaseRef::default(),
        changes_only: false,
        until: Some(s.until),
        stream: 0,
        role: Role::Deciding,
    };
    let kueue =
        Setup { lease: LeaseRef::kueue_default(), changes_only: false, until: None, stream: 1, role: Role::Context };
    let mut m = Heartbeats::new(2, dispatch, noise.as_ref().map(|_| kueue));
    let mut inputs = s.inputs();
    inputs.extend(noise.as_ref().map(Noise::inputs).unwrap_or_default());
    inputs.sort_by_key(|(t, _)| *t);
    inputs.reverse();
    let mut said = Said::default();
    let mut clock = at(0);
    for _ in 0..10_000 {
        let next = inputs.last().map(|(t, _)| at(*t));
        let now = match (m.wake(clock), next) {
            (Some(w), n) if n.is_none_or(|n| w <= n) && w < at(HORIZON) => w,
            (_, Some(n)) => n,
            _ => break,
        };
        let timer = m.wake(clock).is_some_and(|w| w <= now);
        clock = now;
        let steps = match next.filter(|_| !timer) {
            Some(_) => match inputs.pop().unwrap().1 {
                Input::Link(event) => m.link_event(0, event, now),
                Input::Lease(facts) => m.lease(Which::Dispatch, Fetched::Found(facts), now),
                Input::Kueue(event) => m.link_event(1, event, now),
                Input::KueueLease(facts) => m.lease(Which::Kueue, Fetched::Found(facts), now),
            },
            None => m.timer(now),
        };
        if steps.kueue.confirm {
            let answered = noise.as_ref().is_some_and(|n| n.answers);
            let last = m.kueue().and_then(|k| k.last().cloned()).unwrap_or(Fetched::Missing);
            let read = if answered { Confirmed::Read(last) } else { Confirmed::NoAnswer("no answer".into()) };
            m.confirmed(Which::Kueue, read, now);
        }
        let step = steps.dispatch;
        let step = match step.confirm {
            true if s.answers && !s.down_at(now) => {
                m.confirmed(Which::Dispatch, Confirmed::Read(Fetched::Found(s.lease_at(now, true))), now).dispatch
            }
            true => m.confirmed(Which::Dispatch, Confirmed::NoAnswer("no answer within 5s".into()), now).dispatch,
            false => step,
        };
        let restart = step.restart;
        said.take(step, now);
        // The watch started again is answered as the read was: its list brings the Lease.
        if restart && s.answers && !s.down_at(now) {
            said.take(m.link_event(0, LinkEvent::Up, now).dispatch, now);
            said.take(m.lease(Which::Dispatch, Fetched::Found(s.lease_at(now, true)), now).dispatch, now);
        }
    }
    said
}

fn story() -> impl Strategy<Value = Story> {
    let cut = prop::option::of((1i64..50, 1i64..30).prop_map(|(d, len)| (d, d + len)));
    let until = prop::sample::select(vec![Until::Stale, Until::HolderChange, Until::Fresh]);
    (1i64..5, 1i64..50, 1i64..70, any::<bool>(), prop::option::of(2i64..40), cut, prop::option::of(3i64..40), until)
        .prop_map(|(every, stops, dies, answers, takeover, cut, older, until)| Story {
            every,
            stops,
            dies,
            answers,
            takeover,
            cut,
            older,
            until,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..Default::default() })]

    #[test]
    fn the_machine_says_stale_only_when_true_and_the_rest_as_the_history_was(s in story()) {
        let said = drive(s, None);
        for (t, kind, _) in &said.rows {
            if *kind == ChangeKind::Stale {
                prop_assert!(s.stale_at(*t) && !s.down_at(*t), "stale at {t}: {s:?} {said:?}");
            }
            if let ChangeKind::Renewed { gap: Some(gap), .. } = kind {
                prop_assert!(!gap.is_negative(), "a negative gap: {s:?} {said:?}");
            }
        }
        if let (Until::Stale, Some(t)) = (s.until, said.reached) {
            prop_assert!(s.stale_at(t) && !s.down_at(t), "--until stale reached at {t}: {s:?} {said:?}");
        }
        let stale = said.rows.iter().find(|(_, k, _)| *k == ChangeKind::Stale);
        // (A relist after a cut is a read that answered: what it brings may be stale.)
        if !s.answers && s.cut.is_none() {
            prop_assert!(stale.is_none(), "no read answered, yet stale: {s:?} {said:?}");
        }
        // Every renewal delivered, no cut, the read answered: stale at the deadline.
        let deadline = s.lease_at(at(s.stops), true).renew_time.unwrap() + SignedDuration::from_secs(LIMIT);
        if s.answers && s.dies > s.stops && s.cut.is_none() && deadline < at(HORIZON - 1) && s.older.is_none() {
            let first = stale.map(|(t, ..)| *t);
            prop_assert_eq!(first, Some(deadline + SignedDuration::from_micros(1)), "{:?} {:?}", s, said);
        }
        // Unknown: once an outage, and only in one (a cut, or a read unanswered).
        let mut unknown_said = false;
        for (t, line) in &said.lines {
            if line.starts_with("watch interrupted") {
                unknown_said = false;
            }
            if line.contains("heartbeat unknown") {
                prop_assert!(!unknown_said, "unknown said twice in an outage: {s:?} {said:?}");
                prop_assert!(s.down_at(*t) || !s.answers, "unknown while up and answered: {s:?} {said:?}");
                unknown_said = true;
            }
        }
        // A takeover row exactly where the holder the rows show changes.
        let mut holder: Option<&str> = None;
        for (t, kind, h) in &said.rows {
            let changed = matches!((holder, h.as_deref()), (Some(a), Some(b)) if a != b);
            let takeover = matches!(kind, ChangeKind::Takeover { .. });
            prop_assert_eq!(changed, takeover, "at {}: {:?} {:?}", t, s, said);
            if h.is_some() {
                holder = h.as_deref();
            }
        }
        if s.until == Until::HolderChange {
            let took = said.rows.iter().any(|(_, k, _)| matches!(k, ChangeKind::Takeover { .. }));
            prop_assert_eq!(said.reached.is_some(), took, "{:?} {:?}", s, said);
        }
        let back = said.lines.iter().filter(|(_, l)| l.contains("went back in time")).count();
        prop_assert!(back <= 1, "{s:?} {said:?}");
    }
}

fn noise() -> impl Strategy<Value = Noise> {
    let cut = prop::option::of((1i64..50, 1i64..40).prop_map(|(d, len)| (d, d + len)));
    (1i64..5, 1i64..60, cut, any::<bool>()).prop_map(|(every, stops, cut, answers)| Noise {
        every,
        stops,
        cut,
        answers,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..Default::default() })]

    /// Kueue's manager's Lease is a separate instance with its own outage story: whatever it
    /// does (renewed, stopped, its stream cut, its read unanswered), dispatch's rows, its
    /// unknown line and `--until` are as without it.
    #[test]
    fn kueues_lease_never_changes_dispatchs_rows_unknown_or_until(s in story(), n in noise()) {
        // What comes from the horizon on is left out: an input of Kueue's there lets the
        // timer run where alone it would have stopped.
        let before = |mut said: Said| {
            said.rows.retain(|(t, ..)| *t < at(HORIZON));
            said.lines.retain(|(t, _)| *t < at(HORIZON));
            said.reached = said.reached.filter(|t| *t < at(HORIZON));
            said
        };
        let alone = before(drive(s, None));
        let beside = before(drive(s, Some(n.clone())));
        prop_assert_eq!(&alone.rows, &beside.rows, "{:?} {:?}", s, n);
        prop_assert_eq!(alone.reached, beside.reached, "{:?} {:?}", s, n);
        let unknown = |said: &Said| -> Vec<(Timestamp, String)> {
            said.lines.iter().filter(|(_, l)| l.contains("heartbeat unknown")).cloned().collect()
        };
        prop_assert_eq!(unknown(&alone), unknown(&beside), "{:?} {:?}", s, n);
    }
}
