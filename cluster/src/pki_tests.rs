//! Tests of the PKI: file modes, subjects, signatures, reuse, and the kubeconfig shape.
//!
//! Kubernetes counterpart: kubeadm's `phases/certs` tests, which check the same properties of
//! `/etc/kubernetes/pki`.

use std::os::unix::fs::PermissionsExt;

use x509_parser::prelude::{FromDer, X509Certificate};

use super::*;

fn der(pem_text: &str) -> Vec<u8> {
    x509_parser::pem::parse_x509_pem(pem_text.as_bytes())
        .expect("pem")
        .1
        .contents
}

fn subject(pem_text: &str) -> (String, Vec<String>) {
    let bytes = der(pem_text);
    let (_, cert) = X509Certificate::from_der(&bytes).expect("certificate");
    let cn = cert
        .subject()
        .iter_common_name()
        .map(|a| a.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let orgs = cert
        .subject()
        .iter_organization()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    (cn, orgs)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The directory is 0700, every file 0600, and every expected file is there.
#[test]
fn ensure_writes_private_files() {
    let data = tempfile::tempdir().unwrap();
    let pki = Pki::ensure(data.path(), &["node-1".to_string()]).unwrap();
    assert_eq!(mode(&pki.dir), 0o700);
    let mut names: Vec<String> = std::fs::read_dir(&pki.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for stem in [
        "ca",
        "apiserver",
        "kubelet-node-1",
        "admin-client",
        "node-node-1-client",
    ] {
        assert!(
            names.contains(&format!("{stem}.crt")),
            "{stem}.crt in {names:?}"
        );
        assert!(
            names.contains(&format!("{stem}.key")),
            "{stem}.key in {names:?}"
        );
    }
    for name in &names {
        assert_eq!(mode(&pki.dir.join(name)), 0o600, "{name}");
    }
}

/// Client certificates carry CN = user and one O per group, and are signed by the CA.
#[test]
fn client_certificates_name_the_identity_and_chain_to_the_ca() {
    let data = tempfile::tempdir().unwrap();
    let pki = Pki::ensure(data.path(), &["node-1".to_string()]).unwrap();
    let ca_pem = std::fs::read_to_string(pki.ca_file()).unwrap();
    let ca_der = der(&ca_pem);
    let (_, ca) = X509Certificate::from_der(&ca_der).unwrap();
    for identity in Identity::control_plane()
        .into_iter()
        .chain([Identity::node("node-1")])
    {
        let client = pki.client(&identity).unwrap();
        assert_eq!(
            subject(&client.cert_pem),
            (identity.user.clone(), identity.groups.clone())
        );
        let leaf_der = der(&client.cert_pem);
        let (_, leaf) = X509Certificate::from_der(&leaf_der).unwrap();
        leaf.verify_signature(Some(ca.public_key()))
            .unwrap_or_else(|e| panic!("{} not signed by the ca: {e:?}", identity.user));
        assert_eq!(leaf.issuer(), ca.subject());
    }
    assert_eq!(
        subject(&pki.client(&Identity::node("node-1")).unwrap().cert_pem),
        ("system:node:node-1".into(), vec!["system:nodes".into()])
    );
    assert_eq!(
        subject(&pki.client(&Identity::admin()).unwrap().cert_pem).1,
        vec!["system:masters".to_string()]
    );
}

/// A second start reuses every file; a new node only adds its own certificates, signed by the
/// same CA.
#[test]
fn ensure_reuses_existing_files() {
    let data = tempfile::tempdir().unwrap();
    let first = Pki::ensure(data.path(), &["node-1".to_string()]).unwrap();
    let ca = first.read("ca").unwrap();
    let admin = first.client(&Identity::admin()).unwrap();
    let again = Pki::ensure(data.path(), &["node-1".into(), "node-2".into()]).unwrap();
    assert_eq!(again.read("ca").unwrap().key_pem, ca.key_pem);
    assert_eq!(
        again.client(&Identity::admin()).unwrap().cert_pem,
        admin.cert_pem
    );
    let node2 = again.client(&Identity::node("node-2")).unwrap();
    let ca_der = der(&ca.cert_pem);
    let (_, ca_cert) = X509Certificate::from_der(&ca_der).unwrap();
    let leaf_der = der(&node2.cert_pem);
    let (_, leaf) = X509Certificate::from_der(&leaf_der).unwrap();
    leaf.verify_signature(Some(ca_cert.public_key())).unwrap();
}

/// Losing the CA key re-creates the CA and every certificate it signed.
#[test]
fn a_missing_ca_key_recreates_everything() {
    let data = tempfile::tempdir().unwrap();
    let first = Pki::ensure(data.path(), &[]).unwrap();
    let admin = first.client(&Identity::admin()).unwrap();
    std::fs::remove_file(first.files("ca").1).unwrap();
    let second = Pki::ensure(data.path(), &[]).unwrap();
    assert_ne!(
        second.client(&Identity::admin()).unwrap().cert_pem,
        admin.cert_pem
    );
}

/// The apiserver's certificate names loopback and the in-cluster service names.
#[test]
fn apiserver_certificate_names_loopback() {
    let data = tempfile::tempdir().unwrap();
    let pki = Pki::ensure(data.path(), &[]).unwrap();
    let bytes = der(&pki.read("apiserver").unwrap().cert_pem);
    let (_, cert) = X509Certificate::from_der(&bytes).unwrap();
    let san = cert.subject_alternative_name().unwrap().unwrap().value;
    let text = format!("{:?}", san.general_names);
    assert!(
        text.contains("127.0.0.1") || text.contains("[127, 0, 0, 1]"),
        "{text}"
    );
    assert!(text.contains("\"localhost\""), "{text}");
    assert!(text.contains("kubernetes.default.svc"), "{text}");
}

/// The kubeconfig embeds the CA and the client pair as base64 and points at the server.
#[test]
fn kubeconfig_embeds_ca_and_client_pair() {
    use base64::Engine;
    let pair = CertAndKey {
        cert_pem: "CERT".into(),
        key_pem: "KEY".into(),
    };
    let config = kubeconfig_for("https://127.0.0.1:6443", "CA", "kubernetes-admin", &pair);
    let decode = |v: &Value| {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(config["current-context"], "minik");
    let cluster = &config["clusters"][0]["cluster"];
    assert_eq!(cluster["server"], "https://127.0.0.1:6443");
    assert_eq!(decode(&cluster["certificate-authority-data"]), "CA");
    let user = &config["users"][0]["user"];
    assert_eq!(decode(&user["client-certificate-data"]), "CERT");
    assert_eq!(decode(&user["client-key-data"]), "KEY");
    assert_eq!(config["contexts"][0]["context"]["user"], "kubernetes-admin");
}

/// The written kubeconfig is 0600 YAML.
#[test]
fn write_kubeconfig_is_private_yaml() {
    let data = tempfile::tempdir().unwrap();
    let pki = Pki::ensure(data.path(), &[]).unwrap();
    let path = data.path().join("kubeconfig");
    pki.write_kubeconfig(&Identity::admin(), "https://127.0.0.1:6443", &path)
        .unwrap();
    assert_eq!(mode(&path), 0o600);
    let value: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(value["users"][0]["name"], "kubernetes-admin");
}
