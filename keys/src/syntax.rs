//! The text form of a key design, for the command line.
//!
//! A design is written as its parts in order, separated by spaces:
//!
//! ```text
//! salt(user,16) "#" pad(user,12) "#" revts(ms,19) "#" field(order_id)
//! ```
//!
//! | part | bytes |
//! |---|---|
//! | `field(f)` | the field as text |
//! | `pad(f,W)` | zero-padded decimal, `W` digits |
//! | `u64(f)` | 8 bytes big-endian unsigned |
//! | `long(f)` | 8 bytes as HBase `Bytes.toBytes(long)` (raw two's complement) |
//! | `flip(f)` | 8 bytes with the sign bit flipped |
//! | `ts(ms)`, `ts(ms,8)` | timestamp as 13 digits, or as 8 bytes |
//! | `revts(ms,19)`, `revts(ms,8)` | `Long.MAX_VALUE - ts` as 19 digits or 8 bytes |
//! | `hour(ts)`, `day(ts)`, `month(ts)` | the hour, day or month bucket: `YYYYMMDDHH`, `YYYYMMDD`, `YYYYMM` |
//! | `salt(f,N)` | `hash(f) mod N`, zero-padded |
//! | `rr(N)` or `salt(*,N)` | round-robin salt per write |
//! | `hash(f,D)` | first `D` hex digits of `hash(f)` |
//! | `const(x)` | fixed bytes naming the data |
//! | `"#"` | a separator; `\xNN` escapes allowed |
//! | `\|` | ends the partition key (hashed stores) |
//!
//! [`parse`] reads this form; `KeyDesign`'s `Display` writes it back.

use std::fmt;

use crate::encoding::to_string_binary;
use crate::error::{Error, Result};
use crate::key::{FieldEncoding, KeyDesign, Part, TimeForm};

/// An argument inside `name(...)`.
#[derive(Debug)]
enum Arg {
    Word(String),
    Text(Vec<u8>),
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

fn syntax(offset: usize, what: impl Into<String>) -> Error {
    Error::Syntax {
        offset,
        what: what.into(),
    }
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.text.get(self.at).is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    /// What is at the cursor, for an error: the character (the cursor
    /// only ever passes ASCII, so it is on a character's first byte), or
    /// the end.
    fn found(&self) -> String {
        let rest = String::from_utf8_lossy(self.text.get(self.at..).unwrap_or_default());
        match rest.chars().next() {
            Some(c) => format!("{c:?}"),
            None => "the end of the key".to_string(),
        }
    }

    fn word(&mut self) -> String {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'*' || b == b'-' || b == b'.')
        {
            self.at += 1;
        }
        String::from_utf8_lossy(&self.text[start..self.at]).into_owned()
    }

    /// A quoted string with `\xNN`, `\\` and `\"` escapes; `at` is on the quote.
    fn quoted(&mut self) -> Result<Vec<u8>> {
        let open = self.at;
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err(syntax(open, "unterminated string")),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let escape = self.at;
                    match self.text.get(self.at + 1).copied() {
                        Some(b'x') | Some(b'X') => {
                            let hex = self
                                .text
                                .get(self.at + 2..self.at + 4)
                                // Digits only: from_str_radix alone takes a sign ("+f").
                                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u8::from_str_radix(h, 16).ok())
                                .ok_or_else(|| syntax(escape, "\\x needs two hex digits"))?;
                            out.push(hex);
                            self.at += 4;
                        }
                        Some(c @ (b'\\' | b'"')) => {
                            out.push(c);
                            self.at += 2;
                        }
                        _ => return Err(syntax(escape, "unknown escape: use \\xNN, \\\\ or \\\"")),
                    }
                }
                Some(b) => {
                    out.push(b);
                    self.at += 1;
                }
            }
        }
    }

    fn args(&mut self) -> Result<Vec<(usize, Arg)>> {
        let mut args = Vec::new();
        self.skip_space();
        if self.peek() == Some(b')') {
            self.at += 1;
            return Ok(args);
        }
        loop {
            self.skip_space();
            let at = self.at;
            let arg = if self.peek() == Some(b'"') {
                Arg::Text(self.quoted()?)
            } else {
                let w = self.word();
                if w.is_empty() {
                    let expected = "expected an argument (a name, a number or a \"quoted\" string)";
                    return Err(syntax(at, format!("{expected}, found {}", self.found())));
                }
                Arg::Word(w)
            };
            args.push((at, arg));
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b')') => {
                    self.at += 1;
                    return Ok(args);
                }
                _ => return Err(syntax(self.at, format!("expected ',' or ')', found {}", self.found()))),
            }
        }
    }
}

fn word_arg(args: &[(usize, Arg)], i: usize, call_at: usize, what: &str) -> Result<String> {
    match args.get(i) {
        Some((_, Arg::Word(w))) => Ok(w.clone()),
        Some((at, Arg::Text(_))) => Err(syntax(*at, format!("expected {what}, not a string"))),
        None => Err(syntax(call_at, format!("missing {what}"))),
    }
}

fn number_arg(args: &[(usize, Arg)], i: usize, call_at: usize, what: &str) -> Result<u64> {
    let w = word_arg(args, i, call_at, what)?;
    let at = args.get(i).map_or(call_at, |(at, _)| *at);
    w.parse::<u64>()
        .map_err(|_| syntax(at, format!("expected {what} as a number, found {w:?}")))
}

fn arity(args: &[(usize, Arg)], allowed: &[usize], call_at: usize, name: &str) -> Result<()> {
    if allowed.contains(&args.len()) {
        Ok(())
    } else {
        Err(syntax(
            call_at,
            format!("{name}(..) takes {allowed:?} arguments, found {}", args.len()),
        ))
    }
}

/// The widest `pad(f,W)`.
const MAX_PAD: u64 = 64;

fn small<T: TryFrom<u64>>(v: u64, at: usize, what: &str) -> Result<T> {
    T::try_from(v).map_err(|_| syntax(at, format!("{what} {v} is too large")))
}

/// Parses a design written in the key syntax.
///
/// ```
/// use cellar_keys::syntax::parse;
/// let key = parse(r##"pad(customer,12) | revts(ms,19) "#" field(order_id)"##)?;
/// assert_eq!(key.parts.len(), 4);
/// assert_eq!(key.partition_parts, Some(1));
/// # Ok::<(), cellar_keys::Error>(())
/// ```
pub fn parse(text: &str) -> Result<KeyDesign> {
    let mut p = Parser {
        text: text.as_bytes(),
        at: 0,
    };
    let mut parts = Vec::new();
    let mut partition_parts = None;
    loop {
        p.skip_space();
        let at = p.at;
        match p.peek() {
            None => break,
            Some(b'"') => parts.push(Part::Separator(p.quoted()?)),
            Some(b'|') => {
                p.at += 1;
                if partition_parts.is_some() {
                    return Err(syntax(at, "the partition key can end only once"));
                }
                partition_parts = Some(parts.iter().filter(|x: &&Part| !x.is_literal()).count());
            }
            Some(_) => {
                let name = p.word();
                if name.is_empty() {
                    return Err(syntax(at, "expected a part such as field(name) or \"#\""));
                }
                p.skip_space();
                let args = if p.peek() == Some(b'(') {
                    p.at += 1;
                    p.args()?
                } else {
                    Vec::new()
                };
                parts.push(call(&name, &args, at)?);
            }
        }
    }
    if partition_parts == Some(0) {
        return Err(syntax(0, "the partition key needs a part before '|'"));
    }
    if parts.is_empty() {
        return Err(syntax(0, "empty key"));
    }
    Ok(KeyDesign { parts, partition_parts })
}

fn call(name: &str, args: &[(usize, Arg)], at: usize) -> Result<Part> {
    let field = |encoding| -> Result<Part> {
        arity(args, &[1], at, name)?;
        Ok(Part::Field {
            name: word_arg(args, 0, at, "a field name")?,
            encoding,
        })
    };
    match name {
        "field" => field(FieldEncoding::Text),
        "u64" => field(FieldEncoding::U64),
        "long" => field(FieldEncoding::RawLong),
        "flip" => field(FieldEncoding::FlippedLong),
        "pad" => {
            arity(args, &[2], at, name)?;
            let width = number_arg(args, 1, at, "a width")?;
            // A u64 has at most 20 digits; 64 leaves room for a design that
            // pads wider on purpose. Wider is refused, not cut: the report
            // must be about the key the user wrote.
            if width > MAX_PAD {
                return Err(syntax(at, format!("pad width {width} is over {MAX_PAD}")));
            }
            Ok(Part::Field {
                name: word_arg(args, 0, at, "a field name")?,
                encoding: FieldEncoding::Padded(small(width, at, "width")?),
            })
        }
        "ts" | "revts" => {
            arity(args, &[0, 1, 2], at, name)?;
            if let Some(unit) = args.first().map(|_| word_arg(args, 0, at, "a unit")).transpose()? {
                if unit != "ms" && unit != "bytes" {
                    return Err(syntax(at, format!("{name}(..) counts milliseconds: write {name}(ms,..)")));
                }
            }
            let bytes = matches!(args.first(), Some((_, Arg::Word(w))) if w == "bytes");
            let width = if args.len() == 2 {
                number_arg(args, 1, at, "a width")?
            } else if bytes {
                8
            } else if name == "ts" {
                13
            } else {
                19
            };
            match (name, width) {
                ("ts", 13) => Ok(Part::Timestamp(TimeForm::Millis13)),
                ("ts", 8) => Ok(Part::Timestamp(TimeForm::Bytes8)),
                ("revts", 19) => Ok(Part::Timestamp(TimeForm::Reversed19)),
                ("revts", 8) => Ok(Part::Timestamp(TimeForm::Reversed8)),
                _ => Err(syntax(
                    at,
                    format!("{name}(ms,{width}): use 13 digits or 8 bytes for ts, 19 digits or 8 bytes for revts"),
                )),
            }
        }
        "hour" | "day" | "month" => {
            arity(args, &[0, 1], at, name)?;
            Ok(Part::Timestamp(match name {
                "hour" => TimeForm::HourBucket,
                "day" => TimeForm::DayBucket,
                _ => TimeForm::MonthBucket,
            }))
        }
        "salt" => {
            arity(args, &[2], at, name)?;
            let buckets = small(number_arg(args, 1, at, "a bucket count")?, at, "bucket count")?;
            let field = word_arg(args, 0, at, "a field name or *")?;
            Ok(if field == "*" {
                Part::RoundRobin { buckets }
            } else {
                Part::Salt { field, buckets }
            })
        }
        "rr" => {
            arity(args, &[1], at, name)?;
            Ok(Part::RoundRobin {
                buckets: small(number_arg(args, 0, at, "a bucket count")?, at, "bucket count")?,
            })
        }
        "hash" => {
            arity(args, &[1, 2], at, name)?;
            let digits = if args.len() == 2 {
                number_arg(args, 1, at, "a digit count")?
            } else {
                4
            };
            Ok(Part::HashPrefix {
                field: word_arg(args, 0, at, "a field name")?,
                digits: small(digits, at, "digit count")?,
            })
        }
        "const" => {
            arity(args, &[1], at, name)?;
            Ok(Part::Constant(match args.first() {
                Some((_, Arg::Text(t))) => t.clone(),
                Some((_, Arg::Word(w))) => w.as_bytes().to_vec(),
                None => Vec::new(),
            }))
        }
        _ => Err(syntax(
            at,
            format!("unknown part {name:?}: use field, pad, u64, long, flip, ts, revts, hour, day, month, salt, rr, hash, const or \"sep\""),
        )),
    }
}

/// A literal in quotes, with `"` and non-printable bytes as `\xNN`.
fn quote(bytes: &[u8]) -> String {
    format!("\"{}\"", to_string_binary(bytes).replace('"', "\\x22"))
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Field { name, encoding } => match encoding {
                FieldEncoding::Text => write!(f, "field({name})"),
                FieldEncoding::Padded(w) => write!(f, "pad({name},{w})"),
                FieldEncoding::U64 => write!(f, "u64({name})"),
                FieldEncoding::RawLong => write!(f, "long({name})"),
                FieldEncoding::FlippedLong => write!(f, "flip({name})"),
            },
            Part::Timestamp(form) => f.write_str(match form {
                TimeForm::Millis13 => "ts(ms)",
                TimeForm::Bytes8 => "ts(ms,8)",
                TimeForm::Reversed19 => "revts(ms,19)",
                TimeForm::Reversed8 => "revts(ms,8)",
                TimeForm::HourBucket => "hour(ts)",
                TimeForm::DayBucket => "day(ts)",
                TimeForm::MonthBucket => "month(ts)",
            }),
            Part::Salt { field, buckets } => write!(f, "salt({field},{buckets})"),
            Part::RoundRobin { buckets } => write!(f, "rr({buckets})"),
            Part::HashPrefix { field, digits } => write!(f, "hash({field},{digits})"),
            Part::Constant(b) => write!(f, "const({})", quote(b)),
            Part::Separator(b) => f.write_str(&quote(b)),
        }
    }
}

impl fmt::Display for KeyDesign {
    /// The parts in key syntax, with `|` after the partition key when the
    /// design says where it ends. The bar is written even after the last
    /// part: without it, [`parse`] would read "the first value part" as the
    /// partition key, and a design kept as text (a table's catalog keeps
    /// its layouts so) would come back cut in another place.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bar = self.partition_parts.map(|_| self.partition_len());
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{part}")?;
            if bar == Some(i + 1) {
                f.write_str(" |")?;
            }
        }
        Ok(())
    }
}
