//! What airlock's tests share, in one `publish = false` crate that only
//! `[dev-dependencies]` name:
//!
//! - [`clock::TestClock`]: time that moves only when a test moves it;
//! - [`pg::TestDb`]: a fresh PostgreSQL database per test, dropped afterwards;
//! - [`fake`]: stateful fakes of the platforms airlock publishes to, shaped like
//!   `docs/platforms.md` describes the real APIs, including their failures (answers lost
//!   after the platform acted, late processing, renamed slugs, expired tokens, limits).
//!
//! It knows no airlock crate: fakes speak HTTP and JSON only, so adapter tests, app tests
//! and end-to-end tests of the binary all use the same ones.

pub mod clock;
pub mod fake;
pub mod pg;

/// The token every test gives its channels; nothing airlock stores, logs or answers may
/// contain it.
pub const CANARY: &str = "CANARY-tok-9f3e";

/// Form pairs from a request's query string and `application/x-www-form-urlencoded` body.
pub fn params(request: &wiremock::Request) -> std::collections::HashMap<String, String> {
    let mut params: std::collections::HashMap<String, String> = request
        .url
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    params.extend(
        url::form_urlencoded::parse(&request.body).map(|(k, v)| (k.into_owned(), v.into_owned())),
    );
    params
}

/// How many requests a server received on a path ending with `path_suffix`.
pub async fn hits(server: &wiremock::MockServer, path_suffix: &str) -> usize {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path().ends_with(path_suffix))
        .count()
}

/// A loopback URL where nothing listens: connecting is refused.
pub fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("a bound port").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// Standard base64 (RFC 4648, with padding), for HTTP Basic credentials in fakes.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_rfc_4648() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(b"foobar"), "Zm9vYmFy");
    }
}
