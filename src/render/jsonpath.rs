//! kubectl's JSONPath template language, as client-go's `k8s.io/client-go/util/jsonpath`
//! parses and evaluates it (`-o jsonpath=`, and the expressions of `-o custom-columns=` and
//! `--sort-by`): `{}` actions between plain text, fields, `[*]`, slices, unions, filters
//! `?()`, `..`, `range`/`end`, quoted text. A port of that package, error messages word for
//! word, over a `serde_json::Value` read as kubectl reads an object from the server (integers
//! are int64, other numbers float64).
//!
//! Where client-go depends on Go's map order (`*` and `..` over an object), the keys are taken
//! in sorted order here: kubectl's order there is random from one run to the next.

use std::fmt::Write as _;

use serde_json::Value;

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub raw: String,
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    List(Vec<Node>),
    Text(String),
    Field(String),
    Array([Param; 3]),
    Filter { left: Vec<Node>, right: Vec<Node>, op: String },
    Int(i64),
    Float(f64),
    Bool(bool),
    Wildcard,
    Recursive,
    Union(Vec<Vec<Node>>),
    Identifier(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Param {
    value: i64,
    known: bool,
    derived: bool,
}

impl Template {
    /// Parses `text`; the error is client-go's message (`unterminated array`, ...).
    pub fn parse(text: &str) -> Result<Template, String> {
        Ok(Template { raw: text.to_string(), nodes: parse(text)? })
    }

    /// The values each top-level node finds: what custom-columns and `--sort-by` read.
    pub fn find<'a>(&'a self, doc: &'a Value, allow_missing: bool) -> Result<Vec<Vec<Found<'a>>>, String> {
        let mut exec =
            Exec { nodes: &self.nodes, allow_missing, begin_range: 0, in_range: 0, end_range: 0, last_end: None };
        exec.find_results(V::Doc(doc), 0)
            .map(|lists| lists.into_iter().map(|l| l.into_iter().map(Found).collect()).collect())
    }

    /// Evaluates the template on `doc` as `kubectl get -o jsonpath=` prints it (no newline added).
    pub fn execute(&self, doc: &Value, allow_missing: bool) -> Result<String, String> {
        let mut exec =
            Exec { nodes: &self.nodes, allow_missing, begin_range: 0, in_range: 0, end_range: 0, last_end: None };
        let lists = exec.find_results(V::Doc(doc), 0)?;
        let mut out = String::new();
        for list in &lists {
            for (i, v) in list.iter().enumerate() {
                match v {
                    V::Doc(d @ (Value::Object(_) | Value::Array(_))) => go_json(d, &mut out),
                    other => out.push_str(&text(other)),
                }
                if i != list.len() - 1 {
                    out.push(' ');
                }
            }
        }
        Ok(out)
    }
}

/// One value a template found, printed as Go's `%v` prints it (custom-columns' cells).
#[derive(Debug, Clone)]
pub struct Found<'a>(V<'a>);

impl Found<'_> {
    pub fn go_v(&self) -> String {
        let mut s = String::new();
        go_v(&self.0, &mut s);
        s
    }

    /// The JSON value found, if it is one of the document's (not a template's literal).
    pub fn value(&self) -> Option<Value> {
        match &self.0 {
            V::Doc(d) => Some((*d).clone()),
            V::Str(s) => Some(Value::String(s.clone())),
            V::Int(i) => Some(Value::from(*i)),
            V::Uint(u) => Some(Value::from(*u)),
            V::Float(f) => Some(Value::from(*f)),
            V::Bool(b) => Some(Value::Bool(*b)),
            V::Invalid => None,
        }
    }
}

// ---- parser: client-go's parser.go, step for step ----

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    width: usize,
}

const EOF: Option<char> = None;

fn parse(text: &str) -> Result<Vec<Node>, String> {
    let mut p = Parser { input: text, pos: 0, start: 0, width: 0 };
    let mut root = Vec::new();
    loop {
        // parseText
        loop {
            if p.input[p.pos..].starts_with('{') {
                if p.pos > p.start {
                    root.push(Node::Text(p.consume().to_string()));
                }
                break;
            }
            if p.next() == EOF {
                if p.pos > p.start {
                    root.push(Node::Text(p.consume().to_string()));
                }
                return Ok(root);
            }
        }
        // parseLeftDelim
        p.pos += 1;
        p.consume();
        let mut cur = Vec::new();
        let done = p.inside_action(&mut cur);
        root.push(Node::List(cur));
        done?;
    }
}

/// Parses `{text}` and returns the nodes of its one action.
fn parse_action(text: &str) -> Result<Vec<Node>, String> {
    let nodes = parse(&format!("{{{text}}}"))?;
    match nodes.into_iter().next() {
        Some(Node::List(l)) => Ok(l),
        _ => Ok(Vec::new()),
    }
}

impl<'a> Parser<'a> {
    fn consume(&mut self) -> &'a str {
        let v = &self.input[self.start..self.pos];
        self.start = self.pos;
        v
    }

    fn next(&mut self) -> Option<char> {
        match self.input[self.pos..].chars().next() {
            None => {
                self.width = 0;
                None
            }
            Some(c) => {
                self.width = c.len_utf8();
                self.pos += self.width;
                Some(c)
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        let r = self.next();
        self.backup();
        r
    }

    fn backup(&mut self) {
        self.pos -= self.width;
    }

    /// The byte two before `pos` is a backslash (Go's `p.input[p.pos-2] != '\\'`).
    fn escaped(&self) -> bool {
        self.pos >= 2 && self.input.as_bytes()[self.pos - 2] == b'\\'
    }

    /// parseInsideAction, as a loop: returns at the right delimiter.
    fn inside_action(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            let rest = &self.input[self.pos..];
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume();
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.filter(cur)?;
                continue;
            }
            if rest.starts_with("..") {
                self.recursive(cur)?;
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => return Err("unclosed action".into()),
                Some(' ') | Some('@' | '$') => {
                    self.consume();
                }
                Some('[') => self.array(cur)?,
                Some(q @ ('"' | '\'')) => self.quote(cur, q)?,
                Some('.') => self.field(cur),
                Some(r) if r == '+' || r == '-' || r.is_numeric() => {
                    self.backup();
                    self.number(cur)?;
                }
                Some(r) if is_alphanumeric(r) => {
                    self.backup();
                    self.identifier(cur);
                }
                Some(r) => return Err(format!("unrecognized character in action: {}", go_unicode(r))),
            }
        }
    }

    fn identifier(&mut self, cur: &mut Vec<Node>) {
        loop {
            let r = self.next();
            if is_terminator(r) {
                self.backup();
                break;
            }
        }
        let value = self.consume();
        cur.push(match value {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            other => Node::Identifier(other.to_string()),
        });
    }

    fn recursive(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        if matches!(cur.last(), Some(Node::Recursive)) {
            return Err("invalid multiple recursive descent".into());
        }
        self.pos += 2;
        self.consume();
        cur.push(Node::Recursive);
        if self.peek().is_some_and(is_alphanumeric) {
            self.field(cur);
        }
        Ok(())
    }

    fn number(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(r) if r == '.' || r.is_numeric() => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let value = self.consume();
        if let Ok(i) = value.parse::<i64>() {
            cur.push(Node::Int(i));
        } else if let Some(f) = go_parse_float(value) {
            cur.push(Node::Float(f));
        } else {
            return Err(format!("cannot parse number {value}"));
        }
        Ok(())
    }

    fn array(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated array".into()),
                Some(']') => break,
                _ => {}
            }
        }
        let all = self.consume();
        let mut text = &all[1..all.len() - 1];
        if text == "*" {
            text = ":";
        }
        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let mut union = Vec::new();
            for s in parts {
                union.push(parse_action(&format!("[{}]", s.trim_matches(' ')))?);
            }
            cur.push(Node::Union(union));
            return Ok(());
        }
        // 'key'
        if text.len() >= 2 && text.starts_with('\'') && text.ends_with('\'') && !text[1..text.len() - 1].contains('\'')
        {
            cur.extend(parse_action(&format!(".{}", &text[1..text.len() - 1]))?);
            return Ok(());
        }
        let groups = slice_groups(text).ok_or_else(|| format!("invalid array index {text}"))?;
        let mut params = [Param::default(); 3];
        for i in 0..3 {
            let mut v = groups[i];
            if !v.is_empty() {
                if i > 0 {
                    v = &v[1..];
                }
                if i > 0 && v.is_empty() {
                    params[i].known = false;
                } else {
                    params[i].known = true;
                    params[i].value = go_atoi(v).ok_or_else(|| format!("array index {v} is not a number"))?;
                }
            } else if i == 1 {
                params[i].known = true;
                params[i].value = params[0].value + 1;
                params[i].derived = true;
            } else {
                params[i].known = false;
                params[i].value = 0;
            }
        }
        cur.push(Node::Array(params));
        Ok(())
    }

    fn filter(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        self.pos += 3;
        self.consume();
        let (mut begin, mut end) = (false, false);
        let mut pair = '"';
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated filter".into()),
                Some(r @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = r;
                        continue;
                    }
                    if !self.escaped() && r == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                _ => {}
            }
        }
        if self.next() != Some(']') {
            return Err("unclosed array expect ]".into());
        }
        let all = self.consume();
        let text = &all[..all.len() - 2];
        match filter_groups(text) {
            None => cur.push(Node::Filter { left: parse_action(text)?, right: Vec::new(), op: "exists".into() }),
            Some((l, op, r)) => {
                let left = parse_action(l)?;
                let right = parse_action(r)?;
                cur.push(Node::Filter { left, right, op: op.to_string() });
            }
        }
        Ok(())
    }

    fn quote(&mut self, cur: &mut Vec<Node>, end: char) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated quoted string".into()),
                Some(r) if r == end && !self.escaped() => break,
                _ => {}
            }
        }
        let value = self.consume();
        let s = unquote_extend(value).map_err(|e| format!("unquote string {value} error {e}"))?;
        cur.push(Node::Text(s));
        Ok(())
    }

    fn field(&mut self, cur: &mut Vec<Node>) {
        self.consume();
        loop {
            let r = self.next();
            if r == Some('\\') {
                self.next();
            } else if is_terminator(r) {
                self.backup();
                break;
            }
        }
        let value = self.consume();
        cur.push(if value == "*" { Node::Wildcard } else { Node::Field(value.replace('\\', "")) });
    }
}

fn is_terminator(r: Option<char>) -> bool {
    match r {
        None => true,
        Some(c) => matches!(c, ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'),
    }
}

fn is_alphanumeric(r: char) -> bool {
    r == '_' || r.is_alphabetic() || r.is_numeric()
}

/// Go's `%#U`: `U+0021 '!'`.
fn go_unicode(r: char) -> String {
    if r.is_control() { format!("U+{:04X}", r as u32) } else { format!("U+{:04X} '{r}'", r as u32) }
}

/// `^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$`, its three groups ("" when absent).
fn slice_groups(text: &str) -> Option<[&str; 3]> {
    fn number(s: &str, at: usize) -> usize {
        let b = s.as_bytes();
        let mut i = at;
        if i < b.len() && b[i] == b'-' {
            i += 1;
        }
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    }
    let b = text.as_bytes();
    let e0 = number(text, 0);
    let mut groups = [&text[..e0], "", ""];
    let mut at = e0;
    for g in groups.iter_mut().skip(1) {
        if at < b.len() && b[at] == b':' {
            let e = number(text, at + 1);
            *g = &text[at..e];
            at = e;
        }
    }
    (at == b.len()).then_some(groups)
}

/// `^([^!<>=]+)([!<>=]+)(.+?)$`.
fn filter_groups(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let first = text.find(is_op)?;
    if first == 0 {
        return None;
    }
    let run_end = text[first..].find(|c: char| !is_op(c)).map(|i| first + i).unwrap_or(text.len());
    let run_end = if run_end == text.len() { run_end - 1 } else { run_end };
    if run_end <= first || run_end >= text.len() {
        return None;
    }
    Some((&text[..first], &text[first..run_end], &text[run_end..]))
}

fn go_atoi(s: &str) -> Option<i64> {
    s.parse::<i64>().ok()
}

fn go_parse_float(s: &str) -> Option<f64> {
    // Only digits, dots and a sign reach here; Go and Rust agree on those ("1.", ".5").
    if s.is_empty() || s == "+" || s == "-" || s.trim_start_matches(['+', '-']) == "." {
        return None;
    }
    s.parse::<f64>().ok()
}

/// Go's strconv.Unquote for `"..."` and `'...'` alike (client-go's UnquoteExtend).
fn unquote_extend(s: &str) -> Result<String, &'static str> {
    const SYNTAX: &str = "invalid syntax";
    let b = s.as_bytes();
    if b.len() < 2 {
        return Err(SYNTAX);
    }
    let quote = b[0];
    if quote != b[b.len() - 1] || (quote != b'"' && quote != b'\'') {
        return Err(SYNTAX);
    }
    let inner = &s[1..s.len() - 1];
    if !inner.contains('\\') && !inner.contains(quote as char) {
        return Ok(inner.to_string());
    }
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == quote as char {
            return Err(SYNTAX);
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next().ok_or(SYNTAX)?;
        let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, n: usize| -> Result<u32, &'static str> {
            let mut v = 0u32;
            for _ in 0..n {
                let d = chars.next().and_then(|c| c.to_digit(16)).ok_or(SYNTAX)?;
                v = v * 16 + d;
            }
            Ok(v)
        };
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' => out.push('\\'),
            '\'' | '"' if e == quote as char => out.push(e),
            'x' => out.push(char::from_u32(hex(&mut chars, 2)?).ok_or(SYNTAX)?),
            'u' => out.push(char::from_u32(hex(&mut chars, 4)?).ok_or(SYNTAX)?),
            'U' => out.push(char::from_u32(hex(&mut chars, 8)?).ok_or(SYNTAX)?),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    v = v * 8 + chars.next().and_then(|c| c.to_digit(8)).ok_or(SYNTAX)?;
                }
                if v > 255 {
                    return Err(SYNTAX);
                }
                out.push(char::from_u32(v).ok_or(SYNTAX)?);
            }
            _ => return Err(SYNTAX),
        }
    }
    Ok(out)
}

// ---- evaluation: client-go's jsonpath.go ----

/// A value as Go's reflect sees it: one of the document's (a JSON null is a nil interface), a
/// literal of the template, or the invalid value a range over nothing evaluates on.
#[derive(Debug, Clone)]
enum V<'a> {
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
    fn interface(self) -> V<'a> {
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

struct Exec<'t> {
    nodes: &'t [Node],
    allow_missing: bool,
    begin_range: usize,
    in_range: usize,
    end_range: usize,
    last_end: Option<usize>,
}

impl<'t> Exec<'t> {
    fn find_results<'a>(&mut self, data: V<'a>, start: usize) -> Result<Vec<Vec<V<'a>>>, String>
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
        let len = items.len() as i64;
        let mut p = node;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value += len;
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value += len;
        }
        if p[1].value == p[0].value {
            return Ok(result);
        }
        if p[0].value >= len || p[0].value < 0 {
            return Err(format!("array index out of bounds: index {}, length {}", p[0].value, len));
        }
        if p[1].value > len || p[1].value < 0 {
            return Err(format!("array index out of bounds: index {}, length {}", p[1].value - 1, len));
        }
        if p[0].value > p[1].value {
            return Err(format!("starting index {} is greater than ending index {}", p[0].value, p[1].value));
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return Err("step must be > 0".into());
            }
            p[2].value as usize
        } else {
            1
        };
        result.extend(items[p[0].value as usize..p[1].value as usize].iter().step_by(step).map(V::Doc));
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

#[derive(PartialEq, Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Uint,
    Float,
    Str,
}

fn kind(v: &V<'_>) -> Result<Kind, String> {
    Ok(match v {
        V::Doc(Value::Bool(_)) | V::Bool(_) => Kind::Bool,
        V::Doc(Value::Number(n)) if n.as_i64().is_some() => Kind::Int,
        V::Doc(Value::Number(_)) | V::Float(_) => Kind::Float,
        V::Int(_) => Kind::Int,
        V::Uint(_) => Kind::Uint,
        V::Doc(Value::String(_)) | V::Str(_) => Kind::Str,
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
            (Kind::Int, Kind::Uint) => Ok(as_i64(a) >= 0 && as_i64(a) as u64 == as_u64(b)),
            (Kind::Uint, Kind::Int) => Ok(as_i64(b) >= 0 && as_u64(a) == as_i64(b) as u64),
            _ => Err("incompatible types for comparison".into()),
        };
    }
    Ok(match k1 {
        Kind::Bool => as_bool(a) == as_bool(b),
        Kind::Float => as_f64(a) == as_f64(b),
        Kind::Int => as_i64(a) == as_i64(b),
        Kind::Str => as_str(a) == as_str(b),
        Kind::Uint => as_u64(a) == as_u64(b),
    })
}

/// The forked text/template's `lt`.
fn less(a: &V<'_>, b: &V<'_>) -> Result<bool, String> {
    let (k1, k2) = (kind(a)?, kind(b)?);
    if k1 != k2 {
        return match (k1, k2) {
            (Kind::Int, Kind::Uint) => Ok(as_i64(a) < 0 || (as_i64(a) as u64) < as_u64(b)),
            (Kind::Uint, Kind::Int) => Ok(as_i64(b) >= 0 && as_u64(a) < as_i64(b) as u64),
            _ => Err("incompatible types for comparison".into()),
        };
    }
    Ok(match k1 {
        Kind::Bool => return Err("invalid type for comparison".into()),
        Kind::Float => as_f64(a) < as_f64(b),
        Kind::Int => as_i64(a) < as_i64(b),
        Kind::Str => as_str(a) < as_str(b),
        Kind::Uint => as_u64(a) < as_u64(b),
    })
}

// ---- printing as Go prints ----

/// evalToText: `fmt.Fprint` of a value that is not an object or array.
fn text(v: &V<'_>) -> String {
    let mut s = String::new();
    match v {
        V::Invalid => s.push_str("<no value>"),
        V::Doc(Value::Null) => s.push_str("null"),
        other => go_v(other, &mut s),
    }
    s
}

/// Go's `%v` of a value decoded from JSON (`map[a:1 b:x]`, `[1 2]`, `<nil>`).
fn go_v(v: &V<'_>, out: &mut String) {
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

fn go_v_json(d: &Value, out: &mut String) {
    match d {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Number(n) => match n.as_i64() {
            Some(i) => {
                let _ = write!(out, "{i}");
            }
            None => out.push_str(&go_float_v(n.as_f64().unwrap_or_default())),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                go_v_json(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                go_v_json(&m[k], out);
            }
            out.push(']');
        }
    }
}

/// The shortest digits and decimal exponent of `f` (`1.5e-5` gives ("15", -5)).
fn digits(f: f64) -> (String, i32) {
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    (mantissa.replace('.', ""), exp.parse().unwrap_or(0))
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`: an exponent below -4 or from 6 up).
pub fn go_float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let (digs, exp) = digits(f);
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let mut m = digs[..1].to_string();
        if digs.len() > 1 {
            m.push('.');
            m.push_str(&digs[1..]);
        }
        let (es, ea) = if exp < 0 { ('-', -exp) } else { ('+', exp) };
        return format!("{sign}{m}e{es}{ea:02}");
    }
    format!("{sign}{}", fixed(&digs, exp))
}

/// Digits `d.ddd` times 10^exp written without an exponent.
fn fixed(digs: &str, exp: i32) -> String {
    if exp < 0 {
        format!("0.{}{}", "0".repeat((-exp - 1) as usize), digs)
    } else {
        let int_len = exp as usize + 1;
        if digs.len() <= int_len {
            format!("{}{}", digs, "0".repeat(int_len - digs.len()))
        } else {
            format!("{}.{}", &digs[..int_len], &digs[int_len..])
        }
    }
}

/// Go's encoding/json float64: `'f'` format unless below 1e-6 or from 1e21 up.
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (digs, exp) = digits(f);
        let sign = if f < 0.0 { "-" } else { "" };
        let mut m = digs[..1].to_string();
        if digs.len() > 1 {
            m.push('.');
            m.push_str(&digs[1..]);
        }
        let (es, ea) = if exp < 0 { ('-', -exp) } else { ('+', exp) };
        return format!("{sign}{m}e{es}{ea}");
    }
    if f == 0.0 {
        return "0".into();
    }
    let (digs, exp) = digits(f);
    let sign = if f < 0.0 { "-" } else { "" };
    format!("{sign}{}", fixed(&digs, exp))
}

/// Go's `json.Marshal` of a decoded value: keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped.
fn go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Number(n) => match n.as_i64() {
            Some(i) => {
                let _ = write!(out, "{i}");
            }
            None => out.push_str(&go_json_float(n.as_f64().unwrap_or_default())),
        },
        Value::String(s) => go_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                go_json(&m[k], out);
            }
            out.push('}');
        }
    }
}

fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// kubectl's RelaxedJSONPathExpression: `.a.b`, `a.b`, `{a.b}` and `{.a.b}` all mean `{.a.b}`.
pub fn relaxed(expr: &str) -> Result<String, String> {
    if expr.is_empty() {
        return Ok(String::new());
    }
    // `^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`: the dot is optional only while a character is left.
    let group = |body: &'_ str| -> Option<String> {
        if body.is_empty() || body.contains(['{', '}']) {
            return None;
        }
        Some(body.strip_prefix('.').filter(|b| !b.is_empty()).unwrap_or(body).to_string())
    };
    let braced = (expr.len() >= 2 && expr.starts_with('{') && expr.ends_with('}'))
        .then(|| group(&expr[1..expr.len() - 1]))
        .flatten();
    let inner = braced.or_else(|| group(expr));
    match inner {
        Some(e) => Ok(format!("{{.{e}}}")),
        None => Err(
            "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'"
                .into(),
        ),
    }
}

/// How `kubectl get --sort-by` orders two values (kubectl's sorter.go): nothing found first,
/// numbers by value, text byte by byte. (kubectl also orders two texts that both parse as
/// quantities, `1Gi` and `500Mi`, by amount; the waiting Workloads' entries hold none.)
pub fn sort_order(a: Option<&Value>, b: Option<&Value>) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let less = |x: &Value, y: &Value| -> bool {
        match (x, y) {
            (Value::Number(m), Value::Number(n)) => match (m.as_i64(), n.as_i64()) {
                (Some(i), Some(j)) => i < j,
                _ => m.as_f64().unwrap_or_default() < n.as_f64().unwrap_or_default(),
            },
            (Value::String(s), Value::String(t)) => s < t,
            (Value::Bool(p), Value::Bool(q)) => !p & q,
            _ => false,
        }
    };
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) if less(x, y) => Ordering::Less,
        (Some(x), Some(y)) if less(y, x) => Ordering::Greater,
        _ => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(t: &str, doc: &str) -> Result<String, String> {
        let doc: Value = serde_json::from_str(doc).unwrap();
        Template::parse(t)?.execute(&doc, false)
    }

    #[test]
    fn fields_ranges_filters_and_text() {
        let doc = r#"{"a":{"b":"x"},"items":[{"n":"p","v":1},{"n":"q","v":2}],"f":1.5}"#;
        assert_eq!(run("{.a.b}", doc).unwrap(), "x");
        assert_eq!(run("{.items[*].n}", doc).unwrap(), "p q");
        assert_eq!(run(r#"{range .items[*]}{.n}{"\n"}{end}"#, doc).unwrap(), "p\nq\n");
        assert_eq!(run("{.items[?(@.v>1)].n}", doc).unwrap(), "q");
        assert_eq!(run("{.items[-1:].n}", doc).unwrap(), "q");
        assert_eq!(run("{.a}", doc).unwrap(), r#"{"b":"x"}"#);
        assert_eq!(run("{.f}", doc).unwrap(), "1.5");
        assert_eq!(run("{.nope}", doc).unwrap_err(), "nope is not found");
        assert_eq!(Template::parse("{.a[").unwrap_err(), "unterminated array");
        assert_eq!(run("{end}", doc).unwrap_err(), "not in range, nothing to end");
    }

    #[test]
    fn floats_print_as_go_prints_them() {
        assert_eq!(go_float_v(1e6), "1e+06");
        assert_eq!(go_float_v(123456.0), "123456");
        assert_eq!(go_float_v(0.0001), "0.0001");
        assert_eq!(go_float_v(0.00001), "1e-05");
        assert_eq!(go_json_float(1e21), "1e+21");
        assert_eq!(go_json_float(1e20), "100000000000000000000");
        assert_eq!(go_json_float(0.0000001), "1e-7");
    }

    #[test]
    fn relaxed_paths() {
        assert_eq!(relaxed(".a.b").unwrap(), "{.a.b}");
        assert_eq!(relaxed("a.b").unwrap(), "{.a.b}");
        assert_eq!(relaxed("{.a.b}").unwrap(), "{.a.b}");
        assert_eq!(relaxed("{a}").unwrap(), "{.a}");
        assert!(relaxed("{.a}{.b}").is_err());
    }
}
