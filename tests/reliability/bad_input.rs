//! Malformed and hostile requests never get a 5xx (reliability.md T5): every row of the table in
//! `table.rs` is answered with a Kubernetes `Status` of a 4xx code (the exact one where upstream
//! is exact), the apiserver stays up, and the objects it keeps are unchanged afterwards.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use minik_client::{Client, Method};
use minik_tests::wait::eventually;
use minik_tests::Cluster;
use serde_json::{json, Value};

use crate::table::{self, Case};

/// How many requests are in flight at once.
const CONCURRENCY: usize = 8;

/// What one request got back.
#[derive(Debug)]
struct Answer {
    code: u16,
    body: Vec<u8>,
}

async fn send(client: &Client, case: &Case) -> Result<Answer, String> {
    let method = Method::from_bytes(case.method.as_bytes()).map_err(|e| e.to_string())?;
    let mut request = client.raw_request(method, &case.path);
    if let Some(content_type) = case.content_type {
        request = request.header("Content-Type", content_type);
    }
    if !case.body.is_empty() {
        request = request.body(case.body.clone());
    }
    let response = request.send().await.map_err(|e| format!("{e:?}"))?;
    let code = response.status().as_u16();
    let body = response.bytes().await.map_err(|e| e.to_string())?.to_vec();
    Ok(Answer { code, body })
}

/// Why an answer is not what the table wants, if it is not.
fn judge(case: &Case, answer: &Result<Answer, String>) -> Option<String> {
    let answer = match answer {
        Ok(answer) => answer,
        // The server may answer 413 and close before the client has written the whole body
        // (an oversize body is refused before it is read): the client then sees its write fail.
        Err(error) if case.code == Some(413) && error.contains("BodyWrite") => return None,
        Err(error) => return Some(format!("no answer: {error}")),
    };
    if !(400..500).contains(&answer.code) {
        let text = String::from_utf8_lossy(&answer.body);
        let text: String = text.chars().take(200).collect();
        return Some(format!("{} (wanted 4xx): {text}", answer.code));
    }
    if let Some(code) = case.code {
        if answer.code != code {
            return Some(format!("{} (wanted {code})", answer.code));
        }
    }
    let status: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    if status["kind"] != "Status" || status["code"] != json!(answer.code) {
        let text: String = String::from_utf8_lossy(&answer.body)
            .chars()
            .take(200)
            .collect();
        return Some(format!("{}: not a Status: {text}", answer.code));
    }
    None
}

/// Every object of the kinds the table writes to, `path → resourceVersion`, so a change shows.
async fn snapshot(client: &Client) -> BTreeMap<String, String> {
    let mut objects = BTreeMap::new();
    for (path, _, _) in table::KINDS {
        // Leases, Endpoints and Nodes are rewritten by the components themselves; their names
        // are compared, not their versions.
        let noisy = ["leases", "endpoints", "nodes", "namespaces"]
            .iter()
            .any(|kind| path.ends_with(kind));
        let list = client
            .request_json(Method::GET, path, None)
            .await
            .expect("list");
        for item in list["items"].as_array().into_iter().flatten() {
            let name = item["metadata"]["name"].as_str().unwrap_or("").to_string();
            let version = if noisy {
                String::new()
            } else {
                item["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            };
            objects.insert(format!("{path}/{name}"), version);
        }
    }
    objects
}

/// The objects the bad updates aim at: a ConfigMap and a (never scheduled) Pod.
async fn create_targets(client: &Client) {
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "keep"}, "data": {"k": "v"}});
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "keep-pod"},
        "spec": {"containers": [{"name": "web", "image": "busybox"}]}});
    for (path, body) in [
        ("/api/v1/namespaces/default/configmaps", configmap),
        ("/api/v1/namespaces/default/pods", pod),
    ] {
        client
            .request_json(Method::POST, path, Some(&body))
            .await
            .expect("create a target");
    }
    // The scheduler writes the pod's PodScheduled=False (no node) once: let it, before the
    // snapshot, so that only the hostile requests could change the pod afterwards.
    let path = "/api/v1/namespaces/default/pods/keep-pod";
    eventually(
        "keep-pod marked unschedulable",
        Duration::from_secs(30),
        || async {
            let pod = client.request_json(Method::GET, path, None).await.ok()?;
            let conditions = pod["status"]["conditions"].as_array()?.clone();
            conditions
                .iter()
                .any(|c| c["type"] == "PodScheduled" && c["status"] == "False")
                .then_some(())
        },
    )
    .await
    .expect("the scheduler saw the pod");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hundreds_of_hostile_requests_get_a_4xx_status_and_change_nothing() {
    let cluster = Cluster::builder()
        .nodes(0)
        .without_services()
        .start()
        .await
        .expect("cluster");
    let client = cluster.client();
    create_targets(&client).await;
    let before = snapshot(&client).await;
    let cases = table::all();
    assert!(cases.len() >= 500, "the table has {} rows", cases.len());

    let started = Instant::now();
    let answers: Vec<(Case, Result<Answer, String>)> = futures::stream::iter(cases)
        .map(|case| {
            let client = client.clone();
            async move {
                let answer = send(&client, &case).await;
                (case, answer)
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut by_code: BTreeMap<u16, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (case, answer) in &answers {
        if let Ok(answer) = answer {
            *by_code.entry(answer.code).or_default() += 1;
        }
        if let Some(why) = judge(case, answer) {
            wrong.push(format!(
                "{} {} [{}]: {why}",
                case.method,
                case.path.chars().take(90).collect::<String>(),
                case.label
            ));
        }
    }
    eprintln!(
        "{} hostile requests in {:?}; answers by code: {by_code:?}",
        answers.len(),
        started.elapsed()
    );
    assert!(
        wrong.is_empty(),
        "{} wrong answers:\n{}",
        wrong.len(),
        wrong.join("\n")
    );

    // Still up, and nothing changed.
    let ready = client.get_text("/readyz").await.expect("/readyz");
    assert_eq!(ready.trim(), "ok");
    let after = snapshot(&client).await;
    assert_eq!(before, after, "the hostile requests changed nothing");
    let report = cluster.stop().await.expect("stop");
    assert!(report.leftovers.is_empty(), "{:?}", report.leftovers);
}
