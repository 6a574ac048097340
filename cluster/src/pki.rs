//! The cluster's PKI: one CA, serving certificates, and one client certificate per identity.
//!
//! Kubernetes counterpart: kubeadm's `certs` and `kubeconfig` init phases
//! (`cmd/kubeadm/app/phases/certs/`, `phases/kubeconfig/`), which write `/etc/kubernetes/pki` and
//! one kubeconfig per component (docs/security.md#x9). minik writes the same shapes under
//! `DATA/pki/` the first time a cluster starts and reuses them afterwards:
//!
//! - `ca.crt`/`ca.key`: the cluster CA, ten years, the only trust root;
//! - `apiserver.crt`/`.key`: serving, for `127.0.0.1`, `localhost` and the in-cluster names;
//! - `kubelet-NODE.crt`/`.key`: one serving certificate per kubelet;
//! - `NAME-client.crt`/`.key`: one client certificate per [`Identity`], subject CN = user and one O
//!   per group, which is exactly what the apiserver's x509 authenticator reads
//!   (docs/security.md#x1);
//! - `sa.key`/`sa.pub`: the key pair that signs and verifies ServiceAccount tokens.
//!
//! Keys are ECDSA P-256 (what rcgen's ring backend makes fastest). The directory is 0700 and every
//! file 0600, written through a temporary file and a rename, so a crash never leaves half a key.
//!
//! What minik simplifies: one CA for serving and client certificates (kubeadm has a separate
//! front-proxy and etcd CA), no rotation (leaf certificates last a year; delete `DATA/pki` to
//! start over), and the CA is re-created with every leaf if either of its files is missing.
//!
//! Read next: [`kubeconfig_for`], which embeds a certificate into a kubeconfig, and
//! `client/src/kubeconfig.rs`, which reads it back.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use serde_json::{json, Value};

use crate::{Error, Result};

/// The group that bypasses authorization (docs/security.md#x6).
pub const MASTERS_GROUP: &str = "system:masters";

/// Who a client certificate says its holder is: the subject CN and O of the certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The file stem (`admin`, `scheduler`, `node-node-1`).
    pub name: String,
    /// The user name (certificate CN).
    pub user: String,
    /// The groups (certificate O, one per group).
    pub groups: Vec<String>,
}

impl Identity {
    fn new(name: impl Into<String>, user: impl Into<String>, groups: &[&str]) -> Identity {
        Identity {
            name: name.into(),
            user: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    /// The cluster administrator, in `system:masters` (kubeadm's `super-admin.conf`; minik has no
    /// separate revocable admin).
    pub fn admin() -> Identity {
        Identity::new("admin", "kubernetes-admin", &[MASTERS_GROUP])
    }

    /// The scheduler (`system:kube-scheduler`, bound to the role of the same name).
    pub fn scheduler() -> Identity {
        Identity::new("scheduler", "system:kube-scheduler", &[])
    }

    /// The controller manager (`system:kube-controller-manager`).
    pub fn controller_manager() -> Identity {
        Identity::new("controller-manager", "system:kube-controller-manager", &[])
    }

    /// The endpoint controller, named like the service account upstream runs it as with
    /// `--use-service-account-credentials`, so the bootstrap binding of
    /// `system:controller:endpoint-controller` applies unchanged.
    pub fn endpoint_controller() -> Identity {
        Identity::new(
            "endpoint-controller",
            "system:serviceaccount:kube-system:endpoint-controller",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
            ],
        )
    }

    /// The ingress controller (`system:ingress-controller`, bound to the role of the same name).
    pub fn ingress_controller() -> Identity {
        Identity::new("ingress", "system:ingress-controller", &[])
    }

    /// The load balancer, as the cloud provider's service controller runs
    /// (`system:controller:service-controller`).
    pub fn service_controller() -> Identity {
        Identity::new(
            "loadbalancer",
            "system:serviceaccount:kube-system:service-controller",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
            ],
        )
    }

    /// The proxy (`system:kube-proxy`, bound to `system:node-proxier`).
    pub fn kube_proxy() -> Identity {
        Identity::new("kube-proxy", "system:kube-proxy", &[])
    }

    /// The kubelet of `node`: exactly `system:node:<node>` in `system:nodes`, which the Node
    /// authorizer requires (docs/security.md#r6).
    pub fn node(node: &str) -> Identity {
        Identity::new(
            format!("node-{node}"),
            format!("system:node:{node}"),
            &["system:nodes"],
        )
    }

    /// The apiserver as a client of the kubelets (log proxy): kubeadm's
    /// `apiserver-kubelet-client.crt`, CN `kube-apiserver-kubelet-client`, in `system:masters`
    /// as kubeadm made it until 1.29, so every kubelet's authorization check lets it through.
    pub fn apiserver_kubelet_client() -> Identity {
        Identity::new(
            "apiserver-kubelet",
            "kube-apiserver-kubelet-client",
            &[MASTERS_GROUP],
        )
    }

    /// metrics-server (`system:metrics-server`, bound to the role of the same name).
    pub fn metrics_server() -> Identity {
        Identity::new("metrics-server", "system:metrics-server", &[])
    }

    /// The cluster autoscaler (`system:cluster-autoscaler`, bound to the role of the same name);
    /// also the only identity the node-group API accepts.
    pub fn cluster_autoscaler() -> Identity {
        Identity::new("cluster-autoscaler", "system:cluster-autoscaler", &[])
    }

    /// Any user in any groups (tests and `minik` users that want a narrower identity than the
    /// admin). `name` is the file stem.
    pub fn user(name: &str, user: &str, groups: &[&str]) -> Identity {
        Identity::new(name, user, groups)
    }

    /// Every control-plane identity (nodes come on top, one per kubelet).
    pub fn control_plane() -> Vec<Identity> {
        vec![
            Identity::admin(),
            Identity::apiserver_kubelet_client(),
            Identity::scheduler(),
            Identity::controller_manager(),
            Identity::endpoint_controller(),
            Identity::kube_proxy(),
            Identity::ingress_controller(),
            Identity::service_controller(),
            Identity::metrics_server(),
            Identity::cluster_autoscaler(),
        ]
    }
}

/// A certificate and its private key, both PEM.
#[derive(Debug, Clone)]
pub struct CertAndKey {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// The PKCS#8 private key (PEM).
    pub key_pem: String,
}

/// The PKI directory of one cluster (`DATA/pki`).
#[derive(Debug, Clone)]
pub struct Pki {
    /// `DATA/pki`.
    pub dir: PathBuf,
}

impl Pki {
    /// Creates what is missing under `data_dir/pki`: the CA, the apiserver's serving certificate,
    /// a client certificate per control-plane identity, and a serving and a client certificate per
    /// node in `nodes`. Existing files are reused.
    pub fn ensure(data_dir: &Path, nodes: &[String]) -> Result<Pki> {
        let pki = Pki {
            dir: data_dir.join("pki"),
        };
        private_dir(&pki.dir)?;
        let ca = pki.ensure_ca()?;
        let issuer = Issuer::new(
            ca_params()?,
            KeyPair::from_pem(&ca.key_pem).map_err(pki_error)?,
        );
        pki.ensure_leaf(
            "apiserver",
            || serving_params("kube-apiserver", &apiserver_names()),
            &issuer,
        )?;
        // metrics-server's serving certificate, for the apiserver's aggregation proxy.
        pki.ensure_leaf(
            "metrics-server",
            || serving_params("metrics-server", &["localhost".into(), "127.0.0.1".into()]),
            &issuer,
        )?;
        // The node-group API's serving certificate (`node_group_server.rs`).
        pki.ensure_leaf(
            "node-group",
            || serving_params("node-group", &["localhost".into(), "127.0.0.1".into()]),
            &issuer,
        )?;
        for node in nodes {
            pki.ensure_leaf(
                &format!("kubelet-{node}"),
                || {
                    serving_params(
                        &format!("system:node:{node}"),
                        &[node.clone(), "localhost".into(), "127.0.0.1".into()],
                    )
                },
                &issuer,
            )?;
        }
        let identities = Identity::control_plane()
            .into_iter()
            .chain(nodes.iter().map(|n| Identity::node(n)));
        for identity in identities {
            pki.ensure_leaf(
                &format!("{}-client", identity.name),
                || client_params(&identity),
                &issuer,
            )?;
        }
        pki.ensure_service_account_key()?;
        tracing::info!(dir = %pki.dir.display(), nodes = nodes.len(), "pki ready");
        Ok(pki)
    }

    /// `DATA/pki/ca.crt`, the file `--client-ca-file` and kubeconfigs point at.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// The certificate and key files of `stem` (`apiserver`, `kubelet-node-1`, `admin-client`).
    pub fn files(&self, stem: &str) -> (PathBuf, PathBuf) {
        (
            self.dir.join(format!("{stem}.crt")),
            self.dir.join(format!("{stem}.key")),
        )
    }

    /// Reads the certificate and key of `stem`.
    pub fn read(&self, stem: &str) -> Result<CertAndKey> {
        let (cert, key) = self.files(stem);
        Ok(CertAndKey {
            cert_pem: read(&cert)?,
            key_pem: read(&key)?,
        })
    }

    /// The client certificate of `identity`, as created by [`Pki::ensure`].
    pub fn client(&self, identity: &Identity) -> Result<CertAndKey> {
        self.read(&format!("{}-client", identity.name))
    }

    /// Signs a client certificate for `identity` with this cluster's CA when it does not exist
    /// yet (`DATA/pki/NAME-client.crt`), and returns it.
    pub fn issue_client(&self, identity: &Identity) -> Result<CertAndKey> {
        let ca = self.read("ca")?;
        let issuer = Issuer::new(
            ca_params()?,
            KeyPair::from_pem(&ca.key_pem).map_err(pki_error)?,
        );
        self.ensure_leaf(
            &format!("{}-client", identity.name),
            || client_params(identity),
            &issuer,
        )?;
        self.client(identity)
    }

    /// Writes a kubeconfig for `identity` talking to `server` (`https://127.0.0.1:6443`) at `path`,
    /// mode 0600.
    pub fn write_kubeconfig(&self, identity: &Identity, server: &str, path: &Path) -> Result<()> {
        let ca = read(&self.ca_file())?;
        let value = kubeconfig_for(server, &ca, &identity.user, &self.client(identity)?);
        let text = serde_saphyr::to_string(&value)
            .map_err(|e| Error::Kubeconfig(format!("serializing kubeconfig: {e}")))?;
        write_private(path, text.as_bytes())
    }

    /// `DATA/pki/sa.key` (PKCS#8, signs ServiceAccount tokens) and `DATA/pki/sa.pub` (verifies
    /// them), as kubeadm's `sa.key`/`sa.pub`: the apiserver's `--service-account-signing-key-file`
    /// and `--service-account-key-file`.
    pub fn service_account_key_files(&self) -> (PathBuf, PathBuf) {
        (self.dir.join("sa.key"), self.dir.join("sa.pub"))
    }

    /// Creates the ServiceAccount key pair (ECDSA P-256, so tokens are ES256) unless both exist.
    pub fn ensure_service_account_key(&self) -> Result<()> {
        let (key, public) = self.service_account_key_files();
        if key.exists() && public.exists() {
            return Ok(());
        }
        let key_pair = KeyPair::generate().map_err(pki_error)?;
        write_private(&key, key_pair.serialize_pem().as_bytes())?;
        write_private(&public, key_pair.public_key_pem().as_bytes())?;
        tracing::info!(file = %key.display(), "created the service account signing key");
        Ok(())
    }

    fn ensure_ca(&self) -> Result<CertAndKey> {
        let (cert, key) = self.files("ca");
        if cert.exists() && key.exists() {
            return self.read("ca");
        }
        // A new CA invalidates every leaf it signed, so they are all made again.
        for entry in std::fs::read_dir(&self.dir).map_err(|e| Error::io("reading pki dir", e))? {
            let path = entry.map_err(|e| Error::io("reading pki dir", e))?.path();
            std::fs::remove_file(&path)
                .map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
        }
        let key_pair = KeyPair::generate().map_err(pki_error)?;
        let ca = ca_params()?.self_signed(&key_pair).map_err(pki_error)?;
        let made = CertAndKey {
            cert_pem: ca.pem(),
            key_pem: key_pair.serialize_pem(),
        };
        self.store("ca", &made)?;
        tracing::info!(file = %cert.display(), "created cluster ca");
        Ok(made)
    }

    fn ensure_leaf(
        &self,
        stem: &str,
        params: impl FnOnce() -> Result<CertificateParams>,
        issuer: &Issuer<'_, KeyPair>,
    ) -> Result<()> {
        let (cert, key) = self.files(stem);
        if cert.exists() && key.exists() {
            return Ok(());
        }
        let key_pair = KeyPair::generate().map_err(pki_error)?;
        let signed = params()?.signed_by(&key_pair, issuer).map_err(pki_error)?;
        self.store(
            stem,
            &CertAndKey {
                cert_pem: signed.pem(),
                key_pem: key_pair.serialize_pem(),
            },
        )
    }

    fn store(&self, stem: &str, made: &CertAndKey) -> Result<()> {
        let (cert, key) = self.files(stem);
        write_private(&key, made.key_pem.as_bytes())?;
        write_private(&cert, made.cert_pem.as_bytes())
    }
}

/// A kubeconfig (as JSON, which is YAML) with the CA, the client certificate and key embedded as
/// kubeadm writes them (docs/security.md#x9): one cluster, user and context named `minik`.
pub fn kubeconfig_for(server: &str, ca_pem: &str, user: &str, client: &CertAndKey) -> Value {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "minik", "cluster": {
            "server": server,
            "certificate-authority-data": b64(ca_pem),
        }}],
        "users": [{"name": user, "user": {
            "client-certificate-data": b64(&client.cert_pem),
            "client-key-data": b64(&client.key_pem),
        }}],
        "contexts": [{"name": "minik", "context": {"cluster": "minik", "user": user, "namespace": "default"}}],
        "current-context": "minik",
    })
}

/// The apiserver's names: loopback plus the in-cluster ones (docs/security.md#x10).
fn apiserver_names() -> Vec<String> {
    [
        "127.0.0.1",
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    .map(String::from)
    .to_vec()
}

/// The CA's parameters. They are the same on every run, so an issuer rebuilt from them and the
/// stored key signs exactly as the original did (same subject, same key identifier).
fn ca_params() -> Result<CertificateParams> {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "minik-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params, 10)?;
    Ok(params)
}

fn serving_params(common_name: &str, names: &[String]) -> Result<CertificateParams> {
    let mut params = CertificateParams::new(names.to_vec()).map_err(pki_error)?;
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    validity(&mut params, 1)?;
    Ok(params)
}

/// Subject CN = user, one O per group; key usages as kubeadm's client certificates.
fn client_params(identity: &Identity) -> Result<CertificateParams> {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    // rcgen keeps one value per attribute type, so a second O is pushed under its bare OID
    // (2.5.4.10), which encodes the same; two groups are all minik's identities need.
    let organization = [
        DnType::OrganizationName,
        DnType::CustomDnType(vec![2, 5, 4, 10]),
    ];
    if identity.groups.len() > organization.len() {
        return Err(pki_error(format!("{}: at most two groups", identity.user)));
    }
    for (group, ty) in identity.groups.iter().zip(organization) {
        params.distinguished_name.push(ty, group.as_str());
    }
    params
        .distinguished_name
        .push(DnType::CommonName, identity.user.as_str());
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    validity(&mut params, 1)?;
    Ok(params)
}

/// Valid from yesterday (tolerates clock skew) for `years`.
fn validity(params: &mut CertificateParams, years: i16) -> Result<()> {
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let day = |d: jiff::civil::Date| {
        rcgen::date_time_ymd(d.year().into(), d.month() as u8, d.day() as u8)
    };
    let from = today.yesterday().map_err(pki_error)?;
    let until = today
        .checked_add(jiff::Span::new().years(years))
        .map_err(pki_error)?;
    params.not_before = day(from);
    params.not_after = day(until);
    Ok(())
}

fn pki_error(e: impl std::fmt::Display) -> Error {
    Error::io("making certificates", std::io::Error::other(e.to_string()))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))
}

/// Creates `dir` (and parents) and makes it 0700.
pub fn private_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Error::io(format!("chmod {}", dir.display()), e))
}

/// Writes `bytes` to `path` with mode 0600, through a sibling temporary file and a rename.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("minik-tmp");
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        // `mode` applies only when the file is created; an old temporary file keeps its mode.
        .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)))
        .and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

#[cfg(test)]
#[path = "pki_tests.rs"]
mod tests;
