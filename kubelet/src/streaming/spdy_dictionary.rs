//! SPDY/3's fixed zlib dictionary for header blocks (draft 3, section 2.6.10.1).
//!
//! Kubernetes counterpart: `headerDictionary` in `moby/spdystream/spdy/dictionary.go`, the same
//! 1,423 bytes. Both ends start their header zlib streams with it, and zlib checks it by its
//! Adler-32, so one wrong byte makes every header block unreadable. Rather than a wall of escaped
//! bytes, it is built the way the draft describes it: common header names and values, each with a
//! 32-bit big-endian length in front, then one run of status codes, reason phrases, dates and
//! media types without lengths.

use std::sync::OnceLock;

/// The length-prefixed words, in the draft's order.
const WORDS: [&str; 62] = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
];

/// The words after `public`, then the unprefixed tail.
const LAST_WORDS: [&str; 3] = ["set-cookie", "keep-alive", "origin"];
const TAIL: &str = concat!(
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request",
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented",
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ",
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,",
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=",
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
);

/// The dictionary's bytes.
pub fn dictionary() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let mut out = Vec::with_capacity(1423);
        for word in WORDS.iter().chain(LAST_WORDS.iter()) {
            out.extend((word.len() as u32).to_be_bytes());
            out.extend(word.as_bytes());
        }
        out.extend(TAIL.as_bytes());
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dictionary_has_the_drafts_length_and_ends() {
        let bytes = dictionary();
        assert_eq!(bytes.len(), 1423);
        assert_eq!(&bytes[..11], b"\0\0\0\x07options");
        assert!(bytes.ends_with(b",utf-,*,enq=0."));
        // The Adler-32 that Go's zlib writer puts in its header (FDICT) for this dictionary.
        let mut zlib = flate2::Compress::new(flate2::Compression::default(), true);
        let adler = zlib.set_dictionary(bytes).unwrap();
        assert_eq!(adler, 0xE3C6A7C2);
    }
}
