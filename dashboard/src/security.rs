//! Who may use the dashboard: the decisions, as pure functions over a request's parts.
//!
//! Kubernetes counterpart: `kubectl proxy`'s host filter (`pkg/proxy/proxy_server.go`, and
//! `cli/src/commands/proxy.rs` here) against DNS rebinding, plus what Jupyter does for a local web
//! UI: a random token in the printed URL, exchanged on the first visit for a session cookie
//! (`HttpOnly`, `SameSite=Strict`, named after the port since cookies ignore ports). In order:
//!
//! 1. the `Host` must be loopback (`localhost`, `127.x.y.z`, `[::1]`), else 403: a page on
//!    `evil.example` that rebinds its name to 127.0.0.1 still sends `Host: evil.example`;
//! 2. the cookie, or the URL token on the page itself, else 401;
//! 3. a state-changing request needs the CSRF token the page carries (`X-CSRF-Token`), and its
//!    `Origin` and `Sec-Fetch-Site`, when sent, must be this origin, else 403.
//!
//! No CORS header is ever sent, so another origin cannot read an answer either.
//! minik simplifies: one token for the process's life, no logout.

use rand::RngCore;

/// 32 random bytes as hex: the URL token and the CSRF token.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without an early exit, so the time taken says nothing about the token.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// `127.0.0.1:8080` → `127.0.0.1`, `[::1]:80` → `[::1]`, `localhost` → `localhost`.
fn host_name(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port)) if !name.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// True for a loopback `Host` header.
pub fn host_is_loopback(host: &str) -> bool {
    let name = host_name(host);
    if name.eq_ignore_ascii_case("localhost") || name == "[::1]" {
        return true;
    }
    name.parse::<std::net::Ipv4Addr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// What the guard needs to know about a request.
#[derive(Debug, Default, Clone)]
pub struct RequestParts<'a> {
    /// `GET`, `POST` …
    pub method: &'a str,
    /// `Host`.
    pub host: Option<&'a str>,
    /// The `token` query parameter.
    pub url_token: Option<&'a str>,
    /// The `Cookie` header.
    pub cookie: Option<&'a str>,
    /// `X-CSRF-Token`.
    pub csrf: Option<&'a str>,
    /// `Origin`.
    pub origin: Option<&'a str>,
    /// `Sec-Fetch-Site`.
    pub fetch_site: Option<&'a str>,
}

/// The guard's answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Let it through.
    Allow,
    /// Let it through and set the session cookie (a valid URL token).
    AllowAndSetCookie,
    /// 401: no valid token or cookie.
    Unauthorized(&'static str),
    /// 403: wrong Host, or a state change without the same-origin proofs.
    Forbidden(&'static str),
}

/// The tokens of one dashboard.
#[derive(Clone, Debug)]
pub struct Guard {
    token: String,
    csrf: String,
    cookie_name: String,
}

impl Guard {
    /// The guard of a dashboard on `port` whose URL carries `token`.
    pub fn new(token: String, port: u16) -> Guard {
        Guard {
            token,
            csrf: random_token(),
            cookie_name: format!("minik_dashboard_{port}"),
        }
    }

    /// The CSRF token the page carries.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// The `Set-Cookie` value of a session.
    pub fn set_cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name, self.token
        )
    }

    fn cookie_ok(&self, cookie: Option<&str>) -> bool {
        cookie.into_iter().flat_map(|c| c.split(';')).any(|pair| {
            pair.trim().split_once('=').is_some_and(|(name, value)| {
                name == self.cookie_name && same_secret(value, &self.token)
            })
        })
    }

    /// Decides on a request, in the order of the module doc.
    pub fn check(&self, request: &RequestParts<'_>) -> Verdict {
        let Some(host) = request.host.filter(|h| host_is_loopback(h)) else {
            return Verdict::Forbidden("the Host header must be a loopback name (DNS rebinding)");
        };
        let by_url = request
            .url_token
            .is_some_and(|t| same_secret(t, &self.token));
        if !by_url && !self.cookie_ok(request.cookie) {
            return Verdict::Unauthorized(
                "open the URL with ?token=… that minik dashboard printed",
            );
        }
        if !matches!(request.method, "GET" | "HEAD") {
            if !request.csrf.is_some_and(|c| same_secret(c, &self.csrf)) {
                return Verdict::Forbidden(
                    "a state-changing request needs the page's X-CSRF-Token",
                );
            }
            if request
                .origin
                .is_some_and(|o| o != format!("http://{host}"))
            {
                return Verdict::Forbidden("cross-origin request refused");
            }
            if request.fetch_site.is_some_and(|s| s != "same-origin") {
                return Verdict::Forbidden("cross-site request refused");
            }
        }
        if by_url {
            Verdict::AllowAndSetCookie
        } else {
            Verdict::Allow
        }
    }
}

#[cfg(test)]
#[path = "security_tests.rs"]
mod tests;
