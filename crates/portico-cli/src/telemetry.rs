//! Logging to stderr, and (feature `otel`) the host's call spans exported over OTLP/HTTP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set.
//!
//! The exporter sends JSON (`http/json`), and the standard variables apply:
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME` (default `portico`), timeouts. The W3C
//! trace-context and baggage propagators are installed, so a call continues its caller's trace
//! and its upstream continues the call's.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// Flushes the exporter when dropped (at exit).
pub(crate) struct Guard {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(p) = self.provider.take()
            && let Err(e) = p.shutdown()
        {
            eprintln!("portico: the OpenTelemetry exporter did not flush: {e}");
        }
    }
}

/// Installs the subscriber: `filter` (or RUST_LOG) for stderr; call spans to OTLP when asked.
pub(crate) fn init(filter: &str) -> Guard {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(filter));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(filter);
    #[cfg_attr(not(feature = "otel"), allow(unused_mut))]
    let mut layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> = vec![fmt.boxed()];
    #[cfg(feature = "otel")]
    let provider = otlp().map(|(layer, provider)| {
        layers.push(layer);
        provider
    });
    let _ = tracing_subscriber::registry().with(layers).try_init();
    Guard {
        #[cfg(feature = "otel")]
        provider,
    }
}

#[cfg(feature = "otel")]
fn otlp() -> Option<(Box<dyn Layer<Registry> + Send + Sync>, opentelemetry_sdk::trace::SdkTracerProvider)> {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    let asked = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    if !asked {
        return None;
    }
    let exporter =
        match opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpJson).build() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("portico: OpenTelemetry export is off: {e}");
                return None;
            }
        };
    let service = std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "portico".to_owned());
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(service).build();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    opentelemetry::global::set_text_map_propagator(opentelemetry::propagation::TextMapCompositePropagator::new(vec![
        Box::new(opentelemetry_sdk::propagation::TraceContextPropagator::new()),
        Box::new(opentelemetry_sdk::propagation::BaggagePropagator::new()),
    ]));
    let tracer = provider.tracer("portico");
    let only_calls =
        tracing_subscriber::filter::Targets::new().with_target(portico_host::telemetry::TARGET, tracing::Level::INFO);
    let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(only_calls).boxed();
    Some((layer, provider))
}
