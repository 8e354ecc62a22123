//! The template's syntax: client-go's parser.go, step for step.

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Node {
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
pub(super) struct Param {
    pub(super) value: i64,
    pub(super) known: bool,
    pub(super) derived: bool,
}

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    width: usize,
}

const EOF: Option<char> = None;

pub(super) fn parse(text: &str) -> Result<Vec<Node>, String> {
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
                // `[n]` is the slice `n:n+1`. Go's `n+1` wraps at the top of int64 to its
                // bottom, and index n is then out of bounds of any array whatever the end; an
                // open end (the array's length) gives the same error without the wrap.
                if let Some(end) = params[0].value.checked_add(1) {
                    params[i].known = true;
                    params[i].value = end;
                    params[i].derived = true;
                }
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
