// Sends numbered events to a glyd sink with @fluent-org/logger (PackedForward, acks on),
// printing each event's number once its chunk is acknowledged, until the sink goes away or
// COUNT events are acknowledged. Usage: node fluent_acked.js PORT FIRST COUNT
const { FluentClient } = require("@fluent-org/logger");

async function main() {
  const [port, first, count] = process.argv.slice(2).map(Number);
  const logger = new FluentClient("crash", {
    socket: { host: "127.0.0.1", port, timeout: 5000, reconnect: { maxDelay: 100 } },
    eventMode: "PackedForward",
    ack: { ackTimeout: 5000 },
    flushInterval: 5,
    eventRetry: { attempts: 1 },
  });
  for (let i = first; i < first + count; i += 20) {
    const batch = [];
    for (let j = i; j < Math.min(i + 20, first + count); j++) {
      batch.push(logger.emit("events", { id: j, msg: `fluent event ${j}` }).then(() => j));
    }
    let acked;
    try {
      acked = await Promise.all(batch);
    } catch (e) {
      break;
    }
    process.stdout.write(acked.join("\n") + "\n");
  }
  await logger.disconnect().catch(() => {});
  process.exit(0);
}

main().catch(() => process.exit(0));
