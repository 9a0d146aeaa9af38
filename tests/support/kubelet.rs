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

/// An executor pod the size Spark 4.x makes it (environment with the downward
/// API, ports, requests and limits, a local-dir volume), the same shape as the
/// JVM benchmark's `ExecutorPodPopulation`: for figures whose cost grows with
/// the pod's size (time to sync, cache bytes).
pub fn spark_shaped_executor_pod(app_id: &str, exec_id: u64) -> Pod {
    let name = executor_pod_name(app_id, exec_id);
    let env = |k: &str, v: &str| json!({"name": k, "value": v});
    let field =
        |k: &str, path: &str| json!({"name": k, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}});
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {
                APP_LABEL: app_id,
                ROLE_LABEL: "executor",
                EXEC_ID_LABEL: exec_id.to_string(),
                "spark-app-name": "benchmark",
                "spark-exec-resourceprofile-id": "0",
                "spark-version": "4.2.0",
            },
        },
        "spec": {
            "hostname": name,
            "restartPolicy": "Never",
            "serviceAccountName": "default",
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "containers": [{
                "name": EXECUTOR_CONTAINER,
                "image": "apache/spark:4.2.0",
                "imagePullPolicy": "IfNotPresent",
                "args": ["executor"],
                "env": [
                    env("SPARK_USER", "spark"),
                    env("SPARK_DRIVER_URL", &format!("spark://CoarseGrainedScheduler@{app_id}-driver-svc.spark.svc:7078")),
                    env("SPARK_EXECUTOR_CORES", "4"),
                    env("SPARK_EXECUTOR_MEMORY", "8g"),
                    env("SPARK_APPLICATION_ID", app_id),
                    env("SPARK_CONF_DIR", "/opt/spark/conf"),
                    env("SPARK_EXECUTOR_ID", &exec_id.to_string()),
                    env("SPARK_RESOURCE_PROFILE_ID", "0"),
                    field("SPARK_EXECUTOR_POD_IP", "status.podIP"),
                    field("SPARK_EXECUTOR_POD_NAME", "metadata.name"),
                    env("SPARK_JAVA_OPT_0", "-Dspark.driver.port=7078"),
                    env("SPARK_JAVA_OPT_1", "-Dspark.driver.blockManager.port=7079"),
                    env("SPARK_LOCAL_DIRS", "/var/data/spark-0b6a6f5e-3c2d-4f3e-9a65-0a1f6c2b7d11"),
                ],
                "ports": [{"name": "blockmanager", "containerPort": 7079, "protocol": "TCP"}],
                "resources": {
                    "requests": {"cpu": "4", "memory": "8601Mi"},
                    "limits": {"memory": "8601Mi"},
                },
                "volumeMounts": [{"name": "spark-local-dir-1", "mountPath": "/var/data/spark-0b6a6f5e"}],
            }],
            "volumes": [{"name": "spark-local-dir-1", "emptyDir": {}}],
        },
    }))
    .unwrap()
}

/// The `pods/status` a kubelet writes for a running Spark executor, as the
/// JVM benchmark's pods have it.
pub fn spark_shaped_running_status(exec_id: u64) -> serde_json::Value {
    let ip = format!("10.244.{}.{}", (exec_id / 250) % 250, exec_id % 250 + 2);
    let at = "2026-11-29T10:00:00Z";
    let conditions = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
        .map(|t| json!({"type": t, "status": "True", "lastTransitionTime": at}));
    json!({
        "phase": "Running",
        "hostIP": "10.0.0.7",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "qosClass": "Burstable",
        "startTime": at,
        "conditions": conditions,
        "containerStatuses": [{
            "name": EXECUTOR_CONTAINER,
            "image": "docker.io/apache/spark:4.2.0",
            "imageID": "docker.io/apache/spark@sha256:5a0f3c3d1f3e2b0c9f7e6d5c4b3a29181716151413121110f0e0d0c0b0a0908",
            "containerID": "containerd://4f1d2c3b4a5968778695a4b3c2d1e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091",
            "ready": true,
            "started": true,
            "restartCount": 0,
            "state": {"running": {"startedAt": at}},
        }],
    })
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
        PodPhase::RunningExited(code) => (
            "Running",
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
