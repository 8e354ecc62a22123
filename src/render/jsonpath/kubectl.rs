//! What kubectl adds around client-go's jsonpath: its relaxed paths (custom-columns and
//! `--sort-by`) and `--sort-by`'s order.

use serde_json::Value;

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

/// `--sort-by`: `rows` ordered by what `template` finds in each one's `-o json` entry
/// (`doc`), as `kubectl get --sort-by` orders objects ([`sort_order`]); stable, so equal keys
/// keep their order.
pub fn sort_by<T>(rows: Vec<T>, template: &super::Template, doc: impl Fn(&T) -> Value) -> Vec<T> {
    let mut keyed: Vec<(Option<Value>, T)> = rows
        .into_iter()
        .map(|row| {
            let entry = doc(&row);
            let found = template.find(&entry, true).ok();
            let key = found.and_then(|f| f.into_iter().flatten().next().and_then(|v| v.value()));
            (key, row)
        })
        .collect();
    keyed.sort_by(|(a, _), (b, _)| sort_order(a.as_ref(), b.as_ref()));
    keyed.into_iter().map(|(_, row)| row).collect()
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

    #[test]
    fn relaxed_paths() {
        assert_eq!(relaxed(".a.b").unwrap(), "{.a.b}");
        assert_eq!(relaxed("a.b").unwrap(), "{.a.b}");
        assert_eq!(relaxed("{.a.b}").unwrap(), "{.a.b}");
        assert_eq!(relaxed("{a}").unwrap(), "{.a}");
        assert!(relaxed("{.a}{.b}").is_err());
    }
}
