//! A receiver for `webhook` notifications and `webhook` channels: answers 200 and keeps
//! what it got.

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// A running receiver at `/notify`.
pub struct Receiver {
    /// The server.
    pub server: MockServer,
}

impl Receiver {
    /// Starts a receiver at `/notify`.
    pub async fn start() -> Receiver {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/notify"))
            .respond_with(ResponseTemplate::new(200))
            .named("notification receiver")
            .mount(&server)
            .await;
        Receiver { server }
    }

    /// The sink's `url`.
    pub fn url(&self) -> String {
        format!("{}/notify", self.server.uri())
    }

    /// Every notification received so far.
    pub async fn requests(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }

    /// The `X-Airlock-Event` of each notification received, sorted (rows written in one
    /// transaction have no order a receiver may rely on).
    pub async fn events(&self) -> Vec<String> {
        let mut events: Vec<String> = self
            .requests()
            .await
            .iter()
            .filter_map(|r| r.headers.get("x-airlock-event"))
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect();
        events.sort();
        events
    }
}
