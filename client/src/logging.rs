//! Logging: one `tracing` subscriber setup shared by every minik binary.
//!
//! Kubernetes counterpart: `k8s.io/component-base/logs` (klog flags shared by every component).
//! Lines go to stderr as `time component LEVEL target: message fields`, so that when `minik up` runs
//! five components in one terminal each line says who wrote it. `RUST_LOG` filters as usual
//! (`RUST_LOG=minik_kubelet=debug`); the default is `info`.

use std::fmt;

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::EnvFilter;

/// Prints the wall-clock time followed by the component's name at the start of each line.
struct ComponentTime {
    component: String,
}

impl FormatTime for ComponentTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        let now = jiff::Zoned::now();
        write!(w, "{} {}", now.strftime("%H:%M:%S%.3f"), self.component)
    }
}

/// Installs the subscriber (once per process; later calls are ignored, which tests rely on).
pub fn init(component: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(ComponentTime {
            component: component.to_string(),
        })
        .with_writer(std::io::stderr)
        // Colours only on a terminal: `minik up` pipes the components' logs into files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
