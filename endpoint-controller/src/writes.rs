//! Everything the endpoints, EndpointSlice and mirroring controllers write, behind small traits so
//! sync tests can record it.
//!
//! Kubernetes counterpart: the `client.CoreV1().Endpoints(ns).Create/Update/Delete` calls in
//! `endpoints_controller.go`, the `DiscoveryV1().EndpointSlices(ns)` calls of the slice reconciler,
//! and their event recorders. Upstream's tests point the client at a fake
//! HTTP server and inspect the requests; minik's tests implement this trait instead.

use std::future::Future;

use minik_api::core::{Endpoints, Service};
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_client::events::{object_reference, Recorder};
use minik_client::{Api, Client, DeleteParams};

/// The component name on the controller's Events.
pub const COMPONENT: &str = "endpoint-controller";

/// The controller's writes.
pub trait EndpointsWrites: Send + Sync + 'static {
    /// Creates an Endpoints object.
    fn create(
        &self,
        endpoints: &Endpoints,
    ) -> impl Future<Output = minik_client::Result<Endpoints>> + Send;
    /// Replaces an Endpoints object (its `resourceVersion` guards against lost updates).
    fn replace(
        &self,
        endpoints: &Endpoints,
    ) -> impl Future<Output = minik_client::Result<Endpoints>> + Send;
    /// Deletes the Endpoints `namespace/name`.
    fn delete(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = minik_client::Result<()>> + Send;
    /// Records a Normal Event about a Service.
    fn event(
        &self,
        service: &Service,
        reason: &str,
        message: &str,
    ) -> impl Future<Output = minik_client::Result<()>> + Send;
}

/// The EndpointSlice and mirroring controllers' writes (`endpointslice/`, `mirroring.rs`).
pub trait SliceWrites: Send + Sync + 'static {
    /// Creates an EndpointSlice (named by the apiserver when it has only a `generateName`).
    fn create_slice(
        &self,
        slice: &EndpointSlice,
    ) -> impl Future<Output = minik_client::Result<EndpointSlice>> + Send;
    /// Replaces an EndpointSlice (its `resourceVersion` guards against lost updates).
    fn replace_slice(
        &self,
        slice: &EndpointSlice,
    ) -> impl Future<Output = minik_client::Result<EndpointSlice>> + Send;
    /// Deletes the EndpointSlice `namespace/name`.
    fn delete_slice(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = minik_client::Result<()>> + Send;
    /// Records a Normal Event about a Service as the EndpointSlice controller.
    fn slice_event(
        &self,
        service: &Service,
        reason: &str,
        message: &str,
    ) -> impl Future<Output = minik_client::Result<()>> + Send;
}

/// The real writes, through the apiserver.
#[derive(Clone, Debug)]
pub struct ApiWrites {
    client: Client,
    recorder: Recorder,
    slice_recorder: Recorder,
}

impl ApiWrites {
    /// Writes through `client`, reporting Events as `endpoint-controller` (Endpoints) and
    /// `endpointslice-controller` (slices).
    pub fn new(client: Client) -> Self {
        // Each membership change is a timeline marker the demo reads with its own eventTime, so
        // these events are neither aggregated nor rate-limited.
        let recorder = Recorder::new(client.clone(), COMPONENT, None).without_correlation();
        let slice_recorder = Recorder::new(client.clone(), crate::endpointslice::COMPONENT, None)
            .without_correlation();
        ApiWrites {
            client,
            recorder,
            slice_recorder,
        }
    }

    fn api(&self, namespace: Option<&str>) -> Api<Endpoints> {
        Api::namespaced(self.client.clone(), namespace.unwrap_or("default"))
    }

    fn slices(&self, slice: &EndpointSlice) -> Api<EndpointSlice> {
        let namespace = slice.metadata.namespace.as_deref().unwrap_or("default");
        Api::namespaced(self.client.clone(), namespace)
    }
}

impl EndpointsWrites for ApiWrites {
    async fn create(&self, endpoints: &Endpoints) -> minik_client::Result<Endpoints> {
        self.api(endpoints.metadata.namespace.as_deref())
            .create(endpoints)
            .await
    }

    async fn replace(&self, endpoints: &Endpoints) -> minik_client::Result<Endpoints> {
        let name = endpoints.metadata.name.as_deref().unwrap_or_default();
        self.api(endpoints.metadata.namespace.as_deref())
            .replace(name, endpoints)
            .await
    }

    async fn delete(&self, namespace: &str, name: &str) -> minik_client::Result<()> {
        self.api(Some(namespace))
            .delete(name, &DeleteParams::default())
            .await
            .map(|_| ())
    }

    async fn event(
        &self,
        service: &Service,
        reason: &str,
        message: &str,
    ) -> minik_client::Result<()> {
        self.recorder
            .publish(&object_reference(service), "Normal", reason, message)
            .await
    }
}

impl SliceWrites for ApiWrites {
    async fn create_slice(&self, slice: &EndpointSlice) -> minik_client::Result<EndpointSlice> {
        self.slices(slice).create(slice).await
    }

    async fn replace_slice(&self, slice: &EndpointSlice) -> minik_client::Result<EndpointSlice> {
        let name = slice.metadata.name.as_deref().unwrap_or_default();
        self.slices(slice).replace(name, slice).await
    }

    async fn delete_slice(&self, namespace: &str, name: &str) -> minik_client::Result<()> {
        Api::<EndpointSlice>::namespaced(self.client.clone(), namespace)
            .delete(name, &DeleteParams::default())
            .await
            .map(|_| ())
    }

    async fn slice_event(
        &self,
        service: &Service,
        reason: &str,
        message: &str,
    ) -> minik_client::Result<()> {
        self.slice_recorder
            .publish(&object_reference(service), "Normal", reason, message)
            .await
    }
}
