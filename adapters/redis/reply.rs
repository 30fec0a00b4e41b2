//! Reading RESP2/RESP3 replies: text, `INFO` sections, JSON for the result file, neighbours.

use super::*;

/// Text of a bulk, simple or verbatim string reply.
pub(super) fn value_text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::Okay => "OK".into(),
        Value::Int(i) => i.to_string(),
        Value::Double(x) => x.to_string(),
        other => format!("{other:?}"),
    }
}

/// The text of a string reply without copying it; `None` for other replies and invalid UTF-8.
fn borrowed_text(v: &Value) -> Option<&str> {
    match v {
        Value::BulkString(b) => std::str::from_utf8(b).ok(),
        Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => Some(s),
        _ => None,
    }
}

/// `INFO` text (`field:value` lines, `# Section` headers) as a map.
pub(super) fn parse_info(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Converts a reply to JSON; numbers stay numbers, strings that are numbers become numbers.
pub(super) fn value_to_json(v: &Value) -> Json {
    match v {
        Value::Nil => Json::Null,
        Value::Int(i) => (*i).into(),
        Value::Double(x) => serde_json::Number::from_f64(*x).map_or(Json::Null, Json::Number),
        Value::Boolean(b) => (*b).into(),
        Value::Array(items) | Value::Set(items) => {
            Json::Array(items.iter().map(value_to_json).collect())
        }
        Value::Map(_) => Json::Object(pairs_to_json(v)),
        other => {
            let text = value_text(other);
            if let Ok(i) = text.parse::<i64>() {
                i.into()
            } else {
                text.into()
            }
        }
    }
}

/// A `field value field value ...` reply (RESP2 array or RESP3 map) as a JSON object.
pub(super) fn pairs_to_json(v: &Value) -> Map<String, Json> {
    let mut m = Map::new();
    match v {
        Value::Array(items) => {
            for pair in items.chunks_exact(2) {
                m.insert(value_text(&pair[0]), value_to_json(&pair[1]));
            }
        }
        Value::Map(pairs) => {
            for (k, v) in pairs {
                m.insert(value_text(k), value_to_json(v));
            }
        }
        other => {
            m.insert("reply".into(), value_to_json(other));
        }
    }
    m
}

/// Parses a `VSIM ... WITHSCORES` reply: RESP2 gives `[element, score, ...]` (scores as
/// strings), RESP3 a map of element to double. Both are best first.
pub(super) fn parse_neighbors(reply: &Value, out: &mut Vec<Neighbor>) -> Result<(), String> {
    out.clear();
    // Parsed in place from the reply's bytes: this runs once per query in the timed loop, and
    // a `String` per value was a third of the client CPU the adapter spent beyond a bare loop.
    let element = |v: &Value| -> Result<PointId, String> {
        match v {
            Value::Int(i) => PointId::try_from(*i).ok(),
            other => borrowed_text(other).and_then(|t| t.parse::<PointId>().ok()),
        }
        .ok_or_else(|| {
                format!(
                    "element `{}` is not a ragdbeval id (a decimal u64)",
                    value_text(v)
                )
            })
    };
    let score = |v: &Value| -> Result<f32, String> {
        match v {
            Value::Double(x) => Ok(*x as f32),
            other => borrowed_text(other)
                .and_then(|t| t.parse::<f32>().ok())
                .ok_or_else(|| format!("score `{}` is not a number", value_text(other))),
        }
    };
    match reply {
        Value::Array(items) => {
            if items.len() % 2 != 0 {
                return Err(format!(
                    "expected element/score pairs, got {} values",
                    items.len()
                ));
            }
            for pair in items.chunks_exact(2) {
                out.push(Neighbor {
                    id: element(&pair[0])?,
                    score: score(&pair[1])?,
                });
            }
        }
        Value::Map(pairs) => {
            for (k, v) in pairs {
                out.push(Neighbor {
                    id: element(k)?,
                    score: score(v)?,
                });
            }
        }
        Value::Nil => {}
        other => return Err(format!("unexpected reply {other:?}")),
    }
    Ok(())
}
