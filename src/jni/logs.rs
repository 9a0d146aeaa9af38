//! The log bridge: Rust `tracing` records are buffered here and pulled by a
//! Java daemon thread (`pollLogs`), which logs each through slf4j under a
//! logger named after its Rust module. Native threads never call into the JVM.
//! The level follows the JVM logger's, set from Java with `setLogLevel`.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use once_cell::sync::Lazy;
use parking_lot::{Condvar, Mutex};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;

/// Records kept when Java does not drain them; older ones are dropped first.
const CAPACITY: usize = 10_000;

/// One log record for the JVM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// 1 ERROR, 2 WARN, 3 INFO, 4 DEBUG, 5 TRACE.
    pub level: u8,
    /// The Rust module path, e.g. `spark_k8s_native::informer`.
    pub target: String,
    pub message: String,
}

struct LogBuffer {
    records: Mutex<VecDeque<LogRecord>>,
    ready: Condvar,
}

static BUFFER: Lazy<LogBuffer> =
    Lazy::new(|| LogBuffer { records: Mutex::new(VecDeque::new()), ready: Condvar::new() });

/// 0 OFF .. 5 TRACE; INFO until Java says otherwise.
static MAX_LEVEL: AtomicU8 = AtomicU8::new(3);

fn level_number(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

/// Installs the bridge as the process's tracing subscriber (once; a no-op if
/// the host already installed one).
pub fn install() {
    static INSTALLED: Lazy<()> = Lazy::new(|| {
        let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(BufferLayer));
    });
    Lazy::force(&INSTALLED);
}

/// Sets the most verbose level forwarded (0 OFF .. 5 TRACE).
pub fn set_max_level(level: u8) {
    MAX_LEVEL.store(level.min(5), Ordering::Relaxed);
}

/// Takes up to `max` records, waiting up to `timeout` for the first.
pub fn take(max: usize, timeout: Duration) -> Vec<LogRecord> {
    let deadline = crate::informer::changes::deadline_after(timeout);
    let mut records = BUFFER.records.lock();
    while records.is_empty() {
        if BUFFER.ready.wait_until(&mut records, deadline).timed_out() {
            return Vec::new();
        }
    }
    let n = records.len().min(max.max(1));
    records.drain(..n).collect()
}

fn push(record: LogRecord) {
    let mut records = BUFFER.records.lock();
    if records.len() >= CAPACITY {
        records.pop_front();
    }
    records.push_back(record);
    drop(records);
    BUFFER.ready.notify_one();
}

/// Whether a record is forwarded: ours at the JVM's level, our dependencies'
/// (kube, hyper, rustls) at WARN at most, so a DEBUG driver log is not flooded.
fn forwarded(metadata: &Metadata<'_>) -> bool {
    let max = MAX_LEVEL.load(Ordering::Relaxed);
    let max = if metadata.target().starts_with("spark_k8s_native") { max } else { max.min(2) };
    level_number(metadata.level()) <= max
}

struct BufferLayer;

impl<S: Subscriber> Layer<S> for BufferLayer {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> tracing::subscriber::Interest {
        // The level changes at run time: ask `enabled` every time.
        tracing::subscriber::Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        forwarded(metadata)
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut message = MessageVisitor::default();
        event.record(&mut message);
        push(LogRecord {
            level: level_number(event.metadata().level()),
            target: event.metadata().target().to_string(),
            message: redact(&message.finish()),
        });
    }
}

#[derive(Default)]
struct MessageVisitor {
    message: String,
    fields: String,
}

impl MessageVisitor {
    fn finish(self) -> String {
        if self.fields.is_empty() {
            self.message
        } else {
            format!("{} [{}]", self.message, self.fields.trim_start())
        }
    }
}

impl Visit for MessageVisitor {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }
}

/// Never let a bearer token reach a log, whatever a dependency prints.
fn redact(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.to_ascii_lowercase().find("bearer ") {
        out.push_str(&rest[..i + 7]);
        out.push_str("<redacted>");
        let token = &rest[i + 7..];
        let end = token.find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',').unwrap_or(token.len());
        rest = &token[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_redacted() {
        assert_eq!(redact("Authorization: Bearer abc.def-123 sent"), "Authorization: Bearer <redacted> sent");
        assert_eq!(redact("\"bearer xyz\""), "\"bearer <redacted>\"");
        assert_eq!(redact("no secrets here"), "no secrets here");
    }

    #[test]
    fn records_flow_at_the_chosen_level_with_fields() {
        install();
        set_max_level(4);
        while !take(CAPACITY, Duration::ZERO).is_empty() {}
        tracing::debug!(pods = 3, "bridge test {}", "one");
        tracing::trace!("bridge test dropped at DEBUG");
        let records = take(10, Duration::from_secs(1));
        let ours: Vec<_> = records.iter().filter(|r| r.message.starts_with("bridge test")).collect();
        assert_eq!(ours.len(), 1, "{records:?}");
        assert_eq!(ours[0].level, 4);
        assert_eq!(ours[0].message, "bridge test one [pods=3]");
        assert!(ours[0].target.starts_with("spark_k8s_native"));
        set_max_level(3);
    }
}
