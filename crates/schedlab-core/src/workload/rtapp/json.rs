//! JSON as rt-app reads it: objects keep their keys in file order (an rt-app
//! phase runs its events in the order written) and keep repeated keys; C and
//! C++ comments are allowed, as json-c (rt-app's parser) allows them. The
//! relaxed form rt-app's `workgen` script accepts and rewrites before rt-app
//! runs (rt-app's doc/tutorial.txt, "json file skeleton") is accepted too:
//! repeated event keys (workgen numbers them in order), `suspend`, `resume`
//! and `yield` without a value (workgen fills in the thread's name), and a
//! comma before a closing brace or bracket.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A JSON value whose objects keep their order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum JVal {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<JVal>),
    Obj(Vec<(String, JVal)>),
}

impl JVal {
    /// What kind of value this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            JVal::Null => "null",
            JVal::Bool(_) => "a boolean",
            JVal::Int(_) => "an integer",
            JVal::Float(_) => "a number with a fraction",
            JVal::Str(_) => "a string",
            JVal::Arr(_) => "an array",
            JVal::Obj(_) => "an object",
        }
    }
}

/// Parses `text` (JSON with comments, in workgen's relaxed form) into a [`JVal`].
pub(crate) fn parse(text: &str) -> Result<JVal, String> {
    let clean = workgen_relax(&strip_comments(text)?);
    let mut de = serde_json::Deserializer::from_str(&clean);
    let v = JVal::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

/// workgen's rewrites: `"suspend",` (a key alone) becomes `"suspend": "",`
/// for the events that take an optional name, and a comma before `}` or `]`
/// goes. Strings are left alone.
fn workgen_relax(text: &str) -> String {
    const BARE: [&str; 3] = ["suspend", "resume", "yield"];
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    // The last byte that is not whitespace, outside strings: `{`, `,` ...
    let mut last = b'{';
    while i < b.len() {
        let c = b[i];
        if c == b'"' {
            // A whole string.
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            let s = &text[start..i];
            out.push_str(s);
            // A key alone: after `{` or `,`, followed by `,` or `}`.
            let next = text[i..].trim_start().as_bytes().first().copied();
            let name = s.trim_matches('"');
            if (last == b'{' || last == b',')
                && matches!(next, Some(b',') | Some(b'}'))
                && BARE.iter().any(|e| name.starts_with(e))
            {
                out.push_str(": \"\"");
            }
            last = b'"';
            continue;
        }
        if c == b',' {
            // Drop it when a closing brace or bracket comes next.
            let next = text[i + 1..].trim_start().as_bytes().first().copied();
            if matches!(next, Some(b'}') | Some(b']')) {
                i += 1;
                continue;
            }
        }
        if !c.is_ascii_whitespace() {
            last = c;
        }
        out.push(c as char);
        i += 1;
    }
    out
}

/// Replaces `/* ... */` and `// ...` comments outside strings with spaces
/// (newlines kept, so serde's line numbers stay those of the file).
fn strip_comments(text: &str) -> Result<String, String> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            out.push(c);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1]);
                i += 2;
                continue;
            }
            in_str = c != b'"';
            i += 1;
            continue;
        }
        match (c, b.get(i + 1)) {
            (b'"', _) => {
                in_str = true;
                out.push(c);
                i += 1;
            }
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    out.push(b' ');
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                let line = 1 + text[..i].matches('\n').count();
                let Some(end) = text[i + 2..].find("*/") else {
                    return Err(format!("a comment opened at line {line} is never closed"));
                };
                for &x in &b[i..i + 2 + end + 2] {
                    out.push(if x == b'\n' { b'\n' } else { b' ' });
                }
                i += end + 4;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    // Only whole ASCII bytes were replaced: still UTF-8.
    String::from_utf8(out).map_err(|e| e.to_string())
}

impl<'de> Deserialize<'de> for JVal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JVal, D::Error> {
        d.deserialize_any(JValVisitor)
    }
}

struct JValVisitor;

impl<'de> Visitor<'de> for JValVisitor {
    type Value = JVal;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<JVal, E> {
        Ok(JVal::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<JVal, E> {
        Ok(JVal::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<JVal, E> {
        Ok(JVal::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<JVal, E> {
        i64::try_from(v).map(JVal::Int).map_err(|_| E::custom(format!("integer {v} is too large")))
    }
    fn visit_f64<E>(self, v: f64) -> Result<JVal, E> {
        Ok(JVal::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<JVal, E> {
        Ok(JVal::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<JVal, E> {
        Ok(JVal::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JVal, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(JVal::Arr(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JVal, A::Error> {
        let mut v = Vec::new();
        while let Some((k, x)) = map.next_entry::<String, JVal>()? {
            v.push((k, x));
        }
        Ok(JVal::Obj(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_repeated_keys() {
        let v = parse(r#"{"b": 1, "a": {"run": 2, "sleep": 3, "run": 4}}"#).unwrap();
        let JVal::Obj(items) = &v else { panic!() };
        assert_eq!(items[0].0, "b");
        let JVal::Obj(a) = &items[1].1 else { panic!() };
        assert_eq!(a.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["run", "sleep", "run"]);
    }

    #[test]
    fn workgen_shorthands_are_expanded() {
        let v = parse("{\"t\": {\"suspend\", \"run\": 5, \"resume\": \"u\", \"s\": [\"suspend\", 1,],},}").unwrap();
        let JVal::Obj(top) = &v else { panic!() };
        let JVal::Obj(t) = &top[0].1 else { panic!() };
        assert_eq!(t[0], ("suspend".to_string(), JVal::Str(String::new())));
        assert_eq!(t[2], ("resume".to_string(), JVal::Str("u".into())));
        // In an array, a string stays a string.
        assert_eq!(t[3].1, JVal::Arr(vec![JVal::Str("suspend".into()), JVal::Int(1)]));
    }

    #[test]
    fn comments_are_blanks_outside_strings() {
        let v = parse("{ /* a\n comment */ \"x\": \"/* not one */\", // line\n \"y\": 2 }").unwrap();
        assert_eq!(v, JVal::Obj(vec![("x".into(), JVal::Str("/* not one */".into())), ("y".into(), JVal::Int(2))]));
        assert!(parse("{ /* open").unwrap_err().contains("never closed"));
        assert!(parse("{\"a\": 1} trailing").is_err());
    }
}
