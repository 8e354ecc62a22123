//! A list's body decoded as it arrives: the `items` array is walked one object at a time
//! (serde's `SeqAccess`), each object turned into the compact fact its reader keeps and its
//! text dropped before the next one is read, so a page is never held as text and as values at
//! once. What is bounded is what one object may be ([`bounds::OBJECT_LIMIT`], every stretch of
//! the body outside the items too) and how many objects one list may hold
//! ([`bounds::MAX_OBJECTS`]); a page's total size is not. An object that cannot be read is left
//! out and said, the first [`WARNED`] of a list one by one and the rest counted.
//!
//! [`Keeping`] is the one way an object's text becomes what is kept of it, for a list's items
//! here and a watch's events (`cluster/watching/event.rs`) alike.

use std::io::Read;

use list_walk::Walked;
use serde::de::{DeserializeSeed, Deserializer};
use serde_json::value::RawValue;

use crate::cluster::connecting::bounds;

/// Facts handed on at once: the reader of a list sees them before the page is in whole.
pub const BATCH: usize = 500;

/// Unreadable objects of one list said one by one; the rest are one line at the list's end.
pub const WARNED: usize = 5;

/// What a list's text says of the list itself: its continue token and resourceVersion.
pub use list_walk::Head;

/// What the decoder hands on while it reads.
#[derive(Debug, PartialEq)]
pub enum Event<T> {
    /// Facts of the objects read, in the server's order.
    Items(Vec<T>),
    /// One object left out: `cannot read KIND NS/NAME, left out: WHY`.
    Unreadable(String),
}

/// A page read to its end.
#[derive(Debug, PartialEq)]
pub struct Ended<T> {
    pub head: Head,
    /// The facts read since the last [`Event::Items`].
    pub items: Vec<T>,
    /// Objects of the page (unreadable ones too).
    pub count: usize,
    /// Unreadable objects past the first [`WARNED`] of the list: counted, not said.
    pub unsaid: usize,
}

/// Why a page's decoding stopped.
#[derive(Debug)]
pub enum Stopped {
    /// The text is no list (or ended early): the decoder's words.
    Json(serde_json::Error),
    /// One object, or a stretch of the body outside the items, past [`bounds::OBJECT_LIMIT`].
    ObjectTooLarge,
    /// The list holds more than [`bounds::MAX_OBJECTS`] objects.
    TooMany,
    /// Whoever reads the facts is gone.
    Cancelled,
}

/// An object's text read straight into what is kept of it: the object is decoded (as `K`, the
/// lenient wire type) and handed to `keep` at once, so only the fact outlives its text.
pub struct Keeping<'a, K, T>(pub &'a dyn Fn(K) -> T);

impl<'de, K: serde::Deserialize<'de>, T> DeserializeSeed<'de> for Keeping<'_, K, T> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        K::deserialize(d).map(self.0)
    }
}

/// One object's whole text as what is kept of it (nothing may follow the object).
pub fn fact<K: serde::de::DeserializeOwned, T>(text: &str, keep: &dyn Fn(K) -> T) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let kept = Keeping(keep).deserialize(&mut de)?;
    de.end()?;
    Ok(kept)
}

/// What one page's decoding needs to know of the list it belongs to.
pub struct Decoding<'a, K, T> {
    /// The objects' kind, as the warnings name them ("Workload").
    pub kind: &'a str,
    /// Objects the earlier pages of the list held.
    pub seen: usize,
    /// Unreadable objects the earlier pages said.
    pub said: usize,
    /// What is kept of an object.
    pub keep: &'a (dyn Fn(K) -> T + Send + Sync),
}

/// Decodes one page from `reader`, handing on facts and warnings through `out` (which answers
/// `false` when nobody reads them any more). The walk itself is `list_walk`'s, a crate of its
/// own so that its byte loop is optimized in test builds too.
pub fn decode<K, T, R>(
    mut reader: R,
    decoding: &Decoding<'_, K, T>,
    out: &mut dyn FnMut(Event<T>) -> bool,
) -> Result<Ended<T>, Stopped>
where
    K: serde::de::DeserializeOwned,
    R: Read,
{
    let mut state = State { decoding, out, batch: Vec::new(), count: 0, said: 0, unsaid: 0, stop: None };
    let walked = list_walk::walk(&mut reader, bounds::OBJECT_LIMIT, &mut |raw| match state.item(raw) {
        Ok(()) => true,
        Err(stop) => {
            state.stop = Some(stop);
            false
        }
    });
    match walked {
        Ok(head) => Ok(Ended { head, items: state.batch, count: state.count, unsaid: state.unsaid }),
        Err(Walked::Stopped) => Err(state.stop.unwrap_or(Stopped::Cancelled)),
        Err(Walked::TooLarge) => Err(Stopped::ObjectTooLarge),
        Err(Walked::Json(e)) => Err(Stopped::Json(e)),
    }
}

struct State<'a, 'b, K, T> {
    decoding: &'a Decoding<'a, K, T>,
    out: &'b mut dyn FnMut(Event<T>) -> bool,
    batch: Vec<T>,
    count: usize,
    said: usize,
    unsaid: usize,
    /// Why the walk stopped, when it was not the text's fault.
    stop: Option<Stopped>,
}

impl<K: serde::de::DeserializeOwned, T> State<'_, '_, K, T> {
    /// One object's text: its fact kept, or its name said.
    fn item(&mut self, raw: &RawValue) -> Result<(), Stopped> {
        self.count += 1;
        if self.decoding.seen + self.count > bounds::MAX_OBJECTS {
            return Err(Stopped::TooMany);
        }
        match fact(raw.get(), self.decoding.keep) {
            Ok(kept) => self.batch.push(kept),
            Err(e) if self.decoding.said + self.said < WARNED => {
                self.said += 1;
                let line = format!("cannot read {}, left out: {e}", name(raw.get(), self.decoding.kind));
                if !(self.out)(Event::Unreadable(line)) {
                    return Err(Stopped::Cancelled);
                }
            }
            Err(_) => self.unsaid += 1,
        }
        if self.batch.len() >= BATCH && !(self.out)(Event::Items(std::mem::take(&mut self.batch))) {
            return Err(Stopped::Cancelled);
        }
        Ok(())
    }
}

/// `KIND NS/NAME` (`KIND "NAME"` without a namespace) of an object that could not be read,
/// from whatever of its metadata reads.
fn name(text: &str, kind: &str) -> String {
    #[derive(serde::Deserialize, Default)]
    struct Named {
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(serde::Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        namespace: Option<String>,
    }
    let meta = serde_json::from_str::<Named>(text).unwrap_or_default().metadata;
    match (meta.namespace.unwrap_or_default(), meta.name.unwrap_or_default()) {
        (ns, name) if ns.is_empty() => format!("{kind} {name:?}"),
        (ns, name) => format!("{kind} {ns}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::reading::wire::{self, WireWorkload};
    use crate::core::kueue::Workload;
    use list_walk::READ_AHEAD;

    fn workload(w: WireWorkload) -> Workload {
        wire::workload(&w)
    }

    /// Decodes `text` as one page of Workloads; the events and the end.
    fn run(text: &[u8], seen: usize, said: usize) -> (Vec<Event<Workload>>, Result<Ended<Workload>, Stopped>) {
        let mut events = Vec::new();
        let decoding = Decoding { kind: "Workload", seen, said, keep: &workload };
        let ended = decode::<WireWorkload, _, _>(text, &decoding, &mut |e| {
            events.push(e);
            true
        });
        (events, ended)
    }

    fn page(items: &[String], metadata: &str) -> Vec<u8> {
        format!(
            r#"{{"apiVersion":"kueue.x-k8s.io/v1beta2","items":[{}],"kind":"WorkloadList","metadata":{metadata}}}"#,
            items.join(",")
        )
        .into_bytes()
    }

    fn good(name: &str) -> String {
        format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns"}},"spec":{{"queueName":"lq"}}}}"#)
    }

    fn bad(name: &str) -> String {
        format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns"}},"spec":{{"queueName":["not","text"]}}}}"#)
    }

    #[test]
    fn items_of_every_shape_are_read_in_order_and_the_unreadable_said_then_counted() {
        // tiny, readable, unreadable (more than are said), huge (within the bound), not even an object
        let huge = format!(
            r#"{{"metadata":{{"name":"huge","namespace":"ns","annotations":{{"a":"{}"}}}},"spec":{{"queueName":"lq"}}}}"#,
            "x".repeat(3 << 20)
        );
        let mut items = vec![r#"{"metadata":{}}"#.to_string(), good("a")];
        items.extend((0..8).map(|i| bad(&format!("bad-{i}"))));
        items.extend([huge, "7".into(), good("z")]);
        let (events, ended) = run(&page(&items, r#"{"continue":"tok","resourceVersion":"9"}"#), 0, 0);
        let ended = ended.unwrap();
        let said: Vec<&String> = events
            .iter()
            .filter_map(|e| match e {
                Event::Unreadable(line) => Some(line),
                Event::Items(_) => None,
            })
            .collect();
        assert_eq!(said.len(), WARNED, "{said:?}");
        assert!(said[0].starts_with("cannot read Workload ns/bad-0, left out: "), "{said:?}");
        assert_eq!(ended.unsaid, 8 - WARNED + 1, "three more bad ones and the number");
        assert_eq!(ended.count, 13);
        let names: Vec<&str> = ended.items.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["", "a", "huge", "z"]);
        assert_eq!(ended.head, Head { token: Some("tok".into()), resource_version: Some("9".into()) });
    }

    #[test]
    fn the_warnings_said_are_bounded_across_the_pages_of_a_list() {
        let items: Vec<String> = (0..3).map(|i| bad(&i.to_string())).collect();
        let (events, ended) = run(&page(&items, "{}"), 0, WARNED);
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(ended.unwrap().unsaid, 3);
    }

    #[test]
    fn facts_are_handed_on_in_batches_before_the_page_ends() {
        let items: Vec<String> = (0..BATCH * 2 + 7).map(|_| r#"{"metadata":{}}"#.to_string()).collect();
        let (events, ended) = run(&page(&items, "{}"), 0, 0);
        let sizes: Vec<usize> = events
            .iter()
            .map(|e| match e {
                Event::Items(i) => i.len(),
                Event::Unreadable(_) => 0,
            })
            .collect();
        assert_eq!(sizes, [BATCH, BATCH]);
        let ended = ended.unwrap();
        assert_eq!((ended.items.len(), ended.count, ended.head.token), (7, BATCH * 2 + 7, None));
    }

    #[test]
    fn an_object_past_the_bound_and_a_list_past_its_count_stop_the_page() {
        let huge =
            format!(r#"{{"metadata":{{"name":"{}"}}}}"#, "x".repeat(bounds::OBJECT_LIMIT as usize + 2 * READ_AHEAD));
        assert!(matches!(run(&page(&[good("a"), huge], "{}"), 0, 0).1, Err(Stopped::ObjectTooLarge)));
        // Whitespace for ever between the items is one stretch too.
        let mut endless = br#"{"items":["#.to_vec();
        endless.extend(std::iter::repeat_n(b' ', bounds::OBJECT_LIMIT as usize + 2 * READ_AHEAD));
        assert!(matches!(run(&endless, 0, 0).1, Err(Stopped::ObjectTooLarge)));
        let items = vec![good("a"), good("b")];
        assert!(matches!(run(&page(&items, "{}"), bounds::MAX_OBJECTS - 1, 0).1, Err(Stopped::TooMany)));
        assert!(run(&page(&items, "{}"), bounds::MAX_OBJECTS - 2, 0).1.is_ok());
    }

    #[test]
    fn what_is_no_list_is_an_error_and_a_reader_gone_cancels() {
        for text in ["not json", r#"{"items":7}"#, r#"{"metadata":{}}"#, r#"{"items":[{"metadata":{}}"#, "[]"] {
            assert!(matches!(run(text.as_bytes(), 0, 0).1, Err(Stopped::Json(_))), "{text}");
        }
        assert!(run(br#"{"items":null,"metadata":{}}"#, 0, 0).1.is_ok());
        let items: Vec<String> = (0..BATCH).map(|_| r#"{"metadata":{}}"#.to_string()).collect();
        let decoding = Decoding { kind: "Workload", seen: 0, said: 0, keep: &workload };
        let gone = decode::<WireWorkload, _, _>(&page(&items, "{}")[..], &decoding, &mut |_| false);
        assert!(matches!(gone, Err(Stopped::Cancelled)));
    }
}
