//! Percent-escaping of names: chosen ASCII characters become `%XX` (upper-case hex, by the
//! `percent-encoding` crate), every other character, non-ASCII ones included, stays as it is.
//! Partition directory names (Hive's escaping) and the mount's file and file-system names use
//! it, each with its own set of characters.

use percent_encoding::{utf8_percent_encode, AsciiSet};

/// `s` with every ASCII character in `set` written `%XX` (`/` → `%2F`) and every other
/// character, non-ASCII ones included, copied as it is (`é` stays `é`, unlike
/// [`utf8_percent_encode`], which escapes every non-ASCII byte).
pub fn escape_ascii(s: &str, set: &'static AsciiSet) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while !rest.is_empty() {
        // A run of ASCII characters, escaped by the set, then a run of other characters, kept.
        // Both ends fall on character boundaries: a UTF-8 sequence is all non-ASCII bytes.
        let ascii = rest
            .bytes()
            .position(|b| !b.is_ascii())
            .unwrap_or(rest.len());
        out.extend(utf8_percent_encode(&rest[..ascii], set));
        let tail = &rest[ascii..];
        let other = tail
            .bytes()
            .position(|b| b.is_ascii())
            .unwrap_or(tail.len());
        out.push_str(&tail[..other]);
        rest = &tail[other..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape_ascii;
    use percent_encoding::{AsciiSet, CONTROLS};

    const SOME: &AsciiSet = &CONTROLS.add(b'%').add(b'/').add(b' ');

    #[test]
    fn only_ascii_characters_of_the_set_are_escaped() {
        assert_eq!(escape_ascii("", SOME), "");
        assert_eq!(escape_ascii("plain.name", SOME), "plain.name");
        assert_eq!(escape_ascii("a b/c%d", SOME), "a%20b%2Fc%25d");
        assert_eq!(escape_ascii("\u{0}\u{1f}\u{7f}", SOME), "%00%1F%7F");
        assert_eq!(escape_ascii("é/ü€ 𝄞", SOME), "é%2Fü€%20𝄞");
        assert_eq!(escape_ascii("日本", SOME), "日本");
        // U+0080 and U+009F are control characters, but not ASCII: kept.
        assert_eq!(escape_ascii("\u{80}\u{9f}", SOME), "\u{80}\u{9f}");
    }
}
