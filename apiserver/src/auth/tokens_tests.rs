//! Tests of `tokens.rs`: what verifies and what does not, with keys made by the cluster's PKI.

use super::*;

fn keys_in(dir: &Path, issuer: &str, audiences: &[&str]) -> Keys {
    let pki = minik_cluster::pki::Pki {
        dir: dir.to_path_buf(),
    };
    pki.ensure_service_account_key().expect("sa key");
    let (signing_key_file, key_file) = pki.service_account_key_files();
    Keys::load(&KeyFiles {
        signing_key_file,
        key_file,
        issuer: issuer.into(),
        api_audiences: audiences.iter().map(|a| a.to_string()).collect(),
    })
    .expect("keys load")
}

fn claims(now: i64, lifetime: i64, audience: &str) -> Claims {
    Claims {
        iss: DEFAULT_ISSUER.into(),
        sub: "system:serviceaccount:team:robot".into(),
        aud: vec![audience.into()],
        exp: now + lifetime,
        iat: now,
        nbf: now,
        jti: "id-1".into(),
        kubernetes: KubernetesClaims {
            namespace: "team".into(),
            serviceaccount: Ref {
                name: "robot".into(),
                uid: "uid-robot".into(),
            },
            pod: None,
            node: None,
        },
    }
}

/// A token signed here verifies and names the account's user and groups (docs/security.md#s6).
#[test]
fn an_issued_token_verifies_into_the_service_account_user() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_in(dir.path(), DEFAULT_ISSUER, &[]);
    assert_eq!(keys.api_audiences(), [DEFAULT_ISSUER]);
    let now = now();
    let token = keys.issue(&claims(now, 3600, DEFAULT_ISSUER)).unwrap();
    assert_eq!(token.split('.').count(), 3, "a JWS compact token");
    let verified = keys.verify(&token, now).expect("valid");
    let user = verified.user();
    assert_eq!(user.name, "system:serviceaccount:team:robot");
    assert_eq!(user.uid, "uid-robot");
    assert_eq!(
        user.groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ]
    );
}

/// Expired (past the leeway), not yet valid, tampered, foreign-key, wrong-audience and
/// wrong-issuer tokens are all refused.
#[test]
fn bad_tokens_do_not_verify() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_in(dir.path(), DEFAULT_ISSUER, &[]);
    let now = now();
    let expired = keys
        .issue(&claims(now - 7200, 3600, DEFAULT_ISSUER))
        .unwrap();
    assert!(keys.verify(&expired, now).is_none(), "expired");
    let within_leeway = keys
        .issue(&claims(now - 3630, 3600, DEFAULT_ISSUER))
        .unwrap();
    assert!(
        keys.verify(&within_leeway, now).is_some(),
        "30 s late is within the leeway"
    );
    let future = keys
        .issue(&claims(now + 600, 3600, DEFAULT_ISSUER))
        .unwrap();
    assert!(keys.verify(&future, now).is_none(), "not before");
    let audience = keys.issue(&claims(now, 3600, "vault")).unwrap();
    assert!(keys.verify(&audience, now).is_none(), "wrong audience");
    let mut foreign = claims(now, 3600, DEFAULT_ISSUER);
    foreign.iss = "https://elsewhere".into();
    assert!(keys.verify(&keys.issue(&foreign).unwrap(), now).is_none());
    let mut lying = claims(now, 3600, DEFAULT_ISSUER);
    lying.sub = "system:serviceaccount:kube-system:admin".into();
    assert!(keys.verify(&keys.issue(&lying).unwrap(), now).is_none());

    let good = keys.issue(&claims(now, 3600, DEFAULT_ISSUER)).unwrap();
    let mut parts: Vec<String> = good.split('.').map(String::from).collect();
    let forged = claims(now, 3600, DEFAULT_ISSUER);
    let mut forged = serde_json::to_value(forged).unwrap();
    forged["kubernetes.io"]["namespace"] = "kube-system".into();
    use base64::Engine;
    parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&forged).unwrap());
    assert!(keys.verify(&parts.join("."), now).is_none(), "tampered");
    assert!(keys.verify("not-a-jwt", now).is_none());

    let other_dir = tempfile::tempdir().unwrap();
    let other = keys_in(other_dir.path(), DEFAULT_ISSUER, &[]);
    assert!(other.verify(&good, now).is_none(), "another key");
}
