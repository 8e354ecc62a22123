//! What a template finds in a document: client-go's jsonpath.go, and the comparisons of the
//! text/template fork its filters use.

use std::fmt::Write as _;

use serde_json::Value;

use super::go_format::{go_float_v, go_v_json};
use super::parse::{Node, Param};

/// A value as Go's reflect sees it: one of the document's (a JSON null is a nil interface), a
/// literal of the template, or the invalid value a range over nothing evaluates on.
#[derive(Debug, Clone)]
pub(super) enum V<'a> {
    Invalid,
    Doc(&'a Value),
    Str(String),
    Int(i64),
    /// A byte of a string (`*` over a string).
    Uint(u8),
    Float(f64),
    Bool(bool),
}

impl<'a> V<'a> {
    /// `reflect.ValueOf(v.Interface())`: a nil interface becomes the invalid value.
    pub(super) fn interface(self) -> V<'a> {
        match self {
            V::Doc(Value::Null) => V::Invalid,
            other => other,
        }
    }

    /// template.Indirect's isNil.
    fn is_nil(&self) -> bool {
        matches!(self, V::Doc(Value::Null))
    }

    /// `value.Type()` in messages.
    fn type_name(&self) -> &'static str {
        match self {
            V::Doc(Value::Object(_)) => "map[string]interface {}",
            V::Doc(Value::Array(_)) => "[]interface {}",
            V::Doc(Value::String(_)) | V::Str(_) => "string",
            V::Doc(Value::Number(n)) if n.as_i64().is_some() => "int64",
            V::Doc(Value::Number(_)) => "float64",
            V::Float(_) => "float64",
            V::Doc(Value::Bool(_)) | V::Bool(_) => "bool",
            V::Int(_) => "int",
            V::Uint(_) => "uint8",
            V::Doc(Value::Null) => "interface {}",
            V::Invalid => "<nil>",
        }
    }
}

pub(super) struct Exec<'t> {
    nodes: &'t [Node],
    allow_missing: bool,
    begin_range: usize,
    in_range: usize,
    end_range: usize,
    last_end: Option<usize>,
}

impl<'t> Exec<'t> {
    pub(super) fn new(nodes: &'t [Node], allow_missing: bool) -> Self {
        Exec { nodes, allow_missing, begin_range: 0, in_range: 0, end_range: 0, last_end: None }
    }

    pub(super) fn find_results<'a>(&mut self, data: V<'a>, start: usize) -> Result<Vec<Vec<V<'a>>>, String>
    where
        't: 'a,
    {
        let cur = vec![data];
        let nodes = self.nodes;
        let mut full = Vec::new();
        let mut i = start;
        while i < nodes.len() {
            let results = self.walk(&cur, &nodes[i])?;
            if self.end_range > 0 && self.end_range <= self.in_range {
                self.end_range -= 1;
                self.last_end = Some(i);
                break;
            }
            if self.begin_range > 0 {
                self.begin_range -= 1;
                self.in_range += 1;
                if results.is_empty() {
                    self.find_results(V::Invalid, i + 1)?;
                } else {
                    for value in results {
                        full.extend(self.find_results(value.interface(), i + 1)?);
                    }
                }
                self.in_range -= 1;
                if let Some(k) = (i + 1..nodes.len()).find(|k| Some(*k) == self.last_end) {
                    i = k;
                }
                i += 1;
                continue;
            }
            full.push(results);
            i += 1;
        }
        Ok(full)
    }

    fn walk<'a>(&mut self, input: &[V<'a>], node: &'t Node) -> Result<Vec<V<'a>>, String>
    where
        't: 'a,
    {
        match node {
            Node::List(nodes) => self.list(input, nodes),
            Node::Text(t) => Ok(vec![V::Str(t.clone())]),
            Node::Field(name) => self.field(input, name),
            Node::Array(params) => array(input, *params),
            Node::Filter { left, right, op } => self.filter(input, left, right, op),
            Node::Int(i) => Ok(input.iter().map(|_| V::Int(*i)).collect()),
            Node::Float(f) => Ok(input.iter().map(|_| V::Float(*f)).collect()),
            Node::Bool(b) => Ok(input.iter().map(|_| V::Bool(*b)).collect()),
            Node::Wildcard => Ok(input.iter().flat_map(children).collect()),
            Node::Recursive => Ok(recursive(input)),
            Node::Union(lists) => {
                let mut out = Vec::new();
                for l in lists {
                    out.extend(self.list(input, l)?);
                }
                Ok(out)
            }
            Node::Identifier(name) => match name.as_str() {
                "range" => {
                    self.begin_range += 1;
                    Ok(input.to_vec())
                }
                "end" if self.in_range > 0 => {
                    self.end_range += 1;
                    Ok(Vec::new())
                }
                "end" => Err("not in range, nothing to end".into()),
                other => Err(format!("unrecognized identifier {other}")),
            },
        }
    }

    fn list<'a>(&mut self, input: &[V<'a>], nodes: &'t [Node]) -> Result<Vec<V<'a>>, String>
    where
        't: 'a,
    {
        let mut cur = input.to_vec();
        for n in nodes {
            cur = self.walk(&cur, n)?;
        }
        Ok(cur)
    }

    fn field<'a>(&self, input: &[V<'a>], name: &str) -> Result<Vec<V<'a>>, String> {
        if input.is_empty() {
            return Ok(Vec::new());
        }
        let mut results = Vec::new();
        for v in input {
            if v.is_nil() {
                continue;
            }
            if let V::Doc(Value::Object(m)) = v
                && let Some(found) = m.get(name)
            {
                results.push(V::Doc(found));
            }
        }
        if results.is_empty() && !self.allow_missing {
            return Err(format!("{name} is not found"));
        }
        Ok(results)
    }

    fn filter<'a>(
        &mut self,
        input: &[V<'a>],
        left: &'t [Node],
        right: &'t [Node],
        op: &str,
    ) -> Result<Vec<V<'a>>, String>
    where
        't: 'a,
    {
        let mut results = Vec::new();
        for v in input {
            let items = match v {
                V::Doc(Value::Array(items)) => items,
                other => {
                    let mut s = String::new();
                    go_v(other, &mut s);
                    return Err(format!("{s} is not array or slice and cannot be filtered"));
                }
            };
            for item in items {
                let temp = [V::Doc(item)];
                let lefts = self.list(&temp, left);
                if op == "exists" {
                    if lefts.is_ok_and(|l| !l.is_empty()) {
                        results.push(V::Doc(item));
                    }
                    continue;
                }
                let lefts = lefts?;
                match lefts.len() {
                    0 => continue,
                    1 => {}
                    _ => return Err("can only compare one element at a time".into()),
                }
                let rights = self.list(&temp, right)?;
                match rights.len() {
                    0 => continue,
                    1 => {}
                    _ => return Err("can only compare one element at a time".into()),
                }
                let (l, r) = (lefts[0].clone().interface(), rights[0].clone().interface());
                let pass = match op {
                    "<" => less(&l, &r)?,
                    ">" => !(less(&l, &r)? || equal(&l, &r)?),
                    "==" => equal(&l, &r)?,
                    "!=" => !equal(&l, &r)?,
                    "<=" => less(&l, &r)? || equal(&l, &r)?,
                    ">=" => !less(&l, &r)?,
                    other => return Err(format!("unrecognized filter operator {other}")),
                };
                if pass {
                    results.push(V::Doc(item));
                }
            }
        }
        Ok(results)
    }
}

fn array<'a>(input: &[V<'a>], node: [Param; 3]) -> Result<Vec<V<'a>>, String> {
    let mut result = Vec::new();
    for v in input {
        if v.is_nil() {
            continue;
        }
        let items = match v {
            V::Doc(Value::Array(items)) => items,
            other => return Err(format!("{} is not array or slice", other.type_name())),
        };
        // Every sum below stays in range: an index is added to the length only while it is
        // negative, and the slice's bounds are checked before they become usize.
        let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let mut p = node;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value = p[0].value.saturating_add(len);
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value = p[1].value.saturating_add(len);
        }
        if p[1].value == p[0].value {
            return Ok(result);
        }
        if p[0].value >= len || p[0].value < 0 {
            return Err(format!("array index out of bounds: index {}, length {}", p[0].value, len));
        }
        if p[1].value > len || p[1].value < 0 {
            return Err(format!("array index out of bounds: index {}, length {}", p[1].value.saturating_sub(1), len));
        }
        if p[0].value > p[1].value {
            return Err(format!("starting index {} is greater than ending index {}", p[0].value, p[1].value));
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return Err("step must be > 0".into());
            }
            usize::try_from(p[2].value).unwrap_or(usize::MAX)
        } else {
            1
        };
        let (Ok(from), Ok(to)) = (usize::try_from(p[0].value), usize::try_from(p[1].value)) else {
            continue;
        };
        result.extend(items[from..to].iter().step_by(step).map(V::Doc));
    }
    Ok(result)
}

/// What `*` finds in one value: an object's values (by key), an array's items, a string's bytes.
fn children<'a>(v: &V<'a>) -> Vec<V<'a>> {
    match v {
        V::Doc(Value::Object(m)) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            keys.into_iter().map(|k| V::Doc(&m[k])).collect()
        }
        V::Doc(Value::Array(items)) => items.iter().map(V::Doc).collect(),
        V::Doc(Value::String(s)) => s.bytes().map(V::Uint).collect(),
        V::Str(s) => s.bytes().map(V::Uint).collect(),
        _ => Vec::new(),
    }
}

fn recursive<'a>(input: &[V<'a>]) -> Vec<V<'a>> {
    let mut result = Vec::new();
    for v in input {
        if v.is_nil() {
            continue;
        }
        let kids = children(v);
        if !kids.is_empty() {
            result.push(v.clone());
            result.extend(recursive(&kids));
        }
    }
    result
}

/// The kind of a value as Go's reflect names it, for the comparisons of filters.
#[derive(PartialEq, Clone, Copy)]
enum GoKind {
    Bool,
    Int,
    Uint,
    Float,
    Str,
}

fn kind(v: &V<'_>) -> Result<GoKind, String> {
    Ok(match v {
        V::Doc(Value::Bool(_)) | V::Bool(_) => GoKind::Bool,
        V::Doc(Value::Number(n)) if n.as_i64().is_some() => GoKind::Int,
        V::Doc(Value::Number(_)) | V::Float(_) => GoKind::Float,
        V::Int(_) => GoKind::Int,
        V::Uint(_) => GoKind::Uint,
        V::Doc(Value::String(_)) | V::Str(_) => GoKind::Str,
        _ => return Err("invalid type for comparison".into()),
    })
}

fn as_i64(v: &V<'_>) -> i64 {
    match v {
        V::Doc(Value::Number(n)) => n.as_i64().unwrap_or_default(),
        V::Int(i) => *i,
        _ => 0,
    }
}

fn as_f64(v: &V<'_>) -> f64 {
    match v {
        V::Doc(Value::Number(n)) => n.as_f64().unwrap_or_default(),
        V::Float(f) => *f,
        _ => 0.0,
    }
}

fn as_str<'b>(v: &'b V<'_>) -> &'b str {
    match v {
        V::Doc(Value::String(s)) => s,
        V::Str(s) => s,
        _ => "",
    }
}

fn as_bool(v: &V<'_>) -> bool {
    matches!(v, V::Doc(Value::Bool(true)) | V::Bool(true))
}

fn as_u64(v: &V<'_>) -> u64 {
    match v {
        V::Uint(u) => *u as u64,
        _ => 0,
    }
}

/// The forked text/template's `eq`.
fn equal(a: &V<'_>, b: &V<'_>) -> Result<bool, String> {
    let (k1, k2) = (kind(a)?, kind(b)?);
    if k1 != k2 {
        return match (k1, k2) {
            (GoKind::Int, GoKind::Uint) => Ok(as_i64(a) >= 0 && as_i64(a) as u64 == as_u64(b)),
            (GoKind::Uint, GoKind::Int) => Ok(as_i64(b) >= 0 && as_u64(a) == as_i64(b) as u64),
            _ => Err("incompatible types for comparison".into()),
        };
    }
    Ok(match k1 {
        GoKind::Bool => as_bool(a) == as_bool(b),
        GoKind::Float => as_f64(a) == as_f64(b),
        GoKind::Int => as_i64(a) == as_i64(b),
        GoKind::Str => as_str(a) == as_str(b),
        GoKind::Uint => as_u64(a) == as_u64(b),
    })
}

/// The forked text/template's `lt`.
fn less(a: &V<'_>, b: &V<'_>) -> Result<bool, String> {
    let (k1, k2) = (kind(a)?, kind(b)?);
    if k1 != k2 {
        return match (k1, k2) {
            (GoKind::Int, GoKind::Uint) => Ok(as_i64(a) < 0 || (as_i64(a) as u64) < as_u64(b)),
            (GoKind::Uint, GoKind::Int) => Ok(as_i64(b) >= 0 && as_u64(a) < as_i64(b) as u64),
            _ => Err("incompatible types for comparison".into()),
        };
    }
    Ok(match k1 {
        GoKind::Bool => return Err("invalid type for comparison".into()),
        GoKind::Float => as_f64(a) < as_f64(b),
        GoKind::Int => as_i64(a) < as_i64(b),
        GoKind::Str => as_str(a) < as_str(b),
        GoKind::Uint => as_u64(a) < as_u64(b),
    })
}

/// evalToText: `fmt.Fprint` of a value that is not an object or array.
pub(super) fn text(v: &V<'_>) -> String {
    let mut s = String::new();
    match v {
        V::Invalid => s.push_str("<no value>"),
        V::Doc(Value::Null) => s.push_str("null"),
        other => go_v(other, &mut s),
    }
    s
}

/// Go's `%v` of a value decoded from JSON (`map[a:1 b:x]`, `[1 2]`, `<nil>`).
pub(super) fn go_v(v: &V<'_>, out: &mut String) {
    match v {
        V::Invalid => out.push_str("<invalid reflect.Value>"),
        V::Doc(d) => go_v_json(d, out),
        V::Str(s) => out.push_str(s),
        V::Int(i) => {
            let _ = write!(out, "{i}");
        }
        V::Uint(u) => {
            let _ = write!(out, "{u}");
        }
        V::Float(f) => out.push_str(&go_float_v(*f)),
        V::Bool(b) => {
            let _ = write!(out, "{b}");
        }
    }
}
