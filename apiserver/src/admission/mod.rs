//! Admission by webhooks: operators' HTTPS services that may patch or refuse a write.
//!
//! Kubernetes counterpart: the `MutatingAdmissionWebhook` and `ValidatingAdmissionWebhook`
//! plugins of `k8s.io/apiserver/pkg/admission/plugin/webhook`, configured by the
//! `admissionregistration.k8s.io/v1` kinds. [`webhook_config`] is those kinds' strategy
//! (defaults and validation), [`webhook_match`] decides which webhooks a request goes to (with
//! the CEL [`match_conditions`]),
//! [`webhook_review`] writes the AdmissionReview and reads the answer, [`webhook_client`] makes the
//! HTTPS call and [`webhook`] puts them in upstream's order. The built-in admission plugins
//! (ServiceAccount, DefaultIngressClass, DefaultStorageClass …) stay in the registry and run
//! before the webhooks, as upstream's mutating plugins come before `MutatingAdmissionWebhook`.

pub mod match_conditions;
pub mod webhook;
pub mod webhook_client;
pub mod webhook_config;
pub mod webhook_match;
pub mod webhook_review;
