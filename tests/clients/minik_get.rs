//! `minik get` prints what `kubectl get` prints, because both print the server's Table.
//!
//! Kubernetes counterpart: none; this is issue 7's "minik's own CLI renders the same server
//! Tables, so its output matches kubectl's". Both commands run against one cluster and their
//! outputs are compared line by line, cell by cell. Ages are masked: the two commands run a few
//! milliseconds apart and `9s` may become `10s` between them.

use std::process::Stdio;

use crate::support::{cluster, kubectl_binary, running, stop_clean, Kubectl};

/// The cells of each line, with ages (`5s`, `3m2s`, `2d`) replaced by `AGE`.
fn masked(output: &str) -> Vec<Vec<String>> {
    output
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(|cell| {
                    if is_age(cell) {
                        "AGE".into()
                    } else {
                        cell.into()
                    }
                })
                .collect()
        })
        .collect()
}

/// `5s`, `3m2s`, `10h`, `2d`, `3y`: digits and one of `smhdy`, once or twice.
fn is_age(cell: &str) -> bool {
    let mut units = 0;
    let mut digits = 0;
    for c in cell.chars() {
        match c {
            '0'..='9' => digits += 1,
            's' | 'm' | 'h' | 'd' | 'y' if digits > 0 => {
                units += 1;
                digits = 0;
            }
            _ => return false,
        }
    }
    digits == 0 && (1..=2).contains(&units)
}

#[test]
fn ages_are_recognised_and_names_are_not() {
    assert!(is_age("5s") && is_age("3m2s") && is_age("2d") && is_age("10h"));
    assert!(!is_age("web") && !is_age("0") && !is_age("1/1") && !is_age("s5"));
}

#[tokio::test]
async fn minik_get_prints_what_kubectl_get_prints() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    kubectl.apply_web_and_service("app: web, tier: front").await;
    running(&cluster, "web").await;

    for args in [
        &["get", "pods"][..],
        &["get", "pods", "-o", "wide"],
        &["get", "pod", "web"],
        &["get", "pods", "-A", "--show-labels"],
        &["get", "svc,endpoints"],
        &["get", "services", "-o", "wide"],
        &["get", "nodes", "-o", "wide"],
        &["get", "pods", "-l", "tier=front"],
    ] {
        let expected = kubectl.ok(args).await;
        let output = tokio::process::Command::new(cluster.minik_binary())
            .args(args)
            .env("KUBECONFIG", kubectl.kubeconfig())
            .stdin(Stdio::null())
            .output()
            .await
            .expect("run minik");
        assert!(output.status.success(), "minik {args:?}: {output:?}");
        let printed = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            masked(&printed),
            masked(&expected),
            "minik {args:?} printed\n{printed}\nkubectl printed\n{expected}"
        );
    }
    stop_clean(cluster).await;
}
