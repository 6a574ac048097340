//! The node-group API's messages and its client: the autoscaler's view of the cloud.
//!
//! Kubernetes counterpart: the `externalgrpc` cloud provider
//! (`cluster-autoscaler/cloudprovider/externalgrpc/protos/externalgrpc.proto` and its Go client):
//! `NodeGroups`, `NodeGroupForNode`, `NodeGroupTargetSize`, `NodeGroupIncreaseSize`,
//! `NodeGroupDeleteNodes`, `NodeGroupDecreaseTargetSize`, `NodeGroupNodes` and
//! `NodeGroupTemplateNodeInfo`. minik keeps the method names and the messages' fields but carries
//! them as JSON over HTTPS (`POST /NodeGroupIncreaseSize` with `{"id": …, "delta": 2}`) instead of
//! gRPC, with the cluster CA on both sides: the `--cloud-config` file is a kubeconfig whose server
//! is the node-group API and whose user is the autoscaler's client certificate. Errors are upstream
//! gRPC status codes as HTTP ones (InvalidArgument 400, NotFound 404, FailedPrecondition 409,
//! Unimplemented 501). What it leaves out: `GPULabel`, `PricingNodePrice`, `GetOptions`, `Cleanup`
//! and `Refresh` (nothing to price, cache or refresh on one machine).

use std::path::Path;

use futures::future::BoxFuture;
use minik_client::Client;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::NodeGroup;

/// The one node group's id (`NodeGroup.id`).
pub const GROUP_ID: &str = "minik";

/// `NodeGroup`: a group's id and size bounds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupInfo {
    /// `minik`.
    pub id: String,
    /// The fewest nodes the group keeps (0: every added node may go).
    pub min_size: usize,
    /// The most nodes the group may have (`--max-nodes` less the `--nodes` ones).
    pub max_size: usize,
}

/// `ExternalGrpcNode`, reduced to what identifies a minik node: its name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrpcNode {
    /// The Node's name (`node-101`).
    pub name: String,
}

/// `Instance`: one member of the group, started whether or not its Node has registered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Instance {
    /// Its node name (upstream: the provider id).
    pub id: String,
}

/// The client of a node-group API at the server of a kubeconfig (`--cloud-config`).
pub struct RemoteNodeGroup {
    client: Client,
}

impl RemoteNodeGroup {
    /// Reads the `--cloud-config` kubeconfig: the API's URL, the CA, the client certificate.
    pub fn from_kubeconfig(path: &Path) -> crate::Result<Self> {
        Ok(RemoteNodeGroup {
            client: Client::from_kubeconfig(path)?,
        })
    }

    async fn call(&self, method: &str, body: Value) -> Result<Value, String> {
        self.client
            .request_json(
                minik_client::Method::POST,
                &format!("/{method}"),
                Some(&body),
            )
            .await
            .map_err(|e| format!("{method}: {e}"))
    }

    /// `NodeGroups`: every group the cloud has (minik: one).
    pub async fn node_groups(&self) -> Result<Vec<GroupInfo>, String> {
        let answer = self.call("NodeGroups", json!({})).await?;
        serde_json::from_value(answer["nodeGroups"].clone()).map_err(|e| e.to_string())
    }
}

impl NodeGroup for RemoteNodeGroup {
    fn nodes(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        Box::pin(async move {
            let answer = self.call("NodeGroupNodes", json!({"id": GROUP_ID})).await?;
            let instances: Vec<Instance> = serde_json::from_value(answer["instances"].clone())
                .map_err(|e| format!("NodeGroupNodes: {e}"))?;
            Ok(instances.into_iter().map(|i| i.id).collect())
        })
    }

    fn increase_size(&self, delta: usize) -> BoxFuture<'_, Result<Vec<String>, String>> {
        Box::pin(async move {
            let before = self.nodes().await?;
            let body = json!({"id": GROUP_ID, "delta": delta});
            self.call("NodeGroupIncreaseSize", body).await?;
            let after = self.nodes().await?;
            Ok(after.into_iter().filter(|n| !before.contains(n)).collect())
        })
    }

    fn delete_node<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let body = json!({"id": GROUP_ID, "nodes": [GrpcNode { name: name.into() }]});
            self.call("NodeGroupDeleteNodes", body).await.map(|_| ())
        })
    }
}
