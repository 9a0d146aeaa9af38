//! Driver start-up's question to the apiserver: may this driver manage the
//! executor Services it is about to need?

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::{Api, PostParams};

use super::ExecutorServices;
use crate::client::AccessDenied;

/// What executor Services need, and what driver start-up checks.
const SERVICE_VERBS: [&str; 3] = ["get", "create", "delete"];

impl ExecutorServices {
    /// Asks the apiserver (SelfSubjectAccessReviews) whether the driver may do
    /// what Services need: get, create and delete services in the namespace.
    /// Driver start-up calls it, so that a missing right fails there, once,
    /// naming the fix, instead of as a 403 per executor later. When the review
    /// itself cannot be made (an apiserver that does not serve it, a 403 on it,
    /// no connection), it logs a WARN and returns Ok: start-up is not blocked
    /// on a question nobody could answer, and a real denial still shows per
    /// request later.
    pub async fn check_access(&self) -> Result<(), AccessDenied> {
        let reviews: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let ask = |verb: &'static str| {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        namespace: Some(self.namespace.clone()),
                        verb: Some(verb.to_string()),
                        group: Some(String::new()),
                        resource: Some("services".into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                ..Default::default()
            };
            let reviews = reviews.clone();
            async move { (verb, reviews.create(&PostParams::default(), &review).await) }
        };
        let answers = futures::future::join_all(SERVICE_VERBS.iter().map(|verb| ask(verb))).await;
        let mut denied = Vec::new();
        let mut undecided = Vec::new();
        for (verb, answer) in answers {
            match answer.map(|review| review.status.unwrap_or_default()) {
                Ok(status) if status.allowed => {}
                Ok(status) => denied.push((verb, status.reason.filter(|r| !r.is_empty()))),
                Err(e) => undecided.push(format!("{verb}: {e}")),
            }
        }
        if !undecided.is_empty() {
            tracing::warn!(
                app_id = %self.app_id,
                "could not ask the apiserver whether the driver may get, create and delete services in namespace {} \
                 ({}); going on: a missing right will show as failed Service requests",
                self.namespace,
                undecided.join("; ")
            );
        }
        if denied.is_empty() {
            return Ok(());
        }
        Err(AccessDenied {
            namespace: self.namespace.clone(),
            verbs: denied.iter().map(|(verb, _)| *verb).collect(),
            reasons: denied.into_iter().filter_map(|(_, reason)| reason).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_denied_names_the_verbs_the_namespace_and_the_fix() {
        let denied = |verbs: Vec<&'static str>| AccessDenied { namespace: "jobs".into(), verbs, reasons: vec![] };
        let all = denied(vec!["get", "create", "delete"]).to_string();
        assert!(all.contains("may not get, create and delete services in namespace jobs"), "{all}");
        assert!(all.contains("Grant them to the driver's service account"), "{all}");
        assert!(all.contains("spark.kubernetes.executor.enableService=false"), "{all}");
        let one = denied(vec!["delete"]).to_string();
        assert!(one.contains("may not delete services in namespace jobs"), "{one}");
        let two = AccessDenied { reasons: vec!["no RBAC policy matched".into()], ..denied(vec!["create", "delete"]) };
        let two = two.to_string();
        assert!(two.contains("may not create and delete services"), "{two}");
        assert!(two.contains("the authorizer said: no RBAC policy matched"), "{two}");
    }

    /// A client whose apiserver answers every SelfSubjectAccessReview with `answer(verb)`:
    /// `Ok(allowed)`, or `Err(http status)` for a review that cannot be made.
    fn reviewing_client(answer: fn(&str) -> Result<bool, u16>) -> kube::Client {
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| async move {
            assert!(request.uri().path().ends_with("/selfsubjectaccessreviews"), "{}", request.uri());
            let review: serde_json::Value = serde_json::from_slice(&body_bytes(request.into_body()).await).unwrap();
            let verb = review["spec"]["resourceAttributes"]["verb"].as_str().unwrap().to_string();
            assert_eq!(review["spec"]["resourceAttributes"]["resource"], "services");
            assert_eq!(review["spec"]["resourceAttributes"]["namespace"], "jobs");
            let (status, body) = match answer(&verb) {
                Ok(allowed) => {
                    let mut review = review.clone();
                    review["status"] =
                        serde_json::json!({"allowed": allowed, "reason": if allowed { "" } else { "RBAC: no" }});
                    (201, review)
                }
                Err(code) => (
                    code,
                    serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                        "reason": "NotFound", "message": "the server could not find the requested resource"}),
                ),
            };
            let response = http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(kube::client::Body::from(serde_json::to_vec(&body).unwrap()))
                .unwrap();
            Ok::<_, std::convert::Infallible>(response)
        });
        kube::Client::new(service, "jobs")
    }

    /// The bytes of a request body (no body-utilities dependency for one test).
    async fn body_bytes(mut body: kube::client::Body) -> Vec<u8> {
        use http_body::Body as _;
        let mut out = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
            if let Ok(data) = frame.unwrap().into_data() {
                out.extend_from_slice(&data);
            }
        }
        out
    }

    fn reviewed(answer: fn(&str) -> Result<bool, u16>) -> Result<(), AccessDenied> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            ExecutorServices::new(reviewing_client(answer), "jobs", "spark-app", "driver", 7079, 4).check_access().await
        })
    }

    #[test]
    fn the_access_check_fails_naming_each_denied_verb() {
        assert_eq!(reviewed(|_| Ok(true)), Ok(()));
        let e = reviewed(|verb| Ok(verb == "get")).unwrap_err();
        assert_eq!(e.verbs, vec!["create", "delete"]);
        assert_eq!(e.namespace, "jobs");
        assert_eq!(e.reasons, vec!["RBAC: no", "RBAC: no"]);
        assert_eq!(reviewed(|_| Ok(false)).unwrap_err().verbs, vec!["get", "create", "delete"]);
    }

    #[test]
    fn an_access_review_that_cannot_be_made_does_not_block_start_up() {
        assert_eq!(reviewed(|_| Err(404)), Ok(()), "an apiserver that does not serve the reviews");
        assert_eq!(reviewed(|_| Err(403)), Ok(()), "an identity that may not ask");
        // A denial that could be read still counts, even if another review failed.
        assert_eq!(
            reviewed(|verb| if verb == "get" { Err(500) } else { Ok(verb != "delete") }).unwrap_err().verbs,
            vec!["delete"]
        );
    }
}
