"""Produces numbered JSON events to a Kafka topic with the confluent-kafka client, some of
them poison (not JSON) or oversize, with keys and headers; prints how many each partition
took, as JSON, once every one is delivered.

Usage: python3 kafka_produce.py BROKERS TOPIC COUNT [START] [SECONDS]

Events are numbered START.. (field "n"); every 97th is poison and every 101st is padded to
4 KiB. They are spread over SECONDS (default 0: as fast as they go), in lz4 batches.
"""
import json
import sys
import time

from confluent_kafka import Producer


def main():
    brokers, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    start = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 5, "message.timeout.ms": 120000,
                  "compression.type": "lz4"})
    took, failed = {}, []

    def delivered(err, msg):
        if err is not None:
            failed.append(str(err))
        else:
            took[msg.partition()] = took.get(msg.partition(), 0) + 1

    began = time.monotonic()
    for i in range(start, start + count):
        n = i - start
        if n % 97 == 96:
            value = f"poison {i}: not json".encode()
        else:
            event = {"n": i, "level": "ERROR" if i % 10 == 0 else "INFO", "msg": f"python event {i}"}
            if n % 101 == 100:
                event["pad"] = "x" * 4096
            value = json.dumps(event).encode()
        headers = [("trace", f"t{i}".encode())] if i % 3 == 0 else None
        while True:
            try:
                p.produce(topic, value=value, key=f"k{i % 50}".encode(), headers=headers,
                          on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
        if seconds:
            ahead = began + seconds * (n + 1) / count - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    p.flush(120)
    if failed or sum(took.values()) != count:
        print(f"kafka_produce.py: {len(failed)} failed ({failed[:3]}), {sum(took.values())} of {count} delivered",
              file=sys.stderr)
        sys.exit(1)
    print(json.dumps({str(k): v for k, v in sorted(took.items())}))


if __name__ == "__main__":
    main()
