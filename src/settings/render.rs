//! Renders the key table (`keys.rs`) as `docs/configuration.md` and as the Java
//! constants class, so neither is written by hand.

use super::keys::{Key, Section, ALL};

const DOC_INTRO: &str = "\
# Configuration

<!-- Generated from src/settings/keys.rs; edit the table there, then run
     `UPDATE_GENERATED=1 cargo test --lib generated` (a test fails when this file differs). -->

spark-k8s-native reads the driver's `SparkConf`. Spark's own keys keep their
meaning; the keys of the informer pull request (SPARK-33737) are honoured as
that pull request defines them; keys of our own live under
`spark.kubernetes.native.`. A value that cannot be used fails with an error
that names the key and the value (`IllegalArgumentException` on the JVM side).
An unknown key under `spark.kubernetes.native.` is logged at WARN, with the key
it most likely meant.

Durations use Spark's syntax: a whole number with a unit (`us`, `ms`, `s`,
`m`/`min`, `h`, `d`); a bare number is milliseconds.
";

fn section_text(section: Section) -> (&'static str, &'static str, &'static str) {
    match section {
        Section::InformerAndLister => ("Informer and lister", "", ""),
        Section::ExecutorServices => (
            "Executor Services (SPARK-52505)",
            "",
            "What an operator sees: `kubectl get svc -l spark-app-selector=<appId>,spark-role=executor-service`\n\
             (each also labelled `spark-exec-id` and `app.kubernetes.io/managed-by=spark-k8s-native`).\n",
        ),
        Section::PluggingIntoSpark => (
            "Plugging into Spark",
            "",
            "System properties of the JVM (not SparkConf): `spark.kubernetes.native.library.path`\n\
             (load this `.so` instead of the bundled one) and\n\
             `spark.kubernetes.native.library.extractDir` (where the bundled `.so` is\n\
             extracted; for a `noexec` temp dir).\n",
        ),
        Section::ConnectingToTheApiserver => (
            "Connecting to the apiserver",
            "The client is built as Spark's `SparkKubernetesClientFactory` builds its own:\n\
             from the kubeconfig (client mode; `spark.kubernetes.context` selects a context)\n\
             or the pod's service account (cluster mode), then Spark's keys on top.\n",
            "Every request carries the user agent `spark-k8s-native/<version> (app <appId>)`,\n\
             so an operator can attribute it in the apiserver's audit log.\n",
        ),
    }
}

fn default_cell(key: &Key) -> String {
    match key.default {
        super::keys::Default::Value(v) => format!("`{v}`"),
        super::keys::Default::Described(text) => text.to_string(),
    }
}

/// `docs/configuration.md`.
pub fn configuration_md() -> String {
    let mut out = String::from(DOC_INTRO);
    let sections = [
        Section::InformerAndLister,
        Section::ExecutorServices,
        Section::PluggingIntoSpark,
        Section::ConnectingToTheApiserver,
    ];
    for section in sections {
        let (title, before, after) = section_text(section);
        out.push_str(&format!("\n## {title}\n\n"));
        if !before.is_empty() {
            out.push_str(before);
            out.push('\n');
        }
        out.push_str("| Property Name | Default | Meaning | Since Version |\n| --- | --- | --- | --- |\n");
        for key in ALL.iter().filter(|k| k.section == section) {
            let mut meaning = key.meaning.split_whitespace().collect::<Vec<_>>().join(" ");
            let valid = key.valid.described();
            if !valid.is_empty() {
                meaning = format!("{meaning} {valid}");
            }
            out.push_str(&format!("| `{}` | {} | {} | {} |\n", key.name, default_cell(key), meaning, key.since));
        }
        if !after.is_empty() {
            out.push('\n');
            out.push_str(after);
        }
    }
    out
}

/// `java/src/main/java/org/sparkk8snative/ConfigKeys.java`.
pub fn java_config_keys() -> String {
    let mut out = String::from(
        "package org.sparkk8snative;\n\n\
         /**\n \
         * The configuration keys the Java layer reads, and their defaults. Generated from\n \
         * src/settings/keys.rs (the one description of every key; see docs/configuration.md): do not edit;\n \
         * run {@code UPDATE_GENERATED=1 cargo test --lib generated} after changing the table.\n \
         */\n\
         public final class ConfigKeys {\n  private ConfigKeys() {}\n",
    );
    for key in ALL.iter().filter(|k| !k.java.is_empty()) {
        out.push_str(&format!("\n  /** Default: {}. */\n", default_cell(key).replace('`', "")));
        out.push_str(&format!("  public static final String {} = \"{}\";\n", key.java, key.name));
        if let Some(value) = key.default.value() {
            out.push_str(&format!("  public static final String {}_DEFAULT = \"{}\";\n", key.java, value));
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod generated {
    use std::path::Path;

    /// Compares a generated file with the committed one; rewrites it with UPDATE_GENERATED=1.
    fn check(relative: &str, wanted: String) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
        if std::env::var_os("UPDATE_GENERATED").is_some() {
            std::fs::write(&path, &wanted).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == wanted,
            "{relative} differs from src/settings/keys.rs: run `UPDATE_GENERATED=1 cargo test --lib generated`"
        );
    }

    #[test]
    fn docs_configuration_md_is_generated_from_the_key_table() {
        check("docs/configuration.md", super::configuration_md());
    }

    #[test]
    fn java_config_keys_is_generated_from_the_key_table() {
        check("java/src/main/java/org/sparkk8snative/ConfigKeys.java", super::java_config_keys());
    }

    #[test]
    fn every_default_value_is_valid_for_its_key() {
        // An empty SparkConf (but the master) parses: every default in the table is usable.
        let conf = [(super::super::keys::MASTER.name.to_string(), "k8s://https://h:6443".to_string())].into();
        super::super::Settings::from_spark_conf(&conf).unwrap();
        let names: std::collections::HashSet<_> = super::ALL.iter().map(|k| k.name).collect();
        assert_eq!(names.len(), super::ALL.len(), "a key is described twice");
    }
}
