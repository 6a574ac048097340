//! The protobuf schemas of the objects kubectl sends in protobuf: field numbers from
//! `k8s.io/api/*/generated.proto`, only the fields those commands set (see `protobuf.rs`).

use super::{Field, Schema};

pub(super) const OBJECT_META: Schema = &[
    (1, Field::Str("name")),
    (2, Field::Str("generateName")),
    (3, Field::Str("namespace")),
    (11, Field::StrMap("labels")),
    (12, Field::StrMap("annotations")),
    (14, Field::StrList("finalizers")),
];
pub(super) const NAMESPACE: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", NAMESPACE_SPEC)),
];
pub(super) const NAMESPACE_SPEC: Schema = &[(1, Field::StrList("finalizers"))];
pub(super) const SERVICE: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", SERVICE_SPEC)),
];
pub(super) const SERVICE_SPEC: Schema = &[
    (1, Field::MessageList("ports", SERVICE_PORT)),
    (2, Field::StrMap("selector")),
    (3, Field::Str("clusterIP")),
    (4, Field::Str("type")),
    (10, Field::Str("externalName")),
];
pub(super) const SERVICE_PORT: Schema = &[
    (1, Field::Str("name")),
    (2, Field::Str("protocol")),
    (3, Field::Int("port")),
    (4, Field::IntOrString("targetPort")),
    (5, Field::Int("nodePort")),
];

// apps/v1 Deployment, as `kubectl create deployment` fills it: `k8s.io/api/apps/v1/generated.proto`,
// with the pod template of `core/v1` and the selector of `meta/v1`.
pub(super) const DEPLOYMENT: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", DEPLOYMENT_SPEC)),
];
pub(super) const DEPLOYMENT_SPEC: Schema = &[
    (1, Field::OptInt("replicas")),
    (2, Field::Message("selector", LABEL_SELECTOR)),
    (3, Field::Message("template", POD_TEMPLATE_SPEC)),
];
pub(super) const LABEL_SELECTOR: Schema = &[(1, Field::StrMap("matchLabels"))];
pub(super) const POD_TEMPLATE_SPEC: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", POD_SPEC)),
];
pub(super) const POD_SPEC: Schema = &[
    (2, Field::MessageList("containers", CONTAINER)),
    (3, Field::Str("restartPolicy")),
];
pub(super) const CONTAINER: Schema = &[
    (1, Field::Str("name")),
    (2, Field::Str("image")),
    (3, Field::StrList("command")),
    (4, Field::StrList("args")),
    (6, Field::MessageList("ports", CONTAINER_PORT)),
    (7, Field::MessageList("env", ENV_VAR)),
];
pub(super) const CONTAINER_PORT: Schema = &[
    (1, Field::Str("name")),
    (3, Field::Int("containerPort")),
    (4, Field::Str("protocol")),
];
pub(super) const ENV_VAR: Schema = &[(1, Field::Str("name")), (2, Field::Str("value"))];
// authorization.k8s.io/v1 and authentication.k8s.io/v1 reviews (`kubectl auth can-i`, `whoami`).
pub(super) const RESOURCE_ATTRIBUTES: Schema = &[
    (1, Field::Str("namespace")),
    (2, Field::Str("verb")),
    (3, Field::Str("group")),
    (4, Field::Str("version")),
    (5, Field::Str("resource")),
    (6, Field::Str("subresource")),
    (7, Field::Str("name")),
];
pub(super) const NON_RESOURCE_ATTRIBUTES: Schema =
    &[(1, Field::Str("path")), (2, Field::Str("verb"))];
pub(super) const ACCESS_REVIEW_SPEC: Schema = &[
    (1, Field::Message("resourceAttributes", RESOURCE_ATTRIBUTES)),
    (
        2,
        Field::Message("nonResourceAttributes", NON_RESOURCE_ATTRIBUTES),
    ),
    (3, Field::Str("user")),
    (4, Field::StrList("groups")),
    (6, Field::Str("uid")),
];
pub(super) const ACCESS_REVIEW: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", ACCESS_REVIEW_SPEC)),
];
pub(super) const RULES_REVIEW: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", &[(1, Field::Str("namespace"))])),
];
pub(super) const SELF_SUBJECT_REVIEW: Schema = &[(1, Field::Message("metadata", OBJECT_META))];

// core/v1 ConfigMap and Secret, as `kubectl create configmap|secret` fill them.
pub(super) const CONFIG_MAP: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::StrMap("data")),
    (3, Field::BytesMap("binaryData")),
    (4, Field::Bool("immutable")),
];
pub(super) const SECRET: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::BytesMap("data")),
    (3, Field::Str("type")),
    (4, Field::StrMap("stringData")),
    (5, Field::Bool("immutable")),
];

// batch/v1 Job, as `kubectl create job NAME --image=… -- CMD` fills it:
// `k8s.io/api/batch/v1/generated.proto` (JobSpec), with the same pod template.
pub(super) const JOB: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", JOB_SPEC)),
];
pub(super) const JOB_SPEC: Schema = &[
    (1, Field::OptInt("parallelism")),
    (2, Field::OptInt("completions")),
    (3, Field::OptInt("activeDeadlineSeconds")),
    (4, Field::Message("selector", LABEL_SELECTOR)),
    (6, Field::Message("template", POD_TEMPLATE_SPEC)),
    (7, Field::OptInt("backoffLimit")),
    (8, Field::OptInt("ttlSecondsAfterFinished")),
    (9, Field::Str("completionMode")),
];

// core/v1 ServiceAccount (`kubectl create serviceaccount NAME`) and authentication.k8s.io/v1
// TokenRequest (`kubectl create token NAME [--audience …] [--duration …] [--bound-object-…]`).
pub(super) const SERVICE_ACCOUNT: Schema = &[(1, Field::Message("metadata", OBJECT_META))];
pub(super) const TOKEN_REQUEST: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", TOKEN_REQUEST_SPEC)),
];
pub(super) const TOKEN_REQUEST_SPEC: Schema = &[
    (1, Field::StrList("audiences")),
    (3, Field::Message("boundObjectRef", BOUND_OBJECT_REFERENCE)),
    (4, Field::OptInt("expirationSeconds")),
];
pub(super) const BOUND_OBJECT_REFERENCE: Schema = &[
    (1, Field::Str("kind")),
    (2, Field::Str("apiVersion")),
    (3, Field::Str("name")),
    (4, Field::Str("uid")),
];
// meta/v1 DeleteOptions (`kubectl drain`'s DELETE bodies and each Eviction's options) and
// policy/v1 Eviction and PodDisruptionBudget (`k8s.io/api/policy/v1/generated.proto`).
pub(super) const DELETE_OPTIONS: Schema = &[
    (1, Field::OptInt64("gracePeriodSeconds")),
    (
        2,
        Field::Message(
            "preconditions",
            &[(1, Field::Str("uid")), (2, Field::Str("resourceVersion"))],
        ),
    ),
    (4, Field::Str("propagationPolicy")),
    (5, Field::StrList("dryRun")),
];
pub(super) const EVICTION: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("deleteOptions", DELETE_OPTIONS)),
];
pub(super) const POD_DISRUPTION_BUDGET: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (
        2,
        Field::Message(
            "spec",
            &[
                (1, Field::IntOrString("minAvailable")),
                (2, Field::Message("selector", LABEL_SELECTOR)),
                (3, Field::IntOrString("maxUnavailable")),
                (4, Field::Str("unhealthyPodEvictionPolicy")),
            ],
        ),
    ),
];
// autoscaling/v1 HorizontalPodAutoscaler, as `kubectl autoscale` fills it (issue 20).
pub(super) const HORIZONTAL_POD_AUTOSCALER_V1: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (
        2,
        Field::Message(
            "spec",
            &[
                (
                    1,
                    Field::Message(
                        "scaleTargetRef",
                        &[
                            (1, Field::Str("kind")),
                            (2, Field::Str("name")),
                            (3, Field::Str("apiVersion")),
                        ],
                    ),
                ),
                (2, Field::OptInt("minReplicas")),
                (3, Field::Int("maxReplicas")),
                (4, Field::OptInt("targetCPUUtilizationPercentage")),
            ],
        ),
    ),
];
// batch/v1 CronJob, as `kubectl create cronjob` fills it (issue 20).
pub(super) const CRON_JOB: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", CRON_JOB_SPEC)),
];
pub(super) const CRON_JOB_SPEC: Schema = &[
    (1, Field::Str("schedule")),
    (2, Field::OptInt("startingDeadlineSeconds")),
    (3, Field::Str("concurrencyPolicy")),
    (5, Field::Message("jobTemplate", JOB_TEMPLATE_SPEC)),
    (6, Field::OptInt("successfulJobsHistoryLimit")),
    (7, Field::OptInt("failedJobsHistoryLimit")),
    (8, Field::Str("timeZone")),
];
pub(super) const JOB_TEMPLATE_SPEC: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", JOB_SPEC)),
];
// networking.k8s.io/v1 Ingress, as `kubectl create ingress NAME --rule=HOST/PATH=SVC:PORT` fills
// it: `k8s.io/api/networking/v1/generated.proto`.
pub(super) const INGRESS: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::Message("spec", INGRESS_SPEC)),
];
pub(super) const INGRESS_SPEC: Schema = &[
    (1, Field::Message("defaultBackend", INGRESS_BACKEND)),
    (2, Field::MessageList("tls", INGRESS_TLS)),
    (3, Field::MessageList("rules", INGRESS_RULE)),
    (4, Field::Str("ingressClassName")),
];
pub(super) const INGRESS_BACKEND: Schema = &[(4, Field::Message("service", SERVICE_BACKEND))];
pub(super) const SERVICE_BACKEND: Schema = &[
    (1, Field::Str("name")),
    (
        2,
        Field::Message(
            "port",
            &[(1, Field::Str("name")), (2, Field::Int("number"))],
        ),
    ),
];
pub(super) const INGRESS_TLS: Schema =
    &[(1, Field::StrList("hosts")), (2, Field::Str("secretName"))];
pub(super) const INGRESS_RULE: Schema = &[
    (1, Field::Str("host")),
    (2, Field::Inline(&[(1, Field::Message("http", HTTP_RULE))])),
];
pub(super) const HTTP_RULE: Schema = &[(1, Field::MessageList("paths", HTTP_PATH))];
pub(super) const HTTP_PATH: Schema = &[
    (1, Field::Str("path")),
    (2, Field::Message("backend", INGRESS_BACKEND)),
    (3, Field::Str("pathType")),
];

// rbac.authorization.k8s.io/v1, as `kubectl create role|clusterrole|rolebinding|clusterrolebinding`
// fill them: `k8s.io/api/rbac/v1/generated.proto`.
pub(super) const POLICY_RULE: Schema = &[
    (1, Field::StrList("verbs")),
    (2, Field::StrList("apiGroups")),
    (3, Field::StrList("resources")),
    (4, Field::StrList("resourceNames")),
    (5, Field::StrList("nonResourceURLs")),
];
pub(super) const ROLE: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::MessageList("rules", POLICY_RULE)),
];
pub(super) const CLUSTER_ROLE: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (2, Field::MessageList("rules", POLICY_RULE)),
    (
        3,
        Field::Message(
            "aggregationRule",
            &[(
                1,
                Field::MessageList("clusterRoleSelectors", LABEL_SELECTOR),
            )],
        ),
    ),
];
pub(super) const ROLE_BINDING: Schema = &[
    (1, Field::Message("metadata", OBJECT_META)),
    (
        2,
        Field::MessageList(
            "subjects",
            &[
                (1, Field::Str("kind")),
                (2, Field::Str("apiGroup")),
                (3, Field::Str("name")),
                (4, Field::Str("namespace")),
            ],
        ),
    ),
    (
        3,
        Field::Message(
            "roleRef",
            &[
                (1, Field::Str("apiGroup")),
                (2, Field::Str("kind")),
                (3, Field::Str("name")),
            ],
        ),
    ),
];

/// The schema of a kind kubectl sends in protobuf, if minik reads it.
pub(super) fn for_kind(kind: &str) -> Option<Schema> {
    Some(match kind {
        "Namespace" => NAMESPACE,
        "Service" => SERVICE,
        "Deployment" => DEPLOYMENT,
        "SelfSubjectAccessReview" | "SubjectAccessReview" => ACCESS_REVIEW,
        "SelfSubjectRulesReview" => RULES_REVIEW,
        "SelfSubjectReview" => SELF_SUBJECT_REVIEW,
        "Job" => JOB,
        "ConfigMap" => CONFIG_MAP,
        "Secret" => SECRET,
        "ServiceAccount" => SERVICE_ACCOUNT,
        "TokenRequest" => TOKEN_REQUEST,
        "DeleteOptions" => DELETE_OPTIONS,
        "Eviction" => EVICTION,
        "PodDisruptionBudget" => POD_DISRUPTION_BUDGET,
        "CronJob" => CRON_JOB,
        "Ingress" => INGRESS,
        "HorizontalPodAutoscaler" => HORIZONTAL_POD_AUTOSCALER_V1,
        "Role" => ROLE,
        "ClusterRole" => CLUSTER_ROLE,
        // A ClusterRoleBinding has the same fields as a RoleBinding.
        "RoleBinding" | "ClusterRoleBinding" => ROLE_BINDING,
        _ => return None,
    })
}
