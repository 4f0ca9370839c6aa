//! glyd's streaming sink. Sources (the Fluent forward protocol, [`fluent`]; HTTP JSON lines
//! and Elasticsearch `_bulk`, [`http`]) turn what clients send into rows ([`body`],
//! [`event`]); the engine ([`sink`]) appends them to a write-ahead log per stream ([`wal`]) and
//! acknowledges them once synced; sealed log segments become record archives in a
//! hive-partitioned lake ([`lake`]) through the record engine, the only way records become
//! archives. Sources are plugins: the engine and the lake know nothing of where rows came
//! from. Kafka ([`kafka`]) is a log already: its source cuts each partition's messages into
//! archives named after their offsets and commits them once durable, with no log of its own. Lakes may live on object storage
//! ([`store`]: objects by URL, written as multipart uploads).

#![forbid(unsafe_code)]

pub mod body;
pub mod event;
pub mod fluent;
pub mod http;
pub mod kafka;
pub mod lake;
pub mod listener;
pub mod metrics;
pub mod msgpack;
pub mod sink;
pub mod store;
pub mod wal;

pub use sink::{Refusal, Sink, SinkConfig};
