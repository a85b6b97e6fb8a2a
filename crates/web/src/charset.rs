//! A page's bytes as text, in the encoding the HTML standard picks: a byte order mark first,
//! then the `charset` of the Content-Type header, then the page's own `<meta charset>` or
//! `<meta http-equiv="Content-Type">` (found by the parser wherever it stands, see
//! [`crate::html::convert`]). Until a declaration is found the guess is UTF-8 when the bytes
//! are valid UTF-8, else windows-1252 (what browsers assume for Latin-1 pages).

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};

/// Text decoded from a page's bytes.
pub struct Decoded {
    pub text: String,
    pub encoding: &'static Encoding,
    /// From a byte order mark or the header: a `<meta>` in the page cannot change it.
    pub certain: bool,
}

/// The `charset` parameter of a Content-Type header value (`text/html; charset="utf-8"`).
pub fn header_charset(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']).trim().to_owned())
            .filter(|v| !v.is_empty())
    })
}

/// Decodes `bytes` with what is known before parsing: the byte order mark, the header's
/// charset, else the guess (valid UTF-8, else windows-1252).
pub fn decode(bytes: &[u8], header: Option<&str>) -> Decoded {
    if let Some((encoding, bom)) = Encoding::for_bom(bytes) {
        return Decoded {
            text: encoding
                .decode_without_bom_handling(&bytes[bom..])
                .0
                .into_owned(),
            encoding,
            certain: true,
        };
    }
    if let Some(encoding) = header.and_then(|l| Encoding::for_label(l.as_bytes())) {
        return Decoded {
            text: encoding.decode_without_bom_handling(bytes).0.into_owned(),
            encoding,
            certain: true,
        };
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Decoded {
            text: text.to_owned(),
            encoding: UTF_8,
            certain: false,
        },
        Err(_) => Decoded {
            text: WINDOWS_1252
                .decode_without_bom_handling(bytes)
                .0
                .into_owned(),
            encoding: WINDOWS_1252,
            certain: false,
        },
    }
}

/// A text or JSON body: its BOM or the header's charset, else UTF-8 (invalid bytes replaced).
pub fn decode_text(bytes: &[u8], header: Option<&str>) -> String {
    let encoding = Encoding::for_bom(bytes)
        .map(|(e, _)| e)
        .or_else(|| header.and_then(|l| Encoding::for_label(l.as_bytes())))
        .unwrap_or(UTF_8);
    encoding.decode(bytes).0.into_owned()
}

/// The encoding a `<meta>` declaration names, as the standard reads it: a page that says
/// UTF-16 was decoded as ASCII-compatible bytes to be read at all, so it is UTF-8, and
/// `x-user-defined` is windows-1252.
pub fn declared(label: &str) -> Option<&'static Encoding> {
    let encoding = Encoding::for_label(label.trim().as_bytes())?;
    Some(match encoding {
        e if e == UTF_16BE || e == UTF_16LE => UTF_8,
        e if e == X_USER_DEFINED => WINDOWS_1252,
        e => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_s_charset_parameter_in_any_spelling() {
        assert_eq!(
            header_charset("text/html; charset=ISO-8859-1").as_deref(),
            Some("ISO-8859-1")
        );
        assert_eq!(
            header_charset("text/html;CHARSET=\"Shift_JIS\"").as_deref(),
            Some("Shift_JIS")
        );
        assert_eq!(header_charset("text/html"), None);
        assert_eq!(header_charset("text/html; charset="), None);
    }

    #[test]
    fn a_bom_wins_over_the_header_and_the_guess_follows_the_bytes() {
        let page = b"\xEF\xBB\xBFcaf\xC3\xA9";
        let d = decode(page, Some("iso-8859-1"));
        assert_eq!((d.text.as_str(), d.certain), ("café", true));
        let d = decode(b"caf\xE9", None);
        assert_eq!((d.text.as_str(), d.encoding), ("café", WINDOWS_1252));
        assert!(!d.certain);
        let d = decode(b"caf\xC3\xA9", None);
        assert_eq!((d.text.as_str(), d.encoding), ("café", UTF_8));
    }

    #[test]
    fn a_declared_utf_16_is_read_as_utf_8() {
        assert_eq!(declared("utf-16"), Some(UTF_8));
        assert_eq!(declared(" Shift_JIS "), Some(encoding_rs::SHIFT_JIS));
        assert_eq!(declared("no-such-charset"), None);
    }
}
