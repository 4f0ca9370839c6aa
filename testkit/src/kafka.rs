//! A Kafka broker for tests and benchmarks: librdkafka's mock cluster, a real Kafka protocol
//! server on 127.0.0.1, hosted by a producer client of this process (it lives as long as the
//! [`MockKafka`]). Consumer groups on it rebalance at once: its initial rebalance delay, 3 s by
//! default, is set to 0.

use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseProducer, DefaultProducerContext, Producer};
use rdkafka::types::RDKafkaRespErr;

/// A mock Kafka cluster of some brokers.
pub struct MockKafka {
    host: BaseProducer,
    bootstrap: String,
}

impl MockKafka {
    /// Starts a cluster of `brokers` brokers.
    pub fn start(brokers: i32) -> MockKafka {
        let host: BaseProducer = ClientConfig::new()
            .set("test.mock.num.brokers", brokers.to_string())
            .create()
            .expect("a mock Kafka cluster");
        let bootstrap = host
            .client()
            .mock_cluster()
            .expect("the client hosts a mock cluster")
            .bootstrap_servers();
        // SAFETY: the client was created with `test.mock.num.brokers`, so its handle has a
        // mock cluster, which lives as long as the client (owned by the returned value); the
        // call only sets an integer of that cluster.
        unsafe {
            let cluster =
                rdkafka::bindings::rd_kafka_handle_mock_cluster(host.client().native_ptr());
            assert!(!cluster.is_null(), "the client hosts a mock cluster");
            rdkafka::bindings::rd_kafka_mock_group_initial_rebalance_delay_ms(cluster, 0);
        }
        MockKafka { host, bootstrap }
    }

    /// `host:port,...` of the brokers.
    pub fn bootstrap(&self) -> &str {
        &self.bootstrap
    }

    fn cluster(&self) -> MockCluster<'_, DefaultProducerContext> {
        self.host.client().mock_cluster().expect("a mock cluster")
    }

    /// Creates `topic` with `partitions` partitions.
    pub fn create_topic(&self, topic: &str, partitions: i32) {
        self.cluster()
            .create_topic(topic, partitions, 1)
            .expect("creating a mock topic");
    }

    /// Takes broker `id` (1-based) down or brings it back up.
    pub fn broker(&self, id: i32, up: bool) {
        let c = self.cluster();
        if up {
            c.broker_up(id).expect("broker up");
        } else {
            c.broker_down(id).expect("broker down");
        }
    }

    /// Makes `topic` look deleted (its metadata answers "unknown topic"), or clears that.
    pub fn hide_topic(&self, topic: &str, hidden: bool) {
        let error = if hidden {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
        } else {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR
        };
        self.cluster()
            .topic_error(topic, error)
            .expect("setting a topic error");
    }

    /// Waits up to `wait` for anything the hosting client has queued.
    pub fn flush(&self, wait: Duration) {
        let _ = self.host.flush(wait);
    }
}

impl MockKafka {
    /// The low and high watermarks of a partition: with nothing deleted, the high one is how
    /// many messages it took. Asked again for a minute while the hosting client reconnects
    /// (after a broker was down).
    pub fn watermarks(&self, topic: &str, partition: i32) -> (i64, i64) {
        let started = std::time::Instant::now();
        loop {
            match self
                .host
                .client()
                .fetch_watermarks(topic, partition, Duration::from_secs(10))
            {
                Ok(w) => return w,
                Err(e) if started.elapsed() > Duration::from_secs(60) => {
                    panic!("the watermarks of {topic} [{partition}]: {e}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }
}
