//! A key space drawn as a line: byte strings placed by their byte order.
//!
//! A store sorts row keys as bytes, so a picture of "where in the key space"
//! must use the same order. [`KeySpace`] spans the smallest to the largest
//! key it is given and places every key between by interpolating its bytes as
//! a base-256 fraction, after the prefix all the keys share (so `loan:1` ..
//! `loan:99999` spread over the width instead of crowding at the
//! `loan:` point). Text keys therefore sit where a byte comparison puts them:
//! `loan:2` sits past `loan:199999`, and a file of loans 1 to 25,000 spans
//! nearly the whole width, as the lesson teaches.

/// A key to draw: its bytes (for its place) and how to print it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// The key's bytes, as the store orders them.
    pub bytes: Vec<u8>,
    /// The key as a person reads it (escaped by whoever knows the key's
    /// encoding).
    pub text: String,
}

impl Key {
    /// A key that is text (its bytes are the UTF-8 of `text`).
    pub fn text(text: &str) -> Key {
        Key {
            bytes: text.as_bytes().to_vec(),
            text: text.to_string(),
        }
    }
}

/// Bytes interpolated after the shared prefix: eight, which is more
/// resolution than a screen has.
const DIGITS: usize = 8;

/// The span of keys a picture covers, from its first to its last key.
#[derive(Clone, Debug, PartialEq)]
pub struct KeySpace {
    first: Key,
    last: Key,
    shared: usize,
    low: f64,
    high: f64,
}

impl KeySpace {
    /// The space spanning every key in `keys` (empty: a space of one point).
    pub fn spanning<'a>(keys: impl IntoIterator<Item = &'a Key>) -> KeySpace {
        let mut first: Option<&Key> = None;
        let mut last: Option<&Key> = None;
        for k in keys {
            if first.is_none_or(|f| k.bytes < f.bytes) {
                first = Some(k);
            }
            if last.is_none_or(|l| k.bytes > l.bytes) {
                last = Some(k);
            }
        }
        let empty = Key::text("");
        let first = first.unwrap_or(&empty).clone();
        let last = last.unwrap_or(&empty).clone();
        let shared = first.bytes.iter().zip(&last.bytes).take_while(|(a, b)| a == b).count();
        let low = fraction(&first.bytes, shared);
        let high = fraction(&last.bytes, shared);
        KeySpace {
            first,
            last,
            shared,
            low,
            high,
        }
    }

    /// The smallest key.
    pub fn first(&self) -> &Key {
        &self.first
    }

    /// The largest key.
    pub fn last(&self) -> &Key {
        &self.last
    }

    /// Where `key` falls, from 0.0 (the first key) to 1.0 (the last);
    /// keys outside the space are placed at its ends.
    pub fn position(&self, key: &[u8]) -> f64 {
        if key <= self.first.bytes.as_slice() {
            return 0.0;
        }
        if key >= self.last.bytes.as_slice() {
            return 1.0;
        }
        if self.high <= self.low {
            return 0.5;
        }
        ((fraction(key, self.shared) - self.low) / (self.high - self.low)).clamp(0.0, 1.0)
    }
}

/// The bytes of `key` after `skip`, read as a base-256 fraction in `0..1`.
fn fraction(key: &[u8], skip: usize) -> f64 {
    let mut x = 0.0;
    let mut scale = 1.0 / 256.0;
    for &b in key.iter().skip(skip).take(DIGITS) {
        x += f64::from(b) * scale;
        scale /= 256.0;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sit_in_byte_order_between_the_ends() {
        let keys = [Key::text("loan:1"), Key::text("loan:99999")];
        let space = KeySpace::spanning(&keys);
        assert_eq!(space.position(b"loan:1"), 0.0);
        assert_eq!(space.position(b"loan:99999"), 1.0);
        let two = space.position(b"loan:2");
        let big = space.position(b"loan:199999");
        assert!(big < two, "text order: loan:199999 < loan:2");
        assert!((0.1..0.2).contains(&two), "{two}");
    }

    #[test]
    fn keys_outside_the_space_sit_at_its_ends() {
        let keys = [Key::text("b"), Key::text("d")];
        let space = KeySpace::spanning(&keys);
        assert_eq!(space.position(b"a"), 0.0);
        assert_eq!(space.position(b"e"), 1.0);
        assert_eq!(space.first().text, "b");
        assert_eq!(space.last().text, "d");
    }
}
