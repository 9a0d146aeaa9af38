//! Spark's executor pod labels (`Constants.scala` in Spark's k8s module) and the
//! selector built from them: the one place these names are written.

/// The application id of the pods and Services of an app.
pub const APP: &str = "spark-app-selector";
/// `executor` or `driver` on pods.
pub const ROLE: &str = "spark-role";
/// The executor id (absent, or the placeholder `EXECID`, on pods Spark does not count).
pub const EXEC_ID: &str = "spark-exec-id";
/// Set by Spark on executor pods it is done with; its own sources skip them.
pub const INACTIVE: &str = "spark-exec-inactive";

/// The label selector of an app's active executor pods, as Spark's own
/// sources select them.
pub fn executor_selector(app_id: &str) -> String {
    format!("{APP}={app_id},{ROLE}=executor,{INACTIVE}!=true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_matches_sparks_own_sources() {
        assert_eq!(
            executor_selector("spark-123"),
            "spark-app-selector=spark-123,spark-role=executor,spark-exec-inactive!=true"
        );
    }
}
