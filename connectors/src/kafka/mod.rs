//! The Kafka source: a consumer-group member (librdkafka through `rdkafka`, cooperative-sticky
//! assignment, no auto-commit) that turns each assigned partition into a run of record
//! archives, `OUT/<topic>/partition=<p>/<topic>+<p>+<first offset>.glyd`, each offset in
//! exactly one (the rules are in [`partition`]'s doc). Kafka is the log here: rows wait in
//! memory, not in the sink's write-ahead log, and what a crash loses is read again from the
//! committed offset.
//!
//! One thread polls the consumer and cuts archives; one writes them, one at a time, and hands
//! each back to be committed. A revoked partition's archive in flight is finished and
//! committed before the revoke completes; its rows not yet in an archive are left to the next
//! owner, who reads them again from the committed offset. Past half the memory budget the
//! member pauses its partitions and cuts its largest run early; it resumes below it. Besides
//! the budget, librdkafka prefetches up to `queued.max.messages.kbytes` (64 MiB; `-X` sets it).

#[cfg(feature = "kafka")]
mod consumer;
pub mod partition;
pub mod row;

#[cfg(feature = "kafka")]
pub use consumer::run;
use row::ValueFormat;

/// What the Kafka source consumes and how.
#[derive(Clone, Debug)]
pub struct KafkaConfig {
    /// `host:port,...`
    pub brokers: String,
    pub topics: Vec<String>,
    pub group: String,
    pub value: ValueFormat,
    /// Offsets per chunk: an archive never spans two (see [`partition`]).
    pub roll_records: u64,
    /// librdkafka properties set last (`-X key=value`), over the ones set here.
    pub options: Vec<(String, String)>,
}

/// Whether `name` may be a Kafka topic name (and so a folder of the lake).
pub fn check_topic(name: &str) -> Result<(), String> {
    let ok = (1..=249).contains(&name.len())
        && name != "."
        && name != ".."
        && crate::event::folder_chars(name);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "topic {name:?} is not 1 to 249 letters, digits, '_', '-' or '.'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_are_kafkas() {
        for ok in ["app", "__consumer_offsets", "a.b-c_d", &"x".repeat(249)] {
            assert!(check_topic(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "ü", &"x".repeat(250)] {
            assert!(check_topic(bad).is_err(), "{bad}");
        }
    }
}
