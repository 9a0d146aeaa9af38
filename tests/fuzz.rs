//! Property tests (fuzzing) of what callers and the JVM feed the library:
//! Spark settings, durations, app ids, Service names and the batch decoder.
//! Run briefly in CI; longer by hand: `PROPTEST_CASES=100000 cargo test --release --test fuzz`.
//! Anything found is kept below as a regression case.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use spark_k8s_native::pod::{CachedPod, PodChange, PodJson, SparkState};
use spark_k8s_native::services::service_name;
use spark_k8s_native::settings::{keys, parse_spark_duration, validate_app_id, Settings};
use spark_k8s_native::wire::{decode, encode_changes, encode_snapshot, Decoded};

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(keys::MASTER.name.to_string()),
        Just(keys::NAMESPACE.name.to_string()),
        Just(keys::SUBMIT_IN_DRIVER.name.to_string()),
        Just(keys::DRIVER_MASTER.name.to_string()),
        Just(keys::LISTER_POLLING_INTERVAL.name.to_string()),
        Just(keys::INFORMER_RESYNC_INTERVAL.name.to_string()),
        Just(keys::MISSING_POD_DETECT_DELTA.name.to_string()),
        Just(keys::STALE_BOUND.name.to_string()),
        Just(keys::WATCH_TIMEOUT.name.to_string()),
        Just(keys::INITIAL_LIST.name.to_string()),
        Just(keys::PAGE_SIZE.name.to_string()),
        Just(keys::ENABLE_SERVICE.name.to_string()),
        Just(keys::BLOCK_MANAGER_PORT.name.to_string()),
        Just(keys::TRUST_CERTIFICATES.name.to_string()),
        Just("spark.kubernetes.authenticate.oauthToken".to_string()),
        Just("spark.kubernetes.authenticate.caCertFile".to_string()),
        "spark\\.kubernetes\\.native\\.[a-zA-Z.]{0,30}",
        ".{0,40}",
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "k8s://https?://[a-z0-9.:]{0,20}",
        "-?[0-9]{0,25}(us|ms|s|m|min|h|d|x)?",
        "true|false|TRUE|yes",
        ".{0,60}",
    ]
}

fn cached(name: String, generation: u64, json: Vec<u8>) -> Arc<CachedPod> {
    Arc::new(CachedPod {
        name,
        uid: "u".into(),
        resource_version: generation.to_string(),
        generation,
        exec_id: None,
        spark_state: SparkState::Running,
        json: PodJson::from(&json[..]),
    })
}

proptest! {
    #[test]
    fn the_settings_parser_never_panics_and_errors_name_a_key(entries in prop::collection::hash_map(key(), value(), 0..10)) {
        if let Err(e) = Settings::from_spark_conf(&entries) {
            prop_assert!(!e.key.is_empty());
            prop_assert!(e.to_string().starts_with(&e.key));
        }
    }

    #[test]
    fn durations_parse_or_say_why(text in ".{0,40}") {
        if let Err(reason) = parse_spark_duration(&text) {
            prop_assert!(!reason.is_empty());
        }
    }

    #[test]
    fn app_id_validation_never_panics(app in ".{0,80}") {
        let _ = validate_app_id(&app);
    }

    #[test]
    fn service_names_are_always_dns_1035_labels(app in ".{1,100}", exec in "[0-9]{1,9}") {
        let name = service_name(&app, &exec);
        prop_assert!(name.len() <= 63, "{}", name);
        prop_assert!(name.starts_with(|c: char| c.is_ascii_lowercase()), "{}", name);
        prop_assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{}", name);
        prop_assert!(!name.ends_with('-'), "{}", name);
        let suffix = format!("-exec-{}", exec);
        prop_assert!(name.ends_with(&suffix), "{}", name);
    }

    #[test]
    fn the_decoder_never_panics_on_garbage(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = decode(&bytes);
    }

    #[test]
    fn batches_round_trip(pods in prop::collection::vec(("[a-z0-9-]{1,60}", any::<u32>(), prop::collection::vec(any::<u8>(), 0..200)), 0..20),
                          known in any::<u32>()) {
        let pods: Vec<_> = pods.into_iter().map(|(n, g, j)| cached(n, g as u64, j)).collect();
        let changes: Vec<_> = pods.iter().map(|p| PodChange::Applied(p.clone())).collect();
        let Some(Decoded::Changes(decoded)) = decode(&encode_changes(&changes)) else { panic!("own encoding decodes") };
        prop_assert_eq!(decoded.len(), pods.len());
        for (d, p) in decoded.iter().zip(&pods) {
            prop_assert_eq!(&d.name, &p.name);
            prop_assert_eq!(d.generation, p.generation);
            prop_assert_eq!(&d.json, &p.json.to_vec());
        }
        // A view past every generation: never the "unchanged" answer.
        let view = known as u64 + u32::MAX as u64 + 1;
        let Some(Decoded::Snapshot { view: got, entries }) = decode(&encode_snapshot(&pods, known as u64, view)) else {
            panic!("own encoding decodes")
        };
        prop_assert_eq!(got, view);
        for (d, p) in entries.iter().zip(&pods) {
            prop_assert_eq!(d.json.is_empty(), p.generation <= known as u64 || p.json.is_empty());
        }
    }
}

#[test]
fn regression_cases() {
    // Values that once looked risky: overflow, empty unit, lone unit, unicode digits.
    for text in ["18446744073709551615d", "s", "", "٣s", "1\u{0}s"] {
        assert!(parse_spark_duration(text).is_err(), "{text:?}");
    }
    let conf = HashMap::from([(keys::MASTER.name.to_string(), "k8s://https://[::1".to_string())]);
    assert!(Settings::from_spark_conf(&conf).is_err());
}
