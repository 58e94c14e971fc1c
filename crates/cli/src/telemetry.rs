//! Logs and traces: `tracing` events to stderr (text or JSON), and, when an OTLP endpoint
//! is configured, every span (one per reconcile, with its script call, applies and status
//! write as children) exported to an OpenTelemetry collector over OTLP/HTTP (JSON).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// Flushes and stops the trace exporter when dropped (at exit).
pub struct Telemetry(Option<SdkTracerProvider>);

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(e) = provider.shutdown()
        {
            tracing::warn!(error = %e, "cannot flush the last traces");
        }
    }
}

/// The OTLP/HTTP traces URL for an endpoint: `http://host:4318` gets `/v1/traces`; a URL
/// with a path is used as given.
fn traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    let has_path = trimmed.split_once("://").is_some_and(|(_, rest)| rest.contains('/'));
    if has_path { trimmed.to_owned() } else { format!("{trimmed}/v1/traces") }
}

/// Install the global subscriber: `CTOP_LOG` filters (default `default_filter`); `format`
/// is `text` or `json`; `otlp` is the collector endpoint, if any.
pub fn init(format: &str, otlp: Option<&str>, default_filter: &str) -> Telemetry {
    let filter = || EnvFilter::try_from_env("CTOP_LOG").unwrap_or_else(|_| EnvFilter::new(default_filter));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi);
    let fmt = if format == "json" { fmt.json().boxed() } else { fmt.boxed() };
    let mut failure = None;
    let provider = otlp.filter(|e| !e.is_empty()).and_then(|endpoint| {
        let url = traces_url(endpoint);
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpJson)
            .with_endpoint(url.clone())
            .build();
        match exporter {
            Ok(exporter) => {
                let service = std::env::var("OTEL_SERVICE_NAME")
                    .ok()
                    .filter(|s| !s.is_empty())
                    .unwrap_or("ctop".into());
                let resource = opentelemetry_sdk::Resource::builder().with_service_name(service).build();
                Some((
                    SdkTracerProvider::builder()
                        .with_batch_exporter(exporter)
                        .with_resource(resource)
                        .build(),
                    url,
                ))
            }
            Err(e) => {
                failure = Some(format!("cannot export traces to {url}: {e}; check --otlp-endpoint"));
                None
            }
        }
    });
    let otel = provider.as_ref().map(|(p, _)| {
        // Traces carry only ctop's own spans: the reconcile tree, not every client call.
        let targets = tracing_subscriber::filter::Targets::new()
            .with_target("ctop_controller", tracing::Level::INFO)
            .with_target("ctop_runtime", tracing::Level::INFO)
            .with_target("ctop_applier", tracing::Level::INFO);
        tracing_opentelemetry::layer().with_tracer(p.tracer("ctop")).with_filter(targets)
    });
    tracing_subscriber::registry().with(fmt.with_filter(filter())).with(otel).init();
    if let Some(f) = failure {
        tracing::error!("{f}");
    }
    if let Some((_, url)) = &provider {
        tracing::info!(url, "exporting traces over OTLP/HTTP");
    }
    Telemetry(provider.map(|(p, _)| p))
}

#[cfg(test)]
mod tests {
    use super::traces_url;

    #[test]
    fn traces_url_appends_the_signal_path_only_to_bare_endpoints() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/custom/traces"), "http://c:4318/custom/traces");
    }
}
