//! ServiceAccount tokens: signed JWTs, issued by the TokenRequest API and read back by the
//! authenticator.
//!
//! Kubernetes counterpart: `pkg/serviceaccount/jwt.go` (`JWTTokenGenerator`, `JWTTokenAuthenticator`)
//! and `pkg/serviceaccount/claims.go` (the private `kubernetes.io` claim, the validator), with the
//! flags of `pkg/kubeapiserver/options/authentication.go`: `--service-account-signing-key-file`
//! signs, `--service-account-key-file` verifies, `--service-account-issuer` names the issuer,
//! `--api-audiences` defaults to it (docs/security.md#s4, #s5, #s15). Keys are ECDSA P-256, so tokens
//! are ES256, which upstream accepts alongside RS256.
//!
//! This module is pure but for reading the key files: [`Keys::issue`] and [`Keys::verify`] take
//! the clock as an argument. Whether the account (and the bound pod) still exist is the caller's
//! question (`auth/mod.rs`), since it needs the store.
//!
//! What minik simplifies: no `kid` header and no `/openid/v1/jwks` discovery; no legacy
//! (secret-based) tokens; no "warn after 3607 s" extension of kubelet tokens.

use std::path::{Path, PathBuf};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{PrivateKeyDer, SubjectPublicKeyInfoDer};
use serde::{Deserialize, Serialize};

use super::UserInfo;

/// Upstream's recommended issuer for an in-cluster API server.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The clock skew tolerated on `exp` and `nbf` (`jwt.DefaultLeeway`).
pub const LEEWAY_SECONDS: u64 = 60;

/// The key files and names of `--service-account-*` and `--api-audiences`.
#[derive(Clone, Debug)]
pub struct KeyFiles {
    /// The PKCS#8 private key that signs (PEM).
    pub signing_key_file: PathBuf,
    /// The public key that verifies (PEM `PUBLIC KEY`).
    pub key_file: PathBuf,
    /// The `iss` claim written and required.
    pub issuer: String,
    /// The audiences a token must name one of to authenticate here (default: the issuer).
    pub api_audiences: Vec<String>,
}

/// An object a token is bound to (`kubernetes.io.pod`, `.secret`, `.node`), or the account.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
}

/// The private claim upstream puts under `kubernetes.io`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    /// The account's namespace.
    pub namespace: String,
    /// The account.
    pub serviceaccount: Ref,
    /// The pod the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    /// The node the token (or its pod) is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Ref>,
}

/// A token's claims (docs/security.md#s5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Issuer.
    pub iss: String,
    /// `system:serviceaccount:NS:NAME`.
    pub sub: String,
    /// Audiences.
    pub aud: Vec<String>,
    /// Expiry (Unix seconds).
    pub exp: i64,
    /// Issued at.
    pub iat: i64,
    /// Not before.
    pub nbf: i64,
    /// A unique id.
    pub jti: String,
    /// Namespace, account and bound object.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaims,
}

impl Claims {
    /// The user the token stands for (docs/security.md#s6): the account's name, UID and groups.
    pub fn user(&self) -> UserInfo {
        let k = &self.kubernetes;
        let mut groups = minik_api::serviceaccounts::groups(&k.namespace);
        groups.push(super::authn::AUTHENTICATED.to_string());
        UserInfo {
            name: minik_api::serviceaccounts::user_name(&k.namespace, &k.serviceaccount.name),
            uid: k.serviceaccount.uid.clone(),
            groups,
        }
    }
}

/// Why a key file could not be used, or a token issued.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file is missing or not the PEM expected.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Signing failed.
    #[error("signing the token: {0}")]
    Sign(String),
}

/// The loaded keys.
#[derive(Clone)]
pub struct Keys {
    signing: EncodingKey,
    verifying: DecodingKey,
    issuer: String,
    api_audiences: Vec<String>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("issuer", &self.issuer)
            .field("api_audiences", &self.api_audiences)
            .finish_non_exhaustive()
    }
}

fn file_error(path: &Path, message: impl std::fmt::Display) -> KeyError {
    KeyError::File {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

impl Keys {
    /// Reads the two PEM files.
    pub fn load(files: &KeyFiles) -> Result<Keys, KeyError> {
        let private = PrivateKeyDer::from_pem_file(&files.signing_key_file)
            .map_err(|e| file_error(&files.signing_key_file, e))?;
        let public = SubjectPublicKeyInfoDer::from_pem_file(&files.key_file)
            .map_err(|e| file_error(&files.key_file, e))?;
        let mut api_audiences = files.api_audiences.clone();
        if api_audiences.is_empty() {
            api_audiences.push(files.issuer.clone());
        }
        Ok(Keys {
            signing: EncodingKey::from_ec_der(private.secret_der()),
            verifying: DecodingKey::from_ec_der(public.as_ref()),
            issuer: files.issuer.clone(),
            api_audiences,
        })
    }

    /// The audiences a token gets when its request names none.
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// The issuer.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Signs `claims` (ES256).
    pub fn issue(&self, claims: &Claims) -> Result<String, KeyError> {
        jsonwebtoken::encode(&Header::new(Algorithm::ES256), claims, &self.signing)
            .map_err(|e| KeyError::Sign(e.to_string()))
    }

    /// The claims of a token this server issued and that is valid at `now` (Unix seconds) for
    /// one of the API audiences; `None` for anything else (not a JWT, another key, tampered,
    /// expired, not yet valid, another issuer or audience).
    pub fn verify(&self, token: &str, now: i64) -> Option<Claims> {
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&self.api_audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // The library reads its own clock; check time here against `now` instead.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        let claims = jsonwebtoken::decode::<Claims>(token, &self.verifying, &validation)
            .ok()?
            .claims;
        let leeway = LEEWAY_SECONDS as i64;
        let in_time = now < claims.exp + leeway && claims.nbf <= now + leeway;
        let subject = minik_api::serviceaccounts::user_name(
            &claims.kubernetes.namespace,
            &claims.kubernetes.serviceaccount.name,
        );
        (in_time && claims.sub == subject).then_some(claims)
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

#[cfg(test)]
#[path = "tokens_tests.rs"]
mod tests;
