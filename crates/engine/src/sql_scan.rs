//! A query text's shape read without the SQL tokenizer. Looking a text's shape up is the first
//! step of every SQL query ([`super::sql_prepared::lift`]), and tokenizing it was a noticeable
//! part of a fresh query's time (each word looked up among the keywords, each token its own
//! string).
//!
//! [`scan`] reads the texts a dashboard or a notebook sends: words, plain numbers (`12`, `1.5`),
//! strings whose only escape is a doubled quote, quoted names, client placeholders (`$1`),
//! operators and whitespace. Anything else (a comment, `1e3`, `x'ff'`, `E'..'`, `$$..$$`, `@x`,
//! brackets, a backslash, a control character, a non-ASCII character outside quotes) is not
//! scanned, and the tokenizer reads the text. Where it scans, it reads a literal exactly as the
//! tokenizer does: the same start, the same end, the same value. Everything between literals is
//! kept as written (whitespace outside quotes as one space), so two texts of one shape tokenize
//! alike but for their literals.

use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::tokenizer::Location;

/// A literal of a text: where it starts (line and column, in characters, as the tokenizer
/// counts), the value it stands for when lifted, and its text (a string's without its quotes,
/// doubled quotes undone).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Literal {
    pub at: Location,
    pub value: ScalarValue,
    pub text: String,
}

/// The mark of a number literal in a shape, and of a string: a literal's kind is part of its
/// text's shape (`SELECT 5` and `SELECT '5'` are different statements). A scanned text holds no
/// NUL.
pub(crate) const NUMBER: &str = "\0number";
pub(crate) const STRING: &str = "\0string";

/// `sql`'s shape and its literals, or none when it holds anything but what this reads (see the
/// module). A number that is no value (an integer beyond i64) is kept in the shape as written, as
/// the tokenizer's shape keeps it.
pub(crate) fn scan(sql: &str) -> Option<(String, Vec<Literal>)> {
    let b = sql.as_bytes();
    let mut shape = String::with_capacity(sql.len());
    let mut literals = Vec::new();
    let mut at = Location { line: 1, column: 1 };
    let mut i = 0;
    while i < b.len() {
        let start = at;
        let end = match b[i] {
            b' ' | b'\t' | b'\n' | b'\r' => {
                if !shape.ends_with(' ') {
                    shape.push(' ');
                }
                i + 1
            }
            b'\'' => {
                // A prefix (`E'`, `x'`, `N'`, `U&'`...) makes another literal.
                if i > 0 && (word(b[i - 1]) || matches!(b[i - 1], b'&' | b'.' | b'"' | b'`')) {
                    return None;
                }
                let (text, end) = string(b, i)?;
                if b.get(end)
                    .is_some_and(|&c| word(c) || quote(c) || c == b'.')
                {
                    return None;
                }
                shape.push_str(STRING);
                literals.push(Literal {
                    at: start,
                    value: ScalarValue::Utf8(Some(text.clone())),
                    text,
                });
                end
            }
            b'0'..=b'9' => {
                if i > 0 && (word(b[i - 1]) || b[i - 1] == b'.') {
                    return None;
                }
                let mut end = digits(b, i);
                if b.get(end) == Some(&b'.') {
                    let fraction = digits(b, end + 1);
                    if fraction == end + 1 {
                        return None;
                    }
                    end = fraction;
                }
                // `1e3`, `0x1f`, `1.5.2`, `12abc`: the tokenizer's business.
                if b.get(end)
                    .is_some_and(|&c| word(c) || quote(c) || c == b'.')
                {
                    return None;
                }
                let text = &sql[i..end];
                match number_value(text) {
                    Some(value) => {
                        shape.push_str(NUMBER);
                        literals.push(Literal {
                            at: start,
                            value,
                            text: text.to_string(),
                        });
                    }
                    None => shape.push_str(text),
                }
                end
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let end = i + b[i..].iter().take_while(|&&c| word(c)).count();
                shape.push_str(&sql[i..end]);
                end
            }
            b'"' | b'`' => {
                let close = b[i + 1..].iter().position(|&c| c == b[i])?;
                let end = i + close + 2;
                if sql[i..end].chars().any(char::is_control) {
                    return None;
                }
                shape.push_str(&sql[i..end]);
                end
            }
            b'$' => {
                let end = digits(b, i + 1);
                if end == i + 1 || b.get(end).is_some_and(|&c| word(c) || quote(c)) {
                    return None;
                }
                shape.push_str(&sql[i..end]);
                end
            }
            b'-' if b.get(i + 1) == Some(&b'-') => return None,
            b'/' if b.get(i + 1) == Some(&b'*') => return None,
            b'(' | b')' | b',' | b'.' | b';' | b'=' | b'<' | b'>' | b'!' | b'+' | b'-' | b'*'
            | b'/' | b'%' | b'|' | b'&' | b'^' | b'~' | b':' => {
                shape.push(char::from(b[i]));
                i + 1
            }
            _ => return None,
        };
        advance(&mut at, &sql[i..end]);
        i = end;
    }
    Some((shape, literals))
}

/// A number literal's value: Int64 when it fits, else Float64 when it has a point or an exponent
/// and is finite.
pub(crate) fn number_value(n: &str) -> Option<ScalarValue> {
    if let Ok(i) = n.parse::<i64>() {
        Some(ScalarValue::Int64(Some(i)))
    } else if n.contains(['.', 'e', 'E']) {
        n.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(|f| ScalarValue::Float64(Some(f)))
    } else {
        None
    }
}

/// Whether `c` continues a word (as the generic dialect's identifiers, `@` and `#` aside: they
/// are not scanned).
fn word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

fn quote(c: u8) -> bool {
    matches!(c, b'\'' | b'"' | b'`')
}

/// The end of the ASCII digits of `b` from `i`.
fn digits(b: &[u8], i: usize) -> usize {
    i + b
        .get(i..)
        .map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count())
}

/// The string literal opening at `b[i]`: its text, doubled quotes undone, and the end of its
/// closing quote; none if it is not closed or holds a backslash or a control character (the
/// tokenizer's).
fn string(b: &[u8], i: usize) -> Option<(String, usize)> {
    let mut text = Vec::new();
    let mut j = i + 1;
    loop {
        let n = b.get(j..)?.iter().position(|&c| c == b'\'' || c == b'\\')?;
        text.extend_from_slice(&b[j..j + n]);
        j += n;
        if b[j] == b'\\' {
            return None;
        }
        if b.get(j + 1) == Some(&b'\'') {
            text.push(b'\'');
            j += 2;
        } else {
            // Between two ASCII quotes of a str: whole characters.
            let text = String::from_utf8(text).ok()?;
            if text
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r')
            {
                return None;
            }
            return Some((text, j + 1));
        }
    }
}

/// `at` moved past `s` as the tokenizer counts: a line feed starts a line, every other
/// character is a column.
fn advance(at: &mut Location, s: &str) {
    for c in s.chars() {
        if c == '\n' {
            at.line += 1;
            at.column = 1;
        } else {
            at.column += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

    /// The literals the tokenizer reads in `sql`: where, and their token's text.
    fn tokenized(sql: &str) -> Vec<(Location, String)> {
        Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap()
            .into_iter()
            .filter_map(|t| match t.token {
                Token::Number(n, false) => Some((t.span.start, n)),
                Token::SingleQuotedString(s) => Some((t.span.start, s)),
                _ => None,
            })
            .collect()
    }

    /// `sql`'s tokens, each liftable literal as its kind and each run of whitespace as one.
    fn kinds(sql: &str) -> Vec<Token> {
        let mut out: Vec<Token> = Vec::new();
        for t in Tokenizer::new(&GenericDialect {}, sql).tokenize().unwrap() {
            let t = match t {
                Token::Number(n, false) if super::number_value(&n).is_some() => {
                    Token::Placeholder(NUMBER.into())
                }
                Token::SingleQuotedString(_) => Token::Placeholder(STRING.into()),
                Token::Whitespace(_) => Token::Whitespace(Whitespace::Space),
                t => t,
            };
            if !(matches!(t, Token::Whitespace(_))
                && matches!(out.last(), Some(Token::Whitespace(_))))
            {
                out.push(t);
            }
        }
        out
    }

    /// Every scanned literal is a literal of the tokenizer's, at the same place with the same
    /// text, and none is missed, over texts with strings that hold quotes, newlines, non-ASCII
    /// characters and things that look like comments, numbers next to operators, quoted names
    /// that hold quotes, and placeholders.
    #[test]
    fn literals_are_the_tokenizers() {
        let texts = [
            "SELECT run_id FROM llm_runs WHERE task = 'gpqa' AND max_num_seqs >= 64 AND num_gpus<=8 ORDER BY energy_per_token_joules, run_id LIMIT 17",
            "select \"model id\", 'it''s -- not a comment' as x from t where y in (1,2.50,3) and z=-4",
            "SELECT * FROM llm_runs\n WHERE task = 'a\nb'\n\tAND num_gpus > 2 AND gpu_model = 'H100 ✓' AND \"naïve 'x'\" = 3",
            "SELECT a FROM t WHERE b = $1 AND c = $12 AND d = '' AND e = '''' AND f = 007",
            "SELECT `a'b`, x::text, y->>'k' FROM t WHERE (a+1)*2 <> 3 % 2 OR b || 'x' = 'yx'; ",
            "SELECT 99999999999999999999 AS big, 0.000 AS zero",
        ];
        for text in texts {
            let (shape, literals) = scan(text).unwrap_or_else(|| panic!("{text}"));
            let ours: Vec<(Location, String)> =
                literals.iter().map(|l| (l.at, l.text.clone())).collect();
            let theirs: Vec<(Location, String)> = tokenized(text)
                .into_iter()
                .filter(|(_, t)| t != "99999999999999999999")
                .collect();
            assert_eq!(ours, theirs, "{text}");
            assert!(!shape.contains("  "), "{shape}");
        }
        let (shape, literals) = scan("SELECT '5', 5,  5.0 FROM t WHERE x = 'a''b'").unwrap();
        assert_eq!(
            shape,
            "SELECT \0string, \0number, \0number FROM t WHERE x = \0string"
        );
        assert_eq!(
            literals.iter().map(|l| &l.value).collect::<Vec<_>>(),
            [
                &ScalarValue::Utf8(Some("5".into())),
                &ScalarValue::Int64(Some(5)),
                &ScalarValue::Float64(Some(5.0)),
                &ScalarValue::Utf8(Some("a'b".into())),
            ]
        );
    }

    /// Texts glued at random from fragments (quotes, digits, dots, signs, words, placeholders,
    /// whitespace, comment starts, prefixes, non-ASCII): wherever one is scanned, its literals
    /// are the tokenizer's, and another text of its shape tokenizes alike but for its literals.
    #[test]
    fn random_texts_scan_as_they_tokenize() {
        let fragments = [
            "'", "''", "'a'", "'it''s'", "\"", "\"q\"", "`", "1", "23", "4.5", ".", "0", "e", "x",
            "-", "--", "/", "*", " ", "\n", "\t", "\r\n", "$", "$1", "?", ":", "::", "(", ")", ",",
            "=", "<", ">", "!", "|", "&", "N", "E", "é", "✓", "\\", "@", "#", "[", "{", ";", "_",
            "SELECT", "WHERE", "AND", "IN",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % n
        };
        let mut scanned = 0;
        for _ in 0..100_000 {
            let text: String = (0..1 + next(12))
                .map(|_| fragments[next(fragments.len())])
                .collect();
            let Some((shape, literals)) = scan(&text) else {
                continue;
            };
            let Ok(tokens) = Tokenizer::new(&GenericDialect {}, &text).tokenize_with_location()
            else {
                continue;
            };
            scanned += usize::from(!literals.is_empty());
            let theirs: Vec<(Location, String)> = tokens
                .into_iter()
                .filter_map(|t| match t.token {
                    Token::Number(n, false) if super::number_value(&n).is_some() => {
                        Some((t.span.start, n))
                    }
                    Token::SingleQuotedString(s) => Some((t.span.start, s)),
                    _ => None,
                })
                .collect();
            let ours: Vec<(Location, String)> =
                literals.iter().map(|l| (l.at, l.text.clone())).collect();
            assert_eq!(ours, theirs, "{text:?}");
            assert!(!shape.contains("  "), "{text:?}");
            // Another text of its shape (other values, one space for each run of whitespace)
            // tokenizes alike but for its literals' values.
            let other = shape.replace(NUMBER, "77").replace(STRING, "'z''z'");
            assert_eq!(
                scan(&other).map(|(s, _)| s),
                Some(shape.clone()),
                "{text:?}"
            );
            assert_eq!(kinds(&text), kinds(&other), "{text:?}");
        }
        // Texts with literals scanned and compared.
        assert!(scanned > 4_000, "{scanned}");
    }

    /// What the tokenizer reads otherwise than a plain literal is left to it.
    #[test]
    fn the_rest_is_not_scanned() {
        for text in [
            "SELECT 1 -- a comment",
            "SELECT /* a comment */ 1",
            "SELECT 1e3",
            "SELECT 0x1f",
            "SELECT 1.",
            "SELECT .5",
            "SELECT t.5",
            "SELECT 1.5.2",
            "SELECT 12abc",
            "SELECT E'a\\n'",
            "SELECT x'ff'",
            "SELECT N'a'",
            "SELECT U&'a'",
            "SELECT 'a\\'b'",
            "SELECT 'unclosed",
            "SELECT \"unclosed",
            "SELECT $$a$$",
            "SELECT $tag$a$tag$",
            "SELECT $1a",
            "SELECT ?1",
            "SELECT @x",
            "SELECT #x",
            "SELECT [1, 2]",
            "SELECT {'a': 1}",
            "SELECT 'a'b",
            "SELECT 'a'.b",
            "SELECT 'a\u{1}'",
            "SELECT é",
            "SELECT \u{0}",
        ] {
            assert!(scan(text).is_none(), "{text}");
        }
    }
}
