//! Playing the kubelet: executor pods shaped like the ones Spark creates, and
//! status patches that walk them through their phases (there is no kubelet on
//! the local plane; `pods/status` accepts the patches all the same). The shapes
//! are `tests/pods/`, which the JVM tests' kubelet reads too.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const DRIVER_POD: &str = include_str!("../pods/driver-pod.json");
const EXECUTOR_POD: &str = include_str!("../pods/executor-pod.json");
const SPARK_EXECUTOR_POD: &str = include_str!("../pods/spark-executor-pod.json");
const SPARK_EXECUTOR_RUNNING_STATUS: &str = include_str!("../pods/spark-executor-running-status.json");
const EXECUTOR_STATUSES: &str = include_str!("../pods/executor-statuses.json");

/// A template of `tests/pods/` with its `{{name}}` placeholders replaced, parsed.
fn render(template: &str, values: &[(&str, &str)]) -> serde_json::Value {
    let text =
        values.iter().fold(template.to_string(), |text, (name, value)| text.replace(&format!("{{{{{name}}}}}"), value));
    serde_json::from_str(&text).expect("tests/pods/ holds JSON")
}

/// A pod of `tests/pods/`.
fn render_pod(template: &str, values: &[(&str, &str)]) -> Pod {
    serde_json::from_value(render(template, values)).expect("tests/pods/ holds pods")
}

/// The name Spark gives executor `exec_id` of `app_id`.
pub fn executor_pod_name(app_id: &str, exec_id: u64) -> String {
    format!("{app_id}-exec-{exec_id}")
}

/// A driver pod named `<app>-driver` that runs nowhere: what owns an app's executor Services.
pub fn driver_pod(app_id: &str) -> Pod {
    render_pod(DRIVER_POD, &[("app", app_id)])
}

/// An executor pod as Spark builds it, reduced to what matters to the informer.
pub fn executor_pod(app_id: &str, exec_id: u64) -> Pod {
    render_pod(EXECUTOR_POD, &[("app", app_id), ("exec", &exec_id.to_string())])
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

/// An executor pod the size Spark 4.x makes it (environment with the downward
/// API, ports, requests and limits, a local-dir volume), the same shape as the
/// JVM benchmark's `ExecutorPodPopulation`: for figures whose cost grows with
/// the pod's size (time to sync, cache bytes).
pub fn spark_shaped_executor_pod(app_id: &str, exec_id: u64) -> Pod {
    render_pod(SPARK_EXECUTOR_POD, &[("app", app_id), ("exec", &exec_id.to_string())])
}

/// The `pods/status` a kubelet writes for a running Spark executor, as the
/// JVM benchmark's pods have it: an IP of its own per executor.
pub fn spark_shaped_running_status(exec_id: u64) -> serde_json::Value {
    let ip = format!("10.244.{}.{}", (exec_id / 250) % 250, exec_id % 250 + 2);
    render(SPARK_EXECUTOR_RUNNING_STATUS, &[("ip", &ip)])
}

/// Creates Spark-shaped executors `ids`, Running, at most `concurrency` at once.
pub async fn create_spark_shaped_executors(
    pods: &Api<Pod>,
    app_id: &str,
    ids: std::ops::Range<u64>,
    concurrency: usize,
) -> kube::Result<()> {
    futures::stream::iter(ids)
        .map(|id| async move {
            pods.create(&PostParams::default(), &spark_shaped_executor_pod(app_id, id)).await?;
            let status = json!({"status": spark_shaped_running_status(id)});
            pods.patch_status(&executor_pod_name(app_id, id), &PatchParams::default(), &Patch::Merge(&status)).await
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<_>>()
        .await
        .map(|_| ())
}

/// A phase the test kubelet can put an executor's pod in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    /// Failed, with the executor container's exit code.
    Failed(i32),
    /// Still Running, the executor container exited with this code: what the
    /// kubelet shows of a deleted executor before the pod's phase follows.
    RunningExited(i32),
}

/// The `pods/status` body the kubelet would write for `phase`.
pub fn status_for(phase: PodPhase) -> serde_json::Value {
    let (name, exit_code) = match phase {
        PodPhase::Pending => ("Pending", None),
        PodPhase::Running => ("Running", None),
        PodPhase::Succeeded => ("Succeeded", Some(0)),
        PodPhase::Failed(code) => ("Failed", Some(code)),
        PodPhase::RunningExited(code) => ("RunningExited", Some(code)),
    };
    let mut statuses = render(EXECUTOR_STATUSES, &[]);
    let mut status = statuses[name].take();
    if let Some(code) = exit_code {
        status["containerStatuses"][0]["state"]["terminated"]["exitCode"] = json!(code);
    }
    json!({ "status": status })
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
