//! `-o json` and `-o yaml`: the report's documented schema, with kubectl's 4-space JSON indent.

use std::io::{self, Write};

use serde::Serialize;

pub fn json<T: Serialize>(out: &mut dyn Write, doc: &T) -> io::Result<()> {
    let mut ser =
        serde_json::Serializer::with_formatter(&mut *out, serde_json::ser::PrettyFormatter::with_indent(b"    "));
    doc.serialize(&mut ser).map_err(io::Error::other)?;
    writeln!(out)
}

/// One JSON object on one line, for streams of changes.
pub fn json_line<T: Serialize>(out: &mut dyn Write, doc: &T) -> io::Result<()> {
    serde_json::to_writer(&mut *out, doc).map_err(io::Error::other)?;
    writeln!(out)
}

pub fn yaml<T: Serialize>(out: &mut dyn Write, doc: &T) -> io::Result<()> {
    let text = serde_saphyr::to_string(doc).map_err(io::Error::other)?;
    out.write_all(text.as_bytes())
}

/// One document of a YAML stream: `---` before every document but the first, as
/// `kubectl get -w -o yaml` separates them.
pub fn yaml_document<T: Serialize>(out: &mut dyn Write, doc: &T, written: usize) -> io::Result<()> {
    if written > 0 {
        writeln!(out, "---")?;
    }
    yaml(out, doc)
}
