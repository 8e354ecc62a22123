//! A Kubernetes list's JSON body walked as it is read: the `items` array one object at a time,
//! each object's text handed to the caller alone (a [`RawValue`]) and dropped before the next is
//! read, the list's `metadata` kept as a [`Head`], everything else skipped.
//!
//! Why a crate of its own: serde_json reads from an [`io::Read`] a byte at a time, and that code
//! is generic, so it is compiled in whichever crate names the reader. Here it is named once, as
//! `&mut dyn Read`, so the plugin's `Cargo.toml` can optimize this one crate in debug and test
//! builds (`[profile.dev.package.list-walk]`): unoptimized, the byte loop was about three
//! quarters of the CPU a 180 MB list took (13.6 CPU-s for 1,200 objects of 150 KB).
//!
//! What is bounded here is one stretch of the body: an object, or what lies between objects
//! (whitespace for ever is a stretch too). Past `limit` bytes the walk stops with
//! [`Walked::TooLarge`]. How many objects a list may hold, and what is kept of each, is the
//! caller's.

use std::cell::Cell;
use std::fmt;
use std::io::{self, BufReader, Read};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Bytes read ahead of the decoder: serde_json reads a byte at a time, which a `BufReader`
/// serves from its buffer. A stretch is thus counted to within one buffer.
pub const READ_AHEAD: usize = 64 << 10;

/// What a list's text says of the list itself.
#[derive(Default, Debug, PartialEq, Eq, Clone)]
pub struct Head {
    /// The continue token; `None` on the last page.
    pub token: Option<String>,
    pub resource_version: Option<String>,
}

/// Why a walk ended before the list's end.
#[derive(Debug)]
pub enum Walked {
    /// The text is no list (or ended early): the decoder's words.
    Json(serde_json::Error),
    /// One object, or a stretch of the body outside the items, past the limit.
    TooLarge,
    /// The caller's `item` answered `false`.
    Stopped,
}

/// Walks the list `reader` holds, handing each item's text to `item`, which answers `false` to
/// stop the walk. `limit` bounds each stretch of the body (an object, or what lies between).
pub fn walk(reader: &mut dyn Read, limit: u64, item: &mut dyn FnMut(&RawValue) -> bool) -> Result<Head, Walked> {
    let stretch = Cell::new(0u64);
    let over = Cell::new(false);
    let counted = Counted { inner: reader, limit, stretch: &stretch, over: &over };
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(READ_AHEAD, counted));
    let mut walking = Walking { item, stretch: &stretch, stopped: false };
    let head = ListSeed { walking: &mut walking }.deserialize(&mut de).and_then(|head| de.end().map(|()| head));
    match head {
        _ if walking.stopped => Err(Walked::Stopped),
        Err(_) if over.get() => Err(Walked::TooLarge),
        Err(e) => Err(Walked::Json(e)),
        Ok(head) => Ok(head),
    }
}

/// A reader that fails once one stretch of its bytes passes `limit`; the walk starts a new
/// stretch at each object.
struct Counted<'r> {
    inner: &'r mut dyn Read,
    limit: u64,
    stretch: &'r Cell<u64>,
    over: &'r Cell<bool>,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.limit.saturating_sub(self.stretch.get());
        if left == 0 {
            self.over.set(true);
            return Err(io::Error::other("an object past its bound"));
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.stretch.set(self.stretch.get() + n as u64);
        Ok(n)
    }
}

struct Walking<'a> {
    item: &'a mut dyn FnMut(&RawValue) -> bool,
    stretch: &'a Cell<u64>,
    /// The caller stopped the walk (not the text's fault).
    stopped: bool,
}

/// The list object: its `items` walked, its `metadata` read, the rest skipped.
struct ListSeed<'s, 'a> {
    walking: &'s mut Walking<'a>,
}

impl<'de> DeserializeSeed<'de> for ListSeed<'_, '_> {
    type Value = Head;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Head, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ListSeed<'_, '_> {
    type Value = Head;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Head, A::Error> {
        #[derive(serde::Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Meta {
            #[serde(rename = "continue", default)]
            token: Option<String>,
            #[serde(default)]
            resource_version: Option<String>,
        }
        let mut head = Head::default();
        let mut items = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "items" => {
                    map.next_value_seed(ItemsSeed { walking: &mut *self.walking })?;
                    items = true;
                }
                "metadata" => {
                    let meta = map.next_value::<Option<Meta>>()?.unwrap_or_default();
                    head.token = meta.token.filter(|t| !t.is_empty());
                    head.resource_version = meta.resource_version.filter(|v| !v.is_empty());
                }
                _ => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        if !items {
            return Err(serde::de::Error::missing_field("items"));
        }
        Ok(head)
    }
}

/// The `items` array (or `null`), one object at a time.
struct ItemsSeed<'s, 'a> {
    walking: &'s mut Walking<'a>,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list's items")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.walking.stretch.set(0);
            let Some(raw) = seq.next_element::<Box<RawValue>>()? else { break };
            if !(self.walking.item)(&raw) {
                self.walking.stopped = true;
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        self.walking.stretch.set(0);
        Ok(())
    }
}
