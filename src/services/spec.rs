//! The Service of one executor exactly as it should be (its name, spec and
//! owner) and what counts as ours: pure, no request.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::labels;

/// The one port of an executor Service.
pub(super) const BLOCK_MANAGER_PORT_NAME: &str = "spark-block-manager";
/// `spark-role` of executor Services, so an operator finds them all:
/// `kubectl get svc -l spark-app-selector=<app>,spark-role=executor-service`.
pub(super) const SERVICE_ROLE: &str = "executor-service";
pub(super) const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub(super) const MANAGED_BY: &str = "spark-k8s-native";

const MAX_NAME: usize = 63;

/// The Service name of an executor: `svc-<appId>-exec-<execId>`, always a
/// valid DNS-1035 label (lower case, at most 63 characters, starting with a
/// letter). A long or odd app id is shortened deterministically: the executor
/// id is kept whole, and a hash of the app id keeps names of different apps apart.
pub fn service_name(app_id: &str, exec_id: &str) -> String {
    let app = dns_part(app_id);
    let exec = dns_part(exec_id);
    let plain = format!("svc-{app}-exec-{exec}");
    if plain.len() <= MAX_NAME && app == app_id && exec == exec_id {
        return plain;
    }
    let hash = format!("{:08x}", fnv1a(app_id.as_bytes()) as u32);
    let fixed = "svc-".len() + 1 + hash.len() + "-exec-".len() + exec.len();
    let room = MAX_NAME.saturating_sub(fixed);
    let app = app[..app.len().min(room)].trim_end_matches('-');
    let name = if app.is_empty() { format!("svc-{hash}-exec-{exec}") } else { format!("svc-{app}-{hash}-exec-{exec}") };
    name[..name.len().min(MAX_NAME)].trim_end_matches('-').to_string()
}

/// Lower case, every character outside `[a-z0-9-]` replaced by `-`, runs of `-` folded.
fn dns_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() { c } else { '-' };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c);
        }
    }
    out.trim_matches('-').to_string()
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3))
}

/// The Service of one executor, exactly as it should be.
pub(super) fn executor_service(app_id: &str, exec_id: &str, port: u16, owner: &OwnerReference) -> Service {
    let labels = BTreeMap::from([
        (labels::APP.to_string(), app_id.to_string()),
        (labels::ROLE.to_string(), SERVICE_ROLE.to_string()),
        (labels::EXEC_ID.to_string(), exec_id.to_string()),
        (MANAGED_BY_LABEL.to_string(), MANAGED_BY.to_string()),
    ]);
    let selector = BTreeMap::from([
        (labels::APP.to_string(), app_id.to_string()),
        (labels::EXEC_ID.to_string(), exec_id.to_string()),
    ]);
    Service {
        metadata: ObjectMeta {
            name: Some(service_name(app_id, exec_id)),
            labels: Some(labels),
            owner_references: Some(vec![owner.clone()]),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            selector: Some(selector),
            ports: Some(vec![ServicePort {
                name: Some(BLOCK_MANAGER_PORT_NAME.into()),
                protocol: Some("TCP".into()),
                port: port as i32,
                target_port: Some(IntOrString::Int(port as i32)),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The owner reference to the driver pod: the Service outlives its executor
/// and is garbage-collected with the driver.
pub(super) fn driver_owner(driver: &Pod) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: driver.metadata.name.clone()?,
        uid: driver.metadata.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: None,
    })
}

/// Whether we made this Service. One we did not make (another tool, or a
/// Spark that ships its own executor Services) is never repaired or deleted.
pub(super) fn is_ours(service: &Service) -> bool {
    service.metadata.labels.as_ref().and_then(|l| l.get(MANAGED_BY_LABEL)).map(String::as_str) == Some(MANAGED_BY)
}

/// Whether an existing Service differs from the wanted one in what matters:
/// labels, owner, selector, type and ports.
pub(super) fn differs(existing: &Service, wanted: &Service) -> bool {
    let (e, w) = (existing.spec.clone().unwrap_or_default(), wanted.spec.clone().unwrap_or_default());
    let labels_missing = wanted.metadata.labels.as_ref().is_some_and(|want| {
        let have = existing.metadata.labels.clone().unwrap_or_default();
        want.iter().any(|(k, v)| have.get(k) != Some(v))
    });
    let ports = |s: &ServiceSpec| -> Vec<(Option<String>, i32, Option<IntOrString>)> {
        s.ports.clone().unwrap_or_default().into_iter().map(|p| (p.name, p.port, p.target_port)).collect()
    };
    labels_missing
        || existing.metadata.owner_references != wanted.metadata.owner_references
        || e.selector != w.selector
        || e.type_.as_deref().unwrap_or("ClusterIP") != w.type_.as_deref().unwrap_or("ClusterIP")
        || ports(&e) != ports(&w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid_dns_1035(name: &str) -> bool {
        name.len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    }

    fn owner() -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "driver".into(),
            uid: "uid-1".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }
    }

    #[test]
    fn short_app_ids_give_the_pull_requests_name() {
        assert_eq!(service_name("spark-1234abcd", "7"), "svc-spark-1234abcd-exec-7");
    }

    #[test]
    fn long_and_odd_app_ids_give_valid_unique_names_that_keep_the_executor_id() {
        let long = format!("spark-{}", "a1b2c3d4".repeat(8));
        let apps = [long.as_str(), "Spark_App.With.Dots", "spark-application-1700000000000", "x", "9starts-with-digit"];
        let mut seen = std::collections::HashSet::new();
        for app in apps {
            for exec in ["1", "42", "123456"] {
                let name = service_name(app, exec);
                assert!(valid_dns_1035(&name), "{app}/{exec} -> {name}");
                assert!(name.ends_with(&format!("-exec-{exec}")), "{name}");
                assert!(seen.insert(name.clone()), "duplicate {name}");
                assert_eq!(service_name(app, exec), name, "deterministic");
            }
        }
        // Two long app ids that share their first 40 characters still differ.
        let a = service_name(&format!("{long}-a"), "1");
        let b = service_name(&format!("{long}-b"), "1");
        assert_ne!(a, b);
    }

    #[test]
    fn the_spec_selects_the_executor_and_exposes_the_block_manager_port() {
        let svc = executor_service("spark-app", "3", 7079, &owner());
        let spec = svc.spec.as_ref().unwrap();
        assert_eq!(svc.metadata.name.as_deref(), Some("svc-spark-app-exec-3"));
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        let selector = spec.selector.as_ref().unwrap();
        assert_eq!(selector.len(), 2);
        assert_eq!(selector["spark-app-selector"], "spark-app");
        assert_eq!(selector["spark-exec-id"], "3");
        let ports = spec.ports.as_ref().unwrap();
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].name.as_deref(), Some("spark-block-manager"));
        assert_eq!(ports[0].port, 7079);
        assert_eq!(ports[0].target_port, Some(IntOrString::Int(7079)));
        assert_eq!(svc.metadata.owner_references.as_ref().unwrap(), &vec![owner()]);
        let labels = svc.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["spark-role"], "executor-service");
        assert_eq!(labels["spark-app-selector"], "spark-app");
    }

    #[test]
    fn differences_that_matter_are_detected() {
        let wanted = executor_service("spark-app", "3", 7079, &owner());
        let mut same = wanted.clone();
        same.spec.as_mut().unwrap().cluster_ip = Some("10.96.0.12".into());
        assert!(!differs(&same, &wanted), "server-set fields do not count");
        let mut port = wanted.clone();
        port.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].port = 9999;
        assert!(differs(&port, &wanted));
        let mut selector = wanted.clone();
        selector.spec.as_mut().unwrap().selector.as_mut().unwrap().insert("spark-exec-id".into(), "4".into());
        assert!(differs(&selector, &wanted));
        let mut orphan = wanted.clone();
        orphan.metadata.owner_references = None;
        assert!(differs(&orphan, &wanted));
    }

    #[test]
    fn only_services_labelled_as_ours_are_ours() {
        let ours = executor_service("spark-app", "3", 7079, &owner());
        assert!(is_ours(&ours));
        let mut sparks = ours.clone();
        sparks.metadata.labels.as_mut().unwrap().remove(MANAGED_BY_LABEL);
        assert!(!is_ours(&sparks), "a Spark that ships its own Services labels them its own way");
        let mut other = ours.clone();
        other.metadata.labels.as_mut().unwrap().insert(MANAGED_BY_LABEL.into(), "spark".into());
        assert!(!is_ours(&other));
        let mut unlabelled = ours;
        unlabelled.metadata.labels = None;
        assert!(!is_ours(&unlabelled));
    }
}
