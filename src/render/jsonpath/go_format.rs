//! JSON values printed as Go prints them: `fmt`'s `%v` (custom-columns' cells and jsonpath's
//! text) and `encoding/json` (an object or array a jsonpath prints).

use std::fmt::Write as _;

use serde_json::Value;

/// Go's `%v` of a value decoded from JSON (`map[a:1 b:x]`, `[1 2]`, `<nil>`).
pub(super) fn go_v_json(d: &Value, out: &mut String) {
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
pub(super) fn go_json(v: &Value, out: &mut String) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
