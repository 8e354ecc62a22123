//! One watch event line read straight into what its follower keeps: the envelope's `type`,
//! then its `object` decoded through the same [`Keeping`] as a list's items: a Workload's pod
//! templates and managedFields are skipped as they are read, and what else the lenient wire
//! type reads of it is dropped once its fact is made. Only the object's resourceVersion is taken
//! besides, for the watch to go on from. A line this cannot read is left to
//! the watch request's reader, which reads it as kube does and says why in kube's words.

use std::fmt;

use kube::core::Status;
use kube::core::watch::Bookmark;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};

use crate::cluster::reading::items::Keeping;

/// One event of a watch, its object already what its follower keeps.
#[derive(Debug, Clone, PartialEq)]
pub enum Change<T> {
    /// `ADDED` or `MODIFIED`: the object now, and its resourceVersion.
    Applied { version: Option<String>, fact: T },
    /// `DELETED`: the object as it was last, and the deletion's resourceVersion.
    Deleted { version: Option<String>, fact: T },
    /// `BOOKMARK`: the resourceVersion to go on from.
    Bookmark(String),
    /// `ERROR`: the failure it carries.
    Error(Box<Status>),
}

/// The envelope's `type`, as kube names the variants.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "UPPERCASE")]
enum Kind {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

/// Reads one event line, `type` first as every kube-apiserver writes it; `keep` makes the
/// fact of an object, with its resourceVersion. Any other shape (no `type` before the
/// `object`, a key of its own) is an error here, and read by the caller the slow way.
pub fn read<K, T>(line: &str, keep: &dyn Fn(K) -> (Option<String>, T)) -> serde_json::Result<Change<T>>
where
    K: serde::de::DeserializeOwned,
{
    let mut de = serde_json::Deserializer::from_str(line);
    let change = EventSeed { keep }.deserialize(&mut de)?;
    de.end()?;
    Ok(change)
}

struct EventSeed<'a, K, T> {
    keep: &'a dyn Fn(K) -> (Option<String>, T),
}

impl<'de, K: serde::de::DeserializeOwned, T> DeserializeSeed<'de> for EventSeed<'_, K, T> {
    type Value = Change<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Change<T>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, K: serde::de::DeserializeOwned, T> Visitor<'de> for EventSeed<'_, K, T> {
    type Value = Change<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a watch event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Change<T>, A::Error> {
        use serde::de::Error;
        let mut kind = None;
        let mut change = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'_, str>>()? {
            match (key.as_ref(), kind, &change) {
                ("type", None, _) => kind = Some(map.next_value::<Kind>()?),
                ("object", Some(kind), None) => change = Some(object(&mut map, kind, self.keep)?),
                _ => return Err(A::Error::custom("not a watch event as kube-apiserver writes one")),
            }
        }
        change.ok_or_else(|| A::Error::missing_field("object"))
    }
}

/// The `object` of an event of `kind`.
fn object<'de, A, K, T>(map: &mut A, kind: Kind, keep: &dyn Fn(K) -> (Option<String>, T)) -> Result<Change<T>, A::Error>
where
    A: MapAccess<'de>,
    K: serde::de::DeserializeOwned,
{
    Ok(match kind {
        Kind::Added | Kind::Modified => {
            let (version, fact) = map.next_value_seed(Keeping(keep))?;
            Change::Applied { version, fact }
        }
        Kind::Deleted => {
            let (version, fact) = map.next_value_seed(Keeping(keep))?;
            Change::Deleted { version, fact }
        }
        Kind::Bookmark => Change::Bookmark(map.next_value::<Bookmark>()?.metadata.resource_version),
        Kind::Error => Change::Error(map.next_value::<Box<Status>>()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::reading::wire::{self, WireWorkload};
    use crate::core::kueue::Workload;
    use kube::Resource;

    fn keep(w: WireWorkload) -> (Option<String>, Workload) {
        (w.meta().resource_version.clone(), wire::workload(&w))
    }

    fn workload(kind: &str, name: &str, rest: &str) -> String {
        format!(
            r#"{{"type":"{kind}","object":{{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"12"{rest}}},"spec":{{"queueName":"lq"}}}}}}"#
        )
    }

    #[test]
    fn an_event_is_read_into_its_fact_and_version() {
        let Change::Applied { version, fact } = read(&workload("MODIFIED", "a", ""), &keep).unwrap() else {
            panic!("not applied")
        };
        assert_eq!((version.as_deref(), fact.name.as_str(), fact.queue_name.as_deref()), (Some("12"), "a", Some("lq")));
        assert!(
            matches!(read(&workload("DELETED", "b", ""), &keep), Ok(Change::Deleted { fact, .. }) if fact.name == "b")
        );
        let tiny = r#"{"type":"ADDED","object":{"metadata":{}}}"#;
        assert!(matches!(read(tiny, &keep), Ok(Change::Applied { version: None, fact }) if fact.name.is_empty()));
        let bookmark = r#"{"type":"BOOKMARK","object":{"kind":"Workload","apiVersion":"kueue.x-k8s.io/v1beta2","metadata":{"resourceVersion":"7"}}}"#;
        assert_eq!(read(bookmark, &keep).unwrap(), Change::Bookmark("7".into()));
        let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old"}}"#;
        assert!(matches!(read(gone, &keep), Ok(Change::Error(s)) if s.code == 410));
    }

    #[test]
    fn a_huge_object_is_kept_as_its_fact_alone() {
        // 8 MiB of annotations and managedFields-like noise: the fact holds none of it.
        let noise = format!(
            r#","annotations":{{"a":"{}"}},"managedFields":[{{"x":"{}"}}]"#,
            "x".repeat(4 << 20),
            "y".repeat(4 << 20)
        );
        let Change::Applied { fact, .. } = read(&workload("ADDED", "huge", &noise), &keep).unwrap() else {
            panic!("not applied")
        };
        assert_eq!(fact.name, "huge");
        assert!(format!("{fact:?}").len() < 4096, "the fact keeps nothing of the annotations");
    }

    #[test]
    fn what_this_cannot_read_is_an_error_for_the_slow_way() {
        let unreadable =
            workload("MODIFIED", "odd", "").replace(r#""queueName":"lq""#, r#""queueName":["not","text"]"#);
        for line in [
            unreadable.as_str(),
            r#"{"object":{"metadata":{}},"type":"ADDED"}"#,
            r#"{"type":"ADDED","object":{"metadata":{}},"extra":1}"#,
            r#"{"type":"ADDED"}"#,
            r#"{"type":"RENAMED","object":{}}"#,
            r#"{"type":"ADDED","object":{"metadata":{}}} trailing"#,
            "<html>",
        ] {
            assert!(read::<WireWorkload, Workload>(line, &keep).is_err(), "{line}");
        }
    }
}
