//! Playing the kubelet: executor pods shaped like the ones Spark creates, and
//! status patches that walk them through their phases (there is no kubelet on
//! the local plane; `pods/status` accepts the patches all the same).

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use spark_k8s_native::labels::{APP as APP_LABEL, EXEC_ID as EXEC_ID_LABEL, ROLE as ROLE_LABEL};
pub const EXECUTOR_CONTAINER: &str = "spark-kubernetes-executor";

/// The name Spark gives executor `exec_id` of `app_id`.
pub fn executor_pod_name(app_id: &str, exec_id: u64) -> String {
    format!("{app_id}-exec-{exec_id}")
}

/// An executor pod as Spark builds it, reduced to what matters to the informer.
pub fn executor_pod(app_id: &str, exec_id: u64) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": executor_pod_name(app_id, exec_id),
            "labels": {
                APP_LABEL: app_id,
                ROLE_LABEL: "executor",
                EXEC_ID_LABEL: exec_id.to_string(),
                "spark-resource-profile-id": "0",
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "containers": [{
                "name": EXECUTOR_CONTAINER,
                "image": "spark:4.0.0",
                "args": ["executor"],
                "env": [{"name": "SPARK_EXECUTOR_ID", "value": exec_id.to_string()}],
                "resources": {"requests": {"cpu": "1", "memory": "1408Mi"}},
            }],
        },
    }))
    .unwrap()
}

pub async fn create_executor(pods: &Api<Pod>, app_id: &str, exec_id: u64) -> kube::Result<Pod> {
    pods.create(&PostParams::default(), &executor_pod(app_id, exec_id)).await
}

/// Creates executors `ids` concurrently, at most `concurrency` requests at once.
pub async fn create_executors(
    pods: &Api<Pod>,
    app_id: &str,
    ids: std::ops::Range<u64>,
    concurrency: usize,
) -> kube::Result<Vec<Pod>> {
    futures::stream::iter(ids)
        .map(|id| create_executor(pods, app_id, id))
        .buffer_unordered(concurrency)
        .try_collect()
        .await
}

/// A phase the test kubelet can put an executor's pod in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    /// Failed, with the executor container's exit code.
    Failed(i32),
}

/// The `pods/status` body the kubelet would write for `phase`.
pub fn status_for(phase: PodPhase) -> serde_json::Value {
    let now = "2026-01-01T00:00:00Z";
    let (phase_name, state, ready) = match phase {
        PodPhase::Pending => ("Pending", json!({"waiting": {"reason": "ContainerCreating"}}), false),
        PodPhase::Running => ("Running", json!({"running": {"startedAt": now}}), true),
        PodPhase::Succeeded => (
            "Succeeded",
            json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}),
            false,
        ),
        PodPhase::Failed(code) => (
            "Failed",
            json!({"terminated": {"exitCode": code, "reason": "Error", "startedAt": now, "finishedAt": now}}),
            false,
        ),
    };
    json!({
        "status": {
            "phase": phase_name,
            "podIP": "10.244.0.10",
            "containerStatuses": [{
                "name": EXECUTOR_CONTAINER,
                "image": "spark:4.0.0",
                "imageID": "",
                "ready": ready,
                "restartCount": 0,
                "state": state,
            }],
        }
    })
}

/// Patches the pod's status as the kubelet would.
pub async fn set_phase(pods: &Api<Pod>, name: &str, phase: PodPhase) -> kube::Result<Pod> {
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(status_for(phase))).await
}

/// Deletes the pod at once (no kubelet: there is nothing to wait for).
pub async fn delete_pod(pods: &Api<Pod>, name: &str) -> kube::Result<()> {
    pods.delete(name, &DeleteParams::default().grace_period(0)).await.map(|_| ())
}

/// Sets or removes a label, as Spark does with `spark-exec-inactive`.
pub async fn set_label(pods: &Api<Pod>, name: &str, key: &str, value: Option<&str>) -> kube::Result<Pod> {
    let patch = json!({"metadata": {"labels": {key: value}}});
    pods.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await
}
