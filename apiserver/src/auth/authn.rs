//! Authentication: who sent this request? A client certificate, a bearer token, or nobody.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/authentication/request/x509/x509.go` (subject CN
//! → user, each O → a group), `authentication/token/tokenfile/tokenfile.go` (the static token CSV),
//! `request/bearertoken/bearertoken.go`, `request/anonymous/anonymous.go` and
//! `group/authenticated_group_adder.go`, chained as `pkg/kubeapiserver/authenticator/config.go`
//! does: a certificate, else a token (the token file's, else a ServiceAccount JWT, `tokens.rs`),
//! else anonymous. A credential that is presented but wrong is 401, never anonymous
//! (docs/security.md#x3).
//!
//! The certificate itself is verified during the TLS handshake (`tls.rs`: it must chain to
//! `--client-ca-file`); here it is only read. What minik simplifies: no OIDC, no webhook token
//! review, no `extra` from certificates or ServiceAccount tokens.
//!
//! Read next: `authz.rs`, which decides what the user found here may do.

use std::collections::HashMap;
use std::sync::Arc;

use x509_parser::prelude::{FromDer, X509Certificate};

use super::tokens::{Claims, Keys};
use super::UserInfo;

/// The anonymous user and its one group (docs/security.md#n1).
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of every request without credentials.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group every authenticated user gets (docs/security.md#x4).
pub const AUTHENTICATED: &str = "system:authenticated";

/// The user a verified client certificate names, or `None` when its CN is empty (the x509
/// authenticator then abstains) or the certificate cannot be parsed.
pub fn user_from_certificate(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some(with_authenticated_group(UserInfo {
        name,
        uid: String::new(),
        groups,
    }))
}

/// The anonymous identity.
pub fn anonymous() -> UserInfo {
    UserInfo {
        name: ANONYMOUS.into(),
        uid: String::new(),
        groups: vec![UNAUTHENTICATED.into()],
    }
}

fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    let has = |g: &str| user.groups.iter().any(|x| x == g);
    if !has(AUTHENTICATED) && !has(UNAUTHENTICATED) {
        user.groups.push(AUTHENTICATED.into());
    }
    user
}

/// Why a request is 401.
#[derive(Debug, PartialEq, Eq)]
pub struct Unauthorized;

/// The token authenticators and the chain around them.
#[derive(Debug, Default, Clone)]
pub struct Authenticator {
    tokens: HashMap<String, UserInfo>,
    service_accounts: Option<Arc<Keys>>,
}

impl Authenticator {
    /// An authenticator knowing the tokens of a `--token-auth-file` (empty: none).
    pub fn new(tokens: HashMap<String, UserInfo>) -> Self {
        Authenticator {
            tokens,
            service_accounts: None,
        }
    }

    /// Also accepts the ServiceAccount JWTs these keys verify.
    pub fn with_service_accounts(mut self, keys: Arc<Keys>) -> Self {
        self.service_accounts = Some(keys);
        self
    }

    /// The chain: the connection's certificate user, else the `Authorization` header's bearer
    /// token (the token file's, else a ServiceAccount JWT that `still_valid` confirms: its
    /// account and bound pod still exist), else anonymous. An `Authorization` header that is not
    /// a valid bearer token is 401.
    pub fn authenticate(
        &self,
        certificate_user: Option<&UserInfo>,
        authorization: Option<&str>,
        still_valid: impl FnOnce(&Claims) -> bool,
    ) -> Result<UserInfo, Unauthorized> {
        if let Some(user) = certificate_user {
            return Ok(user.clone());
        }
        let Some(header) = authorization else {
            return Ok(anonymous());
        };
        let token = bearer_token(header).ok_or(Unauthorized)?;
        if let Some(user) = self.tokens.get(token) {
            return Ok(with_authenticated_group(user.clone()));
        }
        let keys = self.service_accounts.as_deref().ok_or(Unauthorized)?;
        let claims = keys
            .verify(token, super::tokens::now())
            .ok_or(Unauthorized)?;
        if !still_valid(&claims) {
            return Err(Unauthorized);
        }
        Ok(claims.user())
    }
}

/// `Bearer <token>`, the scheme matched case-insensitively (docs/security.md#x7).
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Parses upstream's token file: CSV lines `token,user,uid[,"group1,group2"]`, at least three
/// columns; blank lines are skipped.
pub fn parse_token_file(text: &str) -> Result<HashMap<String, UserInfo>, String> {
    let mut tokens = HashMap::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fields = csv_fields(line);
        if fields.len() < 3 || fields[0].is_empty() {
            return Err(format!(
                "token file line {}: expected token,user,uid[,groups]",
                number + 1
            ));
        }
        let groups = fields
            .get(3)
            .map(|g| {
                g.split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let user = UserInfo {
            name: fields[1].clone(),
            uid: fields[2].clone(),
            groups,
        };
        tokens.insert(fields[0].clone(), user);
    }
    Ok(tokens)
}

/// One CSV line's fields; a field in double quotes may hold commas (`""` is a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().expect("one field").push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => fields.last_mut().expect("one field").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    /// Upstream's CSV: quoted groups with commas, at least three columns.
    #[test]
    fn token_file_lines_parse() {
        let tokens = parse_token_file("t1,alice,uid-1,\"dev,ops\"\n\nt2,bob,uid-2\n").unwrap();
        assert_eq!(tokens["t1"].name, "alice");
        assert_eq!(tokens["t1"].uid, "uid-1");
        assert_eq!(tokens["t1"].groups, vec!["dev", "ops"]);
        assert!(tokens["t2"].groups.is_empty());
        assert!(parse_token_file("t3,carol\n")
            .unwrap_err()
            .contains("line 1"));
    }

    /// Certificate first, then token, then anonymous; a wrong token is 401, never anonymous.
    #[test]
    fn the_chain_orders_credentials_and_rejects_wrong_tokens() {
        let tokens = parse_token_file("secret,alice,1,dev\n").unwrap();
        let authn = Authenticator::new(tokens);
        let cert = user("system:node:n1", &["system:nodes", AUTHENTICATED]);
        assert_eq!(
            authn.authenticate(Some(&cert), Some("Bearer nope"), |_| true),
            Ok(cert.clone())
        );
        let alice = authn
            .authenticate(None, Some("bearer secret"), |_| true)
            .unwrap();
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("alice", "1"));
        assert_eq!(alice.groups, vec!["dev", AUTHENTICATED]);
        assert_eq!(
            authn.authenticate(None, Some("Bearer nope"), |_| true),
            Err(Unauthorized)
        );
        assert_eq!(
            authn.authenticate(None, Some("Basic YTpi"), |_| true),
            Err(Unauthorized)
        );
        assert_eq!(
            authn.authenticate(None, Some("Bearer "), |_| true),
            Err(Unauthorized)
        );
        assert_eq!(authn.authenticate(None, None, |_| true), Ok(anonymous()));
        assert_eq!(anonymous().groups, vec![UNAUTHENTICATED]);
    }
}
